"""The verdict matrix (``impl/sim/matrix.py``, ``rmqha findings --matrix``): the committed simulator verdicts are what
the simulator says now (a sample here, all of them under ``-m slow``), the real verdicts file is well formed and
covers every finding, every disagreement has its reason, the table fits 80 columns, and the checker of agreement
catches a disagreement."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from rmqha.impl import bugs as B
from rmqha.impl.findings import FINDINGS
from rmqha.impl.sim import matrix as M
from rmqha.impl.sim.tracefile import read_text

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "findings"
TRACES = DOCS / "traces"


def _rows() -> dict[str, dict[str, M.Cell]]:
    return M.matrix(M.load_sim(DOCS / "sim.json"), M.load_real(DOCS / "real.json"))


def test_real_verdicts_cover_every_finding_and_release():
    real = M.load_real(DOCS / "real.json")
    assert set(real["findings"]) == set(FINDINGS) | set(M.MODEL_FINDINGS)
    for fid, per in real["findings"].items():
        assert set(per) == set(B.RELEASES), fid
        for rel, r in per.items():
            assert r["reproduced"] <= r["runs"], (fid, rel)
            assert (r["verdict"] == M.REPRODUCED) == (r["reproduced"] > 0), (fid, rel)
            assert r["verdict"] != M.NOT_RUN or r["runs"] == 0, (fid, rel)
            if "fix" in r:
                assert set(r["fix"]) >= {"verdict", "runs"}


@pytest.mark.parametrize("fid", ["F-TRANSFER-EPOCH-STALE", "F-LOCAL-SHRINK-BEFORE-ACCEPT",
                                 "F-EPOCH-ENTRY-LOST-ON-RECONNECT"])
def test_committed_sim_verdicts_are_current(fid: str):
    """A sample: these three change verdict across releases (#9690, #9897, #9942)."""
    assert M.sim_verdicts(TRACES, [fid])[fid] == M.load_sim(DOCS / "sim.json")[fid]


@pytest.mark.slow
def test_every_committed_sim_verdict_is_current():
    assert M.sim_verdicts(TRACES) == M.load_sim(DOCS / "sim.json")


def test_the_release_changes_show_in_the_matrix():
    rows = _rows()
    reached = {fid: [rel for rel, c in cells.items() if c.sim == M.REACHED] for fid, cells in rows.items()}
    assert reached["F-TRANSFER-EPOCH-STALE"] == ["5.3.3"]
    assert reached["F-LOCAL-SHRINK-BEFORE-ACCEPT"] == ["5.4.0", "5.5.0", "5.5.1"]
    assert reached["F-SYNC-DELETES-EVERY-TOPIC"] == ["5.3.3", "5.3.4", "5.4.0"]
    assert reached["F-EPOCH-ENTRY-LOST-ON-RECONNECT"] == ["5.3.3", "5.3.4"]
    assert reached["F-TRANSFER-NEGATIVE-BATCH"] == ["5.3.4", "5.4.0", "5.5.0", "5.5.1"]
    assert all(c.sim == M.NA for fid in M.MODEL_FINDINGS for c in rows[fid].values())


def test_every_disagreement_has_a_reason_on_its_page():
    rows = _rows()
    assert M.unexplained(rows) == []
    for (fid, _), anchor in M.REASONS.items():
        page = (DOCS / f"{fid}.md").read_text().lower()
        assert anchor.replace("-", " ") in page.replace("-", " "), (fid, anchor)


def test_a_disagreement_without_a_reason_is_caught():
    rows = _rows()
    cell = rows["F-GAP-UNION"]["5.4.0"]
    assert cell.agree is True
    cell.real = M.NOT_REPRODUCED
    assert cell.agree is False and ("F-GAP-UNION", "5.4.0") in M.unexplained(rows)
    assert "**no reason written**" in M.markdown(rows)
    rows["F-GAP-UNION"]["5.3.4"].real = M.INCONCLUSIVE
    assert rows["F-GAP-UNION"]["5.3.4"].agree is None  # no verdict on one side: not compared


def test_the_table_fits_80_columns_without_splitting_ids():
    lines = M.text_table(_rows())
    assert all(len(line) <= 80 for line in lines)
    for fid in [*FINDINGS, *M.MODEL_FINDINGS]:
        assert any(line.startswith(fid + " ") for line in lines), fid


def test_the_restart_face_replays_and_its_fix_clears_it():
    """F-EPOCH-REBASE-ON-RESTART-restart: the real reproduction's schedule in the simulator (controller down, master
    killed and restarted, slaves cut from the controller, controller back): the slaves never rejoin."""
    from rmqha.models.campaign import run_header

    text = read_text(str(TRACES / "F-EPOCH-REBASE-ON-RESTART-restart.jsonl.gz"))
    header = json.loads(text.splitlines()[0])
    again = run_header(header)
    assert again.text == text
    assert again.violation is not None and again.violation.invariant == "LIVE-HA-TRANSFER"
    fixed = run_header(dict(header, bugs=sorted([*header["bugs"], B.FIX_KEEP_OWN_EPOCH_ON_RESTART])), record=False)
    assert fixed.violation is None


def test_the_command_prints_the_matrix_and_refuses_a_bad_file(tmp_path: Path):
    bad = tmp_path / "real.json"
    bad.write_text('{"findings": {"F-GAP-UNION": {"9.9.9": {"verdict": "reproduced"}}}}')
    p = subprocess.run([sys.executable, "-m", "rmqha", "findings", "--matrix", "--real", str(bad)],
                       capture_output=True, text=True, timeout=600)
    assert p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    p = subprocess.run([sys.executable, "-m", "rmqha", "findings", "--traces", str(tmp_path)],
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "--matrix" in p.stderr
