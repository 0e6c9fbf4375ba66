"""A real run's controller log against the model (``rmqha conform <real run dir>``).

``rmqha real test`` writes the controller's committed event log of the run (``controller-log.jsonl``: one applied
event per line, with its log index). ``conform_run`` reads it and checks it, event by event, against the model's
controller actions (``models/controller_log.py``), for the run's number of brokers, unclean-election setting and
broker set name.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..models.controller_log import LogReport, validate_log
from .spec import SPEC_FILE, load

CONTROLLER_LOG = "controller-log.jsonl"


def run_dir_of(path: str) -> Path | None:
    """The folder of a real run that ``path`` names: the folder, its controller log or its trace; None for anything
    else."""
    p = Path(path)
    d = p if p.is_dir() else p.parent
    if (d / SPEC_FILE).is_file() and (p.is_dir() or p.name in (CONTROLLER_LOG, "trace.jsonl")):
        return d
    return None


def read_controller_log(log: Path) -> list[tuple[int, dict[str, Any]]]:
    """(log index, event) per line; a line that is not one is a ``ValueError`` naming it."""
    events = []
    for i, line in enumerate(log.read_text(encoding="utf-8").splitlines(), 1):
        try:
            ob = json.loads(line)
            events.append((int(ob["index"]), dict(ob["event"])))
        except (ValueError, KeyError, TypeError):
            raise ValueError(f"{log}:{i}: not a controller-log line") from None
    return events


def conform_run(d: Path) -> tuple[Path, LogReport]:
    """The run's controller log and its report against the model. ``ValueError`` (``ConfigError`` among them) with
    one line when the folder is not a checked real run."""
    spec = load(d)
    log = d / CONTROLLER_LOG
    if not log.is_file():
        raise ValueError(f"{d}: no {CONTROLLER_LOG} (the run has not been checked, or its controller is JRaft)")
    cfg = spec.cfg
    return log, validate_log(read_controller_log(log), len(spec.brokers), cfg.controller.enable_elect_unclean_master,
                             cfg.broker.broker_name)
