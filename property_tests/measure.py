"""Throughput of a suite under a profile: ``python -m property_tests.measure [--suite safe] [--profile ci]``.

Prints examples run, wall time and examples per second (an example is one machine: boot plus its rules). With
``--conform`` each clean example is also validated against the model in the same run (``rmqha conform``), and
the conformance overhead (validation time / simulation time) is printed; examples per second then include it.
"""

from __future__ import annotations

import argparse
import time

from hypothesis import settings
from hypothesis.stateful import run_state_machine_as_test

from property_tests import profiles
from property_tests.cluster_machine import ConformTally, machine_for
from property_tests.suites import SUITES


def measure(suite: str, profile: str, examples: int | None,
            conform: bool = False) -> tuple[int, float, ConformTally | None]:
    profiles.register()
    base = settings.get_profile(profile)
    machine = machine_for(SUITES[suite])
    machine.reset_counters()
    tally = machine.conform = ConformTally() if conform else None
    t0 = time.perf_counter()
    try:
        run_state_machine_as_test(machine, settings=settings(base, max_examples=examples or base.max_examples))
    finally:
        machine.conform = None
    return machine.examples, time.perf_counter() - t0, tally


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--suite", default="safe", choices=sorted(SUITES))
    p.add_argument("--profile", default=profiles.DEFAULT_PROFILE, choices=["ci", "deep"])
    p.add_argument("--examples", type=int, help="max_examples (default: the profile's)")
    p.add_argument("--conform", action="store_true", help="also validate every clean example against the model")
    args = p.parse_args()
    n, wall, tally = measure(args.suite, args.profile, args.examples, args.conform)
    print(f"{args.suite} under {args.profile}: {n} examples in {wall:.1f} s = {n / wall:.1f} examples/s")
    if tally is not None:
        print(f"conformance: {tally.conforming}/{tally.examples} clean examples conform; simulation "
              f"{tally.sim_seconds:.2f} s, validation {tally.validate_seconds:.2f} s: overhead {tally.overhead:.2f}")
        for d in tally.divergences[:3]:
            print("  diverged:", d)


if __name__ == "__main__":
    main()
