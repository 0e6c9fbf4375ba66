"""Client-visible invariants: what producers and consumers can rely on across failovers (no acknowledged or
consumed message lost, nothing dispatched past confirmOffset) and the route the nameserver serves them."""

from __future__ import annotations

from ..broker.broker import BrokerNode
from ..codes import MASTER_ID
from ..observations import NsRegister, StoreDispatch
from ..store.offsets import base_of
from .context import Context
from .registry import Violated, invariant, violated


@invariant("NS-ROUTE-HIGHEST-EPOCH", layer="client", reads=("nameserver",),
           source="RouteInfoManager.registerBroker (a registration for a broker id held by another live address with "
                  "a higher stateVersion is ignored); ReplicasManager.registerBrokerWhenRoleChange",
           exceptions="a broker that never reached the nameserver makes no claim")
def ns_route_highest_epoch(ctx: Context) -> Violated | None:
    """The master route the nameserver serves for a broker set names, among the live brokers that last registered
    as its master, one with the highest state version (masterEpoch)."""
    ns = ctx.world.nameserver_node()
    if ns is None or not ns.master_claims:
        return None
    for name, claims in ns.master_claims.items():
        route = ns.broker_addrs.get(name, {}).get(MASTER_ID)
        if route is None or route not in ns.live or not claims:
            continue
        served = ns.live[route][0]
        best = max(claims, key=lambda a: (claims[a], a))
        if claims[best] > served:
            return violated(f"the nameserver routes {name}'s master to {route} (stateVersion {served}) while {best} "
                            f"registered as master with stateVersion {claims[best]}", route=route,
                            claims=dict(claims))
    return None


@invariant("NS-ROUTE-TOPIC", layer="client", on=("ns.register",),
           source="BrokerController.registerBrokerAll (the topicConfigWrapper of TopicConfigManager.buildTopicConfig"
                  "SerializeWrapper) -> RouteInfoManager.registerBroker (createAndUpdateQueueData for a master)",
           exceptions="runs without [workload] topic_config (the topic is implicit: no queue data in the route)")
def ns_route_topic(ctx: Context, obs: NsRegister) -> Violated | None:
    """With the brokers keeping the topic's config, once a master has registered, the route the nameserver serves
    for its set carries the topic's read and write queue counts."""
    world = ctx.world
    if obs["brokerId"] != MASTER_ID or not world.topic_config:
        return None
    ns = world.nameserver_node()
    if ns is None or obs["brokerName"] in ns.queue_data:
        return None
    return violated(f"master {obs['addr']} of {obs['brokerName']} registered, and the nameserver's route holds no "
                    "queue data for its topic: the registration carried no topic config", obs=obs)


@invariant("SYNC-VISIBLE-BOUND", layer="client", on=("store.dispatch",),
           source="ReputMessageService.getReputEndOffset / doReput",
           exceptions="readUnCommitted=true; confirmOffset itself can move back (e.g. when a second member joins the "
                      "SSS), so messages dispatched earlier can end past the current value")
def visible_bound(ctx: Context, obs: StoreDispatch) -> Violated | None:
    """A broker dispatches a message to consumers only if it ends at or before its confirmOffset at that moment."""
    if obs["upto"] > obs["confirm"]:
        return violated(f"{obs.get('n')} dispatched messages up to {obs['upto']} with confirmOffset {obs['confirm']}",
                        obs=obs)
    return None


LAST_FILE_HISTORY = ("a message whose every copy in the set lies below the first offset of that log (a replica that "
                     "joined with syncFromLastFile starts at its master's last commit-log file and never holds the "
                     "earlier files: to it they are as expired files)")
"""What the loss checks do not expect on a log (``Context.before_log``)."""


def _master_epoch(node: object) -> int:
    return node.replicas.master_epoch if isinstance(node, BrokerNode) else 0


@invariant("SYNC-NO-ACK-LOSS", layer="client", reads=("brokers", "controller", "history"),
           source="SYNC-ACK-ALL + CTL-CLEAN-ELECTION + controller SSS ⊆ ack set + SYNC-EXPAND-SAFE",
           exceptions="expected to fail with allAckInSyncStateSet=false (RocketMQ's default), with unclean election, "
                      "and when every ack holder loses its page cache (power loss); GAP-UNION is the prime suspect "
                      "otherwise. Not expected on the master: " + LAST_FILE_HISTORY)
def no_ack_loss(ctx: Context) -> Violated | None:
    """Every message a producer saw PUT_OK for is in the log of the master the controller has established (after
    any failover)."""
    master = ctx.reference_master()
    if master is None:
        return None
    keys = master.store.commitlog.keys
    first = base_of(master.store.commitlog.data)
    for key in (list(ctx.acked) if ctx.loss_full else ctx.acked_pending):
        if key not in keys and not (first and ctx.before_log(key, first)):
            return violated(f"{key} was acknowledged PUT_OK but master {master.name} (mE {_master_epoch(master)}) "
                            "does not have it", master=master.status(), key=key)
    return None


@invariant("SYNC-SEEN-NO-LOSS", layer="client", reads=("brokers", "controller", "history"),
           source="confirmOffset (min over the SSS) + consumers read only the confirmed prefix",
           exceptions="not expected on the master: " + LAST_FILE_HISTORY)
def seen_no_loss(ctx: Context) -> Violated | None:
    """Every message a consumer received is in the log of the master the controller has established."""
    master = ctx.reference_master()
    if master is None:
        return None
    keys = master.store.commitlog.keys
    first = base_of(master.store.commitlog.data)
    for key in (list(ctx.seen) if ctx.loss_full else ctx.seen_pending):
        if key not in keys and not (first and ctx.before_log(key, first)):
            return violated(f"{key} was delivered to a consumer but master {master.name} (mE "
                            f"{_master_epoch(master)}) does not have it", master=master.status(), key=key)
    return None
