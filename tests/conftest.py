"""Shared pytest setup: tests import the kit as ``rmqha.*`` and the harness as ``tests.harness``."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
