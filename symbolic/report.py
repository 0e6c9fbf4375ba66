"""How ``rmqha prove`` prints a ``ProofRun``: the obligation table, then every CTI and documented exception.

Rules: the table has one row per obligation (catalogue ids first, then the strengthening) and one column per
transition; a cell is the verdict and the z3 time of its queries. Below it, each CTI gets its concrete
pre-state, the step, the post-state and both replays; each documented exception its catalogue text, a witness
and the replays. ``to_json`` is the same content for tools.
"""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from .concrete import Witness, code_name
from .properties import OBLIGATIONS
from .prover import ProofRun
from .replay import Replay
from .transitions import TRANSITIONS

MARK = {"proved": "[green]✓[/]", "cti": "[red bold]CTI[/]", "exception": "[yellow]exc[/]", "unknown": "[red]?[/]"}
BOTH = "[red bold]CTI[/]+[yellow]exc[/]"
REPLAY = {"reproduced": "[green]reproduced[/]", "holds": "[red]holds[/]", "diverged": "[red]diverged[/]",
          "n/a": "[dim]n/a[/]"}


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f}"


def table(run: ProofRun) -> Table:
    transitions = [t for t in TRANSITIONS if any(r.transition == t for r in run.results)]
    by = {(r.obligation, r.transition): r for r in run.results}
    label = ", ".join(run.switches) or "stock"
    dropped = f", without {', '.join(run.dropped)}" if run.dropped else ""
    t = Table(title=escape(f"inductive checks, broker ids 1..{run.brokers} [{label}{dropped}]"),
              caption="✓ proved, CTI counterexample to induction, exc documented exception; z3 milliseconds")
    t.add_column("obligation", no_wrap=True)
    for name in transitions:
        t.add_column(name, justify="center")
    for ob in OBLIGATIONS.values():
        if not any(r.obligation == ob.id for r in run.results):
            continue
        cells = []
        for name in transitions:
            r = by.get((ob.id, name))
            mark = "" if r is None else BOTH if r.verdict == "cti" and r.exception else MARK[r.verdict]
            cells.append("" if r is None else f"{mark} {_ms(r.seconds)}")
        t.add_row(ob.id if ob.kind != "strengthening" else f"[dim]aux {ob.id}[/]", *cells)
    return t


def _witness_lines(w: Witness, replays: dict[str, Replay], exception: bool) -> list[str]:
    detail = "".join(f", {k} {v}" for k, v in w.detail.items())
    lines = [f"  pre   {escape(w.pre.text())}; {escape(w.env.text())}",
             f"  step  {escape(w.request_text())} -> {code_name(w.code)}{detail}",
             f"  post  {escape(w.post.text())}"]
    for layer, x in replays.items():
        status = REPLAY[x.status]
        if exception and x.status == "holds":  # the layer's predicate leaves the exception out
            status = "[dim]holds (its predicate leaves this exception out)[/]"
        lines.append(f"  {layer:<5} {status}: {escape(x.text)}")
    return lines


def render(run: ProofRun, out: Console) -> None:
    out.print(table(run))
    for r in run.failures:
        out.print(f"\n[red bold]CTI[/] {r.obligation} × {r.transition} ({TRANSITIONS[r.transition].java})")
        ob = OBLIGATIONS[r.obligation]
        out.print(f"  [dim]{escape(ob.statement)}[/]")
        if ob.exception_text:
            out.print(f"  [dim]not covered by the documented exception: {escape(ob.exception_text)}[/]")
        if r.witness is not None:
            for line in _witness_lines(r.witness, r.replays, False):
                out.print(line)
    for r in run.exceptions:
        assert r.exception is not None
        out.print(f"\n[yellow]documented exception[/] {r.obligation} × {r.transition}: "
                  f"{escape(OBLIGATIONS[r.obligation].exception_text)}")
        for line in _witness_lines(r.exception, r.exception_replays, True):
            out.print(line)
    z3_time = sum(r.seconds for r in run.results)
    proved = sum(1 for r in run.results if r.verdict == "proved")
    verdict = "[green]ok[/]" if run.ok else "[red]FAIL[/]"
    out.print(f"\n{verdict} {len(run.results)} obligations: {proved} proved, {len(run.failures)} with a CTI, "
              f"{len(run.exceptions)} with a documented exception, {len(run.diverged)} with a diverged replay; "
              f"{run.seconds:.2f} s ({z3_time:.2f} s in z3)")


def to_json(run: ProofRun) -> dict[str, Any]:
    d = run.to_dict()
    d["transitions"] = {t.name: t.java for t in TRANSITIONS.values()}
    d["obligations"] = {o.id: {"kind": o.kind, "statement": o.statement, "exception": o.exception_text}
                        for o in OBLIGATIONS.values()}
    return d
