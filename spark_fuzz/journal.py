"""The campaign journal: ``OUT/journal.jsonl``, append-only, the source of truth of a campaign.

One JSON object per line, in the order the driver did things:

* ``{"type": "start", "identity": {...}}``: what the campaign is (config, switches, mode, campaign seed, settings);
  a later run with the same ``--out`` must have the same identity.
* ``{"type": "plan", "batch": b, "items": [...]}``: the work items of batch ``b``, written before it is submitted.
* ``{"type": "merged", "batch": b, "elapsed": s, "rows": [...], ...}``: its results, written when the driver
  merges it (batches merge in order).

Each line is written whole and flushed to disk before the driver goes on. A campaign killed at any point
restarts by reading the journal back (a torn last line is ignored and cut off), replaying it to rebuild its state,
resubmitting the batches planned but not merged, and carrying on; nothing merged is run again and nothing found is
lost. Parquet tables and the report are rewritten from this state at the end of every invocation.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

NAME = "journal.jsonl"


class Journal:
    def __init__(self, out: str) -> None:
        self.path = Path(out) / NAME

    def exists(self) -> bool:
        return self.path.is_file() and self.path.stat().st_size > 0

    def read(self) -> list[dict[str, Any]]:
        """Every complete record; a torn last line (a kill during a write) is dropped and cut off the file."""
        if not self.exists():
            return []
        raw = self.path.read_bytes()
        records: list[dict[str, Any]] = []
        good = 0  # bytes of whole records (each with its newline)
        pos = 0
        while pos < len(raw):
            nl = raw.find(b"\n", pos)
            line = raw[pos:] if nl < 0 else raw[pos:nl]
            try:
                rec = json.loads(line) if line.strip() else None
            except json.JSONDecodeError:
                break
            if rec is not None and (not isinstance(rec, dict) or "type" not in rec):
                break
            if rec is not None:
                records.append(rec)
            if nl < 0:  # a whole record whose newline was not written yet
                with open(self.path, "ab") as fh:
                    fh.write(b"\n")
                good = len(raw)
                break
            pos = good = nl + 1
        if good < len(raw):
            with open(self.path, "r+b") as fh:
                fh.truncate(good)
        return records

    def append(self, record: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        line = json.dumps(record, sort_keys=True, separators=(",", ":")) + "\n"
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())
