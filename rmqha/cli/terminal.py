"""What the commands print while they run and when they end, fitted to the terminal's width: the progress lines of
``rmqha fuzz`` and ``rmqha simulate --seeds`` (a rich bar on a terminal; on a log, a plain line now and then), their
summaries, and the tables of ``rmqha cluster status`` and ``rmqha real status``.

Nothing here is cut to uselessness at 80 columns: a progress line keeps its key figures (runs, violations, unique
findings, unexplained) and adds the others while they fit; a summary table whose columns do not fit stacks each
finding's figures in one cell, so that ids and invariant names stay whole; a status table leaves out its least
needed columns (and says which) rather than cutting names. Each renderable picks its layout when it is printed, for
the width it is printed at (``--watch`` included).
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from rich import box
from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.markup import escape
from rich.measure import Measurement
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    Task,
    TextColumn,
    TimeElapsedColumn,
)
from rich.table import Table
from rich.text import Text

from rmqha.cluster import control as C
from rmqha.cluster.report import ROLES, broker_names, node_cells, process_cell, truncation
from rmqha.cluster.spec import ClusterSpec
from rmqha.impl.sim.report import DASH, members, seconds
from rmqha.real.observe import Snapshot
from rmqha.real.spec import RealSpec
from rmqha.spark_fuzz.campaign import Progress as CampaignProgress

PLAIN_EVERY = 10.0  # seconds between progress lines when stderr is not a terminal
PLAIN_WIDTH = 80  # a log's lines are kept this narrow


# ---------------------------------------------------------------------------------------------- fields


@dataclass(frozen=True)
class Field:
    """One figure of a progress line, in full and short (the short form when the full ones do not fit)."""

    full: str
    short: str = ""


def fit_fields(key: Sequence[Field], extra: Sequence[Field], width: int) -> str:
    """The key fields (in full, or short when the full ones do not fit), then each extra one that still fits."""
    line = ", ".join(f.full for f in key)
    if len(line) > width:
        line = ", ".join(f.short or f.full for f in key)
    for f in extra:
        if len(line) + 2 + len(f.full) <= width:
            line += ", " + f.full
    return line


def wrap_fields(head: str, fields: Sequence[Field], width: int = PLAIN_WIDTH) -> list[str]:
    """``head`` then the fields (in full), wrapped at a field into lines of at most ``width`` (then indented)."""
    lines, line = [], head
    for i, f in enumerate(fields):
        piece = f.full + ("," if i < len(fields) - 1 else "")
        if len(line) + 1 + len(piece) > width and line.strip():
            lines.append(line)
            line = "   "
        line += " " + piece
    return [*lines, line]


def _count(n: int, one: str, many: str = "") -> str:
    return f"{n:,} {one if n == 1 else many or one + 's'}"


def fuzz_fields(p: CampaignProgress) -> tuple[list[Field], list[Field]]:
    """A campaign's progress: the key figures, then the others in the order they are dropped last to first."""
    key = [Field(_count(p.runs, "run"), f"{p.runs:,} runs"),
           Field(_count(p.violations, "violation"), f"{p.violations:,} viol."),
           Field(f"{p.unique:,} unique", f"{p.unique:,} uniq."),
           Field(f"{p.unexplained:,} unexplained", f"{p.unexplained:,} unexpl.")]
    states = " ".join(f"{k} {v:,}" for k, v in p.states.items())
    extra = [Field(f"{p.steps / max(p.elapsed, 1e-9):,.0f} steps/s"), Field(f"states {states} (+{p.new_states:,})"),
             Field(f"witnesses {max(p.witnesses.values(), default=0)}")]
    if p.shrinking:
        extra.insert(0, Field(f"shrinking {p.shrinking}"))
    return key, extra


# ---------------------------------------------------------------------------------------------- progress


class FitText:
    """A line of figures that fits the room it is given at each refresh (the progress bar's other columns take the
    rest): the key figures first, then the others while they fit; rich's ``TextColumn`` would cut it at the edge."""

    def __init__(self) -> None:
        self.key: list[Field] = []
        self.extra: list[Field] = []

    def __rich_measure__(self, console: Console, options: ConsoleOptions) -> Measurement:
        short = fit_fields(self.key, [], 0)
        return Measurement(len(short), len(fit_fields(self.key, self.extra, 10_000))).clamp(max_width=options.max_width)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Text(fit_fields(self.key, self.extra, options.max_width), no_wrap=True, overflow="ellipsis")


class FiguresColumn(ProgressColumn):
    """The task's ``figures`` field (a ``FitText``) as it is."""

    def render(self, task: Task) -> RenderableType:
        figures: RenderableType = task.fields["figures"]
        return figures


def bar_width(width: int) -> int:
    """The progress bar's width on a terminal ``width`` columns wide: the figures get the rest."""
    return 10 if width < 100 else 20 if width < 140 else 30


class FuzzProgress:
    """``rmqha fuzz``'s progress: a bar with the figures on a terminal; on a log, a plain line every 10 s (at most
    80 columns, wrapped at a figure)."""

    def __init__(self, total: float, quiet: bool, console: Console | None = None) -> None:
        self.console = console or Console(stderr=True)
        self.plain = not quiet and not self.console.is_terminal
        self.last = 0.0
        self.figures = FitText()
        self.progress = Progress(TextColumn("[bold]fuzz[/]"), BarColumn(bar_width=bar_width(self.console.width)),
                                 TimeElapsedColumn(), FiguresColumn(), console=self.console,
                                 disable=quiet or not self.console.is_terminal)
        self.task = self.progress.add_task("fuzz", total=total, figures=self.figures)

    def __enter__(self) -> FuzzProgress:
        self.progress.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self.progress.__exit__(None, None, None)

    def show(self, p: CampaignProgress, completed: float) -> None:
        self.figures.key, self.figures.extra = fuzz_fields(p)
        self.progress.update(self.task, completed=completed, figures=self.figures)
        if self.plain and p.elapsed - self.last >= PLAIN_EVERY:  # not a terminal (a log, a pipe)
            self.last = p.elapsed
            for line in fuzz_log_lines(p):
                print(line, file=sys.stderr, flush=True)


def fuzz_log_lines(p: CampaignProgress) -> list[str]:
    """The plain progress line of a campaign on a log: key figures first, wrapped at 80 columns."""
    key, extra = fuzz_fields(p)
    return wrap_fields(f"fuzz {p.elapsed:6.0f} s:", [*key, *extra])


def batch_progress(quiet: bool, console: Console | None = None) -> Progress:
    """``rmqha simulate --seeds``'s bar: seeds done of all, violations so far (``stat``), elapsed time."""
    console = console or Console(stderr=True)
    return Progress(TextColumn("[bold]simulate[/]"), BarColumn(bar_width=bar_width(console.width)),
                    MofNCompleteColumn(), TextColumn("{task.fields[stat]}"), TimeElapsedColumn(), console=console,
                    disable=quiet or not console.is_terminal)


# ---------------------------------------------------------------------------------------------- tables


@dataclass(frozen=True)
class Col:
    """A column of a fitted table: ``drop`` > 0 may be left out when the table is too wide (the highest first)."""

    name: str
    drop: int = 0
    justify: str = "left"
    wrap: bool = False  # may wrap (at least 12 wide); the others never wrap


def _table(cols: Sequence[Col], rows: Sequence[Sequence[str]]) -> Table:
    t = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False)
    for c in cols:
        t.add_column(c.name, justify="right" if c.justify == "right" else "left", no_wrap=not c.wrap,
                     min_width=12 if c.wrap else None)
    for r in rows:
        t.add_row(*r)
    return t


def _natural(console: Console, options: ConsoleOptions, r: RenderableType, minimum: bool) -> int:
    m = Measurement.get(console, options.update(max_width=10_000), r)
    return m.minimum if minimum else m.maximum


class FitTable:
    """A table that leaves out its most droppable columns while it is wider than the width it is printed at (and
    says which it left out); its title above it and its notes (lines too long for a cell) below it, wrapped."""

    def __init__(self, title: str, cols: Sequence[Col], rows: Iterable[Sequence[str]],
                 notes: Sequence[str] = ()) -> None:
        self.title, self.cols, self.rows, self.notes = title, list(cols), [list(r) for r in rows], list(notes)

    def table(self, console: Console, options: ConsoleOptions) -> tuple[Table, list[str]]:
        """The table that fits (without wrapping when leaving columns out can make it fit), and the columns left
        out."""
        keep = list(range(len(self.cols)))
        while True:
            t = _table([self.cols[i] for i in keep], [[r[i] for i in keep] for r in self.rows])
            droppable = [i for i in keep if self.cols[i].drop > 0]
            if _natural(console, options, t, minimum=False) <= options.max_width or not droppable:
                return t, [c.name for i, c in enumerate(self.cols) if i not in keep]
            keep.remove(max(droppable, key=lambda i: (self.cols[i].drop, i)))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        t, left_out = self.table(console, options)
        if self.title:
            yield Text(self.title)
        yield t
        if left_out:
            yield Text(f"left out at this width: {', '.join(left_out)}", style="dim")
        for n in self.notes:
            yield Text(n)


# ---------------------------------------------------------------------------------------------- listings


def wrap_words(text: str, width: int, first: str = "", rest: str = "") -> list[str]:
    """``text`` wrapped at spaces into lines of at most ``width`` (``first`` / ``rest``: the prefixes of the first
    and the following lines); a word is never split: one that does not fit after ``first`` starts the next line
    (``first`` then stands alone), one longer than any line gets a line of its own."""
    lines: list[str] = []
    line = first
    fresh = True  # nothing but the prefix on the line yet
    for word in text.split():
        if fresh and len(line) + len(word) <= width:
            line += word
        elif not fresh and len(line) + 1 + len(word) <= width:
            line += " " + word
        elif fresh and line == first and first.strip():
            lines.append(first.rstrip())
            line = rest + word
        elif fresh:
            line += word  # longer than any line: alone on its line
        else:
            lines.append(line)
            line = rest + word
        fresh = False
    lines.append(line if not fresh else first.rstrip())
    return lines


def longest_word(cells: Iterable[str]) -> int:
    return max((len(w) for c in cells for w in c.split()), default=1)


class Listing:
    """A listing of names (invariant ids, switch names, finding ids) and their texts that never splits a word: a
    table whose every column is at least as wide as its longest word when that fits the width it is printed at,
    else one block per row (its first cell on a line of its own, then each other cell under its column's name,
    wrapped at spaces). Ids and switch names are words: they are whole in either form, at any width, so that they
    can be pasted into ``--bug`` / ``--fix`` / ``rmqha invariants ID``."""

    GAP = 2

    def __init__(self, title: str, cols: Sequence[str], rows: Iterable[Sequence[str]], foot: str = "") -> None:
        self.title, self.cols, self.rows, self.foot = title, list(cols), [list(r) for r in rows], list(foot and [foot])

    def widths(self, width: int) -> list[int] | None:
        """Column widths that fit ``width`` with every column at least as wide as its longest word (extra room
        goes to the columns whose cells are longest, up to their longest cell); None when they do not fit."""
        cells = [[c, *(r[i] for r in self.rows)] for i, c in enumerate(self.cols)]
        low = [longest_word(col) for col in cells]
        high = [max(len(x) for x in col) for col in cells]
        room = width - self.GAP * (len(self.cols) - 1) - sum(low)
        if room < 0:
            return None
        w = list(low)
        while room > 0:
            want = [i for i in range(len(w)) if w[i] < high[i]]
            if not want:
                break
            for i in sorted(want, key=lambda i: w[i] - high[i])[:room]:
                w[i] += 1
                room -= 1
        return w

    def table_lines(self, widths: list[int]) -> list[str]:
        gap = " " * self.GAP

        def row(cells: Sequence[str]) -> list[str]:
            parts = [wrap_words(c, w) for c, w in zip(cells, widths)]
            return [gap.join(p[k].ljust(w) if k < len(p) else " " * w for p, w in zip(parts, widths)).rstrip()
                    for k in range(max(map(len, parts)))]

        return [*row(self.cols), gap.join("─" * w for w in widths), *(ln for r in self.rows for ln in row(r))]

    def lines(self, width: int) -> list[str]:
        """Everything, at ``width``: the title, the table (or the blocks), the foot."""
        out = wrap_words(" ".join(self.title.split()), width) if self.title else []
        w = self.widths(width)
        if w is not None:
            out += self.table_lines(w)
        else:
            for r in self.rows:
                out.append(r[0])
                for name, cell in zip(self.cols[1:], r[1:]):
                    if cell and cell != DASH:
                        out += wrap_words(cell, width, f"  {name}: ", "      ")
        for f in self.foot:
            out += wrap_words(f, width)
        return out

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines(options.max_width):
            yield Text(line, no_wrap=True, overflow="ignore")


# ---------------------------------------------------------------------------------------------- fuzz summary


def _unexplained(b: dict[str, Any]) -> str:
    return b["explainedBy"] or "[red]unexplained[/]"


class FuzzTable:
    """The buckets and their findings: one column per figure when that fits, otherwise each finding's figures
    stacked in its cell (the finding id and the invariant always whole)."""

    def __init__(self, s: dict[str, Any]) -> None:
        self.s = s

    def _groups(self) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
        for b in self.s["buckets"]:
            yield b, [f for f in self.s["findings"] if f["bucket"] == b["bucket"]]

    def wide(self) -> Table:
        t = _table([Col(c) for c in ("invariant", "explained by", "runs", "unique finding", "faults", "steps",
                                         "replays", "conforms")], [])
        t.columns[2].justify = "right"
        for b, fs in self._groups():
            if not fs:
                t.add_row(b["invariant"], _unexplained(b), str(b["count"]), DASH, "", "", "", "")
            for i, f in enumerate(fs):
                first = i == 0
                t.add_row(b["invariant"] if first else "", _unexplained(b) if first else "",
                          str(b["count"]) if first else "", f["id"], f"{f['shrunkActions']}/{f['originalActions']}",
                          f"{f['shrunkSteps']}/{f['originalSteps']}", "yes" if f["replays"] else "[red]NO[/]",
                          escape(str(f["conforms"])))
        return t

    def narrow(self) -> Table:
        t = _table([Col("invariant"), Col("runs", justify="right"), Col("unique finding", wrap=True)], [])
        for b, fs in self._groups():
            cells = [f"{f['id']}\nfaults {f['shrunkActions']}/{f['originalActions']}, steps "
                     f"{f['shrunkSteps']}/{f['originalSteps']}\nreplays {'yes' if f['replays'] else '[red]NO[/]'}, "
                     f"conforms {escape(str(f['conforms']))}" for f in fs] or ["not shrunk"]
            why = f"explained by {b['explainedBy']}" if b["explainedBy"] else "[red]unexplained[/]"
            t.add_row(b["invariant"], str(b["count"]), f"{why}\n{cells[0]}")
            for c in cells[1:]:
                t.add_row("", "", c)
        return t

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        wide = self.wide()
        yield wide if _natural(console, options, wide, minimum=False) <= options.max_width else self.narrow()


def fuzz_summary(s: dict[str, Any]) -> RenderableType:
    """The end of ``rmqha fuzz``: the key figures, the campaign, the buckets and findings, coverage, hints."""
    unique = len(s["findings"])
    parts: list[RenderableType] = [
        Text(f"{_count(s['runs'], 'run')}, {_count(s['violations'], 'violation')}, "
             f"{_count(unique, 'unique finding')}, {s['unexplained']:,} unexplained", style="bold"),
        Text(f"arms {', '.join(s['arms'])}; switches {', '.join(s['bugs']) or 'none'}; {s['steps']:,} steps in "
             f"{s['fuzzElapsed']:.1f} s of fuzzing ({s['stepsPerSecond']:,} steps/s); {s['elapsed']:.1f} s with "
             "shrinking")]
    if s["buckets"]:
        parts.append(FuzzTable(s))
    parts += [Text(f"{arm}: {c['states']:,} abstract states, {len(c['witnesses'])} witnesses over {c['runs']:,} runs")
              for arm, c in s["coverage"].items()]
    parts += [Text(f"hint: {b['invariant']} (unexplained) goes away with the fix of {', '.join(b['fixHints'])}, "
                   "whose write-up does not list it") for b in s["buckets"] if b["fixHints"]]
    parts += [Text.from_markup(f"[red]shrink of {escape(e['rep'])} ({escape(e['bucket'])}) failed:[/] "
                               f"{escape(e['error'])}") for e in s["shrinkErrors"]]
    parts.append(Text(f"traces in {s['out']}/traces, tables {', '.join(sorted(s['tables']))} (Parquet), report "
                      f"{s['report']}"))
    return Group(*parts)


# ---------------------------------------------------------------------------------------------- simulate summary


class BatchTable:
    """A batch's violations by invariant and explanation, with example seeds: in columns when they fit, the
    explanation and the examples stacked otherwise."""

    def __init__(self, by: dict[tuple[str, str], list[int]], clean: int) -> None:
        self.by, self.clean = by, clean

    @staticmethod
    def _examples(seeds: list[int]) -> str:
        return " ".join(map(str, seeds[:8])) + (" ..." if len(seeds) > 8 else "")

    def wide(self) -> Table:
        t = _table([Col("invariant"), Col("explained by"), Col("seeds", justify="right"), Col("examples")], [])
        for (inv, fid), ss in sorted(self.by.items()):
            t.add_row(inv, fid, str(len(ss)), self._examples(ss))
        t.add_row("(none)", "", str(self.clean), "")
        return t

    def narrow(self) -> Table:
        t = _table([Col("invariant"), Col("seeds", justify="right"), Col("explained by; example seeds", wrap=True)],
                   [])
        for (inv, fid), ss in sorted(self.by.items()):
            t.add_row(inv, str(len(ss)), f"{fid}\n{self._examples(ss)}")
        t.add_row("(none)", str(self.clean), "")
        return t

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        wide = self.wide()
        yield wide if _natural(console, options, wide, minimum=False) <= options.max_width else self.narrow()


def batch_summary(results: list[dict[str, Any]], profile: str, names: list[str], sim_s: float,
                  wall: float, conformance: str = "not checked") -> RenderableType:
    """The end of ``rmqha simulate --seeds``: the key figures, then the violations by invariant."""
    by: dict[tuple[str, str], list[int]] = {}
    for x in results:
        if x["violation"]:
            by.setdefault((x["violation"]["invariant"], x["finding"] or "unexplained"), []).append(x["seed"])
    bad = sum(len(v) for v in by.values())
    unexplained = sum(len(v) for (_, fid), v in by.items() if fid == "unexplained")
    head = Text(f"{_count(len(results), 'seed')}, {_count(bad, 'violation')}, {unexplained:,} unexplained",
                style="bold")
    detail = Text(f"profile {profile}; switches {', '.join(names) or 'none'}; {sim_s:,.0f} simulated s in {wall:.1f} s "
                  f"({sim_s / max(wall, 1e-9):,.0f}x); model conformance {conformance}")
    return Group(head, detail, BatchTable(by, len(results) - bad))


# ---------------------------------------------------------------------------------------------- status tables


def cluster_status_rows(spec: ClusterSpec) -> tuple[list[list[str]], str]:
    """``rmqha cluster status``'s rows (each node asked for its status) and the partitions in words."""
    pids = C.read_pids(spec)
    try:
        parts = C.proxy_call(spec, {"op": "status"})["partitions"]
    except C.ClusterError:
        parts = None
    cuts = "proxy down" if parts is None else ", ".join(f"{k} ({len(v)} links)" for k, v in parts.items()) or "none"
    states: dict[str, dict[str, Any] | None] = {}
    procs: dict[str, str] = {}
    for n in spec.nodes:
        pid = pids.get(n)
        state = "down" if pid is None or not C.alive(pid) else "paused" if C.paused(pid) else "up"
        states[n] = C.query(spec, n, 0.5) if state == "up" else None
        procs[n] = process_cell(pid, "no answer" if state == "up" and states[n] is None else state)
    return cluster_rows(spec, states, procs), cuts


def cluster_rows(spec: ClusterSpec, states: dict[str, dict[str, Any] | None],
                 procs: dict[str, str]) -> list[list[str]]:
    """The status rows of ``spec``'s nodes from their states (status replies) and process cells."""
    names = broker_names(states)
    rows = []
    for n in spec.nodes:
        c = node_cells(spec, n, states.get(n), names)
        role = {"master": "[bold green]master[/]", "slave": "[cyan]slave[/]"}.get(c.role, escape(c.role))
        rows.append([n, procs.get(n, DASH), role, c.ident, c.epoch, escape(c.sss), c.log_end, c.confirm])
    return rows


CLUSTER_COLS = [Col("node"), Col("process"), Col("role"), Col("id", drop=3), Col("mE"), Col("SSS", wrap=True),
                Col("log end", drop=1, justify="right"), Col("confirm", drop=2, justify="right")]


def cluster_status_table(rows: list[list[str]], cuts: str) -> FitTable:
    return FitTable(f"mE: masterEpoch; SSS: SyncStateSet (a master's own; the controller's with its master); "
                    f"partitions: {cuts}", CLUSTER_COLS, rows)


REAL_COLS = [Col("node"), Col("process"), Col("role"), Col("id", drop=2), Col("masterEpoch"),
             Col("SyncStateSet", wrap=True), Col("epochs", drop=3, wrap=True),
             Col("max offset", drop=1, justify="right")]


def real_process_cell(p: dict[str, Any]) -> str:
    """A real node's process as the supervisor sees it, in the cluster table's words: ``pid 1234`` (with its state
    when not running), or ``down (...)``."""
    state, code = p.get("state"), p.get("code")
    if state == "exited":
        return "down (" + (f"signal {-code}" if isinstance(code, int) and code < 0 else f"exit {code}") + ")"
    if state == "not started" or p.get("pid") is None:
        return f"down ({state or 'unknown'})"
    return f"pid {p['pid']}" + ("" if state == "running" else f", {state}")


def real_status_table(spec: RealSpec, snap: Snapshot, procs: dict[str, Any]) -> FitTable:
    """``rmqha real status``: each process, and what the admin API says of each controller and broker (what it
    could not say in a note under the table)."""
    lead = snap.leader
    rows, notes = [], []
    for n in spec.nodes:
        state = escape(real_process_cell(procs.get(n, {})))
        view = snap.controllers.get(n) if n in spec.controllers else snap.brokers.get(n)
        if view is not None and not view.ok:
            notes.append(f"{n}: {view.error}")
        c = snap.controllers.get(n)
        if n in spec.controllers:
            role = ("leader" if c.is_leader else "follower") if c and c.ok else DASH
            rows.append([n, state, role, DASH, DASH, DASH, DASH, DASH])
        elif n in spec.brokers:
            b = snap.brokers.get(n)
            is_master = lead is not None and lead.master == n
            role = ("master" if is_master else (b.role or DASH).lower().replace("master", "master?")) \
                if b and b.ok else DASH
            sss, me = DASH, DASH
            if lead is not None and is_master:
                sss = members(lead.ids.get(i, str(i)) for i in lead.sss)
                me = f"{lead.master_epoch} (sE {lead.sss_epoch})"
            rows.append([n, state, role, DASH if b is None or b.broker_id is None else str(b.broker_id), me,
                         escape(sss), " ".join(f"{e}@{s}" for e, s, _ in b.epochs) if b and b.epochs else DASH,
                         DASH if b is None or b.max_offset is None else f"{b.max_offset:,}"])
        else:
            rows.append([n, state, "nameserver", DASH, DASH, DASH, DASH, DASH])
    return FitTable(f"RocketMQ {spec.version} in {spec.dir}", REAL_COLS, rows, notes)


# ---------------------------------------------------------------------------------------------- test results


def cluster_failover_line(f: dict[str, Any]) -> str:
    """One failover of ``rmqha cluster test``, in words (a dash for what did not happen)."""
    back = ROLES.get(f.get("backRole") or "", f.get("backRole") or DASH)
    return (f"  {f['recipe']}: {f['oldMaster']} -> {f['newMaster'] or 'none'} after {seconds(f['electedAfterMs'])}; "
            f"old master back as {back}, truncated {truncation(f)}")


def real_failover_line(f: dict[str, Any]) -> str:
    """One failover of ``rmqha real test``, in words (a dash for what did not happen)."""
    return (f"  {f['recipe']}: {f['oldMaster']} -> {f['newMaster'] or 'none'} elected after "
            f"{seconds(f['electedAfterMs'])}, first write after {seconds(f['firstWriteAfterMs'])}")
