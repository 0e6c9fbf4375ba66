"""The abstraction function: a simulated cluster's state, in the vocabulary of the model's ``State``.

``abstract_state(sim)`` maps the implementation to the variables of ``models/controller_mode.py`` (and of the
TLA+ spec), as plain Python values so that the core does not import the model. Brokers are indexes ``0..N-1``
(``b1`` is 0); sets of brokers are bit masks; ``-1`` stands for the model's ``NONE``.

Rules of the mapping:

* Controller (``ctlMaster ctlME ctlSSS ctlSE registered``): the controller's applied ``ReplicasInfoManager``
  state, ids mapped to brokers through the addresses the controller registered. While the controller is down its
  state is the last one it applied (the log replays to exactly that on restart).
* ``alive``: the process is up. ``reach``: no partition between the broker and the controller, either way.
* ``role``: ``-1`` until the broker has taken a role in this incarnation (``ReplicasManager.masterEpoch`` 0),
  its own index as master, its master's index as slave. ``bME bSE``: ``ReplicasManager``'s epochs.
* ``local``/``remote``: a master's ``AutoSwitchHAService`` SyncStateSet and in-flight proposal (0 / -1 otherwise).
* ``log``: offsets are bytes, so a log abstracts to ``range(maxPhyOffset)`` (its length is what the model's
  control-plane rules read; contents are the catalogue's business). ``epochs``: the epoch cache (file when down).
* ``conn``/``ack``: a slave whose HA client has handshaken, and the ack its master's connection holds.
* A crashed broker keeps its files: log (all of it: kill -9 keeps the page cache), epoch file, checkpoint.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..broker.broker import BrokerNode

if TYPE_CHECKING:
    from .world import Simulation

NONE = -1


def controller_view(sim: Simulation) -> dict[str, Any] | None:
    """The controller's applied state of the simulated broker set (``None`` when it is down)."""
    ctl = sim.controller_node()
    if ctl is None:
        return None
    snap = ctl.rim.snapshot().get(sim.cfg.broker.broker_name)
    return snap if snap is not None else {}


def id_index(sim: Simulation, snap: dict[str, Any] | None) -> dict[int, int]:
    """Controller broker id -> broker index, from the addresses the controller registered (else the disks)."""
    out: dict[int, int] = {}
    replicas = (snap or {}).get("replicas") or {}
    for bid, (addr, *_rest) in replicas.items():
        name = str(addr).split(":")[0]
        if name in sim.brokers:
            out[int(bid)] = sim.brokers.index(name)
    for i, b in enumerate(sim.brokers):
        ident = sim.disks[b].broker_identity
        if ident is not None and ident[2] not in out:
            out[ident[2]] = i
    return out


def mask(ids: Any, index: dict[int, int]) -> int:
    """The bit mask of the brokers with these controller ids (unknown ids are left out)."""
    m = 0
    for i in ids or ():
        if i in index:
            m |= 1 << index[i]
    return m


def controller_part(snap: dict[str, Any], index: dict[int, int]) -> dict[str, Any]:
    """The model's controller variables from one ``ReplicasInfoManager.snapshot()`` entry."""
    master = snap.get("master")
    return {"ctlMaster": index.get(master, NONE) if master is not None else NONE,
            "ctlME": snap.get("masterEpoch") or 0, "ctlSSS": mask(snap.get("syncStateSet"), index),
            "ctlSE": snap.get("syncStateSetEpoch") or 0,
            "registered": mask([int(i) for i in (snap.get("replicas") or {})], index)}


def broker_part(sim: Simulation, name: str, index: dict[int, int]) -> dict[str, Any]:
    """The model's per-broker variables of one broker (index-valued, ``-1`` for none)."""
    disk = sim.disks[name]
    node = sim.broker(name)
    if not isinstance(node, BrokerNode):
        return {"alive": False, "role": NONE, "bME": 0, "bSE": 0, "local": 0, "remote": NONE,
                "log": len(disk.commitlog), "epochs": tuple(tuple(x) for x in disk.epoch_file or ()),
                "flushed": disk.flushed, "confirm": disk.checkpoint_confirm, "conn": NONE, "ack": NONE}
    rm, ha, store = node.replicas, node.ha, node.store
    me = sim.brokers.index(name)
    role = NONE
    if rm.master_epoch > 0:
        if store.role.value == "SLAVE":
            role = index.get(rm.master_broker_id, NONE) if rm.master_broker_id is not None else NONE
        elif rm.master_broker_id is not None and rm.master_broker_id == rm.broker_controller_id:
            role = me
    local = mask(ha.sync_state_set, index) if role == me else 0
    remote = mask(ha.remote_sync_state_set, index) if role == me and ha.is_synchronizing_sync_state_set else NONE
    conn = ack = NONE
    client = ha.client
    if role not in (NONE, me) and client is not None and client.conn is not None and client.state.name == "TRANSFER":
        conn = role
        master = sim.broker(sim.brokers[role])
        if master is not None and hasattr(master, "ha"):
            for c in master.ha.connections.values():
                if c.slave_id == rm.broker_controller_id:
                    ack = c.slave_ack_offset
    return {"alive": True, "role": role, "bME": rm.master_epoch, "bSE": rm.sync_state_set_epoch, "local": local,
            "remote": remote, "log": store.max_phy_offset, "epochs": tuple(tuple(p) for p in ha.epoch_cache.pairs()),
            "flushed": disk.flushed, "confirm": store.get_confirm_offset_directly(), "conn": conn, "ack": ack}


PER_BROKER_KEYS = ("alive", "role", "bME", "bSE", "local", "remote", "log", "epochs", "flushed", "confirm", "conn",
                   "ack")


def brokers_state(sim: Simulation, index: dict[int, int]) -> dict[str, tuple[Any, ...]]:
    """The model's per-broker variables, each a tuple over the brokers, and ``reach``."""
    per = [broker_part(sim, b, index) for b in sim.brokers]
    out: dict[str, tuple[Any, ...]] = {key: tuple(p[key] for p in per) for key in PER_BROKER_KEYS}
    out["reach"] = tuple(not (sim.is_blocked(b, sim.controller) or sim.is_blocked(sim.controller, b))
                         for b in sim.brokers)
    return out


def abstract_state(sim: Simulation, last_controller: dict[str, Any] | None = None) -> dict[str, Any]:
    """The model ``State`` fields of the whole cluster (``log`` as lengths; the caller builds ranges).

    ``last_controller`` is the previous controller snapshot, used while the controller is down."""
    snap = controller_view(sim)
    if snap is None:
        snap = last_controller or {}
    index = id_index(sim, snap)
    return {**controller_part(snap, index), "ctlSnapshot": snap, **brokers_state(sim, index)}
