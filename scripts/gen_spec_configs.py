"""Write the TLC configs of spec/ from one table (run after changing it; the files are committed).

Every config checks RocketMQControllerMode.tla. The small scope is RocketMQ as it is with every finding's fix on;
``*_bug`` configs switch one guard off (or set an expected-loss setting) and must fail with the one invariant
they check; ``*_finding`` configs switch one finding's fix off and must fail the same way.
"""

from __future__ import annotations

import json
from pathlib import Path

SPEC = Path(__file__).resolve().parent.parent / "spec"

BASE = {
    "Brokers": "{b1, b2, b3}", "NONE": "NONE", "MaxMsgs": 2, "MaxCrashes": 1, "MaxPartitions": 0, "MaxAdminElect": 0,
    "MaxLagShrinks": 0, "Unclean": False, "AllAck": True, "PowerLoss": False, "GuardExpandConfirm": True,
    "GuardExpandEpochStart": True, "GuardAlterMasterEpoch": True, "GuardAlterSSSEpoch": True,
    "GuardConsistentPointMin": True, "AckSetUnion": True, "FixUnionKeepsAllProposals": True,
    "FixConfirmWaitsFirstAck": True, "FixFenceRequestsAcrossRestart": True, "FixConfirmShortcutUsesUnion": True,
    "FixKeepOwnEpochOnRestart": True, "FixNoCommonEpochRestarts": False,
    # F-EPOCH-EQ-SPLICE's fix stays off in every config: it changes which epoch files are reachable (so the measured
    # counts), and its cost, a deposed master that shares no epoch with the new one, is M-NO-COMMON-EPOCH's
    "FixEpochEqReplacesEmpty": False,
}
INVARIANTS = ["CTL_MASTER_IN_SSS", "CTL_SSS_REGISTERED", "CTL_ONE_MASTER_PER_EPOCH", "EPOCH_FILE_WF",
              "HA_TRUNCATE_PREFIX", "HA_LOG_MATCHING", "SYNC_CONFIRM_BOUND", "SYNC_SSS_HOLDS_ACKED", "SYNC_NO_ACK_LOSS"]
PROPERTIES = ["CTL_EPOCH_MONO", "CTL_ALTER_FENCED", "CTL_CLEAN_ELECTION", "BRK_EPOCH_MONO", "SYNC_ACK_ALL",
              "SYNC_EXPAND_SAFE"]
LIVENESS = ["L_MASTER_ELECTED", "L_REJOIN", "L_ALL_IN_SSS"]
ONE_MSG = {"MaxMsgs": 1}
# liveness: no SYMMETRY (TLC's liveness checking is unsound with it), 2 brokers, the perturbations bounded
LIVE = {"Brokers": "{b1, b2}", "MaxMsgs": 1, "MaxCrashes": 1, "MaxPartitions": 0}
LIVE_FIXES = {"FixKeepOwnEpochOnRestart": True, "FixNoCommonEpochRestarts": True}

# name: (description, constant overrides, checked names (None: all), expected violation, mode, in CI)
CONFIGS: dict[str, tuple[str, dict, list[str] | None, str | None, str, bool]] = {
    "small": ("The small scope, exhaustive: 3 brokers, 2 messages, 1 crash (so >= 2 master epochs), RocketMQ's "
              "guards on, every finding's fix on.", {}, None, None, "bfs", True),
    "tiny": ("As small with 1 message: the scope the model-vs-TLC count test runs in CI, with and without "
             "symmetry.", ONE_MSG, None, None, "bfs", True),
    "medium": ("As small plus one broker-controller partition and one lagging-slave shrink (not in CI; TLC had not "
               "finished after 18 minutes on 2 cores, so no measured counts yet).",
               {"MaxPartitions": 1, "MaxLagShrinks": 1}, None, None, "bfs", False),
    "deep_sim": ("Random simulation (TLC -simulate) of a deeper scope: 3 messages, 2 crashes, 2 partitions, 1 admin "
                 "election, 2 lagging-slave shrinks.",
                 {"MaxMsgs": 3, "MaxCrashes": 2, "MaxPartitions": 2, "MaxAdminElect": 1, "MaxLagShrinks": 2},
                 None, None, "simulate", True),
    "unclean_bug": ("enableElectUncleanMaster=true: a replica outside the SSS is elected and an acknowledged "
                    "message is lost (expected loss, UNCLEAN-MAY-LOSE).", {**ONE_MSG, "Unclean": True},
                    ["SYNC_NO_ACK_LOSS"], "SYNC_NO_ACK_LOSS", "bfs", True),
    "allack_off_bug": ("allAckInSyncStateSet=false (RocketMQ's default): the master acks after its own write; a "
                       "failover loses the message.", {**ONE_MSG, "AllAck": False}, ["SYNC_NO_ACK_LOSS"],
                       "SYNC_NO_ACK_LOSS", "bfs", True),
    "power_loss_bug": ("A crash may be a power loss: slaves ack page-cache bytes, so an SSS member can lose an "
                       "acknowledged message and then be elected.",
                       {**ONE_MSG, "PowerLoss": True, "MaxPartitions": 1}, ["SYNC_NO_ACK_LOSS"], "SYNC_NO_ACK_LOSS",
                       "bfs", True),
    "expand_confirm_bug": ("maybeExpandInSyncStateSet without 'ack >= confirmOffset': a lagging slave joins the "
                           "SSS.", {**ONE_MSG, "GuardExpandConfirm": False}, ["SYNC_SSS_HOLDS_ACKED"],
                           "SYNC_SSS_HOLDS_ACKED", "bfs", True),
    "alter_sss_epoch_bug": ("alterSyncStateSet without check 5 (syncStateSetEpoch): an older proposal of the "
                            "master overwrites a newer one.", {**ONE_MSG, "GuardAlterSSSEpoch": False},
                            ["CTL_ALTER_FENCED"], "CTL_ALTER_FENCED", "bfs", True),
    "consistent_point_bug": ("findConsistentPoint takes the larger end: a slave keeps a tail its master does not "
                             "have.", {"GuardConsistentPointMin": False},
                             ["HA_TRUNCATE_PREFIX"], "HA_TRUNCATE_PREFIX", "bfs", True),
    "ack_local_sss_bug": ("GroupTransferService counts acks over the local SSS only while a proposal is in flight "
                          "(apache/rocketmq#5663).", {**ONE_MSG, "AckSetUnion": False}, ["SYNC_ACK_ALL"],
                          "SYNC_ACK_ALL", "bfs", True),
    "gap_union_finding": ("RocketMQ as it is: the remote set keeps only the latest proposal (F-GAP-UNION).",
                          {**ONE_MSG, "FixUnionKeepsAllProposals": False}, ["SYNC_SSS_HOLDS_ACKED"],
                          "SYNC_SSS_HOLDS_ACKED", "bfs", True),
    "confirm_first_ack_finding": ("RocketMQ as it is: computeConfirmOffset skips members whose ack is <= 0 "
                                  "(F-CONFIRM-SKIPS-NEW-CONNECTION).", {**ONE_MSG, "FixConfirmWaitsFirstAck": False},
                                  ["SYNC_CONFIRM_BOUND"], "SYNC_CONFIRM_BOUND", "bfs", True),
    "confirm_local_shortcut_finding": ("RocketMQ as it is: the confirmOffset shortcut and the recomputation on acks "
                                       "look at the local SSS only (F-CONFIRM-LOCAL-SHORTCUT); the model reaches an "
                                       "acknowledged message missing from an SSS member.",
                                       {**ONE_MSG, "FixConfirmShortcutUsesUnion": False}, ["SYNC_SSS_HOLDS_ACKED"],
                                       "SYNC_SSS_HOLDS_ACKED", "bfs", True),
    "proposal_outlives_restart_finding": ("RocketMQ as it is: an alterSyncStateSet request sent before a master's "
                                          "crash is applied after its restart at the same epochs "
                                          "(M-PROPOSAL-OUTLIVES-RESTART, found by the model).",
                                          {**ONE_MSG, "FixFenceRequestsAcrossRestart": False},
                                          ["SYNC_CONFIRM_BOUND"], "SYNC_CONFIRM_BOUND", "bfs", True),
    "liveness": ("FairSpec (weak fairness on every action but the perturbations and Produce), 2 brokers, 1 "
                 "message, 1 crash: a master is eventually elected, a caught-up slave eventually "
                 "rejoins, every broker is eventually in the SSS for good. The fixes of the two liveness findings on.",
                 {**LIVE, **LIVE_FIXES}, LIVENESS, None, "liveness", True),
    "liveness_partition": ("As liveness plus one broker-controller partition (not in CI: TLC needs minutes; the "
                           "model's fair-lasso search runs in CI).", {**LIVE, **LIVE_FIXES, "MaxPartitions": 1},
                           LIVENESS, None, "liveness", False),
    "epoch_rebase_finding": ("RocketMQ as it is: a master restarted before the controller noticed is master again "
                             "in the same epoch; changeToMaster drops that epoch's entry and appends (epoch, max "
                             "offset), so the offsets below have no entry and a slave that needs them never catches "
                             "up (the liveness side of F-EPOCH-REBASE-ON-RESTART).",
                             {**LIVE, **LIVE_FIXES, "FixKeepOwnEpochOnRestart": False}, ["L_ALL_IN_SSS"],
                             "L_ALL_IN_SSS", "liveness", True),
    "epoch_rebase_safety_finding": ("RocketMQ as it is (F-EPOCH-REBASE-ON-RESTART): a master of its second epoch "
                                    "restarts and rewrites that epoch's start; an SSS member's handshake then finds "
                                    "the consistent point at the older epoch's end and truncates messages it holds "
                                    "and acked, below the master's confirmOffset.",
                                    {"MaxPartitions": 1, "FixKeepOwnEpochOnRestart": False}, ["SYNC_CONFIRM_BOUND"],
                                    "SYNC_CONFIRM_BOUND", "bfs", True),
    "no_common_epoch_finding": ("RocketMQ as it is: a slave whose epoch file shares no epoch with its master's (the "
                                "first master wrote nothing before it failed) fails every handshake "
                                "(doTruncate: no consistent point) and never catches up (M-NO-COMMON-EPOCH, found "
                                "by the model).", {**LIVE, **LIVE_FIXES, "FixNoCommonEpochRestarts": False},
                                ["L_ALL_IN_SSS"], "L_ALL_IN_SSS", "liveness", True),
}


def _value(v: object) -> str:
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    return str(v)


def render(name: str) -> str:
    desc, over, checked, _, mode, _ = CONFIGS[name]
    consts = {**BASE, **over}
    lines = [f"\\* {name}: generated by scripts/gen_spec_configs.py; do not edit.", ""]
    words = desc.split()
    line = "\\*"
    for w in words:
        if len(line) + len(w) > 110:
            lines.append(line)
            line = "\\*"
        line += " " + w
    lines += [line, "CONSTANTS"]
    lines += [f"    {k} = {_value(v)}" for k, v in consts.items()]
    lines += ["", f"SPECIFICATION {'FairSpec' if mode == 'liveness' else 'Spec'}"]
    if mode == "bfs":
        lines += ["SYMMETRY Sym", "VIEW View"]
    if mode == "liveness":
        assert checked is not None
        return "\n".join([*lines, "", "PROPERTIES", *(f"    {p}" for p in checked)]) + "\n"
    invs = INVARIANTS if checked is None else [c for c in checked if c in INVARIANTS]
    props = PROPERTIES if checked is None else [c for c in checked if c in PROPERTIES]
    if checked is None:
        invs = ["TypeOK", *invs]
    if invs:
        lines += ["", "INVARIANTS", *(f"    {i}" for i in invs)]
    if props:
        lines += ["", "PROPERTIES", *(f"    Prop_{p}" for p in props)]
    return "\n".join(lines) + "\n"


def main() -> None:
    for name in CONFIGS:
        (SPEC / f"{name}.cfg").write_text(render(name))
    manifest_path = SPEC / "manifest.json"
    old = json.loads(manifest_path.read_text()) if manifest_path.exists() else {"configs": {}}
    configs = {}
    for name, (desc, _, _, expect, mode, ci) in CONFIGS.items():
        prev = old.get("configs", {}).get(name, {})
        configs[name] = {"spec": "RocketMQControllerMode.tla", "config": f"{name}.cfg", "description": desc,
                         "mode": mode, "ci": ci, "expect": expect or "pass", "measured": prev.get("measured")}
    manifest = {"format": "rmqha-spec-manifest", "version": 1, "configs": configs}
    manifest_path.write_text(json.dumps(manifest, indent=2) + "\n")


if __name__ == "__main__":
    main()
