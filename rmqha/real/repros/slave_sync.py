"""The slave's metadata sync on a real build: F-SYNC-DELETES-EVERY-TOPIC (a positive control: apache/rocketmq#9984)
and F-TOPIC-CONFIG-LOST-ON-FAILOVER (QUEUE-ACKED-READABLE both).

A topic's configuration lives in each broker's ``TopicConfigManager`` (``store/config/topics.json``), not in the
commit log: a slave learns it only from ``SlaveSynchronize.syncTopicConfig``, which
``ReplicasManager.handleSlaveSynchronize`` runs when 10 s have passed since the last ``syncAll`` (checked every
3 s). Both reproductions use one master and one slave (``[cluster] brokers = 2``), so that the broker a failover
elects is known in advance: the slave the scenario has put in the state the finding is about.

Helpers that ``lab.py`` lacks, kept here: ``create_topics_batch`` (many topics in one request, through RocketMQ's
own ``mqadmin updateTopicList``: the Java tool's ``admin update-topic`` takes one topic per JVM), ``read_topics``
and ``TopicsWatch`` (a broker's topics.json, read while the broker rewrites it), ``LogTail`` (new lines of a
RocketMQ log, incrementally), ``start_consumer`` (a consumer in the background) and ``classify_send`` (what a send
result says about the topic's config on the broker).
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...impl.sim.report import members
from .. import maven, netns
from ..clients import Client, Tail
from ..files import read_consume_queues
from ..lab import Lab, LabError
from ..observe import TOOL_JVM
from ..repro import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED, Verdict, repro

MQADMIN = "org.apache.rocketmq.tools.command.MQAdminStartup"
TOPIC_NOT_EXIST = 17  # ResponseCode.TOPIC_NOT_EXIST
SYNC_LINE = "Update slave topic config from master"
OTHER_TOPICS = 2000  # the kit's fidelity profile: [workload] other_topics = 2000


# --------------------------------------------------------------------------------------------- helpers


def mqadmin(lab: Lab, *args: str, timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """RocketMQ's own command line (``mqadmin``: ``MQAdminStartup``) in the run's hub namespace, where every node's
    front address is reachable, with the version's classpath."""
    inst = maven.fetch(lab.version)
    argv = [*netns.exec_prefix(lab.spec.run, "hub"), "java", *TOOL_JVM, f"-Duser.home={lab.spec.dir / 'clients'}",
            "-cp", inst.tool_classpath, MQADMIN, *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)


def topic_batch(names: list[str], queues: int = 1) -> list[dict[str, Any]]:
    """``TopicConfig`` objects as ``mqadmin updateTopicList -f`` reads them (perm 6: read and write)."""
    return [{"topicName": n, "readQueueNums": queues, "writeQueueNums": queues, "perm": 6} for n in names]


def create_topics_batch(lab: Lab, node: str, names: list[str], queues: int = 1) -> float:
    """Create ``names`` on ``node`` in one request (``mqadmin updateTopicList -b``: RequestCode
    UPDATE_AND_CREATE_TOPIC_LIST, ``TopicConfigManager.updateTopicConfigList``: one persist, one registration);
    waits until the broker's topics.json holds them. Seconds taken."""
    path = lab.spec.dir / "clients" / f"topics-batch-{node}.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(topic_batch(names, queues)), encoding="utf-8")
    t0 = time.monotonic()
    proc = mqadmin(lab, "updateTopicList", "-b", lab.spec.front_addr(node), "-f", str(path))
    if "success" not in proc.stdout:
        tail = (proc.stdout + proc.stderr).strip().splitlines()[-3:]
        raise LabError(f"mqadmin updateTopicList on {node}: {' | '.join(tail)[:300]}")
    end = time.monotonic() + 60
    while time.monotonic() < end:
        t = read_topics(lab.spec.store_dir(node) / "config" / "topics.json")
        if t is not None and all(n in t for n in (names[0], names[-1])):
            took = time.monotonic() - t0
            lab.note(f"{len(names)} topics created on {node} in one updateTopicList request ({took:.1f} s)")
            return took
        time.sleep(0.5)
    raise LabError(f"{node}'s topics.json never held the {len(names)} topics of updateTopicList")


def read_topics(path: Path) -> dict[str, dict[str, Any]] | None:
    """A topics.json's ``topicConfigTable``, or None when the file is absent or half written (RocketMQ 5.3.3's
    ``MixAll.string2File`` rewrites it in place)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        d = json.loads(data)
    except ValueError:
        return None
    table = d.get("topicConfigTable") if isinstance(d, dict) else None
    return table if isinstance(table, dict) else None


def read_topics_as_loaded(config_dir: Path) -> tuple[dict[str, dict[str, Any]] | None, str]:
    """What ``ConfigManager.load`` would take from ``config_dir``: topics.json, or topics.json.bak when topics.json
    is empty or does not parse (a SIGKILL during 5.3.3's in-place rewrite leaves it empty); and which file."""
    path = config_dir / "topics.json"
    t = read_topics(path)
    if t is not None:
        return t, "topics.json"
    size = path.stat().st_size if path.is_file() else None
    why = "absent" if size is None else ("empty" if size == 0 else f"{size} bytes that do not parse")
    return read_topics(config_dir / "topics.json.bak"), f"topics.json.bak (topics.json {why})"


LOADED = re.compile(r"load exist local topic, TopicConfig \[topicName=([^,\]]+),")


@dataclass
class TopicsLook:
    t: int  # lab time (ms) of the read
    complete: bool
    count: int  # topic entries
    has: bool  # the watched topic is in it
    data: bytes = field(repr=False, default=b"")


class TopicsWatch:
    """A broker's topics.json, read as often as called: cheap byte checks, a JSON parse only to confirm an absence
    (the file is rewritten after every delete of the sync loop: hundreds of kilobytes, many times a second)."""

    def __init__(self, lab: Lab, node: str, topic: str) -> None:
        self.lab = lab
        self.node = node
        self.path = lab.spec.store_dir(node) / "config" / "topics.json"
        self.needle = f'"topicName":"{topic}"'.encode()
        self.topic = topic
        self.reads = 0
        self.absent: list[TopicsLook] = []  # confirmed absences, in order
        self.max_count = 0
        self.min_count_absent: int | None = None

    def look(self) -> TopicsLook | None:
        try:
            data = self.path.read_bytes()
        except OSError:
            return None
        self.reads += 1
        flat = data.replace(b" ", b"").replace(b"\n", b"").replace(b"\t", b"")
        count = flat.count(b'"topicName":')
        has = self.needle in flat
        complete = flat.endswith(b"}") and count > 0
        if complete and not has:
            table = read_topics(self.path) if data else None
            complete = table is not None and self.topic not in table
            if table is not None:
                count = len(table)
        lk = TopicsLook(self.lab.now(), complete, count, has, data)
        if complete:
            self.max_count = max(self.max_count, count)
            if not has:
                self.absent.append(TopicsLook(lk.t, True, count, False))
                self.min_count_absent = count if self.min_count_absent is None else min(self.min_count_absent, count)
        return lk

    def keep(self, lk: TopicsLook, name: str) -> Path:
        """Keep what was read as evidence (``evidence/NAME``)."""
        d = self.lab.spec.dir / "evidence"
        d.mkdir(exist_ok=True)
        p = d / name
        p.write_bytes(lk.data)
        return p


class LogTail:
    """New lines of one of a node's RocketMQ logs since the last call (the file survives restarts: it is appended)."""

    def __init__(self, lab: Lab, node: str, name: str = "broker.log") -> None:
        self.path = lab.spec.rocketmq_log_dir(node) / name
        self.pos = 0
        self.rest = b""
        self.skip()

    def skip(self) -> None:
        """Start from the file's current end."""
        try:
            self.pos = self.path.stat().st_size
        except OSError:
            self.pos = 0
        self.rest = b""

    def lines(self) -> list[str]:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.pos)
                data = f.read()
        except OSError:
            return []
        self.pos += len(data)
        parts = (self.rest + data).split(b"\n")
        self.rest = parts.pop()
        return [p.decode("utf-8", errors="replace") for p in parts]


def start_consumer(lab: Lab, topic: str, group: str, interval_ms: int = 500) -> Client:
    """The Java tool's pull consumer in the background (every queue of the route from offset 0, its pull errors
    with their response codes): ``clients/consumer-GROUP.jsonl``."""
    c = Client(lab.spec, f"consumer-{group}", ["consume", "--namesrv", lab.spec.namesrv_addr, "--topic", topic,
                                               "--group", group, "--interval-ms", str(interval_ms),
                                               "--deadline-ms", "1500000"])
    lab.clients.append(c)
    return c


def classify_send(r: dict[str, Any]) -> str:
    """``ok`` (SEND_OK), ``no-topic`` (the broker answered TOPIC_NOT_EXIST), ``no-route`` (the client found no
    route), ``queue`` (the broker refused the queue id: 'queueId ... is illegal'), or ``other``."""
    if r.get("status") == "SEND_OK":
        return "ok"
    err = str(r.get("error", ""))
    if r.get("code") == TOPIC_NOT_EXIST or "not exist" in err:
        return "no-topic"
    if "No route info" in err:
        return "no-route"
    if "queueId" in err and "illegal" in err:
        return "queue"
    return "other"


def short(r: dict[str, Any], lab: Lab) -> str:
    """One send result as an evidence line."""
    node = lab.spec.node_of_addr(str(r.get("addr", ""))) or r.get("addr")
    t = int(r.get("t", 0)) - lab.spec.created_ms
    if r.get("status") == "SEND_OK":
        return f"{t / 1000:.1f}s {r.get('key')} -> {node} queue {r.get('queue')}: SEND_OK"
    return f"{t / 1000:.1f}s {r.get('key')} -> {node}: code {r.get('code')} {str(r.get('error', ''))[:90]}"


def lab_ms(lab: Lab, wall_ms: int) -> int:
    return wall_ms - lab.spec.created_ms


# --------------------------------------------------------------------------------------------- F-SYNC-DELETES


SYNC_TOPIC = "ReproSync"


@dataclass
class Armed:
    """What the wait for a slave inside its delete loop found."""

    absent: TopicsLook | None  # the slave's topics.json lacking the topic, mid-loop (None: never seen)
    syncs: int  # sync lines the slave logged meanwhile
    deletes: int  # 'delete topic config OK' lines for the topic meanwhile
    all_deletes: int  # 'delete topic config OK' lines for any topic meanwhile
    waited_s: float


def arm(lab: Lab, watch: TopicsWatch, log: LogTail, topic: str, *, syncs_without: int = 2,
        cap_s: float = 180) -> Armed:
    """Poll the slave's topics.json until a complete one lacks ``topic`` (the slave is inside its delete loop, past
    the topic): fire then. Give up once the slave has logged ``syncs_without`` syncs that never took it out (a
    build whose sync does not delete it), or after ``cap_s``."""
    t0 = time.monotonic()
    syncs = deletes = all_deletes = 0
    pat = f"topicName={topic},"
    while time.monotonic() - t0 < cap_s:
        for ln in log.lines():
            if SYNC_LINE in ln:
                syncs += 1
            elif "delete topic config OK" in ln:
                all_deletes += 1
                if pat in ln:
                    deletes += 1
        lk = watch.look()
        if lk is not None and lk.complete and not lk.has:
            return Armed(lk, syncs, deletes, all_deletes, time.monotonic() - t0)
        if syncs >= syncs_without and deletes == 0:
            break
        time.sleep(0.05)
    return Armed(None, syncs, deletes, all_deletes, time.monotonic() - t0)


@dataclass
class Phase:
    name: str
    verdict: str
    why: str
    evidence: list[str] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)


def _sends_after(results: list[dict[str, Any]], lab: Lab, node: str, t_wall: int) -> list[dict[str, Any]]:
    front = lab.spec.host(node).front
    return [r for r in results if int(r.get("t", 0)) >= t_wall and str(r.get("addr", "")).startswith(front + ":")]


def _wait_master(lab: Lab, node: str, timeout: float) -> int | None:
    """Wall ms of the first snapshot, taken after this call, in which the controller names ``node`` master and
    ``node`` itself answers as a master (the controller keeps naming a dead master until it elects another; None:
    not within ``timeout``)."""
    since = int(time.time() * 1000)

    def up(x: Any) -> bool:
        b = x.brokers.get(node)
        return x.t0 >= since and x.master == node and b is not None and b.ok and b.role == "MASTER"

    s = lab.try_wait(up, timeout)
    return s.t0 if s is not None else None


def _watch_until(watch: TopicsWatch, pred: Callable[[TopicsLook], bool], timeout: float) -> TopicsLook | None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        lk = watch.look()
        if lk is not None and lk.complete and pred(lk):
            return lk
        time.sleep(0.1)
    return None


def _phase_elected(lab: Lab, m: str, sl: str, prod: Tail, cons: Tail, sends: list[dict[str, Any]],
                   pulls: list[dict[str, Any]]) -> Phase:
    """Phase A: the master killed while the slave is inside its loop, past the topic; the slave elected."""
    watch = TopicsWatch(lab, sl, SYNC_TOPIC)
    log = LogTail(lab, sl)
    got = _watch_until(watch, lambda lk: lk.count >= OTHER_TOPICS and lk.has, 90)
    if got is None:
        return Phase("A", INCONCLUSIVE, f"{sl}'s topics.json never held the master's {OTHER_TOPICS} topics "
                                        "(its first sync did not happen within 90 s)")
    lab.note(f"{sl} (slave) holds {got.count} topics: its first sync copied the master's table")
    log.skip()
    a = arm(lab, watch, log, SYNC_TOPIC)
    fired_inside = a.absent is not None
    if fired_inside:
        assert a.absent is not None
        kept = watch.keep(a.absent, f"A-{sl}-topics-mid-loop.json")
        lab.note(f"{sl}'s topics.json lacks {SYNC_TOPIC} with {a.absent.count} topics left (mid-loop): kill {m}",
                 file=str(kept))
    else:
        lab.note(f"{sl} logged {a.syncs} syncs and its topics.json never lacked {SYNC_TOPIC} "
                 f"({a.deletes} deletes of it logged): kill {m} anyway")
    t_kill = int(time.time() * 1000)
    lab.kill(m, "the slave is inside its topic sync" if fired_inside else "the failover, as on the other builds")
    t_el = _wait_master(lab, sl, 60)
    if t_el is None:
        return Phase("A", INCONCLUSIVE, f"the controller did not elect {sl} within 60 s of {m}'s kill")
    lab.note(f"{sl} elected master ({(t_el - t_kill) / 1000:.1f} s after the kill)")
    # the new master, as clients see it, until it serves the topic (or 90 s)
    look_el = watch.look()
    back: TopicsLook | None = None
    ok_after: dict[str, Any] | None = None
    end = time.monotonic() + 90
    while time.monotonic() < end:
        sends.extend(d for d in prod.read() if d.get("k") == "send-result")
        pulls.extend(cons.read())
        lk = watch.look()
        if lk is not None and lk.complete and lk.has and back is None and lab.now() > lab_ms(lab, t_el):
            back = lk
        ok_after = next((r for r in _sends_after(sends, lab, sl, t_el) if classify_send(r) == "ok"), None)
        if ok_after is not None and back is not None:
            break
        time.sleep(0.2)
    after = _sends_after(sends, lab, sl, t_el)
    refused = [r for r in after if classify_send(r) == "no-topic"]
    perrs = [d for d in pulls if d.get("k") == "pull-error" and int(d.get("t", 0)) >= t_el
             and (d.get("code") == TOPIC_NOT_EXIST or "not exist" in str(d.get("error", "")))]
    deletes_after = [ln for ln in lab.broker_log(sl, r"delete topic config OK")
                     if f"topicName={SYNC_TOPIC}," in ln]
    # what S logged from the kill on: its loop went on (handleSlaveSynchronize's cancel(false) does not stop it)
    later = log.lines()
    later_deletes = sum(1 for ln in later if "delete topic config OK" in ln)
    later_end = next((ln for ln in later if SYNC_LINE in ln), None)
    ev = [f"A: {sl}'s topics.json "
          + (f"lacked {SYNC_TOPIC} mid-loop, {a.absent.count} topics left in it (kept: "
             f"evidence/A-{sl}-topics-mid-loop.json); {m} SIGKILLed then" if a.absent else
             f"never lacked {SYNC_TOPIC} over {a.syncs} syncs ({watch.reads} reads); {m} SIGKILLed")]
    ev.append(f"A: {sl} elected master {(t_el - t_kill) / 1000:.1f} s after the kill; its topics.json at the election: "
              + (f"{look_el.count} topics, {SYNC_TOPIC} {'present' if look_el.has else 'ABSENT'}"
                 if look_el and look_el.complete else "being rewritten"))
    ev += [f"A: send {short(r, lab)}" for r in refused[:3]]
    if refused:
        first_t, last_t = (lab_ms(lab, int(r["t"])) / 1000 for r in (refused[0], refused[-1]))
        ev.append(f"A: {len(refused)} sends answered TOPIC_NOT_EXIST by {sl} as master, from {first_t:.1f}s to "
                  f"{last_t:.1f}s")
    if perrs:
        ev.append(f"A: {len(perrs)} pull errors TOPIC_NOT_EXIST after the election, e.g. queue {perrs[0].get('queue')}"
                  f": {str(perrs[0].get('error'))[:90]}")
    if back is not None and (fired_inside or (look_el is not None and look_el.complete and not look_el.has)):
        ev.append(f"A: {sl}'s topics.json holds {SYNC_TOPIC} again at {back.t / 1000:.1f}s "
                  f"({(back.t - lab_ms(lab, t_el)) / 1000:.1f} s after the election): its put phase")
    if ok_after is not None:
        ev.append(f"A: first SEND_OK by {sl} as master: {short(ok_after, lab)}")
    if deletes_after:
        ev.append(f"A: {sl}'s broker.log: {deletes_after[-1][:190]}")
    if later_deletes or later_end:
        ev.append(f"A: from the kill on, {sl}'s broker.log has {later_deletes} more 'delete topic config OK' lines, "
                  "then " + (later_end[:110] if later_end else "no sync line yet"))
    data = {"master": m, "slave": sl, "killAt": lab_ms(lab, t_kill), "electedAt": lab_ms(lab, t_el),
            "absentSeen": a.absent is not None, "absentCount": a.absent.count if a.absent else None,
            "maxCount": watch.max_count, "syncs": a.syncs, "deletesOfTopic": a.deletes, "reads": watch.reads,
            "refusedSends": len(refused), "refusedPulls": len(perrs), "deletesAfterKill": later_deletes,
            "backAt": back.t if back else None}
    if refused or perrs:
        return Phase("A", REPRODUCED, f"{sl}, elected inside its sync loop, answered TOPIC_NOT_EXIST for {SYNC_TOPIC} "
                                      f"({len(refused)} sends, {len(perrs)} pulls)", ev, data)
    if fired_inside:
        return Phase("A", INCONCLUSIVE, f"{sl} was elected inside its loop, but no client request reached it before "
                                        "the topic came back", ev, data)
    if a.deletes:
        return Phase("A", INCONCLUSIVE, f"{sl}'s log shows {a.deletes} deletes of {SYNC_TOPIC}, but no read of its "
                                        "topics.json caught the topic absent", ev, data)
    if ok_after is None:
        return Phase("A", INCONCLUSIVE, f"{sl} never answered a send as master within 90 s", ev, data)
    return Phase("A", NOT_REPRODUCED, f"{sl}'s {a.syncs} syncs never deleted {SYNC_TOPIC}; elected, it served the "
                                      "topic at once", ev, data)


def _phase_killed(lab: Lab, m: str, sl: str, prod: Tail, cons: Tail, sends: list[dict[str, Any]],
                  pulls: list[dict[str, Any]]) -> Phase:
    """Phase B: the deposed master ``m`` restarted as ``sl``'s slave; when ``m`` is inside its first sync's loop,
    past the topic, ``sl`` is SIGKILLed (the controller elects ``m``, whose loop goes on), and 3 s later ``m`` too,
    still inside its loop; ``m`` is restarted alone (the whole SyncStateSet: elected again), then ``sl`` (its slave,
    syncing from it).

    (Killing the slave first does not work: the master drops it from the SyncStateSet within milliseconds of its
    HA connection closing, ``AutoSwitchHAService``, so it is no longer electable.)"""
    lab.restart(m)
    watch = TopicsWatch(lab, m, SYNC_TOPIC)
    log = LogTail(lab, m)
    inn = lab.try_wait(lambda x: x.master == sl and m in lab.sss_nodes(x), 90)
    if inn is None:
        return Phase("B", INCONCLUSIVE, f"{m}, restarted, never joined {sl}'s SyncStateSet within 90 s")
    lab.note(f"{m} restarted and back in the SyncStateSet of {sl}")
    a = arm(lab, watch, log, SYNC_TOPIC)
    if a.absent is not None:
        kept = watch.keep(a.absent, f"B-{m}-topics-mid-loop.json")
        lab.note(f"{m}'s topics.json lacks {SYNC_TOPIC} with {a.absent.count} topics left (mid-loop): kill {sl}",
                 file=str(kept))
    else:
        lab.note(f"{m} logged {a.syncs} syncs, its topics.json never lacked {SYNC_TOPIC}: kill {sl} anyway")
    t_kill1 = int(time.time() * 1000)
    lab.kill(sl, f"{m} is inside its topic sync" if a.absent else "the same faults as on the other builds")
    t_el1 = _wait_master(lab, m, 60)
    if t_el1 is None:
        return Phase("B", INCONCLUSIVE, f"the controller did not elect {m} within 60 s of {sl}'s kill")
    time.sleep(max(0.0, 3.0 - (time.time() * 1000 - t_el1) / 1000))
    before = watch.look()
    kept2 = watch.keep(before, f"B-{m}-topics-at-kill.json") if before is not None else None
    lab.kill(m, "elected inside its topic sync" if a.absent else "the same faults as on the other builds")
    at_kill, at_kill_file = read_topics_as_loaded(lab.spec.store_dir(m) / "config")
    sends.extend(d for d in prod.read() if d.get("k") == "send-result")
    refused1 = [r for r in _sends_after(sends, lab, m, t_el1) if classify_send(r) == "no-topic"]
    time.sleep(2.0)
    t_restart = int(time.time() * 1000)
    boot = LogTail(lab, m)  # its start logs every topic it loads ('load exist local topic', TopicConfigManager)
    lab.restart(m)
    t_el = _wait_master(lab, m, 90)
    if t_el is None:
        return Phase("B", INCONCLUSIVE, f"{m}, restarted alone, was not elected within 90 s")
    # what it loaded: the files as the kill left them, read as ConfigManager.load reads them; its log's list of
    # loaded topics can only add to that (logback's async appender drops INFO lines when its queue fills)
    names = {mt.group(1) for ln in boot.lines() if (mt := LOADED.search(ln))}
    loaded: dict[str, Any] | None = dict(at_kill) if at_kill is not None else None
    if SYNC_TOPIC in names:
        loaded = {**(loaded or {}), SYNC_TOPIC: {}}
    lab.note(f"{m} elected again ({(t_el - t_restart) / 1000:.1f} s after its restart); it loaded "
             f"{len(loaded or {})} topics, {SYNC_TOPIC} {'present' if loaded and SYNC_TOPIC in loaded else 'ABSENT'}")
    end = time.monotonic() + 10  # the clients meet the restarted master
    while time.monotonic() < end:
        sends.extend(d for d in prod.read() if d.get("k") == "send-result")
        time.sleep(0.3)
    lab.restart(sl)
    watch_sl = TopicsWatch(lab, sl, SYNC_TOPIC)
    log_sl = LogTail(lab, sl)
    # sl, the new slave, syncs from m 10 s after its start; a build that deletes runs its long loop then
    syncs_sl = 0
    end = time.monotonic() + 180
    while time.monotonic() < end and syncs_sl < 1:
        syncs_sl += sum(1 for ln in log_sl.lines() if SYNC_LINE in ln)
        watch_sl.look()
        sends.extend(d for d in prod.read() if d.get("k") == "send-result")
        pulls.extend(cons.read())
        time.sleep(0.3)
    sends.extend(d for d in prod.read() if d.get("k") == "send-result")
    pulls.extend(cons.read())
    final_m = read_topics(lab.spec.store_dir(m) / "config" / "topics.json")
    final_sl = read_topics(lab.spec.store_dir(sl) / "config" / "topics.json")
    after = _sends_after(sends, lab, m, t_el)
    refused = [r for r in after if classify_send(r) == "no-topic"]
    okd = [r for r in after if classify_send(r) == "ok"]
    perrs = [d for d in pulls if d.get("k") == "pull-error" and int(d.get("t", 0)) >= t_el
             and (d.get("code") == TOPIC_NOT_EXIST or "not exist" in str(d.get("error", "")))]
    has = {k: ("present" if v and SYNC_TOPIC in v else "ABSENT") for k, v in
           (("kill", at_kill), ("loaded", loaded), ("m", final_m), ("sl", final_sl))}
    ev = [f"B: {m} restarted as {sl}'s slave; "
          + (f"its topics.json lacked {SYNC_TOPIC} mid-loop, {a.absent.count} topics left in it (kept: "
             f"evidence/B-{m}-topics-mid-loop.json): {sl} SIGKILLed" if a.absent else
             f"{a.syncs} syncs never took {SYNC_TOPIC} out of its topics.json: {sl} SIGKILLed"),
          f"B: {m} elected {(t_el1 - t_kill1) / 1000:.1f} s later; {len(refused1)} sends answered TOPIC_NOT_EXIST "
          f"by it; SIGKILLed 3 s after its election, its topics.json "
          + (f"{before.count} topics, {SYNC_TOPIC} {'present' if before.has else 'ABSENT'} (kept: "
             f"evidence/{kept2.name if kept2 else '-'})" if before is not None else "unreadable")
          + f"; as the kill left its config: {at_kill_file} with {len(at_kill or {})} topics, {SYNC_TOPIC} "
          f"{has['kill']}",
          f"B: {m} restarted alone and elected again; it loaded {at_kill_file}: {SYNC_TOPIC} {has['loaded']} (its "
          f"broker.log names {len(names)} topics loaded, {SYNC_TOPIC} "
          f"{'among' if SYNC_TOPIC in names else 'not among'} them)"]
    ev += [f"B: send {short(r, lab)}" for r in refused[:2]]
    if refused:
        ev.append(f"B: {len(refused)} of {len(after)} sends to {m} after its restart answered TOPIC_NOT_EXIST "
                  f"(last at {lab_ms(lab, int(refused[-1]['t'])) / 1000:.1f}s); SEND_OK: {len(okd)}")
    else:
        ev.append(f"B: sends to {m} after its restart: {len(okd)} SEND_OK of {len(after)}")
    ev += [f"B: pull queue {d.get('queue')}: {str(d.get('error'))[:100]}" for d in perrs[:1]]
    ev.append(f"B: {sl}, restarted as {m}'s slave, logged {syncs_sl} syncs; its topics.json then: "
              f"{len(final_sl or {})} topics, {SYNC_TOPIC} {has['sl']}; {m}'s: {SYNC_TOPIC} {has['m']}")
    data = {"absentSeen": a.absent is not None, "absentCount": a.absent.count if a.absent else None,
            "refusedBeforeKill": len(refused1), "loadedHas": bool(loaded and SYNC_TOPIC in loaded),
            "loadedCount": len(names), "configAtKill": at_kill_file,
            "refusedSends": len(refused), "okSends": len(okd), "refusedPulls": len(perrs), "slaveSyncs": syncs_sl,
            "finalMasterHas": bool(final_m and SYNC_TOPIC in final_m),
            "finalSlaveHas": bool(final_sl and SYNC_TOPIC in final_sl)}
    gone = loaded is not None and SYNC_TOPIC not in loaded
    if gone and (refused or perrs):
        tail = ("; its new slave, syncing from it, lost the topic too: gone from every broker"
                if final_sl is not None and SYNC_TOPIC not in final_sl else "")
        return Phase("B", REPRODUCED, f"{m}, killed inside its loop, restarted without {SYNC_TOPIC} and, elected, "
                                      f"answered TOPIC_NOT_EXIST ({len(refused)} sends, {len(perrs)} pulls){tail}",
                     ev, data)
    if gone:
        return Phase("B", INCONCLUSIVE, f"{m} restarted without {SYNC_TOPIC} but no client request reached it", ev,
                     data)
    if a.absent is not None:
        return Phase("B", INCONCLUSIVE, f"{m} was killed inside its loop, yet restarted with {SYNC_TOPIC} (its put "
                                        "phase ended before the kill?)", ev, data)
    if a.deletes:
        return Phase("B", INCONCLUSIVE, f"{m}'s log shows {a.deletes} deletes of {SYNC_TOPIC}, but no read caught the "
                                        "topic absent", ev, data)
    return Phase("B", NOT_REPRODUCED, f"{m}'s syncs never deleted {SYNC_TOPIC}; killed and elected, it served the "
                                      "topic", ev, data)


@repro("F-SYNC-DELETES-EVERY-TOPIC",
       title="A slave's metadata sync deletes every topic before it puts them back",
       invariant="QUEUE-ACKED-READABLE",
       how=f"one master M and one slave S; topic {SYNC_TOPIC} (4 queues) on both, {OTHER_TOPICS} more topics created "
           "on M in one request (mqadmin updateTopicList); a producer (a send every 200 ms) and a pull consumer run "
           "throughout. A: once S's first sync has copied the topics, S's topics.json is read every 50 ms; when a "
           f"complete one lacks {SYNC_TOPIC} (S is inside SlaveSynchronize.syncTopicConfig's delete loop, past the "
           "topic) M is SIGKILLed and the controller elects S; the clients' answers from S are recorded until it "
           "serves the topic again. B: M is restarted (S's slave); when M's topics.json lacks the topic inside its "
           "first sync's loop S is SIGKILLed (the controller elects M, inside its loop), and M 3 s after its "
           "election; M is restarted alone (the whole SyncStateSet: elected again), then S (its slave, syncing from "
           "it). On a build whose sync never takes the topic out, the same kills are made after two syncs of the "
           "slave",
       config={"cluster": {"brokers": 2}},
       expect={"5.3.3": "present (syncTopicConfig calls deleteTopicConfig for every entry, outside the if)",
               "5.4.0": "present (the same loop; PR #9690 does not touch it)",
               "5.5.0": "fixed (the 5.5.0 jar deletes only inside the if, as apache/rocketmq#9778 says)"},
       minutes=6.0)
def sync_deletes(lab: Lab) -> Verdict:
    s0 = lab.whole()
    m = s0.master
    assert m is not None
    sl = next(b for b in lab.spec.brokers if b != m)
    lab.create_topic(SYNC_TOPIC, 4, on=[m, sl])
    create_topics_batch(lab, m, [f"RmqhaOther{i:05d}" for i in range(OTHER_TOPICS)])
    producer = lab.start_producer(SYNC_TOPIC, "s-", interval_ms=200, timeout_ms=1000)
    consumer = start_consumer(lab, SYNC_TOPIC, "c_sync")
    prod, cons = Tail(producer.path), Tail(consumer.path)
    sends: list[dict[str, Any]] = []
    pulls: list[dict[str, Any]] = []
    a = _phase_elected(lab, m, sl, prod, cons, sends, pulls)
    lab.note(f"phase A: {a.verdict}: {a.why}")
    phases = [a]
    if a.verdict != INCONCLUSIVE or a.data.get("electedAt") is not None:
        b = _phase_killed(lab, m, sl, prod, cons, sends, pulls)
        lab.note(f"phase B: {b.verdict}: {b.why}")
        phases.append(b)
    lab.stop_producer()
    acked = [r for r in sends if classify_send(r) == "ok"]
    pre = [r for r in acked if int(r.get("t", 0)) < lab.spec.created_ms + int(a.data.get("killAt") or 0)]
    evidence = [f"{len(acked)} sends acknowledged (SEND_OK) in {SYNC_TOPIC}, {len(pre)} of them by {m} before the "
                f"first failover"]
    for p in phases:
        evidence += p.evidence
    loops = _loop_times(lab, sl)
    if loops:
        evidence.append(f"{sl}'s delete loops (broker.log: first delete to the sync line): "
                        + ", ".join(f"{n} deletes in {s:.0f} s" for n, s in loops[:4]))
    data: dict[str, Any] = {p.name: {"verdict": p.verdict, "why": p.why, **p.data} for p in phases}
    data["loops"] = loops
    why = "; ".join(f"{p.name}: {p.why}" for p in phases)
    verdicts = [p.verdict for p in phases]
    if REPRODUCED in verdicts:
        return Verdict(REPRODUCED, evidence, why, data)
    if len(phases) == 2 and all(v == NOT_REPRODUCED for v in verdicts):
        return Verdict(NOT_REPRODUCED, evidence, why, data)
    return Verdict(INCONCLUSIVE, evidence, why, data)


LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)")


def loop_times(lines: list[str]) -> list[tuple[int, float]]:
    """From a broker.log's lines: each delete loop as (deletes, seconds from its first delete line to the sync line
    that ends it), for loops of more than 100 deletes (log times have one-second resolution)."""
    out: list[tuple[int, float]] = []
    n = 0
    first: float | None = None
    for ln in lines:
        mt = LOG_TIME.match(ln)
        if mt is None:
            continue
        t = time.mktime(time.strptime(mt.group(1), "%Y-%m-%d %H:%M:%S"))
        if "delete topic config OK" in ln:
            if first is None:
                first = t
            n += 1
        elif SYNC_LINE in ln:
            if n > 100 and first is not None:
                out.append((n, t - first))
            n, first = 0, None
    return out


def _loop_times(lab: Lab, node: str) -> list[tuple[int, float]]:
    return loop_times(lab.broker_log(node, r"delete topic config OK|" + SYNC_LINE, files=("broker.log",)))


# --------------------------------------------------------------------------------------------- F-TOPIC-CONFIG-LOST


EXPAND_TOPIC = "ReproExpand"
QUEUES, EXPANDED = 4, 8
MAX_ATTEMPTS = 4  # expansions tried, each right after one of the slave's syncs


def _queues(lab: Lab, node: str, topic: str) -> tuple[int, int] | None:
    t = read_topics(lab.spec.store_dir(node) / "config" / "topics.json")
    if t is None or topic not in t:
        return None
    return int(t[topic].get("readQueueNums", 0)), int(t[topic].get("writeQueueNums", 0))


@repro("F-TOPIC-CONFIG-LOST-ON-FAILOVER",
       title="A queue expansion the slaves have not synced is lost with a failover",
       invariant="QUEUE-ACKED-READABLE",
       how=f"one master M and one slave S (SyncStateSet of both, allAckInSyncStateSet); topic {EXPAND_TOPIC} with "
           f"{QUEUES} queues on both; a producer sends every 100 ms. Right after S logs a topic-config sync (its "
           f"next one is 10-13 s away) the admin grows the topic on M only by {EXPANDED - QUEUES} queues (the Java "
           "tool's admin update-topic --addr M); once the producer has SEND_OK in a new queue (and up to 1 s more, "
           "never past 9 s after S's sync) while S's topics.json still has the old count, M is SIGKILLed: the "
           "controller elects S. (When S syncs the expansion first, the admin call being a JVM start that takes "
           f"seconds on a loaded machine, the topic is grown again right after that sync: up to {MAX_ATTEMPTS} "
           "attempts.) The producer goes on 5 s and stops; M is restarted (S's slave) and syncs; a pull consumer "
           "then reads every queue of the route for 20 s. The acknowledged messages of the new queues are looked "
           "up in S's commit log and consume queues, and among what the consumer read",
       config={"cluster": {"brokers": 2}},
       expect={"5.3.3": "present (the slave's config comes only from syncTopicConfig every 10 s)",
               "5.4.0": "present (no change to the sync or to changeToMaster)",
               "5.5.0": "present (no change to the sync period or to changeToMaster)"},
       minutes=3.0)
def topic_config_lost(lab: Lab) -> Verdict:
    s0 = lab.whole()
    m = s0.master
    assert m is not None
    sl = next(b for b in lab.spec.brokers if b != m)
    lab.create_topic(EXPAND_TOPIC, QUEUES, on=[m, sl])
    producer = lab.start_producer(EXPAND_TOPIC, "q-", interval_ms=100, timeout_ms=1000)
    prod = Tail(producer.path)
    sends: list[dict[str, Any]] = []
    log = LogTail(lab, sl)

    last_sync = [0.0]  # when S last logged a topic-config sync (monotonic)

    def pump() -> bool:
        """Read the producer and S's log; True when S logged a topic-config sync since the last call."""
        sends.extend(d for d in prod.read() if d.get("k") == "send-result")
        if any(SYNC_LINE in ln for ln in log.lines()):
            last_sync[0] = time.monotonic()
            return True
        return False

    def next_sync(timeout: float) -> None:
        end = time.monotonic() + timeout
        while not pump():
            if time.monotonic() > end:
                raise LabError(f"{sl} logged no topic-config sync within {timeout:.0f} s")
            time.sleep(0.05)

    next_sync(60)  # S's first sync after the topic exists
    next_sync(30)  # the one to time the first expansion from
    evidence: list[str] = []
    attempts: list[dict[str, Any]] = []
    base, target = QUEUES, EXPANDED
    # Each attempt starts right after a sync of S and grows the topic on M only (by 4 queues); it holds when the
    # producer has a SEND_OK in a new queue while S's topics.json still has the old count. When the admin call (a
    # JVM: seconds on a loaded machine) or the first new-queue ack comes after S's next sync, the next attempt
    # starts after the sync that follows.
    for attempt in range(1, MAX_ATTEMPTS + 1):
        t_sync = last_sync[0]
        mq = _queues(lab, m, EXPAND_TOPIC)
        base = mq[0] if mq else base
        target = base + (EXPANDED - QUEUES)
        ans = lab.tool("admin", "update-topic", "--addr", lab.spec.front_addr(m), "--topic", EXPAND_TOPIC,
                       "--queues", str(target))
        if not any(d.get("k") == "admin" and d.get("ok") for d in ans):
            raise LabError(f"update-topic {EXPAND_TOPIC} on {m}: {ans[-1] if ans else 'no answer'}")
        t_exp = time.monotonic()
        pump()
        lab.note(f"attempt {attempt}: {EXPAND_TOPIC} grown from {base} to {target} queues on {m} only, "
                 f"{t_exp - t_sync:.1f} s after {sl}'s sync")
        new_ok: dict[str, Any] | None = None
        sl_q = _queues(lab, sl, EXPAND_TOPIC)
        end = time.monotonic() + 12
        while time.monotonic() < end and new_ok is None and (sl_q is None or sl_q[0] <= base):
            pump()
            new_ok = next((r for r in sends if r.get("status") == "SEND_OK" and int(r.get("queue", -1)) >= base),
                          None)
            sl_q = _queues(lab, sl, EXPAND_TOPIC)
            time.sleep(0.05)
        if new_ok is not None:
            # a little more in the new queues: up to 1 s more, never past 9 s after S's sync (the next: 10-13 s)
            end = min(time.monotonic() + 1.0, last_sync[0] + 9.0)
            while time.monotonic() < end:
                pump()
                time.sleep(0.05)
        sl_q = _queues(lab, sl, EXPAND_TOPIC)
        synced_after = last_sync[0] > t_sync
        holds = new_ok is not None and sl_q is not None and sl_q[0] <= base
        attempts.append({"attempt": attempt, "from": base, "to": target, "adminS": round(t_exp - t_sync, 1),
                         "newAck": new_ok is not None, "slaveSyncedAfter": synced_after, "slaveQueues": sl_q,
                         "holds": holds})
        evidence.append(f"attempt {attempt}: {sl} logged a topic-config sync; {t_exp - t_sync:.1f} s later {m} had "
                        f"{target} queues (admin update-topic on {m} only); "
                        + (f"first SEND_OK in a new queue: {short(new_ok, lab)}; " if new_ok else "no new-queue ack; ")
                        + f"{sl} logged a sync since: {synced_after}; its {EXPAND_TOPIC} (read, write) = {sl_q}")
        if holds:
            break
        if not synced_after or last_sync[0] < t_exp:
            next_sync(30)
    else:
        return Verdict(INCONCLUSIVE, evidence, f"in {MAX_ATTEMPTS} attempts {sl} synced each expansion before the "
                                               "failover could be made (the admin tool's JVM is slow here)",
                       {"attempts": attempts})
    t_kill = int(time.time() * 1000)
    lab.kill(m, "the slave has not synced the expansion")
    t_el = _wait_master(lab, sl, 60)
    if t_el is None:
        return Verdict(INCONCLUSIVE, evidence, f"the controller did not elect {sl} within 60 s of {m}'s kill",
                       {"attempts": attempts})
    q_el = _queues(lab, sl, EXPAND_TOPIC)
    lab.note(f"{sl} elected master ({(t_el - t_kill) / 1000:.1f} s after the kill); its {EXPAND_TOPIC}: {q_el}")
    time.sleep(5.0)
    lab.stop_producer()
    sends = [d for d in Tail(producer.path).read() if d.get("k") == "send-result"]
    lab.restart(m)
    back = None
    end = time.monotonic() + 90
    while time.monotonic() < end:
        back = _queues(lab, m, EXPAND_TOPIC)
        if back is not None and back[0] < target:
            break
        time.sleep(0.5)
    lab.note(f"{m} restarted as {sl}'s slave; its {EXPAND_TOPIC} (read, write): {back}")
    seen = lab.consume(EXPAND_TOPIC, 20, group="c_expand")  # 20 s from the JVM start: it starts slowly under load
    seen_keys = {str(d.get("key")) for d in seen}
    acked = [r for r in sends if r.get("status") == "SEND_OK"]
    new_acked = [r for r in acked if int(r.get("queue", -1)) >= base]
    stranded = [r for r in new_acked if str(r.get("key")) not in seen_keys]
    old_seen = sum(1 for r in acked if int(r.get("queue", -1)) < base and str(r.get("key")) in seen_keys)
    files = lab.files()
    log_sl = files.logs.get(sl)
    in_log = {k for msg in (log_sl.by_topic(EXPAND_TOPIC) if log_sl else []) for k in msg.keys}
    try:
        cqs = read_consume_queues(lab.spec.store_dir(sl), EXPAND_TOPIC)
        cq_line = ", ".join(f"queue {q}: {len(u)}" for q, u in cqs.items())
    except Exception as exc:  # the evidence line says what could not be read
        cq_line = f"unreadable ({exc})"
    final_q = _queues(lab, sl, EXPAND_TOPIC)
    after_el = [r for r in sends if int(r.get("t", 0)) >= t_el]
    refused = [r for r in after_el if classify_send(r) != "ok"]
    sss = lab.sss_nodes(s0)
    evidence += [f"before the failover: SyncStateSet {members(sss)} (allAckInSyncStateSet: every SEND_OK is on both)",
                 f"{m} SIGKILLed; {sl} elected master {(t_el - t_kill) / 1000:.1f} s later; its {EXPAND_TOPIC} "
                 f"(read, write) at the election: {q_el}",
                 f"after the election: {len(after_el) - len(refused)} SEND_OK, {len(refused)} refused"
                 + (f" (e.g. {short(refused[0], lab)})" if refused else ""),
                 f"{m}, restarted as {sl}'s slave, synced: its {EXPAND_TOPIC} (read, write) = {back}",
                 f"{len(acked)} sends acknowledged, {len(new_acked)} of them in queues >= {base} (e.g. "
                 + ", ".join(str(r.get("key")) + ":q" + str(r.get("queue")) for r in new_acked[:4]) + ")",
                 f"{sl}'s commit log holds {sum(1 for r in new_acked if r['key'] in in_log)} of those "
                 f"{len(new_acked)}; its consume queues of {EXPAND_TOPIC}: {cq_line}",
                 f"the consumer read {len(seen)} messages of the route's queues in 20 s ({old_seen} of the "
                 f"{len(acked) - len(new_acked)} acknowledged in queues < {base}); of the {len(new_acked)} "
                 f"acknowledged in queues >= {base}, {len(stranded)} never delivered"
                 + (f" ({', '.join(str(r['key']) for r in stranded[:6])})" if stranded else "")]
    data = {"master": m, "slave": sl, "killAt": lab_ms(lab, t_kill), "electedAt": lab_ms(lab, t_el),
            "attempts": attempts, "slaveQueuesAtElection": q_el, "finalQueues": final_q, "deposedQueues": back,
            "acked": len(acked), "ackedNew": len(new_acked), "stranded": len(stranded), "seen": len(seen),
            "oldSeen": old_seen}
    if not new_acked:
        return Verdict(INCONCLUSIVE, evidence, f"no acknowledged message in a queue >= {base}", data)
    if final_q is None:
        return Verdict(INCONCLUSIVE, evidence, f"{sl}'s topics.json has no {EXPAND_TOPIC} at the end", data)
    top = max(int(r["queue"]) for r in new_acked)
    if final_q[0] <= top:
        return Verdict(REPRODUCED, evidence, f"the new master {sl} reads {final_q[0]} queues of {EXPAND_TOPIC}; "
                                             f"{len(new_acked)} messages acknowledged in queues {base}..{top} "
                                             f"({len(stranded)} never delivered; attempt {len(attempts)})", data)
    return Verdict(NOT_REPRODUCED, evidence, f"the new master {sl} reads {final_q[0]} queues of {EXPAND_TOPIC}, "
                                             f"covering every acknowledged queue (up to {top})", data)
