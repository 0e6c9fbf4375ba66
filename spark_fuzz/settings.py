"""Campaign settings: the ``[fuzz]`` table of a config file, validated into ``FuzzSettings``.

A ``rmqha fuzz --config FILE`` file is an ordinary kit config (``docs/configuration.md``) plus an optional
``[fuzz]`` table, which only the campaign reads (the simulator never sees it):

* ``families``: relative weight of each fault family (``schedule.FAMILIES``); 0 switches a family off.
* ``include``: probability that a fault kind outside the family's core is enabled for a seed (swarm testing).
* ``scale``: the per-kind weight multipliers a seed draws from (one per enabled kind).
* ``mean_intervals``: the mean fault spacings (ms) a seed draws from, unless its family fixes one.
* ``brokers``: the broker-set sizes a seed draws from, with weights (``{"3" = 2, "4" = 1}``); empty: the config's.
* ``steps``: simulator steps per run; ``runs_per_task``: runs one Spark task does in a row; ``tasks_per_batch``:
  the tasks of one batch. The plan of a campaign is a function of these and the seed, never of the cores: three
  batches are in flight, so a session of more than ``3 * tasks_per_batch`` cores leaves some idle (raise it).
* ``fresh``: guided mode, the share of each batch that runs fresh seeds instead of mutants.
* ``shrink_budget``: runs one shrink may spend (half for an explained bucket); ``shrinks_per_bucket``:
  representatives shrunk per unexplained (invariant, explanation) bucket (an explained bucket gets one).
* ``guards``: probability that a seed also draws the TCP-faithful faults at the guards (issue 21), its brokers'
  long steps interleaved; ``adversarial``: the same for the adversarial ones (beyond TCP; 0 by default).

Every value is checked; a bad one is a ``ValueError`` with one line.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

DEFAULT_FAMILIES: dict[str, float] = {"uniform": 1.0, "stale-epoch": 1.0, "old-master-restart": 1.0,
                                      "concurrent-sss": 1.5, "admin": 1.0, "dispatch-lag": 1.5}


@dataclass(frozen=True)
class FuzzSettings:
    """What a campaign varies per seed and how it batches, shrinks and mutates."""

    families: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_FAMILIES))
    include: float = 0.6
    scale: tuple[float, ...] = (0.5, 1.0, 2.0)
    mean_intervals: tuple[int, ...] = (4000, 8000, 15000)
    brokers: dict[int, float] = field(default_factory=lambda: {2: 1.0, 3: 2.0, 4: 1.0, 5: 1.0})
    steps: int = 20_000
    runs_per_task: int = 1
    tasks_per_batch: int = 8
    fresh: float = 0.5
    shrink_budget: int = 60
    shrinks_per_bucket: int = 2
    guards: float = 0.3
    adversarial: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            v = getattr(self, f.name)
            if isinstance(v, dict):
                v = {str(k): v[k] for k in sorted(v)}
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out


def _number(name: str, v: Any, lo: float, hi: float) -> float:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo <= v <= hi:
        raise ValueError(f"[fuzz] {name} must be a number in [{lo:g}, {hi:g}], got {v!r}")
    return float(v)


def _integer(name: str, v: Any, lo: int, hi: int) -> int:
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        raise ValueError(f"[fuzz] {name} must be an integer in [{lo}, {hi}], got {v!r}")
    return v


def settings_from_dict(data: dict[str, Any] | None) -> FuzzSettings:
    """Overlay a ``[fuzz]`` table on the defaults; unknown keys and bad values are one-line ``ValueError``s."""
    if not data:
        return FuzzSettings()
    if not isinstance(data, dict):
        raise ValueError("[fuzz] must be a table")
    base = FuzzSettings()
    known = {f.name for f in fields(base)}
    unknown = sorted(set(data) - known)
    if unknown:
        raise ValueError(f"unknown setting {unknown[0]!r} in [fuzz] (known: {', '.join(sorted(known))})")
    kw: dict[str, Any] = {}
    if "families" in data:
        fam = data["families"]
        if not isinstance(fam, dict):
            raise ValueError("[fuzz] families must be a table of weights")
        merged = dict(base.families)
        for k, v in fam.items():
            if k not in DEFAULT_FAMILIES:
                raise ValueError(f"[fuzz] unknown family {k!r} (known: {', '.join(DEFAULT_FAMILIES)})")
            merged[k] = _number(f"families.{k}", v, 0, 1e6)
        if not any(w > 0 for w in merged.values()):
            raise ValueError("[fuzz] families: at least one weight must be positive")
        kw["families"] = merged
    if "include" in data:
        kw["include"] = _number("include", data["include"], 0, 1)
    if "fresh" in data:
        kw["fresh"] = _number("fresh", data["fresh"], 0, 1)
    for name in ("guards", "adversarial"):
        if name in data:
            kw[name] = _number(name, data[name], 0, 1)
    if "scale" in data:
        sc = data["scale"]
        if not isinstance(sc, list) or not sc:
            raise ValueError("[fuzz] scale must be a non-empty list of numbers")
        kw["scale"] = tuple(_number("scale", x, 0.01, 1000) for x in sc)
    if "mean_intervals" in data:
        mi = data["mean_intervals"]
        if not isinstance(mi, list) or not mi:
            raise ValueError("[fuzz] mean_intervals must be a non-empty list of milliseconds")
        kw["mean_intervals"] = tuple(_integer("mean_intervals", x, 100, 10_000_000) for x in mi)
    if "brokers" in data:
        br = data["brokers"]
        if not isinstance(br, dict):
            raise ValueError("[fuzz] brokers must be a table of size = weight, e.g. {\"3\" = 1}")
        out: dict[int, float] = {}
        for k, v in br.items():
            try:
                n = int(k)
            except ValueError:
                raise ValueError(f"[fuzz] brokers: {k!r} is not a broker count") from None
            _integer("brokers (size)", n, 1, 9)
            out[n] = _number(f"brokers.{k}", v, 0, 1e6)
        if out and not any(w > 0 for w in out.values()):
            raise ValueError("[fuzz] brokers: at least one weight must be positive")
        kw["brokers"] = out
    for name, lo, hi in (("steps", 1, 10_000_000), ("runs_per_task", 1, 10_000), ("tasks_per_batch", 1, 10_000),
                         ("shrink_budget", 0, 100_000), ("shrinks_per_bucket", 1, 1000)):
        if name in data:
            kw[name] = _integer(name, data[name], lo, hi)
    return FuzzSettings(**{**{f.name: getattr(base, f.name) for f in fields(base)}, **kw})
