"""Topic-queue invariants: queue offsets on the broker (``CommitLog.asyncPutMessage`` assigns them), what a
consumer group reads per queue (``RemoteBrokerOffsetStore``, ``ConsumerOffsetManager``) and the topic config that
keeps queues readable (``TopicConfigManager``, ``SlaveSynchronize.syncTopicConfig``). Only with [workload] queues."""

from __future__ import annotations

from ..broker.broker import BrokerNode
from ..config import MessageStoreConfig
from ..observations import BrkAppend, BrkTopic, ClientSeen
from .context import Context, LogView
from .registry import Violated, invariant, violated

SETTLE_POLLS = 100
"""QUEUE-CONFIRMED-DISPATCHED's settle time, in reput periods: ``ReputMessageService.run`` calls ``doReput`` every
1 ms (``Thread.sleep(1)``); the kit's reput runs within the step that moves confirmOffset, or ``reputIntervalMs``
later."""


def settle_ms(cfg: MessageStoreConfig) -> int:
    """QUEUE-CONFIRMED-DISPATCHED's settle time: ``SETTLE_POLLS`` reput periods (``max(1, reputIntervalMs)`` ms)."""
    return SETTLE_POLLS * max(1, cfg.reput_interval_ms)


def settled_reput_end(history: list[tuple[int, int, int]] | None, inc: int, since: int) -> int | None:
    """The lowest reput end (confirmOffset) a broker's incarnation ``inc`` has had from ``since`` on, from its
    history of (incarnation, time, value) changes; None when the incarnation started after ``since``."""
    if not history:
        return None
    low: int | None = None
    for i, (h_inc, t, value) in enumerate(history):
        nxt = history[i + 1][1] if i + 1 < len(history) else None
        if nxt is not None and nxt <= since:
            continue  # replaced before the window began
        if h_inc != inc:
            return None
        if low is None and t > since:
            return None  # the incarnation's first value came after the window began
        low = value if low is None else min(low, value)
    return low


@invariant("QUEUE-OFFSET-GAPLESS", layer="store", reads=("brokers",), per_broker=True,
           source="CommitLog.asyncPutMessage (assignOffset / increaseOffset under the topic-queue lock); "
                  "DefaultMessageStore.recoverTopicQueueTable (after recovery, truncation and changeToMaster)",
           exceptions="only with [workload] queues (the default single queue has no offsets of its own)")
def offset_gapless(ctx: Context, b: str, view: LogView) -> Violated | None:
    """Per topic queue, the queue offsets the messages of a broker's log carry run 0, 1, 2, ... in log order: none
    reused, none skipped."""
    node = view[2]
    if node is None:
        return None
    anomalies = node.store.commitlog.queue_anomalies
    if anomalies:
        pos, qid, qoff, expected = anomalies[0]
        return violated(f"{b} holds at {pos} a message of queue {qid} with queue offset {qoff} where {expected} was "
                        "next", broker=b)
    return None


@invariant("CLI-NO-SKIP", layer="client", on=("client.seen",),
           source="RemoteBrokerOffsetStore (commits what was consumed) + ConsumerOffsetManager + SlaveSynchronize (a "
                  "slave's offsets lag the master's: a failover re-delivers, it does not skip) + "
                  "ConsumerManageProcessor.queryConsumerOffset",
           exceptions="only with [workload] queues")
def no_skip(ctx: Context, obs: ClientSeen) -> Violated | None:
    """A consumer group skips no message of a queue: when it reads at a queue offset, it has read every offset below
    it (reading one again is allowed)."""
    if "queueId" not in obs:
        return None
    qid, qoff = obs["queueId"], obs["queueOffset"]
    contig = ctx.queue_contig.get(qid, 0)
    if qoff > contig:
        return violated(f"the consumer read queue {qid} at offset {qoff} but never read offset {contig}", obs=obs)
    if qoff == contig:  # the read closes the gap at the front: move past every offset read since
        while (qid, contig) in ctx.queue_seen:
            contig += 1
        ctx.queue_contig[qid] = contig
    return None


@invariant("CLI-QUEUE-POSITION-STABLE", layer="client", on=("client.seen", "brk.append"),
           source="QUEUE-OFFSET-GAPLESS + confirmOffset (consumers read only confirmed messages, which every SSS "
                  "member holds)",
           exceptions="only with [workload] queues; a deposed master that has not heard of the new epoch still "
                      "appends (no lease: BRK-SLAVE-NO-WRITE), unconfirmed, at positions the new master reuses")
def queue_position_stable(ctx: Context, obs: ClientSeen | BrkAppend) -> Violated | None:
    """A queue position (queue id, queue offset) a consumer has read is never bound to another message: no consumer
    reads two messages there, and the established master appends no other one there."""
    if "queueId" not in obs:
        return None
    qid, qoff = obs["queueId"], obs["queueOffset"]
    had = ctx.queue_seen.get((qid, qoff))  # the first key a consumer read there (this read included)
    if had is None or had == obs["key"]:
        return None
    if obs["k"] == "client.seen":
        return violated(f"a consumer read {obs['key']} at queue {qid} offset {qoff}, where it had read {had}", obs=obs)
    master = ctx.reference_master()  # a deposed master that has not heard of the new epoch still writes
    if master is not None and master.name == obs.get("n"):
        return violated(f"{obs.get('n')} appended {obs['key']} at queue {qid} offset {qoff}, where a consumer had read "
                        f"{had}", obs=obs)
    return None


@invariant("QUEUE-ACKED-READABLE", layer="client", reads=("brokers", "controller", "history"),
           source="TopicConfigManager.updateTopicConfig (an admin grows the topic on the master) + "
                  "SlaveSynchronize.syncTopicConfig (a slave copies it every 10 s) + PullMessageProcessor (a queue id "
                  ">= readQueueNums is refused)",
           exceptions="only with [workload] topic_config; the kit's admin only grows the topic")
def acked_readable(ctx: Context) -> Violated | None:
    """Every queue that holds an acknowledged message stays readable: the established master's topic config has more
    read queues than the highest queue id any PUT_OK message was written to."""
    if ctx.acked_queue_max < 0:
        return None
    master = ctx.reference_master()
    if not isinstance(master, BrokerNode) or master.topics is None or master.topics.read > ctx.acked_queue_max:
        return None
    topics = master.topics
    what = f"serves {topics.read} read queues" if topics.topic is not None else \
        "has no config for the topic (TOPIC_NOT_EXIST)"
    return violated(f"master {master.name} (mE {master.replicas.master_epoch}) {what}, but a message was "
                    f"acknowledged PUT_OK in queue {ctx.acked_queue_max}: consumers cannot read that queue",
                    master=master.status(), topic=topics.to_wire())


@invariant("QUEUE-CONFIRMED-DISPATCHED", layer="store", at_run_end=True,
           source="ReputMessageService.run / doReput (every 1 ms: every whole message up to getReputEndOffset, which "
                  "is confirmOffset in controller mode, goes to its consume queue: "
                  "CommitLogDispatcherBuildConsumeQueue)",
           exceptions="a broker up for less than the settle time, paused at the end, or whose reput was stalled "
                      "(fault slow-dispatch) within it; a 4.x broker")
def confirmed_dispatched(ctx: Context) -> Violated | None:
    """Every whole message a broker has held confirmed for the settle time has reached its consume queue: at the
    end of a run, each message of a live broker's log that ends at or before the lowest reput end (confirmOffset)
    the broker had over the last settle time (100 reput periods) has been dispatched.

    Checked once, when a run ends (``Checker.check_at_run_end``), from the reput ends the checker kept for each
    broker (``Context.reput_ends``). A dispatcher that skips a range or stops leaves a message out."""
    world = ctx.world
    settle = settle_ms(world.store_config)
    since = world.now - settle
    for b in world.brokers:
        node = world.broker(b)
        if not isinstance(node, BrokerNode) or world.is_paused(b) or node.reput_stalled_until > since:
            continue
        settled = settled_reput_end(ctx.reput_ends.get(b), world.inc[b], since)
        if settled is None:
            continue
        done = {d.offset for d in node.store.dispatched}
        for rec in node.store.commitlog.records:
            if rec.offset + rec.size > settled:
                break
            if rec.offset not in done:
                return violated(f"{b} has had confirmOffset {settled} or more for {settle} ms, but {rec.key} at "
                                f"{rec.offset} (size {rec.size}) is not in its consume queue (reput at "
                                f"{node.store.reput_from_offset})", broker=node.status(), key=rec.key,
                                offset=rec.offset)
    return None


@invariant("QUEUE-TOPIC-NO-SHRINK", layer="broker", on=("brk.topic",),
           source="ReplicasManager.changeToMaster (the topic config is kept; only its data version moves: "
                  "TopicConfigManager.getDataVersion().nextVersion); the kit's fix-master-covers-its-queues widens "
                  "the topic to every queue its log holds",
           exceptions="an admin update (mqadmin updateTopic may narrow a topic) and a slave's sync, which copies the "
                      "master's config whatever it is (SlaveSynchronize.syncTopicConfig)")
def topic_no_shrink(ctx: Context, obs: BrkTopic) -> Violated | None:
    """A broker's topic config (as persisted in its topics.json) loses read or write queues only by an admin update
    or a sync from its master: a change it makes on its own (a promotion's cover of its queues) never lowers a queue
    count it held."""
    name = obs.get("n", "")
    persisted = ctx.world.disks[name].topics or {}
    topic = persisted.get("topic") or {}
    now = (int(topic.get("read", 0)), int(topic.get("write", 0)))
    before = ctx.topic_counts.get(name)
    ctx.topic_counts[name] = now
    if obs["why"] in ("admin", "sync", "sync-delete") or before is None:
        return None
    if now[0] < before[0] or now[1] < before[1]:
        return violated(f"{name}'s topic config went from {before[0]} read / {before[1]} write queues to "
                        f"{now[0]} / {now[1]} ({obs['why']})", obs=obs, before=list(before))
    return None
