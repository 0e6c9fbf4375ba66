"""F-TRUNCATED-TAIL-RESURRECTS on a real build: a truncation leaves the cut messages in the file; a crash and a
restart read them back (STORE-NO-RESURRECT). Upstream: apache/rocketmq#10666 (open; PR #10816)."""

from __future__ import annotations

import re
import time

from ..lab import Lab
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro

TOPIC = "ReproTail"
RECOVER = re.compile(r"message store recover end, and the max phy offset = (\d+)")


@repro("F-TRUNCATED-TAIL-RESURRECTS",
       title="Recovery after a crash reads back bytes a truncation had cut",
       invariant="STORE-NO-RESURRECT",
       how="the master M is cut at the proxy from the controller and the other brokers (not from the producer), "
           "which then sends it 5 messages (M appends them; no slave acks them); once the controller has elected "
           "another master the cut heals, M becomes a slave and truncates to the new master's epoch start; M is "
           "SIGKILLed at once and restarted; its store log says where its recovery ended",
       expect={"5.3.3": "present (MappedFileQueue.truncateDirtyFiles does not clear the file)",
               "5.4.0": "present (no upstream change)", "5.5.0": "present (no upstream change)"},
       minutes=4.0)
def truncated_tail(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None
    others = [b for b in lab.spec.brokers if b != m]
    lab.create_topic(TOPIC, 1)
    base = lab.produce(TOPIC, 20, "a-")
    if not any(r.get("status") == "SEND_OK" for r in base):
        return Verdict(INCONCLUSIVE, why="no message was acknowledged before the fault")
    end0 = lab.wait(lambda x: x.brokers.get(m) is not None and x.brokers[m].max_offset is not None, 30,
                    f"{m}'s commit-log end").brokers[m].max_offset
    lab.partition([m], [*lab.spec.controllers, *others])
    lost = lab.produce(TOPIC, 5, "b-", interval_ms=0)
    grown = lab.wait(lambda x: ((x.brokers.get(m) and x.brokers[m].max_offset) or 0) > (end0 or 0), 20,
                     f"{m} appending the messages its slaves never get")
    tail_end = grown.brokers[m].max_offset
    new = lab.wait(lambda x: x.leader is not None and x.leader.master not in (None, m), 60,
                   "the controller electing another master")
    lab.note(f"{new.leader.master if new.leader else '?'} elected; {m} holds bytes to {tail_end} nobody else has")
    lab.heal()
    cut = lab.try_wait(lambda x: x.brokers.get(m) is not None and x.brokers[m].ok
                       and (x.brokers[m].max_offset or 0) < (tail_end or 0), 90)
    if cut is None:
        return Verdict(INCONCLUSIVE, why=f"{m} never truncated below {tail_end} within 90 s of the heal")
    logical = cut.brokers[m].max_offset
    assert logical is not None
    files = lab.files()
    stale = files.stale.get(m, {})
    lab.note(f"{m} truncated to {logical}; its files still hold whole messages to {stale.get('filesEnd')}")
    lab.kill(m, "right after its truncation")
    lab.restart(m)
    lines = []
    end_t = time.monotonic() + 90
    while not lines and time.monotonic() < end_t:
        lines = lab.broker_log(m, RECOVER.pattern)[1:]  # the first line is the first start's
        time.sleep(1)
    if not lines:
        return Verdict(INCONCLUSIVE, why=f"{m}'s store log has no recovery line after its restart")
    recovered = int(RECOVER.search(lines[-1]).group(1))  # type: ignore[union-attr]
    evidence = [f"{m} ended at {logical} (admin: commitLogMaxOffset) when it was SIGKILLed, right after its "
                f"truncation from {tail_end}",
                f"{m}'s files then held whole messages to {stale.get('filesEnd')} "
                f"({stale.get('messagesPast')} past {logical})",
                f"{m}'s store log after the restart: {lines[-1].strip()[:200]}",
                f"the producer's sends to {m} while cut: "
                + ", ".join(f"{r['key']} {r.get('status')}" for r in lost)]
    data = {"master": m, "tailEnd": tail_end, "logicalEnd": logical, "recovered": recovered, "stale": stale}
    if recovered > logical:
        return Verdict(REPRODUCED, evidence, f"{m} recovered a log ending at {recovered}, past {logical} where it "
                                             "ended when its process was killed", data)
    return Verdict(NOT_REPRODUCED, evidence, f"{m} recovered to {recovered}, not past {logical}", data)
