"""Values as a person reads them, shared by every report and by the terminal tables: no Python repr reaches a page
(a set is ``{b1, b2}``, a list is joined with commas, a boolean is yes or no, a missing value is an em dash), and
times, offsets and sizes carry their unit."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

DASH = "—"  # a missing value, in every report and table


def cell(v: Any) -> str:
    """One table cell: ``None`` and ``""`` are a dash, booleans yes / no, sets ``{a, b}``, lists and tuples joined
    with commas, mappings ``key: value; ...``; anything else its ``str``."""
    if v is None or v == "":
        return DASH
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, (set, frozenset)):
        return members(sorted(map(cell, v)))
    if isinstance(v, (list, tuple)):
        return ", ".join(cell(x) for x in v) if v else DASH
    if isinstance(v, Mapping):
        return "; ".join(f"{k}: {cell(x)}" for k, x in v.items()) if v else DASH
    return str(v)


def members(names: Iterable[str]) -> str:
    """A set of names as ``{b1, b2}`` (``{}`` for the empty set), in the order given."""
    return "{" + ", ".join(names) + "}"


def seconds(ms: float | None, digits: int = 2) -> str:
    """Milliseconds as seconds with a unit (``1.25 s``); a dash for ``None``."""
    return DASH if ms is None else f"{ms / 1000:.{digits}f} s"


def offset(v: int | None) -> str:
    """A byte offset with thousands separators (``24,355``); a dash for ``None``."""
    return DASH if v is None else f"{v:,}"


def partition_label(links: list[list[str]]) -> str:
    """A partition in words: ``b2 cut from b1/b3/ctl`` (``(one way)`` when only one direction is cut), or the cut
    links ``b1>b3, b3>b1`` when no node is on every link."""
    common = set(links[0]).intersection(*map(set, links[1:])) if links else set()
    if len(common) == 1:
        (x,) = common
        others = sorted({n for link in links for n in link} - {x})
        one_way = len(links) == len(others) and (all(a == x for a, _ in links) or all(b == x for _, b in links))
        return f"{x} cut from {'/'.join(others)}" + (" (one way)" if one_way else "")
    return "cut " + ", ".join(sorted({f"{a}>{b}" for a, b in links}))
