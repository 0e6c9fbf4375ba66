"""The commands that start processes end cleanly on SIGTERM, SIGINT and SIGHUP (``rmqha.impl.sim.children``): the
layers' ``finally`` blocks end the children and remove the temporary folders, then one line on stderr and the exit
status ``128 + signal`` (143, 130, 129)."""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from rmqha.impl.sim.children import Ended, ending_on_signals

from .common import Handler


def ends_on_signals(handler: Handler) -> Handler:
    """The handler, run so that SIGTERM / SIGINT / SIGHUP end it cleanly with exit status 143 / 130 / 129."""

    def run(args: argparse.Namespace, out: Console) -> int:
        try:
            with ending_on_signals():
                return handler(args, out)
        except Ended as exc:
            print(f"rmqha: ended by {exc.name}; every process it started is gone", file=sys.stderr)
            return exc.exit_code

    return run
