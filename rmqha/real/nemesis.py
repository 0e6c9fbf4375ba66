"""The fault schedule of ``rmqha real test``: named recipes played against a real cluster.

Each recipe acts on the master (or the leading controller) of the moment, as the admin API reports it through
the observer, and undoes itself after ``down`` seconds:

* ``kill-master``: SIGKILL the master; restart it.
* ``pause-master``: SIGSTOP the master; SIGCONT.
* ``partition-master``: cut the master from every other node and the clients, both ways, at the proxy; heal.
* ``isolate-master``: cut the master from the other brokers only; once the controller's SyncStateSet has shrunk
  to the master (it then acks alone, as ``allAckInSyncStateSet`` allows), 1 s more, SIGKILL it; heal and
  restart. Only an unclean election can then complete the failover.
* ``kill-controller``: SIGKILL the leading controller; restart it.
* ``kill-controller-and-master``: SIGKILL the leading controller and the master together; restart both.
* ``net-loss-master``: ``tc netem loss 30%`` on everything the master sends; lifted.
* ``crash-at-role-change`` (the kit's agent, ``points.py``): every other broker is armed to crash at
  ``role-change.master.1`` (``ReplicasManager.changeToMaster`` after the SyncStateSet, before the HA switch: the
  simulator's ``crash-at role-change`` step 1); SIGKILL the master; the broker the controller elects halts inside
  its role change; the arms left are disarmed; both restarted after ``down`` seconds.

Every action is a line of ``D/events/faults.jsonl`` in the shape of the simulator's fault actions (``do``:
``crash``, ``restart``, ``pause``, ``resume``, ``partition``, ``heal``, ``net``; ``node``, ``id``, ``links``), ``t``
in ms since the run was created. Every wait is bounded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from . import agent as A
from . import control as C
from . import netns
from .clients import Observer
from .observe import Snapshot
from .points import arm_request
from .spec import RealSpec

RECIPES = ("kill-master", "pause-master", "partition-master", "isolate-master", "kill-controller",
           "kill-controller-and-master", "net-loss-master", "crash-at-role-change")
AGENT_RECIPES = ("crash-at-role-change",)  # recipes that arm the agent's points: a run with one has the agent


class NemesisError(RuntimeError):
    pass


class Nemesis:
    def __init__(self, spec: RealSpec, observer: Observer, down: float, say: Callable[[str], None]) -> None:
        self.spec = spec
        self.obs = observer
        self.down_s = down
        self.say = say
        self.events: list[dict[str, Any]] = []
        self.context: list[dict[str, Any]] = []  # per recipe: what the cluster looked like before it
        self.log = open(spec.dir / "events" / "faults.jsonl", "a", encoding="utf-8")
        self.dead: set[str] = set()
        self.paused: set[str] = set()
        self.partitions: set[str] = set()
        self.netem: set[str] = set()
        self.arms: dict[str, str] = {}  # arm id -> node
        self._n = 0

    def close(self) -> None:
        self.log.close()

    def now(self) -> int:
        return int(time.time() * 1000) - self.spec.created_ms

    def act(self, do: str, **data: Any) -> dict[str, Any]:
        ev = {"t": self.now(), "do": do, **data}
        self.events.append(ev)
        self.log.write(json.dumps(ev, sort_keys=True) + "\n")
        self.log.flush()
        self.say(f"{ev['t'] / 1000:7.1f}s  {do} {data.get('node') or data.get('id') or ''}")
        return ev

    # -------------------------------------------------------------------------------------------- actions
    def kill(self, node: str, why: str = "") -> None:
        self._down(node)
        self.act("crash", node=node, why=why)
        C.supervise(self.spec, {"op": "signal", "node": node, "signal": "KILL"}, timeout=20)
        self.dead.add(node)

    def restart(self, node: str) -> None:
        self.act("restart", node=node)
        C.supervise(self.spec, {"op": "start", "node": node, "wait": False}, timeout=20)
        self.dead.discard(node)

    def pause(self, node: str) -> None:
        self._down(node)
        self.act("pause", node=node)
        C.supervise(self.spec, {"op": "signal", "node": node, "signal": "STOP"})
        self.paused.add(node)

    def resume(self, node: str) -> None:
        self.act("resume", node=node)
        C.supervise(self.spec, {"op": "signal", "node": node, "signal": "CONT"})
        self.paused.discard(node)

    def partition(self, a: list[str], b: list[str]) -> str:
        if set(b) >= {n for n in self.spec.nodes if n not in a}:  # cut from everything: it is gone for the set
            for n in a:
                self._down(n)
        self._n += 1
        pid = f"p{self._n}"
        links = [[x, y] for x in a for y in b] + [[y, x] for x in a for y in b]
        self.act("partition", id=pid, links=links)
        C.request(self.spec.proxy_sock, {"op": "partition", "id": pid, "links": links}, timeout=10)
        self.partitions.add(pid)
        return pid

    def heal(self, pid: str | None = None) -> None:
        self.act("heal", id=pid)
        C.request(self.spec.proxy_sock, {"op": "heal", "id": pid}, timeout=10)
        if pid is None:
            self.partitions.clear()
        else:
            self.partitions.discard(pid)

    def net(self, node: str, netem: list[str]) -> None:
        self.act("net", node=node, netem=netem)
        netns.set_link_fault(self.spec.run, node, netem)
        self.netem.add(node)

    def net_clear(self, node: str) -> None:
        self.act("net", node=node, netem=[])
        netns.clear_link_fault(self.spec.run, node)
        self.netem.discard(node)

    # -------------------------------------------------------------------------------------------- the agent
    def arm(self, node: str, req: dict[str, Any]) -> str:
        """Arm a point of ``node``'s agent (``points.arm_request``); its id."""
        if self.spec.agent is None:
            raise NemesisError("this run has no agent (rmqha real up --agent, or a recipe that arms a point)")
        if not req.get("id"):
            self._n += 1
            req = {**req, "id": f"a{self._n}"}
        aid = str(req["id"])
        self.act("arm", node=node, id=aid, point=req["point"], action=req["action"],
                 **{k: req[k] for k in ("ms", "nth", "count", "when", "exception") if req.get(k)})
        A.AgentClient(self.spec.agent_sock(node)).arm(req)
        self.arms[aid] = node
        return aid

    def release(self, aid: str) -> int:
        self.act("release", id=aid, node=self.arms.get(aid))
        return A.AgentClient(self.spec.agent_sock(self.arms[aid])).release(aid)

    def disarm(self, aid: str) -> None:
        node = self.arms.pop(aid, None)
        if node is None:
            return
        self.act("disarm", id=aid, node=node)
        try:
            A.AgentClient(self.spec.agent_sock(node)).disarm(aid)
        except A.AgentError:
            pass  # the node is down (it may be the one that crashed at the point): nothing left armed there

    def exited(self, nodes: list[str], timeout: float) -> list[str]:
        """Wait until one of ``nodes`` has exited (an agent's crash); those that have, with their status."""
        end = time.monotonic() + timeout
        while True:
            st = C.supervise(self.spec, {"op": "status"})["nodes"]
            gone = [n for n in nodes if st.get(n, {}).get("state") == "exited"]
            if gone or time.monotonic() > end:
                return gone
            time.sleep(0.2)

    def _down(self, node: str) -> None:
        """The current recipe's context learns when the master it acts on went away (failovers count from it)."""
        ctx = self.context[-1] if self.context else None
        if ctx is not None and ctx["master"] == node and ctx.get("tDown") is None:
            ctx["tDown"] = self.now()
            snap = self.obs.poll()
            lead = snap.leader if snap is not None else None
            if lead is not None:  # the SyncStateSet the failover must choose from (isolate-master shrinks it)
                ctx["sss"] = [lead.ids.get(i, str(i)) for i in lead.sss]

    # -------------------------------------------------------------------------------------------- recipes
    def current(self, timeout: float = 15.0) -> Snapshot:
        snap = self.obs.wait(lambda s: s.master is not None, timeout)
        if snap is None:
            raise NemesisError(f"no master to act on within {timeout:.0f} s")
        return snap

    def play(self, recipe: str) -> None:
        snap = self.current()
        master = snap.master
        lead = snap.leader
        assert master is not None and lead is not None
        self.context.append({"recipe": recipe, "t": self.now(), "master": master, "masterEpoch": lead.master_epoch,
                             "sss": [lead.ids.get(i, str(i)) for i in lead.sss], "leader": lead.node,
                             "tDown": None})
        others = [b for b in self.spec.brokers if b != master]
        if recipe == "kill-master":
            self.kill(master, recipe)
            time.sleep(self.down_s)
            self.restart(master)
        elif recipe == "pause-master":
            self.pause(master)
            time.sleep(self.down_s)
            self.resume(master)
        elif recipe == "partition-master":
            pid = self.partition([master], [n for n in [*self.spec.nodes, "client"] if n != master])
            time.sleep(self.down_s + 1)
            self.heal(pid)
        elif recipe == "isolate-master":
            pid = self.partition([master], others)
            shrunk = self.obs.wait(lambda s: s.leader is not None and s.leader.master == master
                                   and [s.leader.ids.get(i) for i in s.leader.sss] == [master], 30.0)
            if shrunk is None:
                self.say("isolate-master: the SyncStateSet did not shrink to the master within 30 s")
            time.sleep(1.0)
            self.kill(master, recipe)
            time.sleep(self.down_s + 2)
            self.heal(pid)
            self.restart(master)
        elif recipe == "kill-controller":
            self.kill(lead.node, recipe)
            time.sleep(self.down_s)
            self.restart(lead.node)
        elif recipe == "kill-controller-and-master":
            self.kill(lead.node, recipe)
            self.kill(master, recipe)
            time.sleep(self.down_s)
            self.restart(lead.node)
            self.restart(master)
        elif recipe == "net-loss-master":
            self.net(master, ["loss", "30%"])
            time.sleep(self.down_s + 2)
            self.net_clear(master)
        elif recipe == "crash-at-role-change":
            ids = {b: self.arm(b, arm_request("role-change.master.1", "crash")) for b in others}
            self.kill(master, recipe)
            halted = self.exited(others, 30.0)
            for b, aid in ids.items():
                if b in halted:
                    self.arms.pop(aid, None)
                    self.dead.add(b)
                else:
                    self.disarm(aid)
            if not halted:
                self.say("crash-at-role-change: no broker reached role-change.master.1 within 30 s")
            time.sleep(self.down_s)
            self.restart(master)
            for b in halted:
                self.restart(b)
        else:  # pragma: no cover - checked by the runner
            raise NemesisError(f"unknown recipe {recipe!r}")

    def undo_all(self) -> None:
        """Heal, resume and restart whatever a recipe left (an interrupted run)."""
        if self.partitions:
            self.heal(None)
        for n in sorted(self.netem):
            self.net_clear(n)
        for n in sorted(self.paused):
            self.resume(n)
        for n in sorted(self.dead):
            self.restart(n)
