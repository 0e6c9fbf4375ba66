"""Property suites: ``rmqha`` importable from a checkout, and the Hypothesis profile (``profiles.py``).

The profile is ``ci`` unless ``--hypothesis-profile=NAME`` (Hypothesis' pytest plugin) or
``$RMQHA_HYPOTHESIS_PROFILE`` names another. ``--rocketmq V`` (or ``$RMQHA_ROCKETMQ``) picks the RocketMQ release
whose rules the suites run (``suites.py``; default 5.3.3).
"""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from property_tests import profiles  # noqa: E402

profiles.pin_constant_pool()  # examples independent of what else the process imported (profiles.py)
profiles.register()  # before the plugin loads a --hypothesis-profile given on the command line


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--rocketmq", choices=("5.3.3", "5.3.4", "5.4.0", "5.5.0", "5.5.1"), default=None,
                     help="the RocketMQ release whose rules the suites run (default: $RMQHA_ROCKETMQ, else 5.3.3)")


def pytest_configure(config: pytest.Config) -> None:
    if not config.getoption("hypothesis_profile", default=None):
        profiles.load_default()
    release = config.getoption("rocketmq", default=None)
    if release is not None:  # read by property_tests/suites.py when the test modules are collected
        os.environ["RMQHA_ROCKETMQ"] = release
