"""The suites the cluster machine runs: a configuration, the code switches on, and the invariants left out.

* ``safe``: the safe profile (allAck on, unclean off) with every documented finding's fix on, and the progress
  invariants (LIVE-*) checked at teardown after a settle (``progress``). Must pass.
* one suite per bug switch (``impl/bugs.py`` SWITCHES): ``FIXES_ALL + [switch]``, so only the bug's own
  invariant can fail; a progress invariant's switch settles at teardown (``progress``). One exception:
  ``confirm-counts-new-connection`` sits in the code path that ``fix-confirm-waits-first-ack`` closes, so that fix
  stays off and SYNC-CONFIRM-BOUND (which the finding it fixes would trip first) is left out, exactly as in its
  deterministic scenario.
* one suite per expected-loss configuration (``unclean-election``, ``allack-off``): the setting on, every
  fix on, and SYNC-SSS-HOLDS-ACKED (the precursor) left out so the run reaches the loss itself.
* ``power-loss``: the safe suite plus crashes that drop the unflushed tail, which the catalogue documents as
  an exception to the SYNC-* invariants (slaves ack page-cache bytes).
* ``stock``: RocketMQ 5.3.3 as it is (no fix): whatever it finds must be a documented finding.

Every suite runs the rules of one RocketMQ release (``RELEASE``: ``--rocketmq V`` or ``$RMQHA_ROCKETMQ``, default
5.3.3): that release's switches (``impl/bugs.py``, ``release_switches``) are added to the suite's, and the traces a
failure writes record the release in their header.
* ``fresh``: the safe suite on a cluster that has written nothing yet. Every other suite *primes* the log with
  one message at boot. On empty logs a failover hits QUIRK-EPOCH-EQ: this suite found the divergence that is now
  the documented finding F-EPOCH-EQ-SPLICE (a new master whose log end equals its last epoch's start cannot record
  its epoch, and a deposed master's writes and its own share one (epoch, start) entry). With that finding's fix in
  ``FIXES_ALL`` the suite must pass (a slow test); priming stays in the others so their searches and measured
  figures stay comparable.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.invariants import BY_ID
from rmqha.impl.sim.config import Config, config_from_dict, default_config

RELEASE = os.environ.get("RMQHA_ROCKETMQ", B.DEFAULT_RELEASE)
"""The RocketMQ release whose rules every suite runs (``pytest property_tests --rocketmq V``, or ``$RMQHA_ROCKETMQ``;
default 5.3.3): its release profile's switches are added to each suite's (``bugs.release_switches``)."""
if RELEASE not in B.RELEASES:
    raise ValueError(f"RMQHA_ROCKETMQ: unknown RocketMQ release {RELEASE!r} (known: {', '.join(B.RELEASES)})")

# The rules decide the workload: the producer's own background sending is off; the consumer keeps pulling.
WORKLOAD = {"produce_interval": 0, "consume_interval": 1000}
SUITE_HORIZON = 90_000  # simulated ms per example, at most
POWER_LOSS_INVARIANTS = ("SYNC-CONFIRM-BOUND", "SYNC-SSS-HOLDS-ACKED", "SYNC-NO-ACK-LOSS")


@dataclass(frozen=True)
class Suite:
    """One fixed setting of the cluster machine."""

    name: str
    bugs: tuple[str, ...]
    brokers: int = 3
    settings: dict[str, dict[str, Any]] = field(default_factory=dict)
    disabled: tuple[str, ...] = ()
    power_loss: bool = False
    expect: str | None = None  # the invariant a bug suite must fail (None: the suite must pass)
    horizon: int = SUITE_HORIZON
    prime: bool = True  # one message is written at boot, before any rule runs (see FRESH)
    focus: tuple[str, ...] = ()  # the only rules this suite runs (besides ``advance``); empty: every rule
    progress: bool = False  # settle at teardown and check the progress invariants (``[sim] progress``)
    release: str = RELEASE  # the RocketMQ release (its switches are in ``bugs``: ``__post_init__``)

    def __post_init__(self) -> None:
        object.__setattr__(self, "bugs", tuple(sorted({*self.bugs, *B.release_switches(self.release)})))

    @cached_property
    def config(self) -> Config:
        data: dict[str, dict[str, Any]] = {"cluster": {"brokers": self.brokers}, "workload": dict(WORKLOAD)}
        if self.progress:
            data["sim"] = {"progress": True}
        for section, values in self.settings.items():
            data.setdefault(section, {}).update(values)
        return config_from_dict(data, default_config("safe"))

    @property
    def brokers_names(self) -> list[str]:
        return [f"b{i + 1}" for i in range(self.brokers)]

    @property
    def ident(self) -> str:
        """The suite name as a Python identifier part (class names, file names)."""
        return "".join(p.capitalize() for p in self.name.replace("_", "-").split("-"))


# The smallest cluster on which the CI search finds each bug (3 is the default; with 2 brokers the search
# misses confirm-ignores-disconnected, alter-skip-sss-epoch-check and transfer-crosses-epoch in 600 examples).
_SWITCH_BROKERS = {
    B.ACK_LOCAL_SSS_ONLY: 2,
    B.CONFIRM_IGNORES_DISCONNECTED: 3,
    B.CONFIRM_COUNTS_NEW_CONNECTION: 4,
    B.TRUNCATE_INVALID_WRONG_START: 2,
    B.ALTER_SKIP_SSS_EPOCH_CHECK: 3,
    B.ELECT_IGNORES_LIVENESS: 2,
    B.TRANSFER_CROSSES_EPOCH: 3,
    B.CONSISTENT_POINT_USES_MAX: 2,
}
# Rules of the suites whose bug the whole rule set does not reach in the CI budget: the fault kinds its
# deterministic scenario (impl/sim/scenarios.py) uses, with the workload rules.
WORKLOAD_RULES = ("produce_sync", "produce_burst")
_SWITCH_FOCUS = {
    B.TRUNCATE_INVALID_WRONG_START: ("produce_burst", "slow_dispatch", "cut", "break_ha"),
    B.CONFIRM_COUNTS_NEW_CONNECTION: ("produce_burst", "cut", "heal", "break_ha"),
    B.CONSISTENT_POINT_USES_MAX: (*WORKLOAD_RULES, "isolate", "heal"),
    # the whole rule set finds it by example 60, but its shrink stops at 21 rules (20 one-second advances)
    B.ALTER_CHECKS_OLD_SET_ALIVE: (*WORKLOAD_RULES, "crash_broker"),
}
_MASKING_DISABLED = {B.CONFIRM_COUNTS_NEW_CONNECTION: ("SYNC-CONFIRM-BOUND",)}
_CONFIG_BROKERS = {"unclean-election": 2, "allack-off": 2}
_TAIL_SWITCHES = {B.HA_HEARTBEAT_DEADLINE_STALE}
"""Switches of a check of the settle tail that is not a progress invariant (LIVE-IDLE-WAKEUPS counts the tail's idle
wake-ups): their suites settle at teardown too."""


def _switch_suite(name: str) -> Suite:
    return Suite(name, tuple(sorted([*B.fixes_beside(name), name])),
                 brokers=_SWITCH_BROKERS.get(name, 3), disabled=_MASKING_DISABLED.get(name, ()),
                 expect=B.BUGS[name].invariant, focus=_SWITCH_FOCUS.get(name, ()),
                 progress=BY_ID[B.BUGS[name].invariant].kind == "progress" or name in _TAIL_SWITCHES)


def _config_suite(name: str) -> Suite:
    settings: dict[str, dict[str, Any]] = {}
    for section, key, value in B.BUGS[name].settings:
        settings.setdefault(section, {})[key] = value
    return Suite(name, B.FIXES_ALL, brokers=_CONFIG_BROKERS.get(name, 3), settings=settings,
                 disabled=("SYNC-SSS-HOLDS-ACKED",), expect=B.BUGS[name].invariant)


SAFE = Suite("safe", B.FIXES_ALL, progress=True)
POWER_LOSS = Suite("power-loss", B.FIXES_ALL, power_loss=True)
STOCK = Suite("stock", ())
FRESH = Suite("fresh", B.FIXES_ALL, prime=False)
BUG_SUITES: dict[str, Suite] = {
    **{name: _switch_suite(name) for name in sorted(B.SWITCHES)},
    **{name: _config_suite(name) for name, b in sorted(B.BUGS.items()) if b.kind == "config"},
}
SUITES: dict[str, Suite] = {s.name: s for s in [SAFE, POWER_LOSS, STOCK, FRESH, *BUG_SUITES.values()]}
