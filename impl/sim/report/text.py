"""A readable timeline of a trace: one line per protocol-level event, TigerBeetle-VOPR style.

``rmqha show TRACE`` prints it; the findings write-ups quote it. Only what a RocketMQ engineer reasons with is
shown: faults, controller events as applied, role and epoch changes, SyncStateSet proposals and adoptions,
truncations, epoch entries, the put results that matter, and the violation.
"""

from __future__ import annotations

from typing import Any

_ROLE = {"MASTER": "master", "SLAVE": "slave"}


def _fmt_act(a: dict[str, Any]) -> str:
    do = a["do"]
    if do == "crash":
        return f"FAULT crash {a['node']}" + (" (power loss)" if a.get("powerLoss") else "")
    if do == "restart":
        return f"FAULT restart {a['node']}"
    if do == "stop":
        return f"FAULT stop {a['node']} (clean shutdown: flushed, no abort file)"
    if do == "lose-file":
        return f"FAULT {a['node']} loses its {a['file']} file"
    if do == "partition":
        links = a["links"]
        held = f" (held: a dead process's bytes {a['hold']} ms after the heal)" if "hold" in a else ""
        return f"FAULT partition {a['id']}: " + ", ".join(f"{x}->{y}" for x, y in links[:6]) + (
            " ..." if len(links) > 6 else "") + held
    if do == "heal":
        return f"FAULT heal {a['id']}"
    if do in ("pause", "resume", "break-ha"):
        return f"FAULT {do} {a['node']}"
    if do == "net":
        return f"FAULT lossy network until {a['until'] / 1000:.1f}s (drop {a.get('drop', 0)}, dup {a.get('dup', 0)}, " \
               f"slow {a.get('slow', 0)})"
    if do == "slow-commit":
        return f"FAULT controller commits +{a['extra']} ms for {a['duration']} ms"
    if do == "slow-dispatch":
        return f"FAULT {a['node']} dispatch stalls {a['ms']} ms"
    if do == "admin-elect":
        return f"ADMIN electMaster designate={a.get('brokerId')}"
    if do == "expand-queues":
        return f"ADMIN updateTopic: +{a.get('by', 2)} queues on the master the nameserver routes"
    if do == "produce":
        return f"CLIENT produce {a.get('count', 1)}"
    if do == "ha-fault":
        return f"FAULT (adversarial) HA writes into {a['node']}: {a['mode']} p={a.get('p', 1.0)} until " \
               f"{a['until'] / 1000:.1f}s"
    if do == "ha-stale":
        return f"FAULT {a['node']}'s HA closes reach the peer {a['lag']} ms late until {a['until'] / 1000:.1f}s"
    if do == "rpc-replay":
        return f"FAULT (adversarial) {a['node']}'s controller requests replayed {a['lag']} ms later " \
               f"p={a.get('p', 1.0)} until {a['until'] / 1000:.1f}s"
    if do == "crash-at":
        step = f" (boundary {a.get('step', 1)})" if a["point"] == "role-change" else ""
        return f"FAULT crash {a.get('node', 'any broker')} at {a['point']}{step} within {a['within']} ms"
    return " ".join([str(do), *(f"{k}={v}" for k, v in sorted(a.items()) if k != "do")])  # an action not named above


def _fmt_obs(o: dict[str, Any]) -> str | None:
    k = o["k"]
    n = o.get("n", "")
    if k == "ctl.apply":
        ev, after = o["event"], o.get("after") or {}
        if ev["type"] == "ElectMaster":
            who = f"master {ev['newMasterBrokerId']}" if ev["newMasterElected"] else "no master"
            return (f"ctl  applies ElectMaster -> {who} (mE {after.get('masterEpoch')}, "
                    f"SSS {after.get('syncStateSet')}, requested by {o['ctx'].get('requester')})")
        if ev["type"] == "AlterSyncStateSet":
            ctx = o["ctx"]
            return f"ctl  applies AlterSyncStateSet {ev['newSyncStateSet']} (sE {after.get('syncStateSetEpoch')}; " \
                   f"request mE {ctx.get('masterEpoch')} sE {ctx.get('syncStateSetEpoch')}, validated at " \
                   f"{ctx.get('validatedAt', 0) / 1000:.3f}s)"
        if ev["type"] == "ApplyBrokerId":
            return f"ctl  registers id {ev['newBrokerId']} for {ev['brokerAddress'].split(':')[0]}"
        return f"ctl  applies {ev['type']}"
    if k == "ctl.append-timeout":
        return f"ctl  append of {o['op']} not committed within 5 s: reply SYSTEM_ERROR (the entry stays in the log)"
    if k == "ctl.leader":
        return "ctl  becomes leader"
    if k == "brk.role":
        again = " again (changeToMasterWhenLastRoleIsMaster)" if o.get("again") and o["role"] == "MASTER" else ""
        master = f" of {o['master']}" if o.get("master") is not None else ""
        return f"{n}   becomes {_ROLE.get(o['role'], o['role'])}{master}{again} at mE {o['masterEpoch']}"
    if k == "brk.sss":
        return f"{n}   adopts SSS {o['syncStateSet']} (sE {o['syncStateSetEpoch']})"
    if k == "brk.alter":
        code = o.get("code")
        res = "no reply" if code is None else ("ok" if code == 0 else f"code {code}")
        return f"{n}   alterSyncStateSet {o['proposal']} (mE {o['masterEpoch']}, sE {o['syncStateSetEpoch']}): {res}"
    if k == "brk.topic" and o.get("why") != "sync":  # a slave's syncs repeat every 10 s (the 5.3.3 QUIRK): left out
        if o["why"] == "sync-delete":
            return f"{n}   syncTopicConfig deletes the topic (its table and topics.json lack it until the put phase)"
        how = "grows the topic (updateTopicConfig)" if o["why"] == "admin" else "covers its consume queues (fix)"
        return f"{n}   {how}: {o['read']} read / {o['write']} write queues"
    if k == "ha.expand":
        return f"{n}   proposes adding {o['slave']} -> {o['proposal']} (ack {o['ack']}, confirmOffset {o['confirm']})"
    if k == "ha.shrink":
        return f"{n}   proposes shrinking to {o['proposal']}"
    if k == "ha.local-shrink":  # local-shrink-on-disconnect (5.4.0+, PR #9897)
        return f"{n}   drops {o['slave']} from its local SSS at the close, unconfirmed -> {o['local']}"
    if k == "ha.truncate":
        return f"{n}   handshake: truncates {o['before']} -> {o['point']} (master epochs {o['master']})"
    if k == "ha.epoch-append":
        ok = "" if o.get("ok") else " (REJECTED)"
        if o.get("replaced") is not None:  # fix-epoch-eq-replaces-empty-epoch (F-EPOCH-EQ-SPLICE)
            ok = f" (replaces the empty epoch {o['replaced']})"
        return f"{n}   epoch entry ({o['epoch']}, {o['start']}) via {o['path']}{ok}"
    if k == "store.truncate-invalid":
        return f"{n}   cuts its log {o['before']} -> {o['at']} (truncateInvalidMsg)"
    if k == "sim.crash":  # a crash-at action's crash, inside a step (the others are their act line)
        return f"{o['node']:<4} CRASHED at {o['at']} (crash-at)" if "at" in o else None
    if k == "brk.point":
        return f"{n}   stops at the role change's boundary {o['step']} (a crash-at action waits for it)"
    if k == "client.send-result" and o["status"] not in ("PUT_OK",):
        return None
    if k == "ns.reject":
        return f"ns   rejects {o['addr']} as id {o['brokerId']} (version {o['version']} < {o['holderVersion']})"
    return None


def _fmt_settle(line: dict[str, Any]) -> str:
    """A step of the settle tail (``[sim] progress``)."""
    if line["ev"] == "probe":
        return f"SETTLE probe send {line.get('key')}"
    if line["ev"] == "progress-check":
        return f"SETTLE checks {', '.join(line['ids'])} ({line['bound'] / 1000:g} s after the heal point)"
    if "wait" in line:
        return f"SETTLE last fault action done; its effect lasts until {line['wait'] / 1000:.3f}s"
    dead = f", dead: {', '.join(line['dead'])}" if line.get("dead") else ""
    return "SETTLE heal point" + (dead if line.get("healed") else ": not healed, unchecked")


def timeline(header: dict[str, Any], lines: list[dict[str, Any]], footer: dict[str, Any],
             around: int | None = None, window: int = 10**9) -> list[tuple[float, str]]:
    """(seconds, text) rows."""
    rows: list[tuple[float, str]] = []
    for line in lines:
        i = line["i"]
        if around is not None and abs(i - around) > window:
            continue
        t = line["t"] / 1000
        if line.get("ev") == "act":
            rows.append((t, _fmt_act(line["act"])))
        elif line.get("ev") in ("settle", "probe", "progress-check"):
            rows.append((t, _fmt_settle(line)))
        for o in line.get("obs", ()):
            text = _fmt_obs(o)
            if text is not None:
                rows.append((t, text))
    v = footer.get("violation")
    if v:
        rows.append((v["t"] / 1000, f"VIOLATION {v['invariant']}: {v['message']}"))
    return rows


def render(header: dict[str, Any], lines: list[dict[str, Any]], footer: dict[str, Any], around: int | None = None,
           window: int = 10**9) -> str:
    bugs = ",".join(header.get("bugs") or []) or "none"
    faults = header["faults"]["mode"]
    out = [f"seed {header['seed']}  profile {header.get('profile')}  switches {bugs}  faults {faults}  "
           f"steps {footer.get('steps')}  {footer.get('t', 0) / 1000:.1f} simulated s"]
    for t, text in timeline(header, lines, footer, around, window):
        out.append(f"{t:9.3f}s  {text}")
    return "\n".join(out)
