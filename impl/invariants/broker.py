"""Broker invariants (BRK-*): a broker process's epochs and role (``ReplicasManager``) and who may append producer
messages (the fencing of ``HookUtils.checkBeforePutMessage``)."""

from __future__ import annotations

from ..broker.broker import BrokerNode
from ..codes import BrokerRole
from ..observations import BrkAppend, BrkRole, BrkSss
from .context import Context
from .registry import Violated, invariant, violated


@invariant("BRK-EPOCH-MONO", layer="broker", on=("brk.role", "brk.sss"),
           source="ReplicasManager.changeBrokerRole / changeToMaster / changeToSlave / changeSyncStateSet")
def epoch_mono(ctx: Context, obs: BrkRole | BrkSss) -> Violated | None:
    """Within a broker process, its masterEpoch and syncStateSetEpoch never decrease, and its role changes only for a
    strictly greater masterEpoch."""
    name = obs.get("n", "")
    key = (name, ctx.world.inc[name])
    me, se = ctx.broker_epochs.get(key, (0, 0))
    if obs["k"] == "brk.role":
        ctx.broker_epochs[key] = (obs["masterEpoch"], se)
        held = max(obs["previous"], me)  # the broker's own word, and what it held before
        if obs["masterEpoch"] <= held:
            return violated(f"{name} changed role to {obs['role']} at mE {obs['masterEpoch']} from mE {held}", obs=obs)
        return None
    ctx.broker_epochs[key] = (me, obs["syncStateSetEpoch"])
    if obs["syncStateSetEpoch"] <= se:
        return violated(f"{name} adopted SSS epoch {obs['syncStateSetEpoch']} after {se}", obs=obs)
    return None


@invariant("BRK-SLAVE-NO-WRITE", layer="broker", on=("brk.append",),
           source="HookUtils.checkBeforePutMessage; ReplicasManager.setFenced",
           exceptions="a deposed master that has not heard of the new epoch still writes (no lease)")
def slave_no_write(ctx: Context, obs: BrkAppend) -> Violated | None:
    """Only an unfenced master appends producer messages."""
    if obs["role"] == BrokerRole.SLAVE.value or obs["fenced"]:
        return violated(f"{obs.get('n')} appended {obs['key']} as {obs['role']} (fenced={obs['fenced']})", obs=obs)
    return None


@invariant("BRK-FENCED-UNTIL-RUNNING", layer="broker", on=("brk.append",),
           source="ReplicasManager.startBasicService (INITIAL -> FIRST_TIME_SYNC_CONTROLLER_METADATA_DONE -> "
                  "REGISTER_TO_CONTROLLER_DONE -> RUNNING, then setFenced(false)); BrokerController.start")
def fenced_until_running(ctx: Context, obs: BrkAppend) -> Violated | None:
    """A broker appends producer messages only once its start-up has reached RUNNING: it has synced the controller's
    metadata, registered (its controller id applied) and taken its role from the controller."""
    if obs["role"] == BrokerRole.SLAVE.value or obs["fenced"]:
        return None  # BRK-SLAVE-NO-WRITE's case
    node = ctx.world.broker(obs.get("n", ""))
    if isinstance(node, BrokerNode) and node.replicas.state.value != "RUNNING":
        return violated(f"{obs.get('n')} appended {obs['key']} while its start-up was at "
                        f"{node.replicas.state.value}", obs=obs)
    return None
