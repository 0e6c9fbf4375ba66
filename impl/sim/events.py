"""What one simulator step delivered, as the trace records it (the ``ev`` part of a step line).

Every step pops one event off the simulator's heap; with a recorder attached the simulator describes it as one of
these records, and ``impl/trace.TraceRecorder.step`` writes it with the step number ``i``, the time ``t`` and the
step's observations (``docs/trace-format.md``). ``rmqha show`` and the reports read them back.

Rules: one ``TypedDict`` per ``ev`` value, discriminated by it; keys that only sometimes apply are
``NotRequired`` (absent, not null: the trace's bytes depend on it).
"""

from __future__ import annotations

from typing import Any, Literal, NotRequired, TypedDict

from .actions import Action


class MsgEvent(TypedDict):
    """An RPC message delivered (``lost``: its destination restarted since it was sent, or is down)."""

    ev: Literal["msg"]
    src: str
    dst: str
    cmd: dict[str, Any]  # Command.to_dict, with "op" (the request code's name) for a request
    lost: NotRequired[bool]


class TimerEvent(TypedDict):
    ev: Literal["timer"]
    node: str


class HaChunkEvent(TypedDict):
    """A piece of an HA stream delivered (``n`` bytes), or its close (``fin``)."""

    ev: Literal["ha"]
    conn: int
    dst: str
    n: NotRequired[int]
    fin: NotRequired[bool]


class HaAcceptEvent(TypedDict):
    ev: Literal["ha-accept"]
    conn: int
    slave: str
    master: str


class HaConnectEvent(TypedDict):
    """The result of a slave's connect (``conn`` null: refused or timed out)."""

    ev: Literal["ha-connect"]
    node: str
    conn: int | None


class ChannelClosedEvent(TypedDict):
    """A remoting channel to ``peer`` closed at ``node`` (``idle``: a controller closed a connection it had read
    nothing on for ``[controller] serverChannelMaxIdleTimeSeconds``, whose close a partition lost)."""

    ev: Literal["channel-closed"]
    node: str
    peer: str
    idle: NotRequired[bool]


class ActEvent(TypedDict):
    """A fault action applied (as it was taken: a generated one with its ``fault`` and ``release``)."""

    ev: Literal["act"]
    act: Action


class FaultGenEvent(TypedDict):
    """The generator drew a composite fault: ``n`` actions (the first may run in this very step)."""

    ev: Literal["fault-gen"]
    n: int


class ResumedEvent(TypedDict):
    ev: Literal["resumed"]
    node: str


class BootEvent(TypedDict):
    ev: Literal["boot"]


class SettleEvent(TypedDict):
    """The settle tail (``[sim] progress``): the last pending fault action has run; ``wait``: a fault's effect lasts
    until then; else the heal point, ``healed`` or not (a partition, a paused process, a needed process down:
    unchecked), with the brokers left ``dead``."""

    ev: Literal["settle"]
    wait: NotRequired[int]
    healed: NotRequired[bool]
    dead: NotRequired[list[str]]


class ProbeEvent(TypedDict):
    """The settle tail sends a probe message for LIVE-PUTS (``key`` null: the producer is down)."""

    ev: Literal["probe"]
    key: str | None


class ProgressCheckEvent(TypedDict):
    """The settle tail checks the progress invariants ``ids``, ``bound`` ms after the heal point."""

    ev: Literal["progress-check"]
    ids: list[str]
    bound: int


class RealEvent(TypedDict):
    """Not a simulator step: a line of a real RocketMQ run's trace (``rmqha/real/report.py``), one thing the harness
    saw of ``node`` (a client record, or the admin API's ``ctl.state`` / ``brk.state``), merged by time."""

    ev: Literal["real"]
    node: str


StepEvent = (
    MsgEvent | TimerEvent | HaChunkEvent | HaAcceptEvent | HaConnectEvent | ChannelClosedEvent | ActEvent
    | FaultGenEvent | ResumedEvent | BootEvent | SettleEvent | ProbeEvent | ProgressCheckEvent | RealEvent
)
"""What a step delivered."""
