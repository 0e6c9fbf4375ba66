"""A checker that also counts what happened, for Hypothesis' ``event()`` / ``target()`` coverage report.

It is the kit's ``Checker`` (same predicates, same enabled set, same verdicts) plus bookkeeping on the
observations it is handed; it never changes the run, so a trace replayed with the plain checker matches.
"""

from __future__ import annotations

from typing import Any

from rmqha.impl.codes import BrokerRole
from rmqha.impl.invariants import Checker

# label -> what it counts; the checker's own Coverage labels plus the ones this wrapper adds
LABELS: dict[str, str] = {
    "election": "ElectMaster events that elected a master",
    "truncation-across-epochs": "slave truncations whose cut crossed an epoch boundary of the master",
    "expand-races-master-crash": "a master crashed while its SyncStateSet expansion was still in flight",
    "unclean-election": "elections of a replica outside the SyncStateSet",
    "lost-reply-event-applies": "controller appends that timed out (reply lost) though the event still applies",
}


class CountingChecker(Checker):
    """``Checker`` plus the client send results seen (for sync sends) and race counters."""

    def __init__(self, world: Any, enabled: set[str] | None = None) -> None:
        super().__init__(world, enabled)
        self.send_results: dict[str, str] = {}  # producer key -> status
        self._expanding: set[str] = set()  # masters with an SSS expansion in flight

    def after_step(self, observations: list[dict[str, Any]]) -> None:
        for obs in observations:
            kind = obs["k"]
            if kind == "client.send-result":
                self.send_results[obs["key"]] = obs["status"]
            elif kind == "ha.expand":
                node = self.world.broker(obs["n"])
                if node is not None and node.store.role == BrokerRole.SYNC_MASTER:
                    self._expanding.add(obs["n"])
            elif kind == "brk.alter":
                self._expanding.discard(obs["n"])
            elif kind == "sim.crash" and obs["node"] in self._expanding:
                self._expanding.discard(obs["node"])
                self.coverage.hit("expand-races-master-crash")
        super().after_step(observations)

    def counts(self) -> dict[str, int]:
        """The reported labels, zero included."""
        return {label: self.coverage.counts.get(label, 0) for label in LABELS}
