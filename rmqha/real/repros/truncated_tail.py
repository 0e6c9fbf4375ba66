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
       how="a producer writes to the master M; M is cut at the proxy from the controller and the other brokers "
           "(not from the producer); once M's log is ahead of every other broker's the producer stops; the "
           "controller elects another master N; the cut heals, M becomes N's slave and truncates to N's epoch "
           "start; M is SIGKILLed at once and restarted; its store log says where its recovery ended",
       expect={"5.3.3": "present (MappedFileQueue.truncateDirtyFiles does not clear the file)",
               "5.4.0": "present (no upstream change)", "5.5.0": "present (no upstream change)"},
       minutes=4.0)
def truncated_tail(lab: Lab) -> Verdict:
    s = lab.whole()
    m = s.master
    assert m is not None
    others = [b for b in lab.spec.brokers if b != m]
    lab.create_topic(TOPIC, 1)
    lab.start_producer(TOPIC, "a-", interval_ms=50, timeout_ms=400)  # unacked sends give up fast: more of them
    lab.wait(lambda x: bool(x.brokers.get(m)) and (x.brokers[m].max_offset or 0) > 2000, 60, "the first writes")
    lab.partition([m], [*lab.spec.controllers, *others])
    cut_at = int(time.time() * 1000)
    ahead = lab.try_wait(lambda x: x.t0 > cut_at + 2000 and all(x.brokers.get(b) is not None and x.brokers[b].ok
                                                                for b in lab.spec.brokers)
                         and (x.brokers[m].max_offset or 0) > max(x.brokers[b].max_offset or 0 for b in others) + 1000,
                         30)
    sends = lab.stop_producer()
    if ahead is None:
        return Verdict(INCONCLUSIVE, why=f"{m}'s log never got ahead of the others' while it was cut")
    new = lab.wait(lambda x: x.leader is not None and x.leader.master not in (None, m), 60,
                   "the controller electing another master")
    n = new.leader.master if new.leader else None
    assert n is not None
    now = lab.fresh()
    tail_end = now.brokers[m].max_offset or 0
    start_n = max((st for _, st, _ in now.brokers[n].epochs), default=0) if n in now.brokers else 0
    lab.note(f"{n} elected, its epoch starting at {start_n}; {m} holds bytes to {tail_end}")
    if tail_end <= start_n:
        return Verdict(INCONCLUSIVE, why=f"{m} ends at {tail_end}, not past {n}'s new epoch at {start_n}: nothing "
                                         "for it to truncate")
    lab.heal()
    cut = lab.try_wait(lambda x: x.brokers.get(m) is not None and x.brokers[m].ok
                       and (x.brokers[m].max_offset or 0) < tail_end, 90)
    if cut is None:
        return Verdict(INCONCLUSIVE, why=f"{m} never truncated below {tail_end} within 90 s of the heal")
    logical = cut.brokers[m].max_offset
    assert logical is not None
    stale = lab.files().stale.get(m, {})
    lab.note(f"{m} truncated to {logical}; its files still hold whole messages to {stale.get('filesEnd')}")
    lab.kill(m, "right after its truncation")
    lab.restart(m)
    lines: list[str] = []
    end_t = time.monotonic() + 90
    while len(lines) < 2 and time.monotonic() < end_t:
        lines = lab.broker_log(m, RECOVER.pattern)  # one line per start: the second is the restart's
        time.sleep(1)
    if len(lines) < 2:
        return Verdict(INCONCLUSIVE, why=f"{m}'s store log has no recovery line for its restart")
    found = RECOVER.search(lines[-1])
    assert found is not None
    recovered = int(found.group(1))
    cut_sends = [r for r in sends if r.get("addr", "").startswith(lab.spec.host(m).front)
                 and r.get("status") != "SEND_OK"]
    evidence = [f"{n} was elected master; its epoch starts at {start_n}; {m} held bytes to {tail_end}",
                f"{m} truncated to {logical} (admin: commitLogMaxOffset) and was SIGKILLed right after",
                (f"{m}'s files then held whole messages to {stale.get('filesEnd')} ({stale.get('messagesPast')} "
                 f"messages past {logical})" if stale else f"{m}'s files then held no whole message past {logical}"),
                f"{m}'s store log after the restart: {lines[-1].strip()[:200]}",
                f"the producer's unacknowledged sends to {m} while it was cut: "
                + (", ".join(f"{r['key']} {r.get('status')} {str(r.get('error', ''))[:40]}" for r in cut_sends)
                   or "none")]
    data = {"master": m, "newMaster": n, "tailEnd": tail_end, "logicalEnd": logical, "recovered": recovered,
            "stale": stale}
    if recovered > logical:
        return Verdict(REPRODUCED, evidence, f"{m} recovered a log ending at {recovered}, past {logical} where it "
                                             "ended when its process was killed", data)
    return Verdict(NOT_REPRODUCED, evidence, f"{m} recovered to {recovered}, not past {logical}", data)
