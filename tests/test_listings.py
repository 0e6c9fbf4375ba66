"""``rmqha invariants``, ``rmqha bugs``, ``rmqha findings`` at any width (issue 30, item 6) and ``rmqha invariants ID``
(issue 27, item 5): no listing splits an id, a switch name or a finding id (they are what a reader pastes into
``--bug``, ``--fix`` and ``rmqha invariants ID``); the catalogue is compact by default; one entry prints in full."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.findings import FINDINGS
from rmqha.impl.invariants import BY_ID
from rmqha.impl.sim.scenarios import SCENARIOS

ROOT = Path(__file__).resolve().parent.parent
NAMES = sorted({*BY_ID, *B.BUGS, *FINDINGS}, key=len, reverse=True)


def _rmqha(*args: str, columns: int = 80) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS=str(columns))
    env.pop("LINES", None)
    return subprocess.run([sys.executable, "-m", "rmqha", *args], capture_output=True, text=True, env=env,
                          timeout=120)


def _words(text: str) -> list[str]:
    return re.findall(r"[A-Za-z0-9][A-Za-z0-9._+-]*[A-Za-z0-9]|[A-Za-z0-9]", text)


def _split_names(text: str) -> list[str]:
    """The words of ``text`` that are a piece of a name but not a name: what a name split across lines leaves."""
    names = set(NAMES)
    out = []
    for w in _words(text):
        if w in names or len(w) < 6 or "-" not in w:
            continue
        if any(n != w and (n.startswith(w) or n.endswith(w)) for n in NAMES):
            out.append(w)
    return out


@pytest.mark.parametrize("command", [("invariants",), ("invariants", "--long"), ("bugs",), ("findings",)])
@pytest.mark.parametrize("columns", [40, 80, 132])
def test_no_listing_splits_a_name(command: tuple[str, ...], columns: int) -> None:
    p = _rmqha(*command, columns=columns)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    too_long = [ln for ln in lines if len(ln.rstrip()) > columns]
    assert not too_long, too_long[:3]
    assert not _split_names(p.stdout), _split_names(p.stdout)[:5]
    wide = _rmqha(*command, columns=1000).stdout
    for name in NAMES:  # every name as often as at a width where nothing wraps
        n = len(re.findall(rf"(?<![\w-]){re.escape(name)}(?![\w-])", wide))
        got = len(re.findall(rf"(?<![\w-]){re.escape(name)}(?![\w-])", p.stdout))
        if command == ("invariants",):  # the compact catalogue cuts statements (at a space): its ids are whole
            assert got >= (1 if name in BY_ID else 0), name
        else:
            assert got == n, (name, n)


def test_the_split_check_catches_a_split_id() -> None:
    assert _split_names("x SYNC-SSS-HOLDS-\n  ACKED y") == ["SYNC-SSS-HOLDS"]
    assert _split_names("--bug fix-recover-normally-\nup-to-confirm") == ["fix-recover-normally", "up-to-confirm"]
    assert _split_names("SYNC-SSS-HOLDS-ACKED fix-recover-normally-up-to-confirm") == []


def test_the_catalogue_is_compact_by_default() -> None:
    p = _rmqha("invariants")
    lines = p.stdout.splitlines()
    for inv in BY_ID:
        assert sum(1 for ln in lines if ln.split()[:1] == [inv]) == 1, inv  # one line per invariant
    assert len(lines) < 2 * len(BY_ID)
    assert len(_rmqha("invariants", "--long").stdout.splitlines()) > 3 * len(BY_ID)


def test_one_entry_in_full() -> None:
    p = _rmqha("invariants", "CTL-CLEAN-ELECTION")
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert out.splitlines()[0] == "CTL-CLEAN-ELECTION"
    for piece in ("statement: With unclean election off, a newly elected master was in the",
                  "guard:", 'if not ctx.apply_first or ev["type"] != "ElectMaster"', "Java source:",
                  "DefaultElectPolicy.tryElect", "TLA+ operator: CTL_CLEAN_ELECTION",
                  "TLA+ actions: the actions of Next that can break it:", "ControllerElect",
                  "model predicate: CTL_CLEAN_ELECTION in models/properties.py", "--bug elect-ignores-liveness",
                  "tests/test_bugs.py::test_switch_on_fails_the_named_invariant[elect-ignores-liveness]",
                  "F-DLEDGER-STALE-VALIDATION", "fix-validate-after-commit", "real run"):
        assert piece in out, piece
    j = json.loads(_rmqha("invariants", "CTL-CLEAN-ELECTION", "--json").stdout)
    assert j["id"] == "CTL-CLEAN-ELECTION" and j["spec"]["operator"] == "CTL_CLEAN_ELECTION"
    assert "ControllerElect" in j["spec"]["actions"] and j["guard"]
    assert {s["name"] for s in j["switches"]} == {"elect-ignores-liveness", "elect-compares-long-offsets"}
    assert [f["id"] for f in j["findings"]] == ["F-DLEDGER-STALE-VALIDATION"]


def test_every_entry_prints_and_names_tests_that_exist() -> None:
    """Every id prints; every switch's test id names a test function of the file and a parameter it runs."""
    from rmqha.cli.catalogue import entry
    from rmqha.cli.listings import layers

    sources = {f: (ROOT / f).read_text() for f in ("tests/test_bugs.py", "tests/test_progress.py")}
    live_switches = {b.name for b in B.BUGS.values() if b.kind in ("switch", "fidelity")
                     and BY_ID[b.invariant].kind == "progress"}
    for inv in BY_ID:
        e = entry(inv, layers(inv))
        assert e["statement"] and e["source"]
        assert e["spec"]["modelPredicate"] is not None or "why" in e["spec"]
        for s in e["switches"]:
            for t in s["tests"]:
                path, rest = t.split("::", 1)
                func, param = rest.rstrip("]").split("[")
                assert f"def {func}(" in sources[path], t
                assert param in (SCENARIOS if path.endswith("test_bugs.py") else live_switches), t
    progress = entry("LIVE-MASTER", layers("LIVE-MASTER"))
    assert progress["spec"]["liveness"] == ["L_MASTER_ELECTED"] and progress["settle"]["ms"] > 0
    below = entry("HA-CONTIGUOUS", layers("HA-CONTIGUOUS")) if "HA-CONTIGUOUS" in BY_ID else None
    if below is not None:
        assert below["spec"]["operator"] is None


def test_an_unknown_id_is_one_line_with_the_closest() -> None:
    p = _rmqha("invariants", "CTL-CLEAN-ELECTON")
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "CTL-CLEAN-ELECTION" in p.stderr, p.stderr
    p = _rmqha("invariants", "CTL-CLEAN-ELECTION", "--long")
    assert p.returncode == 2 and "--long" in p.stderr and p.stderr.count("\n") == 1
