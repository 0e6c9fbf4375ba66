"""``python -m rmqha``."""

import sys

from rmqha.cli import main

sys.exit(main())
