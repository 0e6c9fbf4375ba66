"""Write the simulator's verdicts of the verdict matrix (docs/findings/sim.json): every finding's trace re-run with
every release's profile (rmqha.impl.sim.matrix). ``scripts/gen_docs.py`` renders docs/findings/README.md's matrix
section from it and docs/findings/real.json; ``rmqha findings --matrix`` computes the same verdicts live, and
``tests/test_matrix.py`` checks that this file is what they are.

    python scripts/derive_matrix.py          # about a minute on 2 cores
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rmqha.impl import bugs as B
from rmqha.impl.sim.matrix import sim_verdicts

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "findings" / "sim.json"


def main() -> int:
    verdicts = sim_verdicts(ROOT / "docs" / "findings" / "traces")
    doc = {"about": "The simulator's verdict per finding and RocketMQ release: the finding's trace re-run with the "
                    "release's profile (rmqha.impl.sim.matrix; python scripts/derive_matrix.py writes this file).",
           "releases": list(B.RELEASES), "findings": verdicts}
    OUT.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
