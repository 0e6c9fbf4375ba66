"""A tiny driver for one sans-IO actor in unit tests: a clock, its timers, and the messages it sends.

    d = ActorDriver(node)          # calls node.start() if asked
    d.advance(5000)                # run timers due within the next 5 s
    sent = d.take_sent()           # [(dst, Command)] the actor sent so far
    d.deliver("b1", cmd)           # hand it a message
    d.reply(sent_cmd, code, header, body)   # answer one of its requests

Nothing else is simulated: no network, no other nodes. Use the full simulator (``rmqha.impl.sim.world``)
for anything that needs several nodes; ``ObsRecorder`` is a recorder for it that keeps every observation.
"""

from __future__ import annotations

import heapq
from typing import Any

from rmqha.impl.runtime import Actor, Command, Observe, Send, SetTimer, response_to


class ActorDriver:
    def __init__(self, actor: Actor, start: bool = True, now: int = 0) -> None:
        self.actor = actor
        self.now = now
        self.timers: list[tuple[int, int, int]] = []
        self._seq = 0
        self.sent: list[tuple[str, Command]] = []
        self.observations: list[tuple[str, dict[str, Any]]] = []
        self.other: list[Any] = []
        actor.now = now
        if start:
            actor.start()
            self._drain()

    def _drain(self) -> None:
        out, self.actor.out = self.actor.out, []
        for eff in out:
            if isinstance(eff, SetTimer):
                self._seq += 1
                heapq.heappush(self.timers, (eff.at, self._seq, eff.token))
            elif isinstance(eff, Send):
                self.sent.append((eff.dst, eff.cmd))
            elif isinstance(eff, Observe):
                self.observations.append((eff.kind, eff.data))
            else:
                self.other.append(eff)

    def advance(self, ms: int) -> None:
        """Move the clock forward by ``ms``, firing every timer that falls due, in order."""
        end = self.now + ms
        while self.timers and self.timers[0][0] <= end:
            at, _, token = heapq.heappop(self.timers)
            self.now = max(self.now, at)
            self.actor.now = self.now
            self.actor.on_timer(token)
            self._drain()
        self.now = end
        self.actor.now = end

    def deliver(self, src: str, cmd: Command, channel: str | None = None) -> None:
        self.actor.now = self.now
        self.actor.on_message(src, cmd, channel)
        self._drain()

    def reply(self, request: Command, code: int, header: dict[str, Any] | None = None, body: Any = None,
              src: str = "ctl") -> None:
        self.deliver(src, response_to(request, code, header, body))

    def take_sent(self) -> list[tuple[str, Command]]:
        sent, self.sent = self.sent, []
        return sent

    def observed(self, kind: str) -> list[dict[str, Any]]:
        return [d for k, d in self.observations if k == kind]


class ObsRecorder:
    """A simulator recorder that keeps every observation with its time (``Simulation(..., recorder=...)``)."""

    def __init__(self) -> None:
        self.obs: list[tuple[int, dict[str, Any]]] = []

    def step(self, step: int, now: int, event: Any, obs: list[dict[str, Any]]) -> None:
        self.obs.extend((now, o) for o in obs)

    def finish(self, sim: Any) -> None:
        pass

    def kinds(self, kind: str) -> list[tuple[int, dict[str, Any]]]:
        return [(t, o) for t, o in self.obs if o["k"] == kind]
