"""A Hypothesis rule-based state machine over ONE simulated RocketMQ cluster (``impl/sim/world.py``).

The machine owns a ``Simulation`` in explicit mode and a clock ``t``: each rule adds primitive fault or
workload actions at ``t`` (``Simulation.schedule_action``) and runs the simulator forward
(``Simulation.run_before``). A run driven that way is the run of its whole explicit schedule, so a failing
example becomes a kit trace (``traces.py``) that ``rmqha replay`` reproduces byte for byte.

Every catalogue invariant is an ``@invariant`` named ``inv_<ID>`` (dashes as underscores). The kit's checker
already evaluates the whole catalogue after every simulator step and stops the run at the first violation;
each ``inv_*`` method fails when the run stopped on its id, so Hypothesis reports (and shrinks) by invariant.

The progress invariants (LIVE-*) say that something eventually happens, which no step-by-step ``@invariant`` can
express. A suite with ``[sim] progress`` settles at teardown instead, as Jepsen's checks do after their final
heal: every partition heals, every paused broker resumes, a crashed controller restarts (a crashed broker stays
down: the LIVE-* checks take it for dead), then the simulation runs its settle tail (``impl/sim/settle.py``) and
checks each progress invariant at the heal point plus its settle bound. A violation there fails the example like
any other; its trace (schedule and heals, fault phase ending where the rules did) replays with ``rmqha replay``.

``machine_for(suite)`` builds the machine class of one suite (``suites.py``): the configuration, bug and
fix switches, power-loss crashes and the rules in focus are fixed per suite; node names come from its cluster
size. A broker argument is a name or a role (``master``, ``slave``) resolved when the rule runs; the schedule
records names. Rule by rule, see docs/property-tests.md.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from hypothesis import currently_in_test_context, event, note, target
from hypothesis import strategies as st
from hypothesis.control import current_build_context
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)
from rmqha.impl.invariants import BY_ID, CATALOGUE
from rmqha.impl.sim.world import Simulation, Violation
from rmqha.models.conform import validate

from .coverage import CountingChecker
from .suites import Suite
from .traces import header, write_failure

MAX_STEPS = 10_000_000  # never the limit: simulated time (Suite.horizon) bounds a run
CONTROLLER = "ctl"
MASTER, SLAVE = "master", "slave"  # broker references resolved by role when a rule runs
SYNC_POLL = 10  # ms: a sync send advances in slices this long until its result is observed
ROUTE_FETCH = 3000  # ms: a send with no cached route first asks the nameserver (3 s timeout)

# Values are drawn from short lists (the first is the one shrinking goes to): each shrink attempt re-runs the
# whole example, so few alternatives per value keep shrinking fast; the seed's network jitter adds the rest.
# A freshly booted cluster has a master by ~25 ms and its full SyncStateSet by ~6 s; boot faults stay possible.
WARMUPS = (6000, 0, 1000, 3000, 4500, 9000)
PRIME_AT = 200  # ms: a primed suite's first message, once the first master is known (it is by ~40 ms)
WAITS = st.sampled_from((0, 5, 50, 300, 1000, 3000))  # ms run after a fault action (0: next one, same instant)
ADVANCES = st.sampled_from((1000, 100, 3000, 6000, 12_000, 20_000))
SIZES = st.sampled_from((None, 100, 5000, 40_000))  # None: the producer draws a size (48..600 bytes)
BURSTS = st.sampled_from((2, 5, 10, 20))
SEEDS = st.integers(0, 1023)


class InvariantViolated(AssertionError):
    """The simulation stopped on a catalogue invariant. One subclass per invariant, so Hypothesis tells the
    invariants apart (it keys a failure by exception type and place) and never shrinks one into another."""

    invariant: ClassVar[str] = ""


VIOLATED: dict[str, type[InvariantViolated]] = {
    inv.id: type(f"Violated_{inv.id.replace('-', '_')}", (InvariantViolated,), {"invariant": inv.id})
    for inv in CATALOGUE
}


@dataclass
class ConformTally:
    """Examples validated against the model (``rmqha.models.conform``) at teardown, and the time each side took."""

    examples: int = 0
    conforming: int = 0
    sim_seconds: float = 0.0  # running the examples' simulations
    validate_seconds: float = 0.0  # re-running and validating them
    divergences: list[str] = field(default_factory=list)

    @property
    def overhead(self) -> float:
        return self.validate_seconds / max(self.sim_seconds, 1e-9)


@dataclass
class Failure:
    """What the last failing example of a suite looked like (read by the bug tests)."""

    invariant: str
    rules: int  # rules run after boot (``advance`` included)
    actions: int  # primitive actions those rules scheduled (boot's priming message not counted)
    sim_time: int
    trace: str | None


def invariant_method_name(inv_id: str) -> str:
    """``SYNC-NO-ACK-LOSS`` -> ``inv_SYNC_NO_ACK_LOSS``."""
    return "inv_" + inv_id.replace("-", "_")


def _focus(name: str) -> Callable[[Any], bool]:
    """A precondition: rule ``name`` is in the suite's focus (an empty focus enables every rule)."""
    return lambda self: not self.suite.focus or name in self.suite.focus


class ClusterMachine(RuleBasedStateMachine):
    """The rules shared by every suite; ``machine_for`` adds the node-dependent ones."""

    suite: ClassVar[Suite]
    last_failure: ClassVar[Failure | None] = None
    examples: ClassVar[int] = 0  # machines built (examples run), for the throughput figure
    first_found: ClassVar[int | None] = None  # the example that first failed (counted like ``examples``)
    conform: ClassVar[ConformTally | None] = None  # set: every example that ends clean is validated at teardown

    partitions = Bundle("partitions")
    crashed = Bundle("crashed")
    paused = Bundle("paused")

    @classmethod
    def reset_counters(cls) -> None:
        cls.examples, cls.first_found, cls.last_failure, cls.conform = 0, None, None, None

    def __init__(self) -> None:
        super().__init__()
        type(self).examples += 1
        self.sim: Simulation | None = None
        self.checker: CountingChecker | None = None
        self.seed = 0
        self.t = 0
        self.schedule: list[dict[str, Any]] = []
        self.rules_run = 0
        self.sent = 0  # messages handed to the producer (its keys are p1-1, p1-2, ...)
        self.next_pid = 0
        self.settle_actions = 0  # actions teardown's settle added (heals, resumes, restarts): not the rules'
        self.settled = False  # the settle tail ran: the run took every event up to ``t`` before it
        self.reported = False
        self.sim_seconds = 0.0  # wall time spent running the simulator (for ConformTally; never read by a run)

    # --------------------------------------------------------------------------------- plumbing

    def _act(self, **action: Any) -> None:
        """Schedule one primitive action at the current time."""
        assert self.sim is not None
        a = {"t": self.t, **action}
        self.schedule.append(a)
        self.sim.schedule_action(a)

    def _run_to(self, t: int) -> None:
        """Run every event before ``t`` (capped at the suite's horizon)."""
        assert self.sim is not None
        t = min(t, self.suite.horizon)
        if t > self.t:
            self.t = t
            t0 = time.perf_counter()
            self.sim.run_before(t)
            self.sim_seconds += time.perf_counter() - t0

    def _step(self, wait: int) -> None:
        self.rules_run += 1
        self._run_to(self.t + wait)

    def _up(self, node: str) -> bool:
        return self.sim is not None and self.sim.is_up(node)

    def _resolve(self, ref: str) -> str:
        """A node name for ``ref``: ``master`` is the broker that believes it is master (else the first broker),
        ``slave`` the first broker up that is not it (else any other); names stand for themselves."""
        if ref not in (MASTER, SLAVE):
            return ref
        assert self.sim is not None
        brokers = self.sim.brokers
        master = self.sim.believed_master()
        if ref == MASTER:
            return master or brokers[0]
        others = [b for b in brokers if b != master] or brokers
        return next((b for b in others if self.sim.is_up(b)), others[0])

    # ------------------------------------------------------------------------------------ boot

    @initialize(seed=SEEDS, warmup=st.sampled_from(WARMUPS))
    def boot(self, seed: int, warmup: int) -> None:
        s = self.suite
        self.seed = seed
        enabled = set(BY_ID) - set(s.disabled)

        def factory(world: Simulation) -> CountingChecker:
            self.checker = CountingChecker(world, enabled=enabled)
            return self.checker

        self.sim = Simulation(s.config, seed, bugs=frozenset(s.bugs), schedule=[], max_steps=MAX_STEPS,
                              checker_factory=factory)
        if s.prime:
            self._run_to(PRIME_AT)
            self.sent += 1
            self._act(do="produce", count=1, size=None)
        self._run_to(warmup)

    # -------------------------------------------------------------------------------- workload

    @precondition(_focus("produce_sync"))
    @rule(size=SIZES)
    def produce_sync(self, size: int | None) -> None:
        """One send; time runs until the producer sees its result (or its timeout passes)."""
        self.sent += 1
        key = f"p1-{self.sent}"
        self._act(do="produce", count=1, size=size)
        self.rules_run += 1
        deadline = self.t + self.suite.config.workload.send_timeout + ROUTE_FETCH + 100
        assert self.checker is not None
        while key not in self.checker.send_results and self.t < min(deadline, self.suite.horizon):
            if self.sim is not None and self.sim.violation is not None:
                break
            self._run_to(min(self.t + SYNC_POLL, deadline))

    @precondition(_focus("produce_burst"))
    @rule(count=BURSTS, size=SIZES, wait=WAITS)
    def produce_burst(self, count: int, size: int | None, wait: int) -> None:
        """``count`` sends at once, not waiting for their results."""
        self.sent += count
        self._act(do="produce", count=count, size=size)
        self._step(wait)

    @rule(ms=ADVANCES)
    def advance(self, ms: int) -> None:
        self._step(ms)

    # ------------------------------------------------------------------------------ controller

    @precondition(_focus("crash_controller"))
    @rule(target=crashed, wait=WAITS)
    def crash_controller(self, wait: int) -> Any:
        was_up = self._up(CONTROLLER)
        self._act(do="crash", node=CONTROLLER, powerLoss=False)
        self._step(wait)
        return CONTROLLER if was_up else multiple()

    @precondition(_focus("restart"))
    @rule(node=consumes(crashed), wait=WAITS)
    def restart(self, node: str, wait: int) -> None:
        self._act(do="restart", node=node)
        self._step(wait)

    @precondition(_focus("slow_commit"))
    @rule(extra=st.sampled_from((6000, 9000)), duration=st.sampled_from((1000, 4000, 8000)), wait=WAITS)
    def slow_commit(self, extra: int, duration: int, wait: int) -> None:
        """For ``duration`` ms the controller commits appends ``extra`` ms late: the reply is lost, the event
        still applies."""
        self._act(do="slow-commit", extra=extra, duration=duration)
        self._step(wait)

    @precondition(_focus("lossy_net"))
    @rule(drop=st.sampled_from([0.0, 0.1, 0.3, 0.6]), dup=st.sampled_from([0.0, 0.1, 0.3]),
          slow=st.sampled_from([0.0, 0.2, 0.5]), duration=st.sampled_from((2000, 500, 8000, 20_000)), wait=WAITS)
    def lossy_net(self, drop: float, dup: float, slow: float, duration: int, wait: int) -> None:
        """Controller/nameserver/client RPCs are dropped, duplicated or delayed for ``duration`` ms."""
        self._act(do="net", drop=drop, dup=dup, slow=slow, until=self.t + duration)
        self._step(wait)

    # ------------------------------------------------------------------------------ partitions

    def _partition(self, links: list[list[str]], wait: int) -> str:
        self.next_pid += 1
        pid = f"p{self.next_pid}"
        self._act(do="partition", id=pid, links=links)
        self._step(wait)
        return pid

    @precondition(_focus("heal"))
    @rule(pid=consumes(partitions), wait=WAITS)
    def heal(self, pid: str, wait: int) -> None:
        self._act(do="heal", id=pid)
        self._step(wait)

    # ---------------------------------------------------------------------------------- checks

    def teardown(self) -> None:
        self._settle()
        if self.sim is not None and self.sim.violation is None:  # the example's run ends here: the checks of a
            self.sim.checker.check_at_run_end()  # finished run (QUEUE-CONFIRMED-DISPATCHED), as Simulation.run does
            if self.sim.violation is not None:
                self._fails(self.sim.violation.invariant)
        tally = type(self).conform
        if tally is not None and self.sim is not None and self.sim.violation is None:
            self._validate(tally)
        if self.checker is None or not currently_in_test_context():
            return
        for label, n in self.checker.counts().items():
            event(label, "0" if n == 0 else "1" if n == 1 else "2+")
            target(float(n), label=label)

    def _settle(self) -> None:
        """With ``[sim] progress``: heal what the rules left (not a crashed broker: it is dead), run the settle tail
        and fail the example on the first progress invariant that does not hold."""
        sim = self.sim
        if sim is None or sim.violation is not None or not sim.cfg.sim.progress:
            return
        end = self.t
        heals = [{"do": "heal", "id": pid} for pid in sorted(sim.partitions)]
        heals += [{"do": "resume", "node": n} for n in sorted(sim.paused)]
        heals += [{"do": "restart", "node": n} for n in [*sim.controllers, sim.nameserver] if not sim.is_up(n)]
        for a in heals:
            self._act(**a)
        self.settle_actions = len(heals)
        self.settled = True
        t0 = time.perf_counter()
        sim.settle(end)
        self.sim_seconds += time.perf_counter() - t0
        v = sim.violation
        if v is not None and currently_in_test_context():
            self._fails(v.invariant)

    def _validate(self, tally: ConformTally) -> None:
        """Trace validation of this example: its explicit schedule re-run step by step against the model."""
        s = self.suite
        report = validate(header(s.config, self.seed, MAX_STEPS, list(s.bugs), self.schedule, self._ran_before(),
                                 s.disabled, s.release))
        tally.examples += 1
        tally.sim_seconds += self.sim_seconds
        tally.validate_seconds += report.seconds
        if report.conforms:
            tally.conforming += 1
        else:
            assert report.divergence is not None
            tally.divergences.append(f"seed {self.seed}, schedule {self.schedule}: {report.divergence.to_dict()}")

    def _fails(self, inv_id: str) -> None:
        v = self.sim.violation if self.sim is not None else None
        if v is None or v.invariant != inv_id:
            return
        cls = type(self)
        if cls.first_found is None:
            cls.first_found = cls.examples
        path = self._report(v)
        raise VIOLATED[inv_id](f"{inv_id} violated at step {v.step}, t={v.time} ms: {v.message}"
                             + (f" (trace: {path}; replay: rmqha replay {path})" if path else ""))

    def _ran_before(self) -> int:
        """The run took every event before this time before its settle tail, if it had one."""
        return self.t + 1 if self.settled else self.t

    def _rule_actions(self) -> int:
        return len(self.schedule) - (1 if self.suite.prime else 0) - self.settle_actions

    def _report(self, v: Violation) -> str | None:
        """On the example Hypothesis reports (the shrunk one), write its trace and note how to replay it."""
        final = current_build_context().is_final if currently_in_test_context() else True
        type(self).last_failure = Failure(v.invariant, self.rules_run, self._rule_actions(), self.t, None)
        if not final or self.reported:
            return None
        self.reported = True
        s = self.suite
        written = write_failure(s.name, header(s.config, self.seed, MAX_STEPS, list(s.bugs), self.schedule,
                                               self._ran_before(), s.disabled, s.release), v)
        type(self).last_failure = Failure(v.invariant, self.rules_run, self._rule_actions(), self.t, str(written.path))
        if currently_in_test_context():
            note(f"trace of this example: {written.path}")
            note(f"replay it: rmqha replay {written.path}")
        return str(written.path)


def _invariant_method(inv_id: str) -> Callable[[ClusterMachine], None]:
    def check(self: ClusterMachine) -> None:
        self._fails(inv_id)

    def stopped_on_it(self: ClusterMachine) -> bool:
        """Only the invariant the run stopped on has anything to say (and is printed in a failing program)."""
        return self.sim is not None and self.sim.violation is not None and self.sim.violation.invariant == inv_id

    check.__name__ = invariant_method_name(inv_id)
    check.__doc__ = f"{inv_id}: {BY_ID[inv_id].statement}"
    return precondition(stopped_on_it)(invariant()(check))


for _inv in CATALOGUE:
    setattr(ClusterMachine, invariant_method_name(_inv.id), _invariant_method(_inv.id))


_MACHINES: dict[str, type[ClusterMachine]] = {}


def machine_for(suite: Suite) -> type[ClusterMachine]:
    """The machine class of ``suite`` (one per suite name): ClusterMachine plus the rules that name nodes."""
    if suite.name not in _MACHINES:
        _MACHINES[suite.name] = _build(suite)
    return _MACHINES[suite.name]


def _build(suite: Suite) -> type[ClusterMachine]:
    brokers = suite.brokers_names
    refs = [MASTER, SLAVE, *brokers]  # a broker: by role (resolved when the rule runs) or by name
    nodes = [CONTROLLER, *refs]
    pairs = [(a, b) for a in nodes for b in nodes if a != b]
    broker = st.sampled_from(refs)

    class Machine(ClusterMachine):
        @precondition(_focus("crash_broker"))
        @rule(target=ClusterMachine.crashed, ref=broker,
              power_loss=st.booleans() if suite.power_loss else st.just(False), wait=WAITS)
        def crash_broker(self, ref: str, power_loss: bool, wait: int) -> Any:
            """kill -9 (page cache kept), or with ``power_loss`` the unflushed tail is gone too."""
            node = self._resolve(ref)
            was_up = self._up(node)
            self._act(do="crash", node=node, powerLoss=power_loss)
            self._step(wait)
            return node if was_up else multiple()

        @precondition(_focus("cut"))
        @rule(target=ClusterMachine.partitions, pair=st.sampled_from(pairs), both=st.booleans(), wait=WAITS)
        def cut(self, pair: tuple[str, str], both: bool, wait: int) -> Any:
            """Drop what ``pair[0]`` sends to ``pair[1]`` (and back, with ``both``)."""
            a, b = self._resolve(pair[0]), self._resolve(pair[1])
            if a == b:  # both ends named the same broker: nothing to cut
                self._step(wait)
                return multiple()
            return self._partition([[a, b], [b, a]] if both else [[a, b]], wait)

        @precondition(_focus("isolate"))
        @rule(target=ClusterMachine.partitions, ref=st.sampled_from(nodes), wait=WAITS)
        def isolate(self, ref: str, wait: int) -> str:
            """Cut a node from the controller and every broker, both ways (clients still reach it)."""
            node = self._resolve(ref)
            others = [n for n in [CONTROLLER, *brokers] if n != node]
            return self._partition([[node, o] for o in others] + [[o, node] for o in others], wait)

        @precondition(_focus("break_ha"))
        @rule(ref=broker, wait=WAITS)
        def break_ha(self, ref: str, wait: int) -> None:
            """Reset every HA connection of a broker."""
            self._act(do="break-ha", node=self._resolve(ref))
            self._step(wait)

        @precondition(_focus("pause"))
        @rule(target=ClusterMachine.paused, ref=broker, wait=WAITS)
        def pause(self, ref: str, wait: int) -> Any:
            """SIGSTOP a broker: its messages and timers wait until it resumes."""
            node = self._resolve(ref)
            fresh = self._up(node) and self.sim is not None and not self.sim.is_paused(node)
            self._act(do="pause", node=node)
            self._step(wait)
            return node if fresh else multiple()

        @precondition(_focus("resume"))
        @rule(node=consumes(ClusterMachine.paused), wait=WAITS)
        def resume(self, node: str, wait: int) -> None:
            self._act(do="resume", node=node)
            self._step(wait)

        @precondition(_focus("slow_dispatch"))
        @rule(ref=broker, ms=st.sampled_from((2000, 500, 8000, 30_000)), wait=WAITS)
        def slow_dispatch(self, ref: str, ms: int, wait: int) -> None:
            """A broker's reput (dispatch) thread stalls for ``ms``."""
            self._act(do="slow-dispatch", node=self._resolve(ref), ms=ms)
            self._step(wait)

        @precondition(_focus("admin_elect"))
        @rule(ref=st.sampled_from([None, SLAVE, MASTER, *brokers]), wait=WAITS)
        def admin_elect(self, ref: str | None, wait: int) -> None:
            """mqadmin electMaster, designating a broker (by its controller id) or none."""
            broker_id = None if ref is None or self.sim is None else self.sim.broker_id(self._resolve(ref))
            if ref is None or broker_id is not None:  # a broker with no id yet cannot be designated
                self._act(do="admin-elect", brokerId=broker_id)
            self._step(wait)

    Machine.suite = suite
    Machine.__name__ = Machine.__qualname__ = f"Cluster{suite.ident}"
    # the example database keys a state machine by its source: keep one key per suite
    Machine._hypothesis_internal_add_digest = suite.name.encode()  # type: ignore[attr-defined]  # Hypothesis's hook
    return Machine
