"""The fault schedule of ``rmqha cluster test``: named recipes played against the live processes.

Each recipe acts on the master of the moment (read from the nodes' status) and undoes itself: ``kill-master``
(SIGKILL, restart after ``down`` s), ``pause-master`` (SIGSTOP, SIGCONT), ``partition-master`` (the master cut from
every other node both ways, then healed), ``isolate-master`` (the master cut from the other brokers until its
SyncStateSet shrinks to itself, then killed while the controller can still reach the others: a failover that
only an unclean election can complete; restart after the heal), ``kill-controller`` (SIGKILL the controller that
leads, restart after ``down`` s: with one controller the set cannot fail over meanwhile; with three, another node
takes over), ``stale-request`` (issue 21: the master's link to the controllers cut one way while the proxy holds
its bytes, as TCP does, the master killed and restarted under the cut, then the heal: what the dead process had sent
reaches the controller then, recorded as the simulator's holding ``partition``). Every action is written to
``faults.jsonl`` with the cluster clock, in the shape of the simulator's fault actions (``do``, ``node``, ``id``,
``links``). Each recipe that takes the master away records in its context when it did (``faultAt``: the kill, the
pause or the cut; for ``isolate-master`` the kill, which alone lets a failover happen): the failover analysis counts
from that action, not from whichever fault comes next. Every wait is bounded.

The other faults at the guards are not played here: a crash aimed at a point (``crash-at``) needs a hook inside the
process (the nemesis only signals it); a late HA FIN (``ha-stale``) and a dead process's bytes delivered *after* its
successor's registration (the ``hold`` lag of an orphaned socket's retransmissions) need the proxy to delay a close
and a dead connection's bytes, which it does not (it forwards held bytes, then the close, at the heal); the
adversarial ones (HA writes duplicated, reordered, replayed; requests replayed) go beyond what TCP does.
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Callable
from typing import Any

from . import control as C
from .spec import ClusterSpec

RECIPES = ("kill-master", "pause-master", "partition-master", "isolate-master", "kill-controller", "stale-request")


class Nemesis:
    def __init__(self, spec: ClusterSpec, down: float = 4.0, say: Callable[[str], None] = lambda s: None) -> None:
        self.spec = spec
        self.down_s = down
        self.say = say
        self.log = open(spec.dir / "faults.jsonl", "a", encoding="utf-8")
        self.events: list[dict[str, Any]] = []
        self.context: list[dict[str, Any]] = []  # per recipe: master, its SSS and epoch before the fault, faultAt
        self._n = 0

    def close(self) -> None:
        self.log.close()

    def now(self) -> int:
        return int((time.monotonic() - self.spec.clock_base) * 1000)

    def act(self, do: str, t: int | None = None, **data: Any) -> dict[str, Any]:
        """Record an action; ``t``: when it was taken (before a kill's reaping, say), by default now."""
        ev = {"t": self.now() if t is None else t, "do": do, **data}
        self.events.append(ev)
        self.log.write(json.dumps(ev) + "\n")
        self.log.flush()
        self.say(f"{ev['t'] / 1000:7.2f}s  {do} {data.get('node') or data.get('id') or ''}")
        return ev

    # -------------------------------------------------------------------------------------------- status

    def master(self) -> tuple[str, dict[str, Any]] | None:
        """The broker that is master at the highest masterEpoch, with its status."""
        best = None
        for b in self.spec.brokers:
            st = C.query(self.spec, b, 0.5)
            if st and st.get("role") == "MASTER" and not st.get("fenced"):
                if best is None or st["masterEpoch"] > best[1]["masterEpoch"]:
                    best = (b, st)
        return best

    def wait(self, cond: Callable[[], Any], timeout: float, step: float = 0.2) -> Any:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = cond()
            if v:
                return v
            time.sleep(step)
        return None

    def wait_master(self, timeout: float, full: bool = False) -> tuple[str, dict[str, Any]] | None:
        """Wait for a master (with ``full``: one whose SyncStateSet holds every broker)."""
        n = len(self.spec.brokers)
        found: tuple[str, dict[str, Any]] | None = self.wait(
            lambda: (m := self.master()) and (not full or len(m[1]["sss"]) == n) and m, timeout)
        return found

    # ------------------------------------------------------------------------------------------- recipes

    def controller_leader(self) -> str | None:
        for c in self.spec.controllers:
            st = C.query(self.spec, c, 0.5)
            if st and st.get("leader"):
                return c
        return None

    def play(self, recipe: str) -> None:
        if recipe == "kill-controller":
            self._kill_controller()
            return
        m = self.wait_master(10.0)
        if m is None:
            self.act("skip", recipe=recipe, why="no master")
            return
        name, st = m
        self.context.append({"recipe": recipe, "t": self.now(), "master": name, "masterEpoch": st["masterEpoch"],
                             "sss": st["sss"], "id": st["id"]})
        getattr(self, "_" + recipe.replace("-", "_"))(name, st)

    def _trigger(self, ev: dict[str, Any]) -> None:
        """``ev`` is the action of the current recipe that takes its master away: failovers count from it."""
        if self.context and self.context[-1].get("faultAt") is None:
            self.context[-1]["faultAt"] = ev["t"]

    def _kill_and_restart(self, name: str, trigger: bool = True) -> None:
        t = self.now()
        C.signal_node(self.spec, name, signal.SIGKILL)
        ev = self.act("crash", t, node=name)
        if trigger:
            self._trigger(ev)
        time.sleep(self.down_s)
        C.start_node(self.spec, name)
        self.act("restart", node=name)

    def _kill_master(self, name: str, st: dict[str, Any]) -> None:
        self._kill_and_restart(name)

    def _kill_controller(self) -> None:
        leader = self.controller_leader()
        if leader is None:
            self.act("skip", recipe="kill-controller", why="no controller leads")
            return
        self._kill_and_restart(leader, trigger=False)

    def _pause_master(self, name: str, st: dict[str, Any]) -> None:
        t = self.now()
        C.signal_node(self.spec, name, signal.SIGSTOP)
        self._trigger(self.act("pause", t, node=name))
        time.sleep(self.down_s)
        C.signal_node(self.spec, name, signal.SIGCONT)
        self.act("resume", node=name)

    def _partition(self, links: list[list[str]], hold: int | None = None, trigger: bool = False) -> str:
        self._n += 1
        pid = f"n{self._n}"
        t = self.now()
        C.proxy_call(self.spec, {"op": "partition", "id": pid, "links": links})
        if hold is None:
            ev = self.act("partition", t, id=pid, links=links)
        else:  # the proxy holds the bytes of a cut link (reads stop) and forwards them at the heal: hold 0
            ev = self.act("partition", t, id=pid, links=links, hold=hold)
        if trigger:
            self._trigger(ev)
        return pid

    def _heal(self, pid: str) -> None:
        C.proxy_call(self.spec, {"op": "heal", "id": pid})
        self.act("heal", id=pid)

    def _partition_master(self, name: str, st: dict[str, Any]) -> None:
        others = [n for n in self.spec.nodes if n != name]
        pid = self._partition(C.links(self.spec, [name], others, one_way=False), trigger=True)
        time.sleep(self.down_s + 1)
        self._heal(pid)

    def _isolate_master(self, name: str, st: dict[str, Any]) -> None:
        others = [b for b in self.spec.brokers if b != name]
        pid = self._partition(C.links(self.spec, [name], others, one_way=False))
        shrunk = self.wait(lambda: (s := C.query(self.spec, name, 0.5)) and s.get("sss") == [st["id"]], 20.0)
        self.act("observed", node=name, what="SyncStateSet shrank to the master" if shrunk else "no shrink in 20 s")
        time.sleep(1.0)  # acks from the master alone
        now = C.query(self.spec, name, 0.5)
        self.context[-1]["sssAtCrash"] = now.get("sss") if now else None
        t = self.now()
        C.signal_node(self.spec, name, signal.SIGKILL)
        self._trigger(self.act("crash", t, node=name))  # the failover (an unclean one) can only follow the kill
        time.sleep(self.down_s + 2)  # the controller sees it go; only an unclean election finds a master
        self._heal(pid)
        C.start_node(self.spec, name)
        self.act("restart", node=name)

    def _stale_request(self, name: str, st: dict[str, Any]) -> None:
        """The master's requests to the controllers held (one way), the master killed and restarted under the cut,
        then the heal: the dead process's held requests (a SyncStateSet proposal, heartbeats) reach the controllers,
        then its connections' close."""
        pid = self._partition(C.links(self.spec, [name], list(self.spec.controllers), one_way=True), hold=0)
        time.sleep(0.5)
        self._kill_and_restart(name)
        time.sleep(1.0)
        self._heal(pid)

    def settle(self) -> None:
        """Undo whatever is left: heal every partition, resume and restart every node."""
        C.proxy_call(self.spec, {"op": "heal", "id": None})
        pids = C.read_pids(self.spec)
        for node in self.spec.nodes:
            pid = pids.get(node)
            if pid is not None and C.alive(pid) and C.paused(pid):
                C.signal_node(self.spec, node, signal.SIGCONT)
                self.act("resume", node=node)
            elif pid is None or not C.alive(pid):
                C.start_node(self.spec, node)
                self.act("restart", node=node)
