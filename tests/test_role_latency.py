"""BRK-ROLE-LATENCY's exceptions (``impl/invariants/broker.py``): an election nobody notifies is not judged.

The check's switch and scenario are in ``tests/test_bugs.py`` (``elect-request-not-notified``). Here: the run that
showed an election no ControllerManager notifies because the controller process that logged the request died before
the entry committed (``rmqha simulate --seed 23 --fix all`` with 48 KiB files, file boundaries and a replica that
joins at 20 s; found on the branch of issue 21's ``last-file`` profile): its restart commits the entry, the
requester's connection is gone, and the members learn the role from ``schedulingSyncBrokerMetadata`` (3.2 s later
here, past the notification bound)."""

from __future__ import annotations

import json
from pathlib import Path

from rmqha.impl.sim.runner import run_header
from rmqha.impl.trace import parse

DATA = Path(__file__).resolve().parent / "data" / "sim"


def test_an_election_logged_by_a_controller_process_that_died_is_not_judged() -> None:
    header = json.loads((DATA / "BRK-ROLE-LATENCY-restart-23.json").read_text())
    r = run_header(header)
    assert r.violation is None, r.violation
    _, lines, _ = parse(r.text or "")
    restarts = [e["t"] for e in lines if e.get("ev") == "act" and e["act"].get("do") == "restart"
                and e["act"].get("node") == "ctl"]
    late = [(e["t"], o) for e in lines for o in e.get("obs", []) if o.get("k") == "ctl.apply"
            and o["event"].get("type") == "ElectMaster" and o["event"].get("newMasterElected")
            and any(o["ctx"].get("validatedAt", e["t"]) < t <= e["t"] for t in restarts)]
    assert late  # the case is in the run: an election validated before a restart, applied after it
