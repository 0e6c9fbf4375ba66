"""``rmqha``: the kit's one command. The command line only: each subcommand module parses its arguments, calls the
layer that does the work, and prints the result.

    rmqha simulate --seed N [--steps K] [--profile P] [--config FILE] [--bug B]... [--fix F|all]... [--trace FILE]
    rmqha simulate --seeds A-B [--jobs J] [--out DIR] ...      (a batch: progress, triage, traces of failures)
    rmqha replay FILE                                          (exit 0 only if the run reproduces byte for byte)
    rmqha recheck TRACE|FOLDER... [--json]                     (does each trace's violation still happen today?)
    rmqha show FILE [--around STEP]                            (a readable timeline of a trace)
    rmqha invariants [--json]      rmqha bugs [--json]      rmqha findings [--json]      rmqha doctor
    rmqha check [CONFIG ...] [--ci] [--workers N] [--record] [--json]   (TLA+ configs with TLC, vs spec/manifest.json)
    rmqha model-check --config NAME [--no-symmetry] [--json]            (the executable model's BFS)
    rmqha conform TRACE... [--seeds A-B]                                (traces against the model, step by step)
    rmqha prove [--brokers N] [--bug B]... [--json]      (z3: the controller's invariants are inductive; CTIs replayed)
    rmqha fuzz ...                                       (a fuzz campaign on Spark: cli/fuzz.py)
    rmqha cluster up | status | kill | restart | partition | heal | down | test ...   (real processes: cli/cluster.py)
    rmqha real fetch | up | status | kill | partition | fault | down | test | repro ...   (RocketMQ itself: cli/real.py)

Exit status: 0 success / no violation; 1 a violation (for a batch: one no documented finding explains), a replay
that does not reproduce, or a recheck that finds a trace not as recorded; 2 a usage or input error (one line on
stderr, never a traceback); 3 a replay that does not reproduce a trace another core recorded (``rmqha recheck``).

Adding a group of subcommands: a module here with ``register(sub) -> {command: handler}`` (``common.Handler``),
and its name in ``SUBCOMMANDS``.
"""

from __future__ import annotations

import sys

from rich.console import Console

from rmqha import __version__

from . import check, cluster, conform, doctor, fuzz, listings, prove, real, simulate, trace
from .common import Handler, Parser
from .files import UserError

SUBCOMMANDS = (simulate, trace, listings, doctor, check, conform, prove, fuzz, cluster, real)
"""The subcommand modules, in the order ``rmqha --help`` lists their commands."""


def parser() -> tuple[Parser, dict[str, Handler]]:
    """The ``rmqha`` argument parser, and the handler of each command."""
    p = Parser(prog="rmqha", description="Verification kit for RocketMQ 5 controller-mode HA.")
    p.add_argument("--version", action="version", version=f"rmqha {__version__}")
    sub = p.add_subparsers(dest="cmd", required=True, parser_class=Parser)
    handlers: dict[str, Handler] = {}
    for module in SUBCOMMANDS:
        handlers.update(module.register(sub))
    return p, handlers


def main(argv: list[str] | None = None) -> int:
    out = Console(highlight=False)
    try:
        p, handlers = parser()
        words = sys.argv[1:] if argv is None else list(argv)
        if real.takes_trailing(words):
            words, trailing = real.split_trailing(words)
            args, extra = p.parse_known_args(words)
            real.place_words(args, extra, trailing)
        else:
            args = p.parse_args(words)
        return handlers[args.cmd](args, out)
    except UserError as exc:
        print("rmqha: " + str(exc).replace("\r", "\\r").replace("\n", "\\n"), file=sys.stderr)  # one line, always
        return 2
    except KeyboardInterrupt:
        print("rmqha: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
