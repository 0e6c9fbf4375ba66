"""Hypothesis settings profiles of the property suites.

* ``ci`` (the default): a fixed, derandomized run with no example database, sized so the whole directory
  stays within a few minutes on 2 cores; the same examples every time.
* ``deep``: many more and longer examples, random, with the example database (``.hypothesis/examples``), so a
  failure found once is replayed first next time.

Derandomized means the same examples in any process only if nothing outside the test feeds generation. Hypothesis
(6.1xx) does take such an input: a pool of "local constants", the literals of every non-installed module in
``sys.modules`` when a test first draws (``hypothesis.internal.conjecture.providers._get_local_constants``). Our
kit is installed editable, so its modules count, and which of them a process happens to have imported (a lazily
imported ``spark_fuzz.report``, say) changed the bug suites' examples: ``consistent-point-uses-max`` shrank to 6
rules alone and to 21 after ``tests/test_fuzz.py``. ``pin_constant_pool`` empties that pool for our runs.

Both print the ``@reproduce_failure`` blob of a failure (valid for the pinned Hypothesis version only).
Choose with ``pytest --hypothesis-profile=deep`` or ``RMQHA_HYPOTHESIS_PROFILE=deep``.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

PROFILE_ENV = "RMQHA_HYPOTHESIS_PROFILE"
DEFAULT_PROFILE = "ci"
# A stateful example runs tens of simulated seconds: slow by Hypothesis' yardstick, and by design.
SUPPRESS = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

CI = {"max_examples": 400, "stateful_step_count": 30}
DEEP = {"max_examples": 3000, "stateful_step_count": 60}


def pin_constant_pool() -> None:
    """No local constants: generation depends on the test and its seed alone, not on the modules imported so far.

    Private Hypothesis API, valid for the pinned version (``constraints.txt``); if it moves, this fails loudly."""
    from hypothesis.internal.conjecture import providers

    empty = providers.Constants(integers=providers.SortedSet(),
                                floats=providers.SortedSet(key=providers.float_to_int),
                                bytes=providers.SortedSet(), strings=providers.SortedSet())
    providers._get_local_constants = lambda: empty


def register() -> None:
    """Register ``ci`` and ``deep`` (idempotent)."""
    settings.register_profile("ci", derandomize=True, database=None, deadline=None, print_blob=True,
                              suppress_health_check=SUPPRESS, **CI)
    settings.register_profile("deep", deadline=None, print_blob=True, suppress_health_check=SUPPRESS, **DEEP)


def load_default() -> str:
    """Load ``$RMQHA_HYPOTHESIS_PROFILE`` (default ``ci``); return its name."""
    register()
    name = os.environ.get(PROFILE_ENV) or DEFAULT_PROFILE
    settings.load_profile(name)
    return name
