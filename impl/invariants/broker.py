"""Broker invariants (BRK-*): a broker process's epochs and role (``ReplicasManager``) and who may append producer
messages (the fencing of ``HookUtils.checkBeforePutMessage``)."""

from __future__ import annotations

from ..broker.broker import BrokerNode
from ..codes import BrokerRole
from ..observations import BrkAppend, BrkControllerUnreachable, BrkRole, BrkSss, CtlApply
from .context import Context, RolePending
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


def role_bound(rpc_timeout: int, net_delay: int) -> int:
    """BRK-ROLE-LATENCY's bound after the controller applies an election: the notification's one-way delay
    (``ControllerManager.notifyBrokerRoleChanged``, a oneway sent once the election's result is in), at worst the
    broker's ReplicasManager monitor held by another role change across one controller RPC (a healthy network answers
    it within a round trip; ``controllerRpcTimeoutMillis`` bounds it), and the role change's own steps (a round trip
    for its sub-steps and the dispatch wait, caught up with no fault). The fallback it must beat is
    ``schedulingSyncBrokerMetadata``, every ``syncBrokerMetadataPeriod`` (5 s)."""
    return rpc_timeout + 3 * net_delay


@invariant("BRK-ROLE-LATENCY", layer="broker", on=("ctl.apply", "brk.role"),
           source="ControllerRequestProcessor (electMaster) / ControllerManager.triggerElectMaster -> "
                  "ControllerManager.notifyBrokerRoleChanged (a oneway to every alive member, with "
                  "notifyBrokerRoleChanged on) -> AdminBrokerProcessor.notifyBrokerRoleChanged -> "
                  "ReplicasManager.changeBrokerRole; the requester of brokerElect acts on its answer",
           exceptions="notifyBrokerRoleChanged off; a member the controller did not hold alive, not RUNNING, or "
                      "already at the election's masterEpoch; a fault acted or was in force between the election "
                      "and the bound (a member may then learn its role from schedulingSyncBrokerMetadata only); an "
                      "election logged in an older term of the controller group and committed by a later leader "
                      "(its request failed with its leader's term: nobody notifies), or by an earlier process of the "
                      "controller that applies it (its request died with that process)")
def role_latency(ctx: Context, obs: CtlApply | BrkRole) -> Violated | None:
    """After the controller applies a successful election, every broker of the set that runs, is RUNNING and that
    the controller held alive (and the broker that asked for it) takes a role at the election's masterEpoch or a
    later one within a notification and one controller RPC (``role_bound``), unless a fault acts meanwhile."""
    world = ctx.world
    if obs["k"] == "ctl.apply":
        return _note_election(ctx, obs)
    name = obs.get("n", "")
    now = world.now
    for p in [p for p in ctx.role_pending if p.broker == name]:
        if world.inc[name] != p.inc:
            ctx.role_pending.remove(p)
            continue
        if obs["masterEpoch"] < p.master_epoch:
            continue
        ctx.role_pending.remove(p)
        if now > p.deadline and not ctx.fault_between(p.elected, p.deadline):
            return violated(f"{name} took its role ({obs['role']} at masterEpoch {obs['masterEpoch']}) "
                            f"{now - p.elected} ms after the controller applied the election of masterEpoch "
                            f"{p.master_epoch} at {p.elected} ms, past the bound of {p.deadline - p.elected} ms with "
                            "no fault meanwhile", obs=obs)
    return None


def _note_election(ctx: Context, obs: CtlApply) -> Violated | None:
    world = ctx.world
    ev, after = obs["event"], obs["after"]
    if ev["type"] != "ElectMaster" or not ev.get("newMasterElected") or after is None or not ctx.apply_first:
        return None
    ctl = world.controller_node()
    if ctl is None or not ctl.cfg.notify_broker_role_changed or world.disturbed():
        return None
    if "term" in obs and ctl.repl is not None and obs["term"] < ctl.repl.state.term:
        # logged by a leader of an older term and committed by a later one: the request that logged it failed at its
        # leader when that leader lost its term (DLedger's pending append futures, JRaft's closures), so no
        # ControllerManager notifies anyone; the members learn the role from schedulingSyncBrokerMetadata
        return None
    validated = obs["ctx"].get("validatedAt")
    if isinstance(validated, int) and world.started_at.get(obs.get("n", ""), 0) > validated:
        # logged by an earlier process of this controller and committed by this one after its restart: the request
        # that logged it died with that process (its connection closed, its future never completed), so no
        # ControllerManager notifies anyone; the members learn the role from schedulingSyncBrokerMetadata
        return None
    epoch = after.get("masterEpoch")
    if epoch is None:
        return None
    alive = obs["ctx"].get("alive") or {}
    names = {addrs[0].split(":")[0] for bid, addrs in (after.get("replicas") or {}).items() if alive.get(bid)}
    requester = obs["ctx"].get("requester")
    if requester in world.brokers:
        names.add(requester)
    ctx.role_pending = [p for p in ctx.role_pending if p.deadline >= world.now - 60_000]  # long settled otherwise
    for name in sorted(names):
        node = world.broker(name)
        if not isinstance(node, BrokerNode) or node.replicas.state.value != "RUNNING" \
                or node.replicas.master_epoch >= epoch:
            continue
        bound = role_bound(node.replicas.cfg.rpc_timeout, world.net_delay)
        ctx.role_pending.append(RolePending(name, world.inc[name], epoch, world.now, world.now + bound))
    return None


CONNECT_TIMEOUT_MILLIS = 3000
"""``NettySystemConfig.connectTimeoutMillis`` (system property ``com.rocketmq.remoting.client.connect.timeout``,
default 3000): ``NettyClientConfig.connectTimeoutMillis``, set as the bootstrap's ``CONNECT_TIMEOUT_MILLIS``, so a
connect that gets no answer fails after it."""


@invariant("BRK-REACHABLE-TIMEOUT", layer="broker", on=("brk.controller-unreachable",),
           source="ReplicasManager.scanAvailableControllerAddresses -> BrokerOuterAPI.checkAddressReachable -> "
                  "NettyRemotingClient.isAddressReachable (getAndCreateChannel: awaitUninterruptibly on a connect "
                  "bounded by NettyClientConfig.connectTimeoutMillis = NettySystemConfig.connectTimeoutMillis, 3000)",
           exceptions="a paused broker sees its timeout late (its thread does not run); RocketMQ fails at once on a "
                      "refused connect (the host up, nothing listening) and answers reachable at once over a channel "
                      "already open, which the kit does not model: it asks the address every scan and takes an "
                      "unanswered check as the unreachable case")
def reachable_timeout(ctx: Context, obs: BrkControllerUnreachable) -> Violated | None:
    """A broker removes a controller address from its available addresses only when the reachability check of its
    scan got no connection for exactly the connect timeout (``CONNECT_TIMEOUT_MILLIS``, 3 s): never sooner, and later
    only while the broker was paused."""
    waited, name = obs["waited"], obs.get("n", "")
    if waited == CONNECT_TIMEOUT_MILLIS or (waited > CONNECT_TIMEOUT_MILLIS and ctx.world.is_paused(name)):
        return None
    return violated(f"{name} dropped controller {obs['address']} from its available addresses after its "
                    f"reachability check waited {waited} ms; RocketMQ's connect gives up after "
                    f"connectTimeoutMillis ({CONNECT_TIMEOUT_MILLIS} ms)", obs=obs)
