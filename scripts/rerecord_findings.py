"""Re-record finding traces whose run still shows the same violation after a change to the core (docs/findings/).

``scripts/derive_findings.py`` searches and shrinks a finding's run from scratch; when a change of the core only
moves the bytes of a committed trace (a timer that no longer fires, a new progress invariant named in the settle
tail's steps) and the run still ends in the finding's violation, re-recording the same fault schedule keeps the
write-up true. This replays each named trace's header, requires the same invariant as its index entry and that the
finding's fix still removes it, then writes the new trace and updates the entry's hash, step, time and message.
Anything else is an error: re-derive that finding instead. A re-recorded trace names today's kit and core
(``impl/sim/provenance.py``).

A trace of ``traces/`` that is no index entry's (a finding's second face, e.g. ``F-GAP-UNION-expand``) is named by
its file's stem; it is re-recorded when its run ends in the same violation at the same step.

    python scripts/rerecord_findings.py F-ID [F-ID ...] [F-ID-face ...]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from rmqha.impl.findings import FINDINGS
from rmqha.impl.sim.provenance import provenance
from rmqha.impl.sim.runner import run_header
from rmqha.impl.sim.tracefile import read_text, write_text
from rmqha.impl.trace import parse

OUT = Path(__file__).resolve().parent.parent / "docs" / "findings"


def main(ids: list[str]) -> int:
    index_path = OUT / "index.json"
    index = json.loads(index_path.read_text())
    for fid in ids:
        if fid not in index and (OUT / "traces" / f"{fid}.jsonl.gz").is_file():
            if not rerecord_face(fid):
                return 1
            continue
        if fid not in index:
            print(f"rerecord: no finding {fid}", file=sys.stderr)
            return 2
        entry = index[fid]
        header, _lines, _footer = parse(read_text(str(OUT / entry["trace"])))
        header = {**header, **provenance()}  # re-recorded by today's core (impl/sim/provenance.py)
        again = run_header(header)
        v = again.violation
        if v is None or v.invariant != entry["invariant"]:
            print(f"rerecord: {fid} now ends in {v.invariant if v else 'no violation'}, not {entry['invariant']}: "
                  "re-derive it (scripts/derive_findings.py --only " + fid + ")", file=sys.stderr)
            return 1
        fixed = run_header(dict(header, bugs=sorted([*header["bugs"], FINDINGS[fid].fix])), keep=False)
        if fixed.violation is not None:
            print(f"rerecord: {fid}'s fix no longer removes it ({fixed.violation.invariant})", file=sys.stderr)
            return 1
        assert again.text is not None
        _h, _l, footer = parse(again.text)
        old = {k: entry.get(k) for k in ("step", "t", "message")}
        write_text(str(OUT / entry["trace"]), again.text)
        entry.update(hash=footer["hash"], step=v.step, t=v.time, message=v.message)
        print(f"{fid}: {v.invariant} at step {v.step} (was {old['step']}), t={v.time} (was {old['t']})")
        if "earlier" in entry:  # the set-wide checks' earlier view of the same run (tests/test_findings.py)
            on = dict(header, disabledInvariants=[i for i in header["disabledInvariants"]
                                                  if i not in ("SYNC-DISPATCH-CONFIRMED", "SYNC-CONFIRM-HELD")])
            early = run_header(on, keep=False).violation
            if early is None or early.step >= v.step:
                print(f"rerecord: {fid}: the set-wide checks no longer see it earlier", file=sys.stderr)
                return 1
            print(f"  earlier: {early.invariant} at step {early.step} (was {entry['earlier'].get('step')})")
            entry["earlier"].update(invariant=early.invariant, step=early.step, message=early.message)
        if v.message != old["message"]:
            print(f"  message now: {v.message}\n  was:         {old['message']}")
    write_text(str(index_path), json.dumps(index, indent=1, sort_keys=True) + "\n")
    return 0


def rerecord_face(name: str) -> bool:
    """Re-record ``traces/<name>.jsonl.gz`` if its run still ends in its recorded violation at the same step."""
    path = OUT / "traces" / f"{name}.jsonl.gz"
    header, _lines, footer = parse(read_text(str(path)))
    was = footer.get("violation") or {}
    again = run_header({**header, **provenance()})
    v = again.violation
    if v is None or (v.invariant, v.step) != (was.get("invariant"), was.get("step")):
        print(f"rerecord: {name} now ends in {f'{v.invariant} at step {v.step}' if v else 'no violation'}, not "
              f"{was.get('invariant')} at step {was.get('step')}", file=sys.stderr)
        return False
    assert again.text is not None
    write_text(str(path), again.text)
    print(f"{name}: {v.invariant} at step {v.step}, t={v.time} (the same)")
    return True


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
