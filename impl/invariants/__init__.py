"""The invariant catalogue: every invariant once, with a stable id, its statement, its guard and its check.

Each invariant is one function decorated with ``@invariant`` (``registry.py``) in the module of its area:
``controller.py`` (CTL-*), ``broker.py`` (BRK-*), ``ha.py`` (HA-*, EPOCH-*), ``store.py`` (STORE-*), ``queues.py``
(topic queues), ``sync.py`` (SYNC-* of the ack path), ``client.py`` (what clients see), ``progress.py`` (LIVE-*:
what must happen once the faults heal, checked at the end of a settle window: ``settle.py``). The checks read the
cluster through a narrow view (``view.ClusterView``) and the run's history (``context.Context``);
``checker.Checker`` walks the registry after every simulator step. ``docs/invariants.md`` is generated from
``CATALOGUE``.
"""

from .checker import STATE_CHAINS, Checker
from .context import Context, Coverage
from .registry import BY_ID, CATALOGUE, Invariant, Violated, catalogue_rows, invariant, progress_invariants, violated
from .settle import Settle, Term, Timeouts
from .view import AnyBroker, ClusterView, NameServerView

__all__ = ["BY_ID", "CATALOGUE", "STATE_CHAINS", "AnyBroker", "Checker", "ClusterView", "Context", "Coverage",
           "Invariant", "NameServerView", "Settle", "Term", "Timeouts", "Violated", "catalogue_rows", "invariant",
           "progress_invariants", "violated"]
