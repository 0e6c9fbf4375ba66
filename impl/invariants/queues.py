"""Topic-queue invariants: queue offsets on the broker (``CommitLog.asyncPutMessage`` assigns them), what a
consumer group reads per queue (``RemoteBrokerOffsetStore``, ``ConsumerOffsetManager``) and the topic config that
keeps queues readable (``TopicConfigManager``, ``SlaveSynchronize.syncTopicConfig``). Only with [workload] queues."""

from __future__ import annotations

from ..broker.broker import BrokerNode
from ..observations import BrkAppend, ClientSeen
from .context import Context, LogView
from .registry import Violated, invariant, violated


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
