"""The deterministic simulator: a virtual clock, a network, crashes, and a checker after every step.

Theory of operation. Every node is a sans-IO actor (``impl/runtime.py``). The simulator keeps one heap of
timed events (message deliveries, timers, HA stream chunks, fault actions), ordered by (time, sequence
number). A *step* pops one event, hands it to its node, drains the node's effects (scheduling the messages,
timers and stream writes they ask for) and runs the invariant checker. Every random choice comes from
named streams forked from the one seed (``impl/rng.py``), so a seed, a config and a fault schedule give the
same run, step for step, in any process.

The network:

* RPCs (controller, nameserver, clients) travel as whole messages, with a delay in
  ``[delay_min, delay_max]``, and may be dropped, duplicated or slowed (which reorders them). A directed
  partition drops them. A message to a process that restarted since it was sent is lost, as is a reply
  to a caller that restarted.
* HA streams are in-order byte streams per direction (TCP): a partition holds bytes back until it heals;
  a close (FIN) travels behind the data; with ``[network] ha_fragment`` a write may arrive in pieces. A
  crash closes every stream of the process; the peer learns of it when the FIN gets through. Connecting to
  a partitioned address times out after 3 s; to a dead one it is refused at once.
* A crashed broker's remoting channels close: the controller and the nameserver learn of it (unless a
  partition hides it, in which case only the heartbeat timeout will tell). A channel is one connection: the
  sender and its incarnation (``b1#2``), so a restarted broker reconnects on a new one. With ``[controller]
  serverChannelMaxIdleTimeSeconds`` a controller closes a connection whose close it never heard once it has
  read nothing on it for that long (Netty's idle handler), and the heartbeat manager hears of that close.

Crashes keep what the process had on disk (``BrokerDisk``, ``ControllerDisk``); a power loss also drops
the unflushed tail. A paused process (SIGSTOP) receives nothing until it resumes; its events then run in order.

The faults at the guards (issue 21; ``impl/sim/actions.py``), each off until an action turns it on:

* A partition with ``hold`` holds RPC messages on its links instead of dropping them (TCP retransmits); the heal
  delivers them in order, a dead incarnation's ``hold`` ms late and followed by the close of its connection (its
  orphaned socket's retransmissions come after the restarted process's new connection).
* ``ha-stale``: a node's closing end of an HA stream sends what is in flight and its FIN ``lag`` ms late; a write
  the peer makes meanwhile reaches the closed socket and comes back as a reset (a FIN that overtakes the late one).
* ``ha-fault`` (adversarial): writes into a node duplicated, swapped with the next one, or the last write of its
  previous connection replayed on its next one after that connection's first two writes (the master's handshake
  and its first frame, on a slave).
* ``rpc-replay`` (adversarial): a node's controller requests delivered a second time, later.
* ``crash-at``: a broker crashes at the end of the step in which it reached a point (its confirmOffset inside a
  message, an epoch entry with no byte under it yet, a role change's sub-step boundary: the broker emits
  ``brk.point`` there and waits, so that nothing after the boundary runs). The crash is the ``sim.crash`` of that
  step, with ``at``.

Their draws come from their own stream (``guard-faults``), taken only while one of them is on.

With ``[sim] progress`` a run ends with a fault-free settle tail and the progress invariants (``settle.py``).
"""

from __future__ import annotations

import bisect
import heapq
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from .. import bugs as B
from ..broker.broker import BrokerNode
from ..broker.legacy import LegacyBrokerNode
from ..codes import MASTER_ID, RequestCode
from ..config import MessageStoreConfig
from ..controller.node import ControllerDisk, ControllerNode
from ..controller.raft import Replication
from ..invariants import AnyBroker, Checker, Coverage
from ..invariants.settle import Settle
from ..observations import Observation, SimCrash
from ..rng import DetRng
from ..runtime import Actor, Command, HAClose, HAConnect, HAWrite, Observe, Send, SetTimer
from ..store.disk import BrokerDisk
from ..trace import ViolationRecord
from ..wire import CleanBrokerDataRequestHeader, ElectMasterRequestHeader
from .actions import Action, CrashAt, without_release
from .clients import AdminNode, ConsumerNode, ProducerNode
from .config import Config
from .events import ChannelClosedEvent, HaChunkEvent, MsgEvent, StepEvent
from .faults import FaultGenerator, WorldView
from .nameserver import NameServerNode
from .settle import CHECK, PROBE, SETTLE, SETTLE_ACT, SETTLE_GEN, Tail, effect_end

CONNECT_TIMEOUT = 3000

# heap event kinds (the settle tail's, from SETTLE on: settle.py)
MSG, TIMER, HA, HA_OPEN, HA_RESULT, CHAN, ACT, GEN, REPLAY = range(9)
assert (ACT, GEN, REPLAY + 1) == (SETTLE_ACT, SETTLE_GEN, SETTLE)


def corrupt_state_word(data: bytes, bit: int) -> bytes:
    """``data`` (an HA write: one whole frame, the state word first) with bit ``bit`` of its first 32-bit word
    flipped. One flipped bit never turns HANDSHAKE (1) into TRANSFER (2) or back. ha-corrupt flips one of the two
    low bits: the state becomes READY (0) or SUSPEND (3), a state of HAConnectionState that no reader expects, so
    AutoSwitchHAClient.HAClientReader.processReadResult ("State not matched": returns false, closeMasterAndWait) and
    AutoSwitchHAConnection's ReadSocketService.processReadResult ("Current state illegal": returns false, the
    connection closes) refuse it, as the kit's readers do (FrameError). A higher bit would give a state past
    HAConnectionState.values(): 5.3.3's client then throws inside processReadResult, whose catch returns true, and it
    keeps the connection and re-reads the same bytes; the kit, which closes at once, does not model that, so the
    fault does not go there. The other header fields are left alone: RocketMQ's frames carry no checksum, so a
    corrupted offset or body size would be taken as sent, by RocketMQ and the kit alike."""
    word = int.from_bytes(data[:4], "big") ^ (1 << bit)
    return word.to_bytes(4, "big") + data[4:]


@dataclass
class Stream:
    conn: int
    a: str  # the connecting (slave) side
    b: str  # the accepting side
    a_inc: int
    b_inc: int
    open_a: bool = True
    open_b: bool = True
    last: list[int] = field(default_factory=lambda: [0, 0])
    held: list[list[bytes | None]] = field(default_factory=lambda: [[], []])
    # the faults at the guards: per direction, the extra delay of a closed end's stale tail (ha-stale), a write held
    # back to follow the next one (reorder), an old connection's write to replay after the first one (replay)
    lag: list[int] = field(default_factory=lambda: [0, 0])
    reset: bool = False
    swap: list[bytes | None] = field(default_factory=lambda: [None, None])
    replay: list[tuple[bytes, int] | None] = field(default_factory=lambda: [None, None])  # (write, writes before)
    # the connecting side's socket exists from the accept on (the kernel completes the connect), but its process
    # learns of it only at the connect result: a reset that reaches it first waits in the socket until then
    told_a: bool = False
    early_fin_a: bool = False

    def ends(self, direction: int) -> tuple[str, str]:
        return (self.a, self.b) if direction == 0 else (self.b, self.a)


@dataclass
class Trap:
    """A ``crash-at`` action waiting for its point (``node``: a broker's name, or ``*``: any broker)."""

    point: str
    step: int
    until: int
    power_loss: bool
    epochs: dict[str, int] = field(default_factory=dict)  # empty-epoch: each broker's last epoch when armed


class Recorder(Protocol):
    """What a simulation reports each step to (``impl/trace.TraceRecorder``, a test's recorder)."""

    def step(self, i: int, t: int, event: StepEvent, obs: list[Observation]) -> None: ...

    def finish(self, sim: Simulation) -> None: ...


class StepChecker(Protocol):
    """What stands where the checker stands: ``invariants.Checker``, or a probe around it."""

    @property
    def coverage(self) -> Coverage: ...

    def after_step(self, observations: list[Observation]) -> None: ...

    def check_progress(self, ids: list[str], at: Settle) -> None: ...

    def check_at_run_end(self) -> None: ...


@dataclass
class Violation:
    invariant: str
    step: int
    time: int
    message: str
    state: dict[str, Any]

    def to_dict(self) -> ViolationRecord:
        return {"invariant": self.invariant, "step": self.step, "t": self.time, "message": self.message,
                "state": self.state}


class Simulation(WorldView):
    """One run. ``run()`` returns the first violation (or ``None``); ``trace`` holds the recorded lines."""

    def __init__(self, cfg: Config, seed: int, *, bugs: frozenset[str] = frozenset(),
                 schedule: list[Action] | None = None, max_steps: int = 20_000, max_time: int | None = None,
                 recorder: Recorder | None = None, checker_factory: Callable[[Simulation], StepChecker] | None = None,
                 note_actions: bool = False) -> None:
        self.cfg = cfg
        # the run's constants the checks read (ClusterView), as plain attributes: they are read on every step
        self.store_config: MessageStoreConfig = cfg.store
        self.broker_name = cfg.broker.broker_name
        self.legacy = cfg.cluster.mode == "legacy"
        self.seed = seed
        self.bugs = bugs
        self.max_steps = max_steps
        self.max_time = max_time
        root = DetRng(seed)
        self._root = root
        self.rng_net = root.fork("network")
        self.rng_frag = root.fork("ha-fragment")  # drawn only with [network] ha_fragment > 0
        self.now = 0
        self.step = 0
        self._seq = 0
        self._act_seq = -(1 << 62)  # explicit actions sort before every other event of the same time
        self._heap: list[tuple[Any, ...]] = []
        n_ctl = cfg.cluster.controllers
        self.controllers = ["ctl"] if n_ctl == 1 else [f"ctl{i + 1}" for i in range(n_ctl)]
        self.controller = self.controllers[0]  # the one node of a single-controller run
        self.nameserver = "ns"
        self.brokers = [f"b{i + 1}" for i in range(cfg.cluster.brokers)]
        self.clients = ["p1", "c1", "admin"]
        self.all_nodes = [self.nameserver, *self.controllers, *self.brokers, *self.clients]
        self.disks = {b: BrokerDisk.fresh(cfg.sim.base_offset) for b in self.brokers}
        # [sim] join_at: the last broker is a replica added later, on a new store (empty, at offset 0)
        self.joining = self.brokers[-1] if cfg.sim.join_at > 0 and cfg.cluster.mode == "controller" else None
        if self.joining is not None:
            self.disks[self.joining] = BrokerDisk()
        for disk in self.disks.values():
            disk.keep_residue = cfg.sim.file_residue and B.FIX_TRUNCATE_CLEARS_FILE not in bugs
        self.ctl_disks = {c: ControllerDisk() for c in self.controllers}
        self.ctl_disk = self.ctl_disks[self.controller]
        self.ctl_commit_mark: dict[str, int] = {}  # a crashed controller node's commit position (JRaft leaders)
        self.nodes: dict[str, Actor | None] = {}
        self.inc: dict[str, int] = {n: 0 for n in self.all_nodes}
        self.started_at: dict[str, int] = {}  # when each node's current process started
        self.up: dict[str, bool] = {n: False for n in self.all_nodes}
        self.paused: dict[str, list[tuple[Any, ...]]] = {}
        self.listen_port: dict[str, int] = {}  # broker -> its listenPort, when a restart moved it (move-broker)
        self.ctl_set = frozenset(self.controllers)
        self.broker_set = frozenset(self.brokers)
        self.idle_close = cfg.controller.server_channel_max_idle_time_seconds * 1000  # 0: idle closes not modelled
        self.chan_seen: dict[tuple[str, int, str], tuple[int, int]] = {}  # (ctl, inc, peer) -> (peer inc, last read)
        self.replaying: set[str] = set()
        self.partitions: dict[str, list[tuple[str, str]]] = {}
        self.blocked: dict[tuple[str, str], int] = {}
        self.net_window = (0.0, 0.0, 0.0, -1)
        self.streams: dict[int, Stream] = {}
        self._next_conn = 0
        # the faults at the guards (issue 21): off until an action turns one on; their draws come from their own stream
        self.rng_guard = root.fork("guard-faults")
        self.ha_faults: dict[str, dict[str, tuple[float, int]]] = {}  # node -> mode -> (p, until)
        self.ha_stale: dict[str, tuple[int, int]] = {}  # node -> (lag, until)
        self.rpc_replay: dict[str, tuple[int, float, int]] = {}  # node -> (lag, p, until)
        self.last_in: dict[str, bytes] = {}  # ha-fault replay: the last write into a node
        self.partition_hold: dict[str, int] = {}  # partition id -> hold (ms), for the partitions that hold
        self.held_rpc: dict[tuple[str, str], list[tuple[Any, ...]]] = {}  # link -> what it holds, in order
        self.traps: dict[str, Trap] = {}
        self.torn: dict[str, tuple[int, int]] = {}  # crash-at torn-write: the (offset, size) of the write it died in
        self.ctl_traps: list[tuple[dict[str, Any], int]] = []  # ctl-at actions waiting for their point, until when
        self.interleave = cfg.sim.interleave
        self.violation: Violation | None = None
        self.recorder = recorder
        self._step_obs: list[Observation] = []
        self.touched: set[str] = set()  # nodes that handled something this step (for the checker)
        self.acted = False  # a fault action ran this step
        # with ``note_actions``: every fault action applied, in order, without its bookkeeping (a generated run's
        # explicit schedule, for the fuzzer's mutants and shrinker)
        self.taken: list[Action] | None = [] if note_actions else None
        self._step_event: StepEvent | None = None
        self.generator: FaultGenerator | None = None
        self.explicit = schedule is not None
        self.quiet_at = 0  # when the effect of the last fault action taken ends (settle.effect_end)
        self.tail: Tail | None = None  # the settle tail, once it runs
        if schedule is None:
            self.generator = FaultGenerator(cfg.faults, root.fork("faults"))
            self._push(self.generator.first_time(0), GEN, None)
            if self.joining is not None:  # in the trace as an action: an explicit schedule from it starts it too
                self.schedule_action({"t": cfg.sim.join_at, "do": "restart", "node": self.joining})
        else:
            for action in schedule:
                self.schedule_action(action)
        self.checker: StepChecker = checker_factory(self) if checker_factory is not None else Checker(self)
        self._boot()

    # ------------------------------------------------------------------------------------ nodes

    def _node_rng(self, name: str) -> DetRng:
        return self._root.fork(f"node:{name}:{self.inc[name]}")

    def _make(self, name: str) -> Actor:
        return build_node(self.cfg, name, self._node_rng(name), controllers=self.controllers, brokers=self.brokers,
                          nameserver=self.nameserver, disk=self.disks.get(name), ctl_disk=self.ctl_disks.get(name),
                          bugs=self.bugs, listen_port=self.listen_port.get(name, 10911))

    def _start(self, name: str) -> None:
        node = self._make(name)
        self.nodes[name] = node
        self.up[name] = True
        self.started_at[name] = self.now
        node.now = self.now
        if self.traps and isinstance(node, BrokerNode):
            self._arm_points(name, node)
        node.start()
        self._drain(node)

    def _boot(self) -> None:
        self._step_event = {"ev": "boot"}
        for name in self.all_nodes:
            if (self.cfg.cluster.mode == "legacy" and name in self.ctl_disks) or name == self.joining:
                continue
            self._start(name)
        self._finish_step()

    # -------------------------------------------------------------------------------- WorldView

    def is_up(self, node: str) -> bool:
        return self.up.get(node, False)

    def is_paused(self, node: str) -> bool:
        return node in self.paused

    @property
    def topic_config(self) -> bool:
        return self.cfg.workload.topic_config and self.cfg.workload.queues > 0

    @property
    def net_delay(self) -> int:
        net = self.cfg.network
        return net.delay_max + (net.slow_delay if net.slow > 0 else 0)

    def disturbed(self) -> bool:
        return bool(self.blocked) or bool(self.paused) or self.quiet_at > self.now

    def broker(self, name: str) -> AnyBroker | None:
        node = self.nodes.get(name)
        # a broker's name only ever holds a broker (build_node); no isinstance on this hot path
        return node if self.up.get(name) else None  # type: ignore[return-value]  # a broker's name holds a broker

    # ----------------------------------------------------------------------- ClusterView (the checks)

    def nameserver_node(self) -> NameServerNode | None:
        node = self.nodes.get(self.nameserver)
        return node if self.up.get(self.nameserver) and isinstance(node, NameServerNode) else None

    def ha_peer(self, conn: int) -> str | None:
        stream = self.streams.get(conn)
        return None if stream is None else stream.b

    def processes(self) -> dict[str, Actor]:
        return {n: a for n, a in self.nodes.items() if a is not None and self.up.get(n) and n not in self.paused}

    def controller_node(self) -> ControllerNode | None:
        """The controller: the one node, or the serving leader of a replicated group (the highest term's)."""
        if len(self.controllers) == 1:
            node = self.nodes.get(self.controller)
            # the controller's name only ever holds a ControllerNode (build_node); no isinstance on this hot path
            return node if self.up.get(self.controller) else None  # type: ignore[return-value]  # see above
        return self._serving_leader()

    def _serving_leader(self) -> ControllerNode | None:
        """The node that serves at the group's current term (the highest of the up nodes): a leader of an older
        term has been deposed, whether it knows yet or not."""
        up: list[tuple[ControllerNode, Replication]] = []
        for c in self.controllers:
            node = self.nodes.get(c)
            if self.up.get(c) and isinstance(node, ControllerNode) and node.repl is not None:
                up.append((node, node.repl))
        if not up:
            return None
        term = max(repl.state.term for _, repl in up)
        for node, repl in up:
            if node.leader and repl.state.term == term:
                if node.jraft:
                    # a JRaft leader serves at once (every request is an entry, so its answers follow the log), but
                    # its applied state lags what the group committed until it catches up: nothing to check yet
                    high = max([self.ctl_commit_mark.get(c, 0) for c in self.controllers]
                               + [r.commit for _, r in up])
                    if node.applied < high:
                        return None
                return node
        return None

    def controller_leader(self) -> str | None:
        """The controller node that leads (or would: a replicated group's elected leader), if any."""
        if len(self.controllers) == 1:
            return self.controller if self.up.get(self.controller) else None
        best, term = None, -1
        for c in self.controllers:
            node = self.nodes.get(c)
            repl = getattr(node, "repl", None)
            if self.up.get(c) and repl is not None and repl.role == "leader" and repl.state.term > term:
                best, term = c, repl.state.term
        return best

    def believed_master(self) -> str | None:
        best, best_epoch = None, -1
        for b in self.brokers:
            node = self.broker(b)
            if node is not None and node.store.role.value != "SLAVE" and not node.store.fenced:
                epoch = node.replicas.master_epoch if hasattr(node, "replicas") else 0
                if epoch > best_epoch:
                    best, best_epoch = b, epoch
        return best

    def broker_id(self, node: str) -> int | None:
        disk = self.disks.get(node)
        return disk.broker_identity[2] if disk is not None and disk.broker_identity else None

    # ----------------------------------------------------------------------------------- heap

    def _push(self, t: int, kind: int, *payload: Any) -> None:
        self._seq += 1
        heapq.heappush(self._heap, (t, self._seq, kind, payload))

    def schedule_action(self, action: Action) -> None:
        """Add one explicit action. It runs exactly where it would have run had it been in the initial schedule
        (before every other event of its time, after the actions added before it), so a run driven action by
        action (the Hypothesis suites) equals the run of its whole schedule given up front."""
        self._act_seq += 1
        heapq.heappush(self._heap, (action["t"], self._act_seq, ACT, (dict(action),)))

    def run(self) -> Violation | None:
        self._loop(None)
        if self.cfg.sim.progress and self.violation is None:
            self.settle(self.max_time if self.max_time is not None else self.now)
        if self.violation is None:
            self.checker.check_at_run_end()  # the checks of the finished run (QUEUE-CONFIRMED-DISPATCHED)
        if self.recorder is not None:
            self.recorder.finish(self)
        return self.violation

    def settle(self, end: int) -> Violation | None:
        """The fault phase ended at ``end`` (``run`` calls this with ``[sim] progress``; a driver that runs the
        simulation piece by piece calls it itself): the settle tail and the progress checks (``settle.py``)."""
        self._loop(end + 1)
        if self.violation is None:
            self.tail = Tail(self, end)
            self.tail.start()
            self._loop(None)
        return self.violation

    def check_progress(self, ids: list[str], at: Settle) -> None:
        self.checker.check_progress(ids, at)

    def tail_stalled(self) -> tuple[int, int, int] | None:
        return None if self.tail is None else self.tail.stalled()

    def tail_idle(self) -> tuple[str, str, int, int, int] | None:
        return None if self.tail is None else self.tail.idle_breach

    def run_before(self, t: int) -> Violation | None:
        """Process every event earlier than ``t`` (within ``max_steps``), stopping at a violation; the run can go
        on afterwards. Actions scheduled at ``t`` or later then run as in a run of the whole schedule."""
        self._loop(t)
        return self.violation

    def _loop(self, before: int | None) -> None:
        while self._heap and self.violation is None and self.step < self.max_steps:
            t, _, kind, payload = self._heap[0]
            if self.max_time is not None and t > self.max_time:
                break
            if before is not None and t >= before:
                break
            heapq.heappop(self._heap)
            if kind == TIMER and not self._live_timer(payload):
                continue  # a cancelled timer, or one of a dead process: nothing happens, no step
            self.now = t
            self.step += 1
            self._dispatch(kind, payload)
            self._finish_step()

    def _live_timer(self, payload: tuple[Any, ...]) -> bool:
        name, inc, token = payload
        if not self.up.get(name) or self.inc[name] != inc:
            return False
        node = self.nodes[name]
        return name in self.paused or (node is not None and token in node._timers)

    def _finish_step(self) -> None:
        if self.traps:
            self._check_traps()
        if self.ctl_traps:
            self._check_ctl_traps()
        obs = self._step_obs
        self.checker.after_step(obs)
        if self.recorder is not None and self._step_event is not None:
            self.recorder.step(self.step, self.now, self._step_event, obs)
        self._step_obs = []
        self._step_event = None
        self.touched = set()
        self.acted = False

    def fail(self, invariant: str, message: str, state: dict[str, Any] | None = None) -> None:
        if self.violation is None:
            self.violation = Violation(invariant, self.step, self.now, message, state or {})

    # ------------------------------------------------------------------------------- dispatch

    def _deliverable(self, name: str, inc: int, kind: int, payload: tuple[Any, ...],
                     replay: bool = False) -> Actor | None:
        if not self.up.get(name) or self.inc[name] != inc:
            return None
        if name in self.paused and not replay and name not in self.replaying:
            self.paused[name].append((kind, payload))
            return None
        return self.nodes[name]

    def _dispatch(self, kind: int, payload: tuple[Any, ...]) -> None:
        rec = self.recorder is not None
        if kind == MSG:
            dst, dst_inc, src, src_inc, cmd = payload
            node = self._deliverable(dst, dst_inc, kind, payload)
            if rec:
                delivered: MsgEvent = {"ev": "msg", "src": src, "dst": dst, "cmd": _cmd_view(cmd)}
                if node is None and dst not in self.paused:
                    delivered["lost"] = True
                self._step_event = delivered
            if node is not None:
                node.now = self.now
                if self.idle_close and dst in self.ctl_set and src in self.broker_set:  # its last read from a broker
                    self.chan_seen[(dst, dst_inc, src)] = (src_inc, self.now)
                node.on_message(src, cmd, f"{src}#{src_inc}")  # a connection per process incarnation
                self._drain(node)
        elif kind == TIMER:
            name, inc, token = payload
            node = self._deliverable(name, inc, kind, payload)
            if rec:
                self._step_event = {"ev": "timer", "node": name}
            if node is not None:
                node.now = self.now
                tail = self.tail
                if tail is not None and tail.counting:  # after the heal point: LIVE-IDLE-WAKEUPS
                    fn = node._timers.get(token)
                    node.on_timer(token)
                    if fn is not None and all(type(eff) is SetTimer for eff in node.out):
                        tail.idle_wakeup(name, fn)
                else:
                    node.on_timer(token)
                self._drain(node)
        elif kind == HA:
            conn, direction, chunk = payload
            self._deliver_chunk(conn, direction, chunk, rec)
        elif kind == HA_OPEN:
            conn, token = payload
            self._accept(conn, token, rec)
        elif kind == HA_RESULT:
            name, inc, token, conn = payload
            node = self._deliverable(name, inc, kind, payload)
            if rec:
                self._step_event = {"ev": "ha-connect", "node": name, "conn": conn}
            if node is not None:
                node.now = self.now
                node.on_ha_connect_result(token, conn)
                self._drain(node)
                s = self.streams.get(conn) if conn is not None else None
                if s is not None:
                    s.told_a = True
                    if s.early_fin_a and s.open_a:  # the reset that came first: the first read sees EOF
                        s.open_a = False
                        node.on_ha_closed(conn)
                        self._drain(node)
            elif conn is not None:
                self._close_side(conn, name)
        elif kind == CHAN:
            name, inc, peer, peer_inc, idle = payload
            node = self._deliverable(name, inc, kind, payload)
            if rec:
                closed: ChannelClosedEvent = {"ev": "channel-closed", "node": name, "peer": peer}
                if idle:
                    closed["idle"] = True
                self._step_event = closed
            if node is not None:
                node.now = self.now
                node.on_channel_closed(peer, f"{peer}#{peer_inc}")
                self._drain(node)
        elif kind == ACT:
            (action,) = payload
            if rec:
                self._step_event = {"ev": "act", "act": action}
            self._act(action)
        elif kind == REPLAY:
            (name,) = payload
            backlog = self.paused.get(name)
            if not backlog:
                self.paused.pop(name, None)
                self.replaying.discard(name)
                if self.recorder is not None:
                    self._step_event = {"ev": "resumed", "node": name}
                return
            ev_kind, ev_payload = backlog.pop(0)
            self.replaying.add(name)
            self._push(self.now, REPLAY, name)
            self._dispatch(ev_kind, ev_payload)
            self.replaying.discard(name)
        elif kind == GEN:
            assert self.generator is not None
            actions = self.generator.draw(self.now, self)
            if rec:
                self._step_event = {"ev": "fault-gen", "n": len(actions)}
            for i, action in enumerate(actions):
                if i == 0 and action["t"] == self.now:
                    if rec:
                        self._step_event = {"ev": "act", "act": action}
                    self._act(action)
                else:
                    self._push(action["t"], ACT, action)
            self._push(self.now + self.generator.rng.exp_ms(self.cfg.faults.mean_interval), GEN)
        elif self.tail is not None:
            if kind == SETTLE:
                self.tail.on_settle(rec)
            elif kind == PROBE:
                self.tail.on_probe(rec)
            elif kind == CHECK:
                self.tail.on_check(payload[0], rec)

    # --------------------------------------------------------------------------------- effects

    def _drain(self, node: Actor) -> None:
        self.touched.add(node.name)
        if self.tail is not None and self.tail.counting:
            self.tail.delivered(node.name)
        out = node.out
        if not out:
            return
        node.out = []
        name = node.name
        if name in self.torn:
            return  # it died copying a write (crash-at torn-write): nothing it did after reaches anyone
        inc = self.inc[name]
        tearing = self._tearing(name)
        for eff in out:
            if tearing and isinstance(eff, Observe) and eff.obs["k"] in ("brk.append", "ha.slave-append"):
                self._step_obs.append(eff.obs)
                self.torn[name] = int(eff.obs["offset"]), int(eff.obs["size"])
                return  # the effects after the write are lost with the process (the step's end crashes it)
            if isinstance(eff, SetTimer):
                self._push(eff.at, TIMER, name, inc, eff.token)
            elif isinstance(eff, Send):
                self._route(name, eff.dst, eff.cmd)
            elif isinstance(eff, Observe):
                self._step_obs.append(eff.obs)
            elif isinstance(eff, HAWrite):
                self._stream_write(name, eff.conn, eff.data)
            elif isinstance(eff, HAClose):
                self._close_side(eff.conn, name)
            elif isinstance(eff, HAConnect):
                self._connect(name, eff.token, eff.addr)
        if node.out:  # effects produced while draining (none today, kept for safety)
            self._drain(node)

    def _delay(self) -> int:
        cfg = self.cfg.network
        d = self.rng_net.between(cfg.delay_min, cfg.delay_max)
        slow = max(cfg.slow, self.net_window[2] if self.now < self.net_window[3] else 0.0)
        if slow and self.rng_net.chance(slow):
            d += cfg.slow_delay
        return d

    def is_blocked(self, src: str, dst: str) -> bool:
        return self.blocked.get((src, dst), 0) > 0

    def _route(self, src: str, dst: str, cmd: Command) -> None:
        if dst not in self.up:
            self._step_obs.append({"k": "net.unknown-destination", "src": src, "dst": dst})
            return
        if not self.up[dst] or self.is_blocked(src, dst):
            if self.partition_hold and self.up[dst]:
                hold = self._hold(src, dst)
                if hold is not None:  # TCP holds the bytes; the heal delivers them (_flush_held_rpc)
                    self.held_rpc.setdefault((src, dst), []).append(("msg", self.inc.get(src, 0), self.inc[dst],
                                                                      hold, cmd))
                    return
            why = "down" if not self.up[dst] else "partition"
            self._step_obs.append({"k": "net.drop", "src": src, "dst": dst, "code": int(cmd.code), "why": why})
            return
        cfg = self.cfg.network
        window = self.now < self.net_window[3]
        drop = max(cfg.drop, self.net_window[0] if window else 0.0)
        if drop and self.rng_net.chance(drop):
            self._step_obs.append({"k": "net.drop", "src": src, "dst": dst, "code": int(cmd.code), "why": "loss"})
            return
        src_inc = self.inc.get(src, 0)
        self._push(self.now + self._delay(), MSG, dst, self.inc[dst], src, src_inc, cmd)
        dup = max(cfg.duplicate, self.net_window[1] if window else 0.0)
        if dup and self.rng_net.chance(dup):
            self._push(self.now + self._delay(), MSG, dst, self.inc[dst], src, src_inc, cmd)
        if self.rpc_replay and src in self.rpc_replay and dst in self.ctl_set and not cmd.response:
            lag, p, until = self.rpc_replay[src]
            if self.now < until and self.rng_guard.chance(p):  # adversarial: the request, processed a second time
                self._push(self.now + lag + self._delay(), MSG, dst, self.inc[dst], src, src_inc, cmd)

    # ------------------------------------------------------------------------------ HA streams

    def _connect(self, src: str, token: int, addr: str) -> None:
        dst = addr.split(":")[0]
        if dst not in self.up or not self.up[dst]:
            self._push(self.now + self._delay(), HA_RESULT, src, self.inc[src], token, None)
            return
        if self.is_blocked(src, dst) or self.is_blocked(dst, src):
            self._push(self.now + CONNECT_TIMEOUT, HA_RESULT, src, self.inc[src], token, None)
            return
        self._next_conn += 1
        conn = self._next_conn
        stream = self.streams[conn] = Stream(conn, src, dst, self.inc[src], self.inc[dst])
        if self.ha_faults:
            for direction, end in ((1, src), (0, dst)):  # a replay into either end, from its previous connection
                mode = self.ha_faults.get(end, {}).get("replay")
                old = self.last_in.get(end)
                if mode is not None and self.now < mode[1] and old is not None and self.rng_guard.chance(mode[0]):
                    stream.replay[direction] = (old, 2)  # after the handshake and the first frame
        self._push(self.now + self.cfg.network.connect_delay, HA_OPEN, conn, token)

    def _accept(self, conn: int, token: int, rec: bool) -> None:
        s = self.streams[conn]
        if rec:
            self._step_event = {"ev": "ha-accept", "conn": conn, "slave": s.a, "master": s.b}
        acceptor = self._deliverable(s.b, s.b_inc, HA_OPEN, (conn, token))
        if acceptor is None:
            if s.b in self.paused:  # delivered again at resume
                return
            s.open_b = False
            self._push(self.now + self._delay(), HA_RESULT, s.a, s.a_inc, token, None)
            return
        acceptor.now = self.now
        acceptor.on_ha_accept(conn, s.a)
        self._drain(acceptor)
        self._push(self.now + self._delay(), HA_RESULT, s.a, s.a_inc, token, conn)

    def _side_open(self, s: Stream, name: str) -> bool:
        return s.open_a if name == s.a else s.open_b

    def _stream_write(self, src: str, conn: int, data: bytes | None) -> None:
        s = self.streams.get(conn)
        if s is None or not self._side_open(s, src):
            return
        direction = 0 if src == s.a else 1
        if self.ha_faults and data is not None:
            dst = s.b if direction == 0 else s.a
            if dst in self.ha_faults and self._tamper(s, direction, dst, data):
                return
        self._write_pieces(s, direction, data)

    def _tamper(self, s: Stream, direction: int, dst: str, data: bytes) -> bool:
        """ha-fault (adversarial): a write into ``dst`` duplicated, held to follow the next one, followed by the
        replay of its previous connection's last write, or with its frame state word corrupted. True when the write
        has been dealt with here."""
        modes = self.ha_faults[dst]
        now = self.now
        replay = modes.get("replay")
        if replay is not None and now < replay[1]:
            self.last_in[dst] = data
        sent = data
        corrupt = modes.get("corrupt")
        if corrupt is not None and now < corrupt[1] and len(data) >= 4 and self.rng_guard.chance(corrupt[0]):
            data = corrupt_state_word(data, self.rng_guard.between(0, 1))
        pending: bytes | None = None
        replayed = s.replay[direction]
        if replayed is not None:
            s.replay[direction] = (replayed[0], replayed[1] - 1) if replayed[1] > 1 else None
            pending = replayed[0] if replayed[1] <= 1 else None
        held, s.swap[direction] = s.swap[direction], None
        out = [data]
        if held is not None:  # the write held back goes after this one
            out.append(held)
        else:
            swap = modes.get("reorder")
            if swap is not None and now < swap[1] and self.rng_guard.chance(swap[0]):
                s.swap[direction] = data
                out = []
        dup = modes.get("dup")
        if out and dup is not None and now < dup[1] and self.rng_guard.chance(dup[0]):
            out.insert(1, data)
        if pending is not None:
            out.append(pending)
        if out == [sent]:
            return False
        for piece in out:
            self._write_pieces(s, direction, piece)
        return True

    def _write_pieces(self, s: Stream, direction: int, data: bytes | None) -> None:
        frag = self.cfg.network.ha_fragment
        if frag and data is not None and len(data) > 1 and self.rng_frag.chance(frag):
            # TCP delivers a write as segments; a reader must reassemble frames (AutoSwitchHAClient.HAClientReader
            # processReadResult and AutoSwitchHAConnection.HAServerReader keep a partial frame for the next read)
            cuts = sorted({self.rng_frag.between(1, len(data) - 1) for _ in range(self.rng_frag.between(1, 3))})
            for lo, hi in itertools.pairwise([0, *cuts, len(data)]):
                self._send_chunk(s, direction, data[lo:hi])
            return
        self._send_chunk(s, direction, data)

    def _send_chunk(self, s: Stream, direction: int, data: bytes | None) -> None:
        src, dst = s.ends(direction)
        if self.is_blocked(src, dst) or s.held[direction]:
            s.held[direction].append(data)
            return
        t = max(self.now + self._delay() + s.lag[direction], s.last[direction])
        s.last[direction] = t
        self._push(t, HA, s.conn, direction, data)

    def _close_side(self, conn: int, name: str) -> None:
        s = self.streams.get(conn)
        if s is None:
            return
        if name == s.a and s.open_a:
            s.open_a = False
            direction = 0
        elif name == s.b and s.open_b:
            s.open_b = False
            direction = 1
        else:
            return
        held = s.swap[direction]
        if held is not None:  # a write held back by a reorder goes before the FIN
            s.swap[direction] = None
            self._write_pieces(s, direction, held)
        if self.ha_stale:
            stale = self.ha_stale.get(name)
            if stale is not None and self.now < stale[1]:
                self._stale_tail(s, direction, stale[0])
        self._send_chunk(s, direction, None)  # FIN

    def _stale_tail(self, s: Stream, direction: int, lag: int) -> None:
        """ha-stale: what this end has in flight, and its FIN, reach the peer ``lag`` ms late (same order)."""
        s.lag[direction] = lag
        moved = False
        for i, (t, seq, kind, payload) in enumerate(self._heap):
            if kind == HA and payload[0] == s.conn and payload[1] == direction:
                self._heap[i] = (t + lag, seq, kind, payload)
                moved = True
        if moved:
            heapq.heapify(self._heap)
            s.last[direction] += lag

    def _deliver_chunk(self, conn: int, direction: int, chunk: bytes | None, rec: bool) -> None:
        s = self.streams[conn]
        _, dst = s.ends(direction)
        dst_inc = s.b_inc if direction == 0 else s.a_inc
        if rec:
            piece: HaChunkEvent = {"ev": "ha", "conn": conn, "dst": dst}
            if chunk is None:
                piece["fin"] = True
            else:
                piece["n"] = len(chunk)
            self._step_event = piece
        if not self._side_open(s, dst):
            if chunk is not None and s.lag[1 - direction] and not s.reset:
                # ha-stale: the write reached a closed socket whose FIN is late; its kernel answers with a reset
                s.reset = True
                writer = s.a if direction == 0 else s.b
                if not self.is_blocked(dst, writer):
                    self._push(self.now + self._delay(), HA, conn, 1 - direction, None)
            return
        node = self._deliverable(dst, dst_inc, HA, (conn, direction, chunk))
        if node is None:
            return
        node.now = self.now
        if chunk is None and dst == s.a and not s.told_a:
            s.early_fin_a = True  # delivered with the connect result (HA_RESULT)
            return
        if chunk is None:
            if dst == s.a:
                s.open_a = False
            else:
                s.open_b = False
            node.on_ha_closed(conn)
        else:
            node.on_ha_data(conn, chunk)
        self._drain(node)

    def _flush_held(self) -> None:
        for s in self.streams.values():
            for direction in (0, 1):
                if s.held[direction]:
                    src, dst = s.ends(direction)
                    if not self.is_blocked(src, dst):
                        pending, s.held[direction] = s.held[direction], []
                        for chunk in pending:
                            self._send_chunk(s, direction, chunk)

    # ---------------------------------------------------------------------------------- faults

    def _act(self, a: Action) -> None:
        self.acted = True
        self.quiet_at = max(self.quiet_at, effect_end(a))
        if self.taken is not None:
            self.taken.append(without_release(a))
        if self.generator is not None and a.get("release"):
            self.generator.release(a.get("release", []))
        if a["do"] == "crash":
            self.crash(a["node"], bool(a.get("powerLoss", False)))
        elif a["do"] == "stop":  # a clean shutdown: flush, checkpoint, no abort file; then the process is gone
            if self.up.get(a["node"]) and a["node"] in self.disks:
                self.disks[a["node"]].stop()
                self.crash(a["node"], clean=True)
        elif a["do"] == "lose-file":  # only while the broker is down: its next start reads the file as new
            if not self.up.get(a["node"]) and a["node"] in self.disks:
                self.disks[a["node"]].lose(str(a["file"]))
        elif a["do"] == "restart":
            if not self.up.get(a["node"]):
                if "port" in a:  # the broker comes back on another listenPort (move-broker), with its old id
                    self.listen_port[a["node"]] = int(a["port"])
                self._start(a["node"])
        elif a["do"] == "partition":
            links = [(x[0], x[1]) for x in a["links"]]
            self.partitions[a["id"]] = links
            if "hold" in a:
                self.partition_hold[a["id"]] = int(a["hold"])
            for link in links:
                self.blocked[link] = self.blocked.get(link, 0) + 1
        elif a["do"] == "heal":
            self.partition_hold.pop(a["id"], None)
            for link in self.partitions.pop(a["id"], []):
                self.blocked[link] -= 1
                if self.blocked[link] <= 0:
                    del self.blocked[link]
            self._flush_held()
            if self.held_rpc:
                self._flush_held_rpc()
        elif a["do"] == "pause":
            if self.up.get(a["node"]) and a["node"] not in self.paused:
                self.paused[a["node"]] = []
        elif a["do"] == "resume":
            if a["node"] in self.paused:  # replay the backlog in order, one event per step
                self._push(self.now, REPLAY, a["node"])
        elif a["do"] == "break-ha":  # a connection reset: each end reads EOF after what is already in flight
            for s in list(self.streams.values()):
                if a["node"] in (s.a, s.b) and (s.open_a or s.open_b):
                    for direction in (0, 1):
                        self._send_chunk(s, direction, None)
        elif a["do"] == "net":
            self.net_window = (float(a.get("drop", 0.0)), float(a.get("dup", 0.0)), float(a.get("slow", 0.0)),
                               int(a["until"]))
        elif a["do"] == "slow-dispatch":
            broker = self.broker(a["node"])
            if isinstance(broker, BrokerNode):  # a 4.x broker has no reput stall to inject
                broker.now = self.now
                broker.stall_dispatch(int(a["ms"]))
        elif a["do"] == "slow-commit":
            ctl = self.controller_node()
            if ctl is not None and self.controller not in self.paused:
                ctl.now = self.now
                ctl.inject_slow_commit(int(a["extra"]), int(a["duration"]))
        elif a["do"] == "slow-apply":
            node = self.nodes.get(a["node"])
            if self.up.get(a["node"]) and isinstance(node, ControllerNode) and node.repl is not None:
                node.repl.slow_apply(int(a["extra"]), int(a["duration"]))
        elif a["do"] == "admin-elect":
            admin = self._admin()
            admin.controller = self.controller_leader() or self.controller
            bid = a.get("brokerId")
            elect: ElectMasterRequestHeader = {
                "clusterName": self.cfg.broker.cluster_name, "brokerName": self.cfg.broker.broker_name,
                "brokerId": -1 if bid is None else bid, "designateElect": bid is not None}
            admin.call(RequestCode.CONTROLLER_ELECT_MASTER, dict(elect))
            self._drain(admin)
        elif a["do"] == "clean":
            admin = self._admin()
            admin.controller = self.controller_leader() or self.controller
            clean: CleanBrokerDataRequestHeader = {
                "clusterName": self.cfg.broker.cluster_name, "brokerName": self.cfg.broker.broker_name,
                "brokerControllerIdsToClean": a.get("ids"), "isCleanLivingBroker": bool(a.get("living", False))}
            admin.call(RequestCode.CLEAN_BROKER_DATA, dict(clean))
            self._drain(admin)
        elif a["do"] == "expand-queues":  # mqadmin updateTopic -c: to the master the nameserver routes, +by queues
            ns = self.nameserver_node()
            name = self.cfg.broker.broker_name
            master = ns.broker_addrs.get(name, {}).get(MASTER_ID) if ns is not None else None
            have = ns.queue_data.get(name) if ns is not None else None
            if master is not None and have is not None:
                n = min(64, max(have) + int(a.get("by", 2)))
                admin = self._admin()
                admin.call_broker(master.split(":")[0], RequestCode.UPDATE_AND_CREATE_TOPIC,
                                  {"topic": "TopicTest", "readQueueNums": n, "writeQueueNums": n})
                self._drain(admin)
        elif a["do"] == "ha-fault":
            self.ha_faults.setdefault(a["node"], {})[a["mode"]] = (float(a.get("p", 1.0)), int(a["until"]))
        elif a["do"] == "ha-stale":
            self.ha_stale[a["node"]] = (int(a["lag"]), int(a["until"]))
        elif a["do"] == "rpc-replay":
            self.rpc_replay[a["node"]] = (int(a["lag"]), float(a.get("p", 1.0)), int(a["until"]))
        elif a["do"] == "crash-at":
            self._arm(a)
        elif a["do"] == "ctl-at":
            self.ctl_traps.append((dict(a), self.now + int(a["within"])))
        elif a["do"] == "produce":
            producer = self.nodes["p1"]
            assert isinstance(producer, ProducerNode)
            producer.now = self.now
            producer.produce(int(a.get("count", 1)), a.get("size"))
            self._drain(producer)

    def _admin(self) -> AdminNode:
        """The admin tool's node (mqadmin), at the current time."""
        admin = self.nodes["admin"]
        assert isinstance(admin, AdminNode)
        admin.now = self.now
        return admin

    def crash(self, name: str, power_loss: bool = False, clean: bool = False, at: str | None = None) -> None:
        if not self.up.get(name):
            return
        self.up[name] = False
        self.inc[name] += 1
        self.torn.pop(name, None)
        dead = self.nodes[name]
        if dead is not None:
            repl = getattr(dead, "repl", None)
            if repl is not None:
                self.ctl_commit_mark[name] = max(self.ctl_commit_mark.get(name, 0), repl.commit)
            dead.halt()
        self.nodes[name] = None
        self.paused.pop(name, None)
        lost = 0
        if power_loss and name in self.disks:
            lost = self.disks[name].power_loss()
        crashed: SimCrash = {"k": "sim.crash", "node": name, "powerLoss": power_loss, "lostBytes": lost}
        if clean:
            crashed["clean"] = True
        if at is not None:
            crashed["at"] = at
        self._step_obs.append(crashed)
        for s in self.streams.values():
            if name in (s.a, s.b):
                self._close_side(s.conn, name)
        for peer in (*self.controllers, self.nameserver):
            hold = self._hold(name, peer) if self.partition_hold and peer != name and self.up.get(peer) else None
            if peer != name and self.up.get(peer) and not self.is_blocked(name, peer):
                self._push(self.now + self._delay(), CHAN, peer, self.inc[peer], name, self.inc[name] - 1, False)
            elif hold is not None:  # the close waits behind what the held link still holds of this incarnation
                self.held_rpc.setdefault((name, peer), []).append(("chan", self.inc[name] - 1, self.inc[peer], hold))
            elif self.idle_close and peer in self.ctl_set and self.up.get(peer):
                # the close is lost: the controller's end of the connection stays open until it has been idle for
                # serverChannelMaxIdleTimeSeconds (NettyRemotingServer's IdleStateHandler, ALL_IDLE)
                seen = self.chan_seen.get((peer, self.inc[peer], name))
                if seen is not None and seen[0] == self.inc[name] - 1:
                    self._push(max(self.now, seen[1] + self.idle_close), CHAN, peer, self.inc[peer], name, seen[0],
                               True)

    # ------------------------------------------------------------------- faults at the guards (issue 21)

    def _hold(self, src: str, dst: str) -> int | None:
        """The hold of a cut link when every partition that cuts it holds (the largest), else None (it drops)."""
        hold = -1
        for pid, links in self.partitions.items():
            if (src, dst) in links:
                h = self.partition_hold.get(pid)
                if h is None:
                    return None
                hold = max(hold, h)
        return hold if hold >= 0 else None

    def _flush_held_rpc(self) -> None:
        """A heal: each link no longer cut delivers what it held, in order; a live sender's messages now, a dead
        incarnation's ``hold`` ms later (its orphaned socket retransmits on its own clock), its close after them."""
        for link in sorted(self.held_rpc):
            src, dst = link
            if self.is_blocked(src, dst):
                continue
            lasts: dict[int, int] = {}  # per connection (the sender's incarnation): TCP keeps each one's order
            for item in self.held_rpc.pop(link):
                live = self.up.get(src, False) and self.inc.get(src, 0) == item[1]
                base = self.now if live and item[0] == "msg" else self.now + item[3]
                last = lasts[item[1]] = max(base + self._delay(), lasts.get(item[1], 0))
                if item[0] == "msg":
                    self._push(last, MSG, dst, item[2], src, item[1], item[4])
                else:
                    self._push(last, CHAN, dst, item[2], src, item[1], False)

    def _arm(self, a: CrashAt) -> None:
        key = a.get("node", "*")
        trap = Trap(a["point"], int(a.get("step", 1)), self.now + int(a["within"]), bool(a.get("powerLoss", False)))
        self.traps[key] = trap
        for name in (self.brokers if key == "*" else [key]):
            node = self.broker(name)
            if isinstance(node, BrokerNode):
                trap.epochs[name] = node.ha.epoch_cache.last_epoch()
                self._arm_points(name, node)

    def _arm_points(self, name: str, node: BrokerNode) -> None:
        """A broker reaching a trapped role-change boundary says so (``brk.point``) and waits there; a broker up
        for the first time under an empty-epoch trap has its last epoch noted (only a later one counts)."""
        trap = self.traps.get(name) or self.traps.get("*")
        node.trap_points = {trap.point: trap.step} if trap is not None and trap.point == "role-change" else {}
        if trap is not None and name not in trap.epochs:
            trap.epochs[name] = node.ha.epoch_cache.last_epoch()

    def _check_traps(self) -> None:
        """At the end of a step: crash the brokers that reached their trap's point in it (``crash-at``)."""
        reached = {o.get("n") for o in self._step_obs if o["k"] == "brk.point"}
        for key, trap in list(self.traps.items()):
            names = self.brokers if key == "*" else [key]
            if self.now > trap.until:
                del self.traps[key]
                for name in names:
                    node = self.broker(name)
                    if isinstance(node, BrokerNode):
                        node.trap_points = {}
                continue
            for name in names:
                node = self.broker(name)
                if not isinstance(node, BrokerNode) or name in self.paused:
                    continue
                if trap.point == "role-change":
                    hit = name in reached
                elif name not in self.touched:
                    continue
                elif trap.point == "confirm-split":
                    hit = _splits_message(node)
                elif trap.point == "torn-write":
                    write = self.torn.pop(name, None)
                    hit = write is not None
                    if write is not None:
                        self._tear(name, *write)
                else:
                    last = node.ha.epoch_cache.last_entry()
                    hit = (last is not None and last.epoch != trap.epochs.get(name, -1)
                           and last.start_offset == node.store.max_phy_offset)
                if hit:
                    del self.traps[key]
                    node.trap_points = {}
                    self.acted = True
                    self.crash(name, trap.power_loss, at=trap.point)
                    break

    def _tearing(self, name: str) -> bool:
        """A ``crash-at torn-write`` waits for ``name``'s next commit-log write."""
        trap = self.traps.get(name) or self.traps.get("*")
        return trap is not None and trap.point == "torn-write" and self.now <= trap.until

    def _tear(self, name: str, offset: int, size: int) -> None:
        """``crash-at torn-write``: the process dies while copying a write's bytes into the mapped file, so only a
        prefix of them is there; what it did after the copy in the step (a flush, a dispatch, a checkpoint) did not
        happen. Past the prefix the file holds what it held before: an earlier truncation's leftovers
        (``BrokerDisk.file_tail``, with ``[sim] file_residue``), else zeros: a mapped file is created at its full size
        (``MappedFile.init``: a new file of ``mappedFileSizeCommitLog`` bytes, which reads as zeros until written) and
        a truncation under fix-truncate-clears-file clears what it cuts. The kit keeps those zeros for the rest of the
        torn record (past it they cannot change what recovery decides): ``recoverAbnormally`` reads them with the
        record's prefix, and ``checkMessageAndReturnSize`` fails the record (its body CRC, or its magic code when the
        cut falls in the header), so the scan ends there and the file is truncated at the record's start. The epoch
        file keeps only what was written before the copy: an entry of the epoch the write belongs to starts at or
        before it, and one the handler appended after it (the next frame's epoch) never reached the file."""
        disk = self.disks[name]
        cut = offset + (self.rng_guard.between(1, size - 1) if size > 1 else 0)
        if cut >= len(disk.commitlog):
            return
        del disk.commitlog[cut:]
        if not disk.file_tail(cut):  # no leftovers there: the zeros of a fresh (or cleared) mapped file
            disk.residue, disk.residue_at = bytes(offset + size - cut), cut
        disk.generation += 1
        disk.flushed = min(disk.flushed, offset)
        disk.cq_end = min(disk.cq_end, offset)
        disk.checkpoint_confirm = min(disk.checkpoint_confirm, offset)
        disk.checkpoint_confirm_flushed = min(disk.checkpoint_confirm_flushed, offset)
        if disk.epoch_file:  # an entry of an epoch that starts past the write was appended after it, by a dead process
            disk.epoch_file = [(epoch, start) for epoch, start in disk.epoch_file if start <= offset]

    def _check_ctl_traps(self) -> None:
        """At the end of a step: hit the controller node that reached a ``ctl-at`` action's point in it (a node with
        an entry it knows committed and has not applied), killed or cut off."""
        for trap in list(self.ctl_traps):
            a, until = trap
            if self.now > until:
                self.ctl_traps.remove(trap)
                continue
            for c in self.controllers:
                node = self.nodes.get(c)
                if not isinstance(node, ControllerNode) or node.repl is None or not self.up.get(c) or c in self.paused:
                    continue
                repl = node.repl
                if repl.commit <= node.applied:
                    continue
                if a.get("leader") and (repl.role != "leader" or repl.entries[repl.commit - 1].term != repl.state.term):
                    continue  # a leader's own: an entry of its term (its empty entry first) committed, not applied
                self.ctl_traps.remove(trap)
                self.acted = True
                if a["then"] == "crash":
                    self.crash(c, at="ctl-unapplied")
                else:
                    others = [n for n in [*self.controllers, *self.brokers] if n != c]
                    links = [(c, o) for o in others] + [(o, c) for o in others]
                    self.partitions[str(a.get("id", "ctl-at"))] = links  # as a partition action of that id would
                    for link in links:
                        self.blocked[link] = self.blocked.get(link, 0) + 1
                break


def _splits_message(node: BrokerNode) -> bool:
    """The confirmOffset a restart would read (the checkpoint's) lies inside a message of the log (a whole one, or
    the partial one at its end)."""
    log = node.store.commitlog
    c = node.disk.checkpoint_confirm
    if c <= log.min_offset or c > log.max_offset:
        return False
    i = bisect.bisect_left(log.ends, c)
    if i < len(log.ends) and log.ends[i] == c:
        return False  # the end of a whole message
    if i < len(log.records):
        return log.records[i].offset < c  # inside the next whole message (not at its start)
    return c > log.whole_end()  # inside the partial message at the end


def build_node(cfg: Config, name: str, rng: DetRng, *, controllers: list[str], brokers: list[str], nameserver: str,
               disk: BrokerDisk | None, ctl_disk: ControllerDisk | None, bugs: frozenset[str],
               listen_port: int = 10911) -> Actor:
    """The actor of one node, as the simulator and the real runtime (``rmqha cluster``) both start it
    (``listen_port``: a 5.x broker's BrokerConfig.listenPort, which a ``restart`` with ``port`` moves)."""
    if ctl_disk is not None:
        return ControllerNode(name, cfg.controller, rng, ctl_disk, bugs,
                              peers=controllers if len(controllers) > 1 else None)
    if name == nameserver:
        return NameServerNode(name, rng, bugs)
    if disk is not None:
        idx = brokers.index(name)
        prio = cfg.cluster.election_priorities[idx] if cfg.cluster.election_priorities else None
        if cfg.cluster.mode == "legacy":
            return LegacyBrokerNode(name, cfg.broker, cfg.store, disk, rng, nameserver,
                                    master=(idx == 0), master_name=brokers[0], bugs=bugs)
        return BrokerNode(name, cfg.broker, cfg.store, disk, rng, controllers, nameserver, bugs, prio,
                          queues=cfg.workload.queues, file_boundaries=cfg.sim.file_boundaries,
                          topic_config=cfg.workload.topic_config, other_topics=cfg.workload.other_topics,
                          topic_persist_us=cfg.workload.topic_persist_us, interleave=cfg.sim.interleave,
                          listen_port=listen_port)
    if name == "p1":
        return ProducerNode(name, cfg.workload, cfg.broker.broker_name, nameserver, rng, bugs)
    if name == "c1":
        return ConsumerNode(name, cfg.workload, cfg.broker.broker_name, nameserver, rng,
                            slave_read=cfg.broker.slave_read_enable)
    if name == "admin":
        return AdminNode(name, controllers[0], rng)
    raise ValueError(name)  # pragma: no cover


def _cmd_view(cmd: Command) -> dict[str, Any]:
    d = cmd.to_dict()
    try:
        d["op"] = RequestCode(cmd.code).name if not cmd.response else None
    except ValueError:
        d["op"] = None
    if d["op"] is None:
        del d["op"]
    return d


__all__ = ["B", "Simulation", "Violation", "build_node"]
