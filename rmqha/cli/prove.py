"""``rmqha prove``: z3 inductive checks of the controller invariants (``rmqha.symbolic``); a counterexample to
induction is replayed on the model and the implementation.

    rmqha prove [--brokers N] [--bug NAME]... [--json]
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rich.console import Console

from .common import Handler, bug_list, int_in
from .files import UserError

MAX_BROKERS = 16  # rmqha.symbolic.prover.MAX_BROKERS (checked again there; z3 loads with that module)


def register(sub: Any) -> dict[str, Handler]:
    pv = sub.add_parser("prove", help="z3 inductive checks of the controller invariants; CTIs replayed on the model "
                                      "and the implementation")
    pv.add_argument("--brokers", type=int_in(1, MAX_BROKERS), default=3, help="broker ids 1..N (default 3)")
    pv.add_argument("--bug", action="append", default=[],
                    help="a controller switch: alter-skip-sss-epoch-check, elect-ignores-liveness, unclean-election")
    pv.add_argument("--json", action="store_true")
    return {"prove": cmd_prove}


def cmd_prove(args: argparse.Namespace, out: Console) -> int:
    from rmqha.symbolic import prover, report  # lazy: z3 (60 MB) loads only for `rmqha prove`
    from rmqha.symbolic.transitions import PROVER_SWITCHES, Switches  # lazy: z3, as above

    names = bug_list(args.bug, [])
    other = [n for n in names if n not in PROVER_SWITCHES]
    if other:
        raise UserError(f"--bug {other[0]!r} does not act on the controller (prove knows: "
                        f"{', '.join(PROVER_SWITCHES)})")
    if not 1 <= args.brokers <= prover.MAX_BROKERS:
        raise UserError(f"--brokers must be within 1..{prover.MAX_BROKERS}, got {args.brokers}")
    run = prover.prove(args.brokers, Switches.from_names(names))
    if args.json:
        print(json.dumps(report.to_json(run), sort_keys=True))
    else:
        report.render(run, out)
    return 0 if run.ok else 1
