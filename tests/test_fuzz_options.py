"""``rmqha fuzz`` options, without Spark: ``--seeds N`` and ``--seeds A-B``, and a resumed campaign saying so (and a
different campaign refused) before a session starts."""

from __future__ import annotations

from pathlib import Path

import pytest
from rmqha.spark_fuzz.campaign import journaled_runs
from rmqha.spark_fuzz.journal import Journal

import rmqha.cli.fuzz as cli_fuzz
from rmqha.cli import main, parser


class SparkReached(BaseException):
    """The Spark session was about to start (the step after every check)."""


def _spark(*args: object, **kwargs: object) -> None:
    raise SparkReached


def options(*argv: str) -> cli_fuzz.CampaignOptions:
    p, _ = parser()
    return cli_fuzz.campaign_options(p.parse_args(["fuzz", *argv]))


def test_seeds_is_a_count_or_a_range(tmp_path: Path) -> None:
    out = str(tmp_path / "f")
    count = options("--seeds", "7", "--out", out)
    assert (count.seed_start, count.seeds, count.budget) == (1, 7, None)
    assert (options("--seeds", "7", "--seed-start", "40", "--out", out).seed_start) == 40
    span = options("--seeds", "5-9", "--out", out)
    assert (span.seed_start, span.seeds, span.budget) == (5, 5, None)
    one = options("--seeds", "3-3", "--out", out)
    assert (one.seed_start, one.seeds) == (3, 1)
    assert options("--out", out).budget == cli_fuzz.DEFAULT_BUDGET


def test_the_help_says_both_forms(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["fuzz", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--seeds N|A-B" in text and "N runs per arm" in text and "seeded A..B" in text


@pytest.fixture
def no_spark(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_fuzz, "java_status", lambda: (True, "java 17"))
    monkeypatch.setattr(cli_fuzz, "spark_session", _spark)


def test_a_resumed_campaign_says_it_resumed(tmp_path: Path, no_spark: None,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "f")
    argv = ["fuzz", "--seeds", "4", "--out", out, "--steps", "300"]
    opts = options(*argv[1:])
    assert journaled_runs(opts) is None
    with pytest.raises(SparkReached):
        main(argv)
    assert "resuming" not in capsys.readouterr().err  # a new campaign
    journal = Journal(out)
    journal.append({"type": "start", "identity": opts.identity()})
    journal.append({"type": "plan", "batch": 0, "items": []})
    journal.append({"type": "merged", "batch": 0, "elapsed": 1.0, "rows": [{}, {}, {}]})
    assert journaled_runs(opts) == 3
    with pytest.raises(SparkReached):
        main(argv)
    assert f"resuming campaign in {out}: 3 runs done" in capsys.readouterr().err


def test_a_different_campaign_is_refused_before_spark(tmp_path: Path, no_spark: None,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "f")
    Journal(out).append({"type": "start", "identity": options("--seeds", "4", "--out", out).identity()})
    assert main(["fuzz", "--seeds", "4", "--out", out, "--bug", "unclean-election"]) == 2
    err = capsys.readouterr().err
    assert "holds a different campaign (it differs in: bugs" in err and err.count("\n") == 1
