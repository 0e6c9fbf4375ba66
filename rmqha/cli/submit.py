"""The ``spark-submit`` entry point of ``rmqha fuzz``: the same options, with Spark's own ``--master``.

    spark-submit --master spark://host:7077 "$(python -m rmqha.cli.submit --path)" --budget 600 --out /shared/f

Under ``spark-submit`` the session is the one it configured (``session.spark_session`` leaves its master alone);
the kit still ships itself to the executors.
"""

from __future__ import annotations

import sys

from rmqha.cli import main as rmqha  # absolute: spark-submit runs this file as a script


def main(argv: list[str]) -> int:
    if argv == ["--path"]:
        print(__file__)
        return 0
    return rmqha(["fuzz", *argv])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
