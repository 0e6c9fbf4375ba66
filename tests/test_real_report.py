"""The real run's report against runs whose truth is known (issue 30, item 2): recorded runs of RocketMQ 5.3.3
(``tests/data/real/run-kill-master*``: the safe profile, the master SIGKILLed and restarted; ``tests/data/real/
README.md`` says how they were recorded). The kill's time is the nemesis's record (``events/faults.jsonl``),
the election's the controller's NOTIFY_BROKER_ROLE_CHANGED as the proxy passed it on (``events/proxy.jsonl``). The
failover table and the timeline must both show them: the killed master never master after its kill, the new one
not master before the controller named it, the SyncStateSet changing when the controller said so."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from rmqha.impl.sim.report import timeline_data

from rmqha.real import check as K
from rmqha.real.report import merged_trace, render, state_events
from rmqha.real.spec import load

DATA = Path(__file__).resolve().parent / "data" / "real"
RUNS = {"run-kill-master": ("b2", "b3", 50_029), "run-kill-master-before-at": ("b3", "b2", 59_379)}


@pytest.fixture(scope="module", params=sorted(RUNS))
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("run") / request.param
    shutil.copytree(DATA / request.param, d)
    for gz in d.rglob("*.gz"):
        gz.with_suffix("").write_bytes(gzip.decompress(gz.read_bytes()))
    spec = load(d)
    faults = [json.loads(x) for x in (d / "events" / "faults.jsonl").read_text().splitlines()]
    snaps = K.read_snapshots(spec)
    frames = K.read_frames(spec)
    h = K.read_history(spec)
    kill = next(f for f in faults if f["do"] == "crash")
    before = [s for s in snaps if s.t - spec.created_ms < kill["t"] and s.leader is not None]
    lead = before[-1].leader
    assert lead is not None
    context = [{"recipe": "kill-master", "t": kill["t"] - 50, "master": lead.master,
                "masterEpoch": lead.master_epoch, "sss": [lead.ids[i] for i in lead.sss], "leader": lead.node,
                "tDown": kill["t"]}]
    fo = K.failovers(spec, faults, context, snaps, h, frames)
    result = {"faults": faults, "violations": [], "valid": True, "counts": {"sent": len(h.sends),
              "acked": len(h.acked), "errors": 0, "seen": 0}, "notes": [], "profile": "safe", "recipes":
              ["kill-master"], "duration": 20, "wallSeconds": 0, "finalMaster": None, "failovers": fo,
              "checked": {}, "statuses": {}}
    trace = merged_trace(spec, result, h, snaps, frames)
    notify = [f for f in frames if f.get("name") == "NOTIFY_BROKER_ROLE_CHANGED" and f["t"] > kill["t"]]
    return {"name": request.param, "truth": RUNS[request.param], "spec": spec, "kill": kill,
            "restart": next(f for f in faults if f["do"] == "restart"), "fo": fo,
            "trace": trace, "notify": notify, "result": result, "old": lead.master, "snaps": snaps,
            "frames": frames}


def test_the_failover_is_the_controllers_notification_after_the_recorded_kill(run: dict[str, Any]) -> None:
    (row,) = run["fo"]
    first = run["notify"][0]
    old, new, at = run["truth"]
    assert run["old"] == old and row["oldMaster"] == old and row["at"] == run["kill"]["t"] == at
    assert row["newMaster"] == run["spec"].node_of_addr(first["ext"]["masterAddress"]) == new
    assert row["electedAfterMs"] == first["t"] - run["kill"]["t"] and 0 < row["electedAfterMs"] < 1000
    assert row["electedSeenBy"].startswith("NOTIFY_BROKER_ROLE_CHANGED") and row["newMasterInSss"] is True
    recorded = json.loads((DATA / run["name"] / "result-excerpt.json").read_text())["failovers"][0]
    assert (recorded["newMaster"], recorded["electedAfterMs"]) == (row["newMaster"], row["electedAfterMs"])


def test_the_timeline_shows_the_kill_and_the_election_where_they_happened(run: dict[str, Any]) -> None:
    d = timeline_data(run["trace"])
    kill, back = run["kill"]["t"], run["restart"]["t"]
    elected = run["notify"][0]["t"]
    old, new, _ = run["truth"]
    killed = d["roles"][old]
    assert not [s for s in killed if s[2] == "master" and s[1] > kill], killed  # never master after its kill
    assert any(s[0] == kill and s[1] == back and s[2] == "down" for s in killed), killed
    became = [s for s in d["roles"][new] if s[2] == "master"]
    assert became and became[0][0] >= elected and became[0][3] == 2, d["roles"][new]  # not before it was named
    # the SyncStateSet bars change when the controller said so: the killed master leaves it at the notification
    assert any(bar[1] == elected for bar in d["sss"][old]), d["sss"][old]
    assert any(bar[0] <= elected <= bar[1] for bar in d["sss"][new]), d["sss"][new]


def test_each_admin_view_is_placed_when_its_answer_came(run: dict[str, Any]) -> None:
    """A round of the admin API waits on a dead node's calls for seconds; each view is placed at its own answers'
    time, which for the killed broker is before its kill (a dead process answers nothing)."""
    spec = run["spec"]
    old, new, _ = run["truth"]
    events = state_events(spec, run["snaps"], run["frames"])
    views = [t for t, o in events if o["k"] == "brk.state" and o["n"] == old]
    assert not [t for t in views if run["kill"]["t"] < t < run["restart"]["t"]], views
    rounds = [s for s in run["snaps"] if s.t - spec.created_ms > run["kill"]["t"] - 1000]
    slow = [s for s in rounds if s.t - s.t0 > 1000]
    assert slow  # some round around the kill did wait on the dead broker's calls
    ctl = [(t, o) for t, o in events if o["k"] == "ctl.state"]
    assert any(t == run["notify"][0]["t"] and o["master"] == new for t, o in ctl)


def test_the_report_shows_the_same_times(run: dict[str, Any]) -> None:
    (row,) = run["fo"]
    page = render(run["spec"], run["result"], run["trace"])
    assert f"<td>kill-master</td><td>{row['at'] / 1000:.2f} s</td><td>{run['truth'][0]}</td>" in page
    assert f"<td>{row['electedAfterMs'] / 1000:.2f} s</td>" in page and "<svg" in page
