"""The fault vocabulary: primitive fault actions (what a schedule, a trace and a nemesis hold) and the composite
fault kinds the generator draws from.

A run's faults are a list of *actions*, each at a simulated time ``t`` and named by ``do``: ``crash``/``restart``,
``stop``, ``lose-file``, ``partition``/``heal`` (directed links), ``pause``/``resume``, ``break-ha``, ``net`` (a lossy
window for RPCs), ``slow-commit``, ``slow-apply``, ``slow-dispatch``, ``admin-elect``, ``clean``, ``expand-queues`` and,
for scripted scenarios, ``produce``. The simulator applies them (``world.Simulation``), the generator draws them
(``faults.FaultGenerator``), the fuzzer mutates and shrinks them, the real runtime's nemesis plays them on
processes (``rmqha.cluster.nemesis``), and the trace keeps each one as it was taken (``docs/trace-format.md``).

Rules:

* An action is a ``TypedDict``: its JSON is what the trace header (``faults.events``) and the ``act`` step lines
  hold, byte for byte. One class per primitive, discriminated by ``do``; ``Action`` is their union.
* ``fault`` (the composite kind a generated action came from) and ``release`` (the nodes the generator frees when
  it runs) are bookkeeping that any action may carry; ``release`` is dropped from explicit schedules.
* Optional keys are ``NotRequired``: a scenario may leave them out, and the simulator reads their defaults
  (``powerLoss`` false, ``count`` 1, ``by`` 2...).

``FAULT_KINDS`` (composite kinds, for ``[faults] weights``) and ``DEFAULT_WEIGHTS`` live here too, so that the
harness settings (``impl/sim/config.py``) and the generator read one list.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Literal, NotRequired, TypedDict, cast, get_args


class _Base(TypedDict):
    t: int
    fault: NotRequired[str]  # the composite fault kind a generated action belongs to
    release: NotRequired[list[str]]  # nodes the generator may pick again once this action has run


class Crash(_Base):
    """kill -9 (``powerLoss``: the unflushed page cache is lost too)."""

    do: Literal["crash"]
    node: str
    powerLoss: NotRequired[bool]


class Restart(_Base):
    """A crashed process starts again; ``port``: a broker comes back on this listenPort (its HA port the next one),
    with its old store and id (a redeployment on another port)."""

    do: Literal["restart"]
    node: str
    port: NotRequired[int]


class Stop(_Base):
    """A clean shutdown: flush, checkpoint, no abort file (the next start recovers normally)."""

    do: Literal["stop"]
    node: str


class LoseFile(_Base):
    """While the broker is down: its ``epoch`` file, its ``checkpoint`` or its ``identity`` (the controller id it
    was given: storePathBrokerIdentity and its temp file) is gone at the next start."""

    do: Literal["lose-file"]
    node: str
    file: str


class Partition(_Base):
    """Cut the directed ``links`` ([from, to]) until the ``heal`` of the same ``id``. RPC messages on a cut link are
    lost, unless ``hold`` is given: then the link holds them as TCP does (the sender's kernel retransmits) and the
    heal delivers them in order; those of a process incarnation that died meanwhile (its orphaned socket) arrive
    ``hold`` ms after the heal, followed by the close of its connection, so that a restarted broker's new connection
    can be served first."""

    do: Literal["partition"]
    id: str
    links: list[list[str]]
    hold: NotRequired[int]


class Heal(_Base):
    do: Literal["heal"]
    id: str


class Pause(_Base):
    """SIGSTOP: the node handles nothing until ``resume``."""

    do: Literal["pause"]
    node: str


class Resume(_Base):
    do: Literal["resume"]
    node: str


class BreakHa(_Base):
    """Reset every HA connection of ``node``."""

    do: Literal["break-ha"]
    node: str


class Net(_Base):
    """Until ``until``, RPC messages are dropped, duplicated or slowed with these probabilities."""

    do: Literal["net"]
    drop: NotRequired[float]
    dup: NotRequired[float]
    slow: NotRequired[float]
    until: int


class SlowCommit(_Base):
    """For ``duration`` ms, the controller's appends commit ``extra`` ms late."""

    do: Literal["slow-commit"]
    extra: int
    duration: int


class SlowApply(_Base):
    """For ``duration`` ms, controller node ``node`` applies committed entries ``extra`` ms late."""

    do: Literal["slow-apply"]
    node: str
    extra: int
    duration: int


class SlowDispatch(_Base):
    """Broker ``node``'s reput thread stalls for ``ms``."""

    do: Literal["slow-dispatch"]
    node: str
    ms: int


class AdminElect(_Base):
    """``mqadmin electMaster``, designating ``brokerId`` (none: the controller picks)."""

    do: Literal["admin-elect"]
    brokerId: NotRequired[int | None]


class Clean(_Base):
    """``mqadmin cleanBrokerMetadata``: ``ids`` (``;``-separated, as brokerControllerIdsToClean) or the whole set;
    ``living``: isCleanLivingBroker."""

    do: Literal["clean"]
    ids: NotRequired[str | None]
    living: NotRequired[bool]


class ExpandQueues(_Base):
    """``mqadmin updateTopic`` on the master the nameserver routes: ``by`` more read and write queues."""

    do: Literal["expand-queues"]
    by: NotRequired[int]


TamperMode = Literal["dup", "reorder", "replay", "corrupt"]
TrapPoint = Literal["confirm-split", "empty-epoch", "role-change", "torn-write"]


class HaFault(_Base):
    """Adversarial, beyond TCP: until ``until``, HA writes *into* ``node`` are tampered with, each with probability
    ``p``: ``dup`` (the write arrives twice, the copy right behind it), ``reorder`` (it arrives after the next write
    on its stream), ``replay`` (on ``node``'s next new HA connection, after the first two writes it receives there,
    the last write it received on its previous connection arrives again), ``corrupt`` (one bit of its first word, the
    frame's state, arrives flipped)."""

    do: Literal["ha-fault"]
    node: str
    mode: TamperMode
    p: NotRequired[float]
    until: int


class HaStale(_Base):
    """TCP-faithful: until ``until``, when ``node``'s end of an HA stream closes (its close, a reset, its crash),
    what it sent that is still in flight and its FIN reach the peer ``lag`` ms late (a lost FIN retransmitted, a
    reader thread behind), so the peer may serve ``node``'s next connection first; a write the peer makes in the
    meantime reaches a closed socket and is answered with a reset."""

    do: Literal["ha-stale"]
    node: str
    lag: int
    until: int


class RpcReplay(_Base):
    """Adversarial, beyond TCP: until ``until``, each request ``node`` sends to a controller is, with probability
    ``p``, delivered again ``lag`` ms later (the same request, processed twice). A controller node's requests are its
    messages to the other nodes of its group (``ctl-replay``)."""

    do: Literal["rpc-replay"]
    node: str
    lag: int
    p: NotRequired[float]
    until: int


class CrashAt(_Base):
    """kill -9 aimed at a point: the first time within ``within`` ms that ``node`` (absent: any broker) reaches
    ``point``, it crashes there. ``confirm-split``: its confirmOffset lies inside a message; ``empty-epoch``: an epoch
    entry appended since the action has no byte under it yet; ``role-change``: between the sub-steps of a role change
    (``step`` 1-3: ``ReplicasManager.changeToMaster`` / ``changeToSlave``, ``impl/broker/replicas_manager.py``);
    ``torn-write``: it writes to its commit log (a put, or a slave's append of transferred bytes) and dies while the
    bytes are being copied into the mapped file, so only a prefix of them is there (after them, what the file held:
    the zeros of a new or cleared mapped file, or an earlier truncation's leftovers with ``[sim] file_residue``)."""

    do: Literal["crash-at"]
    node: NotRequired[str]
    point: TrapPoint
    step: NotRequired[int]
    within: int
    powerLoss: NotRequired[bool]


class CtlAt(_Base):
    """Aimed at a point of a replicated controller group: the first time within ``within`` ms that a controller node
    (``leader``: a node that leads, the entry one of its own term, its empty entry first) ends a step with an entry it
    knows committed and has not applied yet
    (``unapplied``: between an entry's commit and its apply), it is killed (``then`` ``crash``; a ``restart`` brings it
    back) or cut from every other node until the ``heal`` of ``id`` (``isolate``)."""

    do: Literal["ctl-at"]
    point: Literal["unapplied"]
    then: Literal["crash", "isolate"]
    leader: NotRequired[bool]
    within: int
    id: NotRequired[str]


class Produce(_Base):
    """The producer sends ``count`` messages now (of ``size`` bytes, or the workload's sizes)."""

    do: Literal["produce"]
    count: NotRequired[int]
    size: NotRequired[int | None]


Action = (
    Crash | Restart | Stop | LoseFile | Partition | Heal | Pause | Resume | BreakHa | Net | SlowCommit | SlowApply
    | SlowDispatch | AdminElect | Clean | ExpandQueues | Produce | HaFault | HaStale | RpcReplay | CrashAt | CtlAt
)
"""One primitive fault action."""

Do = Literal["crash", "restart", "partition", "heal", "pause", "resume", "break-ha", "net", "slow-commit",
             "slow-dispatch", "admin-elect", "produce", "clean", "stop", "lose-file", "slow-apply", "expand-queues",
             "ha-fault", "ha-stale", "rpc-replay", "crash-at", "ctl-at"]
"""The primitives' names (``Action``'s ``do``)."""

PRIMITIVES: tuple[str, ...] = get_args(Do)


def as_actions(items: Iterable[Mapping[str, Any]]) -> list[Action]:
    """Records with the shape of actions (a trace's own, a mutant's, a schedule file's that ``validate_actions``
    checked) as actions: the same records, no copy, no check."""
    return [cast(Action, a) for a in items]


def without_release(a: Action) -> Action:
    """The action as an explicit schedule holds it: without the generator's ``release`` bookkeeping."""
    return cast(Action, {k: v for k, v in a.items() if k != "release"})

# Actions that undo a perturbation (the follow-ups the generator schedules).
FOLLOW_UPS: tuple[str, ...] = ("restart", "resume", "heal")


# ------------------------------------------------------------------------------------------ composite kinds

FAULT_KINDS: dict[str, str] = {
    "crash-broker": "kill -9 a random broker (power loss with probability lose_unflushed_tail), restart later",
    "crash-master": "kill -9 the broker that believes it is master, restart later",
    "crash-controller": "kill -9 the controller (its log survives), restart later",
    "isolate-broker": "cut a random broker from every other node, both directions, heal later",
    "isolate-master": "cut the master from every other node, heal later",
    "partition-controller": "cut one broker from the controller, both directions, heal later",
    "partition-oneway": "drop one direction between a broker and another broker or the controller",
    "partition-brokers": "cut two brokers from each other (HA and nothing else), heal later",
    "partition-halves": "split controller and brokers into two sides, heal later",
    "break-ha": "close every HA connection of a random broker",
    "lossy-network": "for a while, drop / duplicate / delay controller RPCs",
    "slow-commit": "for a while, controller appends commit after the 5 s wait (lost reply, event applies)",
    "stop-broker": "stop a random broker cleanly (flush, checkpoint, no abort file: recoverNormally), restart later",
    "lose-epoch-file": "kill -9 a random broker, delete its epochFileCheckpoint before the restart",
    "lose-checkpoint": "kill -9 a random broker, delete its checkpoint file (confirmPhyOffset) before the restart",
    "crash-controller-leader": "kill -9 the leading controller node (3-node group), restart later",
    "isolate-controller-leader": "cut the leading controller node from every other node (3-node group), heal later",
    "slow-apply": "for a while, one controller node applies committed entries late (3-node group)",
    "crash-controller-follower": "kill -9 a controller node that does not lead (3-node group) for 20-40 s, restart it: "
                                 "with [controller] jRaftSnapshotIntervalSecs <= 10 the leader has snapshotted twice "
                                 "and dropped the log the node still needs, so it installs the leader's snapshot",
    "restart-consumer": "kill the consumer process and start it again later (it asks the master for its offsets)",
    "pause-broker": "SIGSTOP a broker for a while (timers and messages wait), then SIGCONT",
    "slow-dispatch": "a broker's reput (dispatch) thread stalls for a while, so dispatch lags confirmOffset",
    "admin-elect": "mqadmin electMaster, designating a random broker or none",
    "expand-queues": "mqadmin updateTopic on the routed master: the topic gains 2 read and write queues "
                     "(needs [workload] topic_config)",
    # issue 21, faults at the guards (GUARD_KINDS: drawn at their default weight only with [faults] guards, or
    # [faults] adversarial for the kinds beyond TCP)
    "ha-dup": "adversarial (beyond TCP): for a while, an HA write into a broker sometimes arrives twice",
    "ha-reorder": "adversarial (beyond TCP): for a while, an HA write into a broker sometimes arrives after the next "
                  "one",
    "ha-replay": "adversarial (beyond TCP): a broker's next HA connection gets the last write of its previous one "
                 "again",
    "ha-corrupt": "adversarial (beyond TCP): for a while, an HA write into a broker sometimes arrives with one bit of "
                  "its frame state word flipped (a corruption TCP's checksum missed); every reader refuses the frame",
    "ha-stale-tail": "TCP-faithful: a broker's HA connections close (a reset, or its crash and restart) and what it "
                     "had sent, with its FIN, reaches the peer late: the peer meets the next connection first",
    "stale-request": "TCP-faithful: a broker's link to the controller holds its requests (TCP retransmits); the "
                     "broker may crash and restart meanwhile; the heal delivers them, a dead incarnation's after its "
                     "successor's",
    "rpc-replay": "adversarial (beyond TCP): for a while, a broker's controller requests are sometimes delivered "
                  "again seconds later",
    "ctl-replay": "adversarial (beyond TCP): for a while, one controller node's messages to the other nodes of its "
                  "group (vote requests, pushes, their answers) are sometimes delivered again seconds later (3-node "
                  "group; off unless [faults] weights names it)",
    "crash-ctl-unapplied": "every controller node applies late for a while, and the first one to end a step with an "
                           "entry committed but not applied is killed there, restarted later (3-node group)",
    "cut-ctl-unapplied": "every controller node applies late for a while and the leader is killed; the first new "
                         "leader with an entry committed but not applied (its empty entry) is cut from every other "
                         "node there, healed later (3-node group)",
    "crash-split-confirm": "kill -9 a broker the first time its confirmOffset lies inside a message, restart later",
    "crash-role-change": "kill -9 a broker between two sub-steps of its next role change, restart later",
    "crash-empty-epoch": "kill -9 a broker between an epoch entry's append and the first byte written under it, "
                         "restart later",
    "crash-torn-write": "kill -9 a broker in the middle of a commit-log write (a put, or a slave's append): only a "
                        "prefix of the bytes reaches the file (a torn record); restart later, perhaps then promote it "
                        "(off by default: [faults] weights turns it on)",
    # the operator's paths (issue 21): off unless a profile weighs them
    "clean-living-broker": "mqadmin cleanBrokerMetadata naming a running broker's id (not forced): RocketMQ refuses "
                           "while the controller sees the broker alive",
    "decommission-broker": "kill -9 a slave, mqadmin cleanBrokerMetadata of its id once its heartbeat has expired, "
                           "then redeploy it without its controller identity (it applies for a new id; store kept)",
    "move-broker": "kill -9 a broker and restart it on another listenPort with its old store and id: it registers "
                   "its new address with the controller (UpdateBrokerAddressEvent)",
    "expand-then-crash-master": "mqadmin updateTopic on the routed master (2 more queues), then kill -9 that master "
                                "13-18 s later, just after its slaves have synced the topic (slaveSynchronize: at "
                                "most 10 s + 3 s), while the producer's route (pollNameServerInterval, 30 s) may not "
                                "have brought the new queues into use yet: the promotion meets a topic wider than its "
                                "log; restart later (needs [workload] topic_config; off unless a profile weighs it)",
}
"""Composite fault kinds (``[faults] weights``), each expanded by the generator into primitive actions."""

DEFAULT_WEIGHTS: dict[str, float] = {
    "crash-broker": 2.0, "crash-master": 3.0, "crash-controller": 0.7, "isolate-broker": 1.0,
    "isolate-master": 1.5, "partition-controller": 1.5, "partition-oneway": 1.0, "partition-brokers": 1.0,
    "partition-halves": 0.7, "break-ha": 1.0, "lossy-network": 1.0, "slow-commit": 0.5, "pause-broker": 1.0,
    "slow-dispatch": 1.0, "admin-elect": 0.7,
}
"""The weights of the kinds a profile does not weigh itself (the others are off by default). The kinds of
``GUARD_KINDS`` take theirs only with ``[faults] guards`` (the TCP-faithful ones) or ``[faults] adversarial``
(``ADVERSARIAL_KINDS``): a trace header written before them names none of them, and must replay as it was."""

GUARD_WEIGHTS: dict[str, float] = {
    "ha-dup": 0.4, "ha-reorder": 0.4, "ha-replay": 0.4, "ha-stale-tail": 1.0, "stale-request": 1.0, "rpc-replay": 0.4,
    "crash-split-confirm": 0.7, "crash-role-change": 0.7, "crash-empty-epoch": 0.7,
}
DEFAULT_WEIGHTS.update(GUARD_WEIGHTS)

LATE_GUARD_WEIGHTS: dict[str, float] = {"ha-corrupt": 0.4}
"""Kinds at the guards added after traces of the profiles that draw the others by default were written: no default
weight, so that such a header (which does not weigh them) draws exactly what it drew then. The adversarial profile
weighs them with these weights, and so does the fuzz's adversarial draw (after its other draws)."""
UNWEIGHED_GUARD_KINDS: frozenset[str] = frozenset(LATE_GUARD_WEIGHTS)

GUARD_KINDS: frozenset[str] = frozenset(GUARD_WEIGHTS) | UNWEIGHED_GUARD_KINDS
"""The fault kinds of issue 21 (faults where the guards are): off unless ``[faults] guards`` (the TCP-faithful
ones), ``[faults] adversarial`` (``ADVERSARIAL_KINDS``) or ``[faults] weights`` turns them on."""

ADVERSARIAL_KINDS: frozenset[str] = frozenset({"ha-dup", "ha-reorder", "ha-replay", "ha-corrupt", "rpc-replay"})
"""Kinds beyond what TCP does (docs/trace-format.md): within one connection TCP never duplicates or reorders bytes,
never delivers a closed connection's bytes on another, and never delivers a request twice. They exercise RocketMQ's
guards as an adversary would; the other kinds are faults a real deployment sees."""
