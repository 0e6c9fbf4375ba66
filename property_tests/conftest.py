"""Property suites: ``rmqha`` importable from a checkout, and the Hypothesis profile (``profiles.py``).

The profile is ``ci`` unless ``--hypothesis-profile=NAME`` (Hypothesis' pytest plugin) or
``$RMQHA_HYPOTHESIS_PROFILE`` names another.
"""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from property_tests import profiles  # noqa: E402

profiles.pin_constant_pool()  # examples independent of what else the process imported (profiles.py)
profiles.register()  # before the plugin loads a --hypothesis-profile given on the command line


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("hypothesis_profile", default=None):
        profiles.load_default()
