"""The invariant catalogue: every invariant once, with a stable id, its statement, its guard and its check.

Each invariant is one function decorated with ``@invariant`` (``registry.py``) in the module of its area:
``controller.py`` (CTL-*), ``broker.py`` (BRK-*), ``ha.py`` (HA-*, EPOCH-*), ``store.py`` (STORE-*), ``queues.py``
(topic queues), ``sync.py`` (SYNC-* of the ack path), ``client.py`` (what clients see). The checks read the cluster
through a narrow view (``view.ClusterView``) and the run's history (``context.Context``); ``checker.Checker``
walks the registry after every simulator step. ``docs/invariants.md`` is generated from ``CATALOGUE``.
"""

from .checker import STATE_CHAINS, Checker
from .context import Context, Coverage
from .registry import BY_ID, CATALOGUE, Invariant, Violated, catalogue_rows, invariant, violated
from .view import AnyBroker, ClusterView, NameServerView

__all__ = ["BY_ID", "CATALOGUE", "STATE_CHAINS", "AnyBroker", "Checker", "ClusterView", "Context", "Coverage",
           "Invariant", "NameServerView", "Violated", "catalogue_rows", "invariant", "violated"]
