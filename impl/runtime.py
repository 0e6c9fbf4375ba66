"""The sans-IO contract between the core and whatever drives it (the simulator, or a real runtime).

Events in: a driver sets ``actor.now`` and calls ``on_message``, ``on_timer``, ``on_ha_*``, ``on_channel_closed``.
Effects out: the actor appends ``Send``, ``SetTimer``, ``HAConnect``, ``HAWrite``, ``HAClose`` and ``Observe`` to
``actor.out``; the driver drains the list after every call. Nothing here reads a clock, opens a socket or
starts a thread.

RocketMQ code is threads, blocking RPCs and monitors. The core mirrors that shape with *strands*: a strand
runs a generator that yields ``Call`` (a blocking ``invokeSync`` with a timeout; it resumes with the response,
or ``None`` on timeout or failure), ``Sleep`` and ``Acquire``/``Release`` of a ``Monitor`` (``synchronized``).
An ``Executor`` is a single-threaded executor (jobs one at a time, in order); ``Periodic`` is
``scheduleAtFixedRate`` (a run never overlaps the previous one; a late run starts as soon as it ends; a run that
raises ``TaskFailed`` suppresses every later run, as ``ScheduledThreadPoolExecutor`` does with a task that throws).
Each actor lists its periodic tasks (``Actor.periodics``) with when each was scheduled and last started a run: the
progress invariant LIVE-TASKS reads them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .observations import NodeObservation, ObsKind
from .rng import DetRng

T = TypeVar("T")

# ------------------------------------------------------------------------------------------ messages


@dataclass(slots=True)
class Command:
    """``RemotingCommand``: a request, a response or a oneway message, with RocketMQ header names."""

    code: int
    opaque: int = 0
    header: Mapping[str, Any] = field(default_factory=dict)  # the code's header (impl/wire.py: decode_header)
    body: Any = None
    response: bool = False
    oneway: bool = False
    remark: str | None = None

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"code": int(self.code), "opaque": self.opaque, "header": self.header}
        if self.body is not None:
            d["body"] = self.body
        if self.response:
            d["response"] = True
        if self.oneway:
            d["oneway"] = True
        return d


def response_to(req: Command, code: int, header: Mapping[str, Any] | None = None, body: Any = None,
                remark: str | None = None) -> Command:
    return Command(int(code), req.opaque, header or {}, body, response=True, remark=remark)


# ------------------------------------------------------------------------------------------- effects


@dataclass(slots=True)
class Send:
    dst: str
    cmd: Command


@dataclass(slots=True)
class SetTimer:
    token: int
    at: int


@dataclass(slots=True)
class HAConnect:
    """Open an HA stream from this (slave) node to ``addr``; answered by ``on_ha_connect_result``."""

    token: int
    addr: str


@dataclass(slots=True)
class HAWrite:
    conn: int
    data: bytes


@dataclass(slots=True)
class HAClose:
    conn: int


@dataclass(slots=True)
class Observe:
    """Something the checkers and the trace want to see (``impl/observations.py``); it never changes behaviour.
    ``obs`` is the record as the trace keeps it: its kind ``k``, the node ``n`` (``Actor.emit`` sets it) and the
    kind's fields."""

    obs: NodeObservation

    @property
    def kind(self) -> ObsKind:
        return self.obs["k"]

    @property
    def data(self) -> dict[str, Any]:
        """The kind's fields alone (without ``k`` and ``n``)."""
        return {k: v for k, v in self.obs.items() if k not in ("k", "n")}


Effect = Send | SetTimer | HAConnect | HAWrite | HAClose | Observe

# ---------------------------------------------------------------------------------------------- ops


@dataclass(slots=True)
class Call:
    dst: str
    cmd: Command
    timeout: int


@dataclass(slots=True)
class Sleep:
    ms: int


@dataclass(slots=True)
class Await:
    """``future.get(timeout)``: resumes with the future's value, or ``None`` on timeout or cancellation."""

    future: Future
    timeout: int


class Future:
    """A ``CompletableFuture`` that strands can wait on; completing it twice keeps the first value."""

    __slots__ = ("_waiters", "done", "value")

    def __init__(self) -> None:
        self.done = False
        self.value: Any = None
        self._waiters: list[Callable[[Any], None]] = []

    def complete(self, value: Any) -> None:
        if self.done:
            return
        self.done = True
        self.value = value
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            w(value)

    def cancel(self) -> None:
        self.complete(None)

    def add_done_callback(self, fn: Callable[[Any], None]) -> None:
        if self.done:
            fn(self.value)
        else:
            self._waiters.append(fn)


@dataclass(slots=True)
class Acquire:
    monitor: Monitor


@dataclass(slots=True)
class Release:
    monitor: Monitor


Op = Call | Sleep | Await | Acquire | Release
"""What a strand yields to the actor's scheduler."""

Steps = Generator[Op, Any, T]
"""A strand's code: yields ops, is resumed with each op's result (a response, a future's value, or None), returns
a ``T``."""

Job = Steps[None]


class TaskFailed(Exception):
    """An exception out of a periodic task's run that nothing catches: ``scheduleAtFixedRate`` suppresses every
    later run of the task (``ScheduledFutureTask.runAndReset`` returns false). Raised only by bug switches that
    take away a ``try``/``catch`` RocketMQ has."""


class Monitor:
    """A reentrant Java monitor; waiters are woken in arrival order."""

    __slots__ = ("count", "owner", "waiters")

    def __init__(self) -> None:
        self.owner: Strand | None = None
        self.count = 0
        self.waiters: deque[Strand] = deque()


class Strand:
    """One Java thread running one job at a time."""

    __slots__ = ("actor", "gen", "name", "on_idle", "periodic", "rpc")

    def __init__(self, actor: Actor, name: str) -> None:
        self.actor = actor
        self.name = name
        self.gen: Job | None = None
        self.rpc: int | None = None
        self.on_idle: Callable[[], None] | None = None
        self.periodic: Periodic | None = None  # the periodic task this strand runs, if any

    @property
    def busy(self) -> bool:
        return self.gen is not None

    def start(self, job: Job) -> None:
        assert self.gen is None, f"strand {self.name} is busy"
        self.gen = job
        self.actor._resume(self, None)


class Executor:
    """A single-threaded executor: ``submit`` queues a job; jobs run one after another."""

    def __init__(self, actor: Actor, name: str) -> None:
        self.strand = Strand(actor, name)
        self.queue: deque[Job] = deque()
        self.strand.on_idle = self._next
        self.stopped = False  # a ServiceThread shut down: queued jobs wait for ``start`` (the queue is kept)

    def submit(self, job: Job) -> None:
        self.queue.append(job)
        if not self.strand.busy:
            self._next()

    def stop(self) -> None:
        self.stopped = True

    def start(self) -> None:
        self.stopped = False
        self._next()

    def _next(self) -> None:
        if self.queue and not self.strand.busy and not self.stopped:
            self.strand.start(self.queue.popleft())

    def backlog(self) -> int:
        return len(self.queue) + (1 if self.strand.busy else 0)


class Periodic:
    """``scheduleAtFixedRate(job, initialDelay, period)``; ``cancel`` stops future runs. A run that raises
    ``TaskFailed`` suppresses the task (``suppressed``): it never runs again, though nothing cancelled it."""

    def __init__(self, actor: Actor, name: str, initial: int, period: int, job: Callable[[], Job]) -> None:
        self.actor = actor
        self.name = name
        self.strand = Strand(actor, name)
        self.strand.periodic = self
        self.initial = initial
        self.period = period
        self.job = job
        self.cancelled = False
        self.suppressed = False
        self.overdue = False
        self.created = actor.now
        self.last_start: int | None = None  # when the last run started (None: not yet)
        self.strand.on_idle = self._idle
        actor.periodics.append(self)
        actor.after(initial, self._tick)

    def _tick(self) -> None:
        if self.cancelled or self.suppressed:
            return
        self.actor.after(self.period, self._tick)
        if self.strand.busy:
            self.overdue = True
        else:
            self._run()

    def _idle(self) -> None:
        if self.overdue and not self.cancelled and not self.suppressed:
            self.overdue = False
            self._run()

    def _run(self) -> None:
        self.last_start = self.actor.now
        self.strand.start(self.job())

    def cancel(self) -> None:
        self.cancelled = True


# -------------------------------------------------------------------------------------------- actor


class Actor:
    """Base of every node: timers, RPC bookkeeping and the strand scheduler."""

    def __init__(self, name: str, rng: DetRng) -> None:
        self.name = name
        self.rng = rng
        self.now = 0
        self.out: list[Effect] = []
        self._next_token = 0
        self._timers: dict[int, Callable[[], None]] = {}
        self._rpc: dict[int, tuple[Strand, int]] = {}  # opaque -> (waiting strand, timeout timer)
        self.halted = False  # the process is dead: none of its strands runs again (see ``halt``)
        self.periodics: list[Periodic] = []  # its scheduled tasks, in the order they were scheduled

    def start(self) -> None:
        """The process starts: each kind of node arms its first timers and sends its first requests here."""

    def halt(self) -> None:
        """kill -9: the process's threads are gone. State it shared with its successor (the controller's log and
        its entries' futures) must not wake them: a strand of a dead incarnation never resumes."""
        self.halted = True
        self._timers.clear()
        self._rpc.clear()

    # ---- timers
    def after(self, delay: int, fn: Callable[..., None], *args: Any) -> int:
        self._next_token += 1
        token = self._next_token
        self._timers[token] = (lambda: fn(*args)) if args else fn
        self.out.append(SetTimer(token, self.now + max(0, delay)))
        return token

    def cancel(self, token: int | None) -> None:
        if token is not None:
            self._timers.pop(token, None)

    def on_timer(self, token: int) -> None:
        fn = self._timers.pop(token, None)
        if fn is not None:
            fn()

    # ---- messages
    def new_opaque(self) -> int:
        self._next_token += 1
        return self._next_token

    def send(self, dst: str, cmd: Command) -> None:
        self.out.append(Send(dst, cmd))

    def emit(self, obs: NodeObservation) -> None:
        """Tell the checkers and the trace what happened (``impl/observations.py``), under this node's name."""
        obs["n"] = self.name
        self.out.append(Observe(obs))

    def on_message(self, src: str, cmd: Command, channel: str | None = None) -> None:
        """``channel``: the remoting connection the message came on, as the driver names it (``None``: the sender's
        name stands for it). Only the controller's heartbeat table reads it (``ControllerNode``)."""
        if cmd.response:
            waiting = self._rpc.pop(cmd.opaque, None)
            if waiting is not None:
                strand, timer = waiting
                self.cancel(timer)
                strand.rpc = None
                self._resume(strand, cmd)
            return
        self.on_request(src, cmd)

    def on_request(self, src: str, cmd: Command) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    # ---- strands
    def spawn(self, name: str, job: Job) -> Strand:
        """Run ``job`` on a fresh strand (a thread from an unbounded pool)."""
        strand = Strand(self, name)
        strand.start(job)
        return strand

    def _resume(self, strand: Strand, value: Any) -> None:
        if self.halted:
            return
        while True:
            gen = strand.gen
            if gen is None:
                return
            try:
                op = gen.send(value)
            except StopIteration:
                strand.gen = None
                self._release_all(strand)
                if strand.on_idle is not None:
                    strand.on_idle()
                return
            except TaskFailed:
                strand.gen = None
                self._release_all(strand)
                if strand.periodic is None:
                    raise
                strand.periodic.suppressed = True
                return
            value = None
            if isinstance(op, Call):
                opaque = self.new_opaque()
                op.cmd.opaque = opaque
                timer = self.after(op.timeout, self._rpc_timeout, opaque)
                self._rpc[opaque] = (strand, timer)
                strand.rpc = opaque
                self.send(op.dst, op.cmd)
                return
            if isinstance(op, Sleep):
                self.after(op.ms, self._resume, strand, None)
                return
            if isinstance(op, Await):
                fut = op.future
                if fut.done:
                    value = fut.value
                    continue
                self._await(strand, fut, op.timeout)
                return
            if isinstance(op, Acquire):
                mon = op.monitor
                if mon.owner is None or mon.owner is strand:
                    mon.owner = strand
                    mon.count += 1
                    continue
                mon.waiters.append(strand)
                return
            if isinstance(op, Release):
                self._release(strand, op.monitor)
                continue
            raise TypeError(f"strand {strand.name} yielded {op!r}")

    def _await(self, strand: Strand, fut: Future, timeout: int) -> None:
        state = {"live": True}

        def wake(value: Any) -> None:
            if state["live"]:
                state["live"] = False
                self.cancel(timer)
                self._resume(strand, value)

        def expire() -> None:
            if state["live"]:
                state["live"] = False
                self._resume(strand, None)

        timer = self.after(timeout, expire)
        fut.add_done_callback(wake)

    def _rpc_timeout(self, opaque: int) -> None:
        waiting = self._rpc.pop(opaque, None)
        if waiting is not None:
            strand, _ = waiting
            strand.rpc = None
            self._resume(strand, None)

    def _release(self, strand: Strand, mon: Monitor) -> None:
        if mon.owner is not strand:
            raise RuntimeError(f"strand {strand.name} releases a monitor it does not own")
        mon.count -= 1
        if mon.count == 0:
            mon.owner = None
            if mon.waiters:
                nxt = mon.waiters.popleft()
                mon.owner = nxt
                mon.count = 1
                self.after(0, self._resume, nxt, None)

    def _release_all(self, strand: Strand) -> None:
        for mon in self._monitors():
            if mon.owner is strand:
                mon.count = 1
                self._release(strand, mon)

    def _monitors(self) -> list[Monitor]:
        return []

    # ---- HA stream events (overridden by brokers)
    def on_ha_connect_result(self, token: int, conn: int | None) -> None:  # pragma: no cover
        pass

    def on_ha_accept(self, conn: int, peer: str) -> None:  # pragma: no cover
        pass

    def on_ha_data(self, conn: int, data: bytes) -> None:  # pragma: no cover
        pass

    def on_ha_closed(self, conn: int) -> None:  # pragma: no cover
        pass

    def on_channel_closed(self, peer: str, channel: str | None = None) -> None:
        """The remoting channel to ``peer`` closed (its process died, or the connection idled out); ``channel``
        names the connection as ``on_message`` did."""
