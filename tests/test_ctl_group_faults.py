"""The controller group's faults of issue 21 (``ctl-at``, ``ctl-replay`` and the kinds built on them) and the ``ctl``
profile: each hits the group where it says, and the profile's runs end checked by LIVE-CTL-*."""

from __future__ import annotations

import json
from typing import ClassVar

from rmqha.impl import bugs as B
from rmqha.impl.rng import DetRng
from rmqha.impl.sim.config import config_from_dict, default_config
from rmqha.impl.sim.faults import FaultGenerator
from rmqha.models.campaign import run

GROUP = {"cluster": {"controllers": 3}, "workload": {"produce_interval": 0, "consume_interval": 0},
         "controller": {"isProcessReadEvent": True}}


def _steps(text: str) -> list[dict]:
    return [json.loads(x) for x in text.splitlines()[1:-1]]


def test_ctl_at_kills_a_node_between_an_entrys_commit_and_its_apply() -> None:
    """Every node applies 4 s late from 9 s on: the first node to end a step with an entry committed and not applied is
    killed there, and the run (its restart, the group's recovery) stays clean."""
    schedule = [*({"t": 9000, "do": "slow-apply", "node": c, "extra": 4000, "duration": 9000}
                  for c in ("ctl1", "ctl2", "ctl3")),
                {"t": 9000, "do": "ctl-at", "point": "unapplied", "then": "crash", "within": 9000},
                *({"t": 20000, "do": "restart", "node": c} for c in ("ctl1", "ctl2", "ctl3"))]
    cfg = config_from_dict(GROUP, default_config("safe"))
    r = run(cfg, 1, 200_000, bugs=list(B.FIXES_ALL), schedule=schedule, max_time=40_000)
    assert r.violation is None, r.violation
    crashes = [o for s in _steps(r.text or "") for o in s.get("obs", []) if o["k"] == "sim.crash"]
    assert [o.get("at") for o in crashes] == ["ctl-unapplied"] and 9000 <= min(
        s["t"] for s in _steps(r.text or "") if any(o["k"] == "sim.crash" for o in s.get("obs", []))) <= 18000


def test_cut_ctl_unapplied_cuts_a_new_leader_whose_empty_entry_waits_to_apply() -> None:
    """The generated kind: slow applies on every node, the leader killed, and the next leader cut off once an entry of
    its own term has committed and not applied; it steps down in that term for want of a quorum (CTL-LEADER-KEPT's
    one exception), and the run stays clean."""
    cfg = config_from_dict({**GROUP, "faults": {"weights": {"cut-ctl-unapplied": 1.0}}, "sim": {"progress": True}},
                           default_config("safe"))
    r = run(cfg, 2, 20_000, bugs=list(B.FIXES_ALL))
    assert r.violation is None, r.violation
    steps = _steps(r.text or "")
    acts = [s["act"] for s in steps if s["ev"] == "act" and s["act"].get("fault") == "cut-ctl-unapplied"]
    assert {a["do"] for a in acts} >= {"slow-apply", "crash", "ctl-at", "heal", "restart"}
    downs = [o for s in steps for o in s.get("obs", []) if o["k"] == "ctl.role" and o["was"] == "leader"
             and o["term"] == o["wasTerm"]]
    assert downs and all(o["acked"] < 2 for o in downs)


def test_ctl_replay_replays_a_controller_nodes_messages_to_its_group() -> None:
    cfg = config_from_dict({**GROUP, "faults": {"weights": {"ctl-replay": 1.0}}}, default_config("safe"))

    class World:
        brokers: ClassVar[list[str]] = ["b1", "b2", "b3"]
        controller = "ctl1"
        controllers: ClassVar[list[str]] = ["ctl1", "ctl2", "ctl3"]

        def controller_leader(self) -> str:
            return "ctl1"

        def is_up(self, node: str) -> bool:
            return True

        def is_paused(self, node: str) -> bool:
            return False

        def believed_master(self) -> str:
            return "b1"

        def broker_id(self, node: str) -> int:
            return int(node[1:])

    gen = FaultGenerator(cfg.faults, DetRng(7))
    drawn = [a for _ in range(60) for a in gen.draw(1000, World()) if a["fault"] == "ctl-replay"]  # type: ignore[arg-type]
    assert drawn and {a["do"] for a in drawn} == {"rpc-replay"}
    assert {a["node"] for a in drawn} == set(World.controllers)
    World.controllers = ["ctl1"]  # one node stands for the group: nothing to replay between nodes
    assert not [a for _ in range(60) for a in gen.draw(1000, World()) if a["fault"] == "ctl-replay"]  # type: ignore[arg-type]
