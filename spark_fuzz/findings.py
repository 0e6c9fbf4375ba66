"""Findings: explain a violation, bucket it, shrink a representative, sign, replay and validate the result.

* **Explanation** (``explain``): ``impl.findings.classify`` (re-run with a documented finding's fix on; the finding
  explains the violation if it goes away). Failing that, an expected-loss configuration of the run (``--bug
  unclean-election``, ``--bug allack-off``) explains a violation of the invariant it names if re-running with its
  setting reverted removes it: the explanation is then ``expected:<name>``. Failing that, the smallest set of
  documented findings that list the invariant and whose fixes together remove it (``impl.findings.fix_set``: ddmin
  over the fix switches), ``F-A+F-B``. Otherwise the violation is unexplained; ``fix_hints`` then names the
  findings (one, or a set ``F-A+F-B``) whose fixes remove it although not every one lists its invariant.
* **Buckets**: violations are grouped by invariant id and explanation before shrinking; each bucket has up to
  ``shrinks_per_bucket`` representatives shrunk, picked in campaign order among violations whose message *shape*
  (digits and broker names masked) differs from the representatives already taken.
* **Shrinking** (``shrink_violation``): the run's fault actions as an explicit schedule (a generated run's actions are
  read off the run itself), bounded at 0.5 s of simulated time past the violation (a progress invariant's, at the
  run's heal point: the violation's time less its settle bound, where the settle tail starts); first only the actions
  of the last 3, 10, 30 or 90 s before the violation (if that still fails), then without each fault kind in turn, then
  ddmin over the actions (``impl/sim/shrink.py``), then ddmin over the links of every remaining partition, then the
  workload: the consumer's pulls off if the run still fails without them. ``shrink_budget`` bounds the runs spent.
  Every candidate is judged by re-running the deterministic simulator: it must fail the same invariant, no later than
  the original run did.
* **Signature**: the invariant and, for each remaining fault action of the shrunk trace, its verb (with the mode or
  the point of a fault at the guards, and ``held`` for a partition that holds) and the roles (master, slave, down, no
  role, controller) of the nodes it touches at that moment. A finding's unique key is the
  invariant plus the signature's hash.
* **Checks**: the shrunk header is run twice; the second trace must equal the first byte for byte (what
  ``rmqha replay`` checks). A run without a bug switch (the model has fixes and settings, not switches) is also
  validated step by step against the model (``rmqha.models.conform.validate``).
"""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

from rmqha.impl import bugs as B
from rmqha.impl.findings import FINDINGS, classify, explanation, fix_set, gone, in_play
from rmqha.impl.invariants import BY_ID
from rmqha.impl.invariants.settle import total
from rmqha.impl.sim.actions import Action, as_actions
from rmqha.impl.sim.config import Config, config_from_dict
from rmqha.impl.sim.runner import header_for, release_of
from rmqha.impl.sim.settle import timeouts
from rmqha.impl.sim.shrink import ddmin
from rmqha.impl.trace import ViolationRecord, parse
from rmqha.models.campaign import fails, run_header
from rmqha.models.conform import outside_model, validate

from .runs import probed_run

LINKS_BUDGET = 24  # runs the partition-links pass may spend


def violation_of(header: dict[str, Any]) -> ViolationRecord | None:
    """Re-run a header without a trace; its violation as a dict (None if clean). A header validated against the model
    (``"conform": true``) is validated again: a MODEL-CONFORM violation is explained like any other."""
    r = run_header(header, record=False)
    return r.violation.to_dict() if r.violation else None


HINT_RERUNS = 24  # re-runs the set search of ``fix_hints`` may spend (over every finding, not only candidates)


def explain(header: dict[str, Any], violation: Mapping[str, Any]) -> str | None:
    """The documented finding, ``expected:<config>``, or set of findings (``F-A+F-B``) that explains ``violation``,
    else None. The single findings and the expected-loss configuration come first, as before sets existed."""
    header = dict(header, maxSteps=int(violation["step"]))  # "gone" means: not failing at or before that step
    fid = classify(header, violation, violation_of)
    if fid is not None:
        return fid
    expected = _expected(header, violation)
    if expected is not None:
        return expected
    found = fix_set(header, violation, violation_of)
    return explanation(found.ids) if found.ids else None


def _expected(header: dict[str, Any], violation: Mapping[str, Any]) -> str | None:
    """``expected:<name>`` when reverting an expected-loss configuration of the run removes ``violation``."""
    for name in header.get("bugs", []):
        bug = B.BUGS.get(name)
        if bug is None or bug.kind != "config" or bug.invariant != violation["invariant"]:
            continue
        revert: dict[str, dict[str, Any]] = {}
        for section, key, value in bug.settings:
            revert.setdefault(section, {})[key] = (not value) if isinstance(value, bool) else value
        cfg = config_from_dict(revert, config_from_dict(header["config"]))
        again = violation_of(dict(header, config=cfg.to_dict(), bugs=[b for b in header["bugs"] if b != name]))
        if gone(again, violation):
            return f"expected:{name}"
    return None


def fix_hints(header: dict[str, Any], violation: Mapping[str, Any]) -> list[str]:
    """For an unexplained violation: the documented findings whose fix removes it although they do not list its
    invariant; if none does alone, the smallest set of findings (``F-A+F-B``, any of them, proven 1-minimal within
    ``HINT_RERUNS``) whose fixes together remove it. A hint only (the violation stays unexplained): with fourteen
    fixes to try, one may just perturb the run."""
    header = dict(header, maxSteps=int(violation["step"]))
    bugs = list(header.get("bugs", []))
    out = []
    for f in FINDINGS.values():
        if not in_play(f, bugs) or violation["invariant"] in f.invariants:
            continue
        if gone(violation_of(dict(header, bugs=sorted([*bugs, f.fix]))), violation):
            out.append(f.id)
    if out:
        return out
    found = fix_set(header, violation, violation_of, pool=FINDINGS.values(), budget=HINT_RERUNS)
    return [explanation(found.ids)] if found.ids and found.minimal else []


def bucket(invariant: str, explained_by: str | None) -> str:
    return f"{invariant}|{explained_by or 'unexplained'}"


def shape(message: str) -> str:
    """A violation message with its numbers and broker names masked (picks distinct representatives)."""
    return re.sub(r"\d+", "#", re.sub(r"\bb\d+\b", "b", message))


# ------------------------------------------------------------------------------------------------ shrink


def _strip(actions: Iterable[Mapping[str, Any]]) -> list[Action]:
    return as_actions({k: v for k, v in a.items() if k != "release"} for a in actions)


def _links_pass(schedule: list[Action], check: Any, budget: int) -> tuple[list[Action], int]:
    """ddmin over the links of each partition action (a partition of fewer links is a smaller fault)."""
    runs = 0
    current = list(schedule)
    for i, a in enumerate(schedule):
        if a["do"] != "partition" or len(a["links"]) < 2 or runs >= budget:
            continue
        base = list(current)

        def check_links(links: list[list[str]], base: list[Action] = base, i: int = i) -> tuple[int, int] | None:
            return check([*base[:i], _with_links(base[i], links), *base[i + 1:]]) if links else None

        links, n = ddmin(list(a["links"]), check_links, budget - runs)
        runs += n
        current = [*base[:i], _with_links(base[i], links), *base[i + 1:]]
    return current, runs


def _with_links(a: Action, links: list[list[str]]) -> Action:
    """A copy of partition action ``a`` that cuts only ``links``."""
    return as_actions([dict(a, links=links)])[0]


def _no_later(check: Any, step: int) -> Any:
    """A candidate counts only if it fails the invariant no later than the original did (a shorter trace)."""

    def ok(schedule: list[Action]) -> tuple[int, int] | None:
        r: tuple[int, int] | None = check(schedule)
        return r if r is not None and r[0] <= step else None

    return ok


class _Budget:
    """A shrink predicate that counts its runs and, once ``budget`` is spent, answers "does not fail"."""

    def __init__(self, check: Any, budget: int) -> None:
        self.check, self.left, self.runs = check, budget, 0

    def __call__(self, schedule: list[Action]) -> tuple[int, int] | None:
        if self.left <= 0:
            return None
        self.left -= 1
        self.runs += 1
        failed: tuple[int, int] | None = self.check(schedule)
        return failed


def _window_pass(schedule: list[Action], check: Any, t: int) -> tuple[list[Action], int]:
    """Keep only the actions of the last 3, 10, 30 or 90 s before the violation, if that still fails (cheap)."""
    runs = 0
    for width in (3000, 10_000, 30_000, 90_000):
        cand = [a for a in schedule if a["t"] >= t - width]
        if len(cand) == len(schedule):
            break
        runs += 1
        if check(cand) is not None:
            return cand, runs
    return schedule, runs


def _kinds_pass(schedule: list[Action], check: Any) -> tuple[list[Action], int]:
    """Drop every action of one fault kind at a time (all lossy windows, all HA breaks, ...), if that still fails."""
    runs = 0
    for kind in sorted({a.get("fault") or a["do"] for a in schedule}):
        cand = [a for a in schedule if (a.get("fault") or a["do"]) != kind]
        if len(cand) < len(schedule):
            runs += 1
            if check(cand) is not None:
                schedule = cand
    return schedule, runs


def fault_phase_end(cfg: Config, violation: Mapping[str, Any]) -> int:
    """Where a shrunk run's fault phase ends: just past the violation, or for a progress invariant (LIVE-*,
    checked at the heal point plus its settle bound) at the heal point, so that its settle tail starts there."""
    inv = BY_ID.get(str(violation["invariant"]))
    if inv is not None and inv.settle is not None:
        return int(violation["t"]) - total(inv.settle(timeouts(cfg)))
    return int(violation["t"]) + 500


def shrink_violation(header: dict[str, Any], violation: Mapping[str, Any], budget: int) -> dict[str, Any]:
    """Shrink a failing run; returns the minimal header, its trace, signature and the checks (see module doc)."""
    cfg = config_from_dict(header["config"])
    seed, steps = int(header["seed"]), int(header["maxSteps"])
    bugs = list(header.get("bugs", []))
    disabled = list(header.get("disabledInvariants", []))
    inv = violation["invariant"]
    conform = bool(header.get("conform"))
    if header["faults"]["mode"] == "generated":
        actions = _strip(probed_run(header, want_actions=True).actions)
    else:
        actions = _strip(header["faults"]["events"])
    max_time = fault_phase_end(cfg, violation)
    check = _Budget(_no_later(fails(cfg, seed, steps, bugs, inv, max_time, disabled, conform), int(violation["step"])),
                    budget)
    schedule = [a for a in actions if a["t"] <= max_time]
    final = header
    shrunk = check(schedule) is not None
    if shrunk:
        small, _ = _window_pass(schedule, check, min(int(violation["t"]), max_time))
        if len(small) > 8:
            small, _ = _kinds_pass(small, check)
        small, _ = ddmin(small, check, check.left)
        small, _ = _links_pass(small, check, min(LINKS_BUDGET, check.left))
        if cfg.workload.consume_interval > 0 and check.left > 0:
            quiet = config_from_dict({"workload": {"consume_interval": 0}}, cfg)
            check.runs += 1
            if _no_later(fails(quiet, seed, steps, bugs, inv, max_time, disabled, conform),
                         int(violation["step"]))(small):
                cfg = quiet
        final = header_for(cfg, seed, steps, bugs, small, max_time, header.get("profile"), disabled, conform=conform,
                           rocketmq=release_of(header))
    runs = check.runs
    first = run_header(final)
    again = run_header(final)
    v = first.violation
    text = first.text or ""
    out = {"header": final, "shrunk": shrunk, "runs": runs + 2, "originalActions": len(actions),
           "shrunkActions": len(final["faults"].get("events", actions)) if shrunk else len(actions),
           "originalSteps": int(violation["step"]), "shrunkSteps": first.steps,
           "invariant": v.invariant if v else None, "message": v.message if v else violation["message"],
           "step": v.step if v else None, "t": v.time if v else None, "hash": first.digest,
           "replays": again.text == text and again.digest == first.digest,
           "trace": gzip.compress(text.encode(), mtime=0)}
    out["signature"] = signature(text) if v is not None else ""
    out["conforms"], out["divergence"] = conformance(final)
    return out


def conformance(header: dict[str, Any]) -> tuple[str, str | None]:
    """``yes``/``no`` from the model's step-by-step validation, or ``n/a`` (a bug switch, or a 4.x legacy run)."""
    if any(B.BUGS[b].kind == "switch" for b in header.get("bugs", [])):
        return "n/a", "a bug switch is on (the model is the reference it deviates from)"
    if header["config"]["cluster"]["mode"] != "controller":
        return "n/a", "4.x legacy run"
    beyond = outside_model(config_from_dict(header["config"]), header)
    if beyond is not None:
        return "n/a", f"outside the model: {beyond}"
    rep = validate(header)
    if rep.conforms:
        return "yes", None
    d = rep.divergence
    assert d is not None
    return "no", f"step {d.step}: {d.action}: {d.guard}"


# --------------------------------------------------------------------------------------------- signature


def _roles_then(lines: list[dict[str, Any]]) -> list[tuple[dict[str, Any], dict[str, str]]]:
    """Each fault action of a trace with the role of every node just before it."""
    role: dict[str, str] = {"ctl": "controller"}
    out = []
    for line in lines:
        act = line.get("act")
        if act is not None:
            out.append((act, dict(role)))
            if act["do"] == "restart" and act["node"] != "ctl":
                role[act["node"]] = "none"
        for o in line.get("obs", ()):
            if o["k"] == "brk.role":
                role[o["n"]] = "master" if o["role"] == "MASTER" else "slave"
            elif o["k"] == "sim.crash" and o["node"] != "ctl":
                role[o["node"]] = "down"
    return out


def _act_shape(a: Mapping[str, Any], role: dict[str, str]) -> str:
    def r(n: str) -> str:
        return role.get(n, "none") if n.startswith("b") or n == "ctl" else n

    do = str(a["do"])
    if do in ("ha-fault", "crash-at"):  # the faults at the guards: the mode or the point is part of the fault
        do = f"{do}:{a.get('mode') or a.get('point')}"
    if do == "partition":
        held = "held" if "hold" in a else ""  # a held partition (the faults at the guards) is another fault
        return f"partition{held}[" + ",".join(sorted({f"{r(x)}>{r(y)}" for x, y in a["links"]})) + "]"
    if do == "heal":
        return "heal"
    if "node" in a:
        return f"{do}({r(a['node'])}{',power' if a.get('powerLoss') else ''})"
    if do == "admin-elect":
        return "admin-elect(" + ("any" if a.get("brokerId") is None else "designated") + ")"
    return do


def signature(text: str) -> str:
    """``INVARIANT|shape shape ...`` of a (shrunk) trace: its invariant and its faults in role terms."""
    _header, lines, footer = parse(text)
    v = footer.get("violation") or {}
    shapes = [_act_shape(a, role) for a, role in _roles_then(lines)]
    return f"{v.get('invariant')}|" + " ".join(shapes)


def finding_id(invariant: str, sig: str) -> str:
    return f"{invariant}-{hashlib.sha256(sig.encode()).hexdigest()[:8]}"


def trace_text(blob: bytes) -> str:
    return gzip.decompress(blob).decode()


def header_json(header: dict[str, Any]) -> str:
    return json.dumps(header, sort_keys=True, separators=(",", ":"))
