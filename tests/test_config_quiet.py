"""Quiet settings (impl/config.py): a setting added after traces were committed is left out of
``Config.to_dict`` (and so of every trace header) while at its default, and a section of quiet settings only is
left out, so that old traces replay byte for byte; once set, it is written, and the header reads back the same."""

from dataclasses import dataclass, fields

from rmqha.impl.config import _java
from rmqha.impl.sim.config import FIDELITY, PROFILES, Config, _sim, config_from_dict, default_config, section_dict


def test_default_config_writes_no_quiet_setting():
    d = Config().to_dict()
    for sec in fields(Config):
        obj = getattr(Config(), sec.name)
        for f in fields(obj):
            key = f.metadata.get("java", f.name)
            if f.metadata.get("quiet"):
                assert key not in d.get(sec.name, {}), f"[{sec.name}] {key} is quiet but written at its default"
            else:
                assert key in d[sec.name]


def test_a_quiet_setting_is_written_once_set_and_reads_back():
    @dataclass
    class Part:
        loud: int = _sim(1, "always written")
        soft: int = _sim(0, "written when set", quiet=True)
        soft_java: bool = _java("softJava", False, "written when set", quiet=True)

    @dataclass
    class AllQuiet:
        a: int = _sim(0, quiet=True)

    part, allq = Part(), AllQuiet()
    assert {f.name: f.metadata["quiet"] for f in fields(part)} == {"loud": False, "soft": True, "soft_java": True}

    assert section_dict(part) == {"loud": 1}
    part.soft, part.soft_java = 3, True
    assert section_dict(part) == {"loud": 1, "soft": 3, "softJava": True}
    assert section_dict(allq) is None
    allq.a = 2
    assert section_dict(allq) == {"a": 2}


def test_every_profile_round_trips_through_its_header_form():
    for name in PROFILES:
        cfg = default_config(name)
        assert config_from_dict(cfg.to_dict()).to_dict() == cfg.to_dict()
    assert FIDELITY in PROFILES
