"""A fixed sample of mutants the kit must keep killing (issue 21 item 6; the full measurement is
``bench/mutation.py``, docs/mutation.md).

Each mutant is one slip in a RocketMQ rule of the core, taken from the killed list of the measured sample. It is
applied to a temporary copy of the package laid out as installed (``bench/mutation.py``'s ``build_tree``: nothing
touches the repository or the imported kit), and the part of the quick campaign that killed it
(``bench/mutation_campaign.py``, one stage: the seed or the examples it failed on) runs in a subprocess that
imports the kit from that copy. The test asserts the stage fails on the named invariant with the mutant, and passes
on the unmutated copy: the mutant changes behaviour, and the kit sees it.
"""

from __future__ import annotations

import importlib.util
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("bench_mutation", ROOT / "bench" / "mutation.py")
assert _spec is not None and _spec.loader is not None
bench = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)


@dataclass(frozen=True)
class Mutant:
    id: str  # the id in the measured sample (docs/mutation.md)
    file: str  # repository path
    original: str  # the source text replaced (must occur exactly once in the file)
    mutated: str
    stage: str  # bench/mutation_campaign.py --stage
    check: str  # the check that must fail: an invariant id
    rule: str  # the RocketMQ rule the slip breaks


MUTANTS: list[Mutant] = [
    Mutant("mf5530c6", "impl/broker/replicas_manager.py",
           "self.change_to_master(master_epoch, sss_epoch or 0, sss)",
           "self.change_to_master(master_epoch, sss_epoch and 0, sss)",
           # the run's validation against the model sees it first (before issue 21: SYNC-CONFIRM-BOUND, later)
           "safe:1", "MODEL-CONFORM",
           "ReplicasManager.changeToMaster: a new master takes the controller's syncStateSetEpoch"),
    Mutant("meae5f6e", "impl/ha/service.py",
           "narrow = B.CONFIRM_MIN_INT32 in self.bugs\n        for c in self.connections.values():",
           "narrow = B.CONFIRM_MIN_INT32 in self.bugs\n        for c in []:",
           "safe:1", "SYNC-CONFIRM-BOUND",
           "AutoSwitchHAService.computeConfirmOffset: the minimum over the SyncStateSet members' acks"),
    Mutant("m0977ba1", "impl/ha/service.py",
           "if B.QUEUE_TABLE_NOT_RECOVERED not in self.bugs:",
           "if not B.QUEUE_TABLE_NOT_RECOVERED not in self.bugs:",
           "fidelity:1", "CLI-QUEUE-POSITION-STABLE",
           "AutoSwitchHAService.changeToMaster: recoverTopicQueueTable before the new master takes puts"),
    Mutant("md5b8706", "impl/store/commitlog.py",
           "room = self.file_size - offset % self.file_size",
           "room = self.file_size - offset & self.file_size",
           "fidelity:1", "STORE-NO-SPAN-FILE",
           "CommitLog.doAppend: maxBlank = fileSize - offset % fileSize; a message that does not fit ends the file"),
    Mutant("m68c8768", "impl/store/commitlog.py",
           "end = rec.offset + rec.size",
           "end = rec.offset // rec.size",
           "safe:1", "SYNC-CONFIRM-BOUND",
           "CommitLog.recover: a message ends at its offset plus its size"),
    # From the survivors of acc6eff, killed since by the stages added for them (issue 21 item 6)
    Mutant("m582117d", "impl/ha/client.py",
           "if slave_max != 0 and slave_max != frame.offset",
           "if slave_max != -1 and slave_max != frame.offset",
           "new-replica:1", "LIVE-HA-TRANSFER",
           "AutoSwitchHAClient.processReadResult: a slave whose log is empty (max offset 0) takes the master's first "
           "transfer where it starts (a new replica of a set whose logs start past 0)"),
    Mutant("m084c460", "impl/store/epoch_cache.py",
           "for j, e in enumerate(ours):",
           "for j, e in []:",
           "fresh:6", "LIVE-HA-TRANSFER",
           "EpochFileCache.findConsistentPoint with fix-epoch-eq-replaces-empty-epoch: a slave's entry its master "
           "replaced (a failover on empty logs) is consistent up to its start"),
    Mutant("m8c0e03d", "impl/ha/connection.py",
           "master_max - master_max % size)",
           "master_max - master_max ** size)",
           "last-file:1", "HA-TRANSFER-START",
           "AutoSwitchHAConnection.WriteSocketService.run: with isSyncFromLastFile an empty slave (request offset 0) "
           "starts at the start of its master's last commit-log file, max - max % mappedFileSizeCommitLog"),
    # Not from the measured sample: its controller mutants were killed by crashes or by conformance only
    # (docs/mutation.md); this one is hand-made, and killed by the same campaign.
    Mutant("hand-unclean-flag", "impl/controller/replicas_info.py",
           "all_replicas = replicas.all_brokers() if self.enable_elect_unclean_master else None",
           "all_replicas = replicas.all_brokers() if not self.enable_elect_unclean_master else None",
           "safe:1", "CTL-CLEAN-ELECTION",
           "ReplicasInfoManager.electMaster: every replica is a candidate only with enableElectUncleanMaster"),
]


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return bench.build_tree(tmp_path_factory.mktemp("mutation") / "pristine")


def _campaign(tree: Path, stages: list[str]) -> tuple[int, dict[str, Any]]:
    p = subprocess.run(bench.campaign_command(tree, stages), capture_output=True, text=True, timeout=300)
    res = bench._last_json(p.stdout)
    assert res is not None, p.stdout[-2000:] + p.stderr[-2000:]
    assert res.get("kit", "").startswith(str(tree)), f"the campaign did not import the copy: {res.get('kit')}"
    return p.returncode, res


def test_the_sample_spans_the_four_folders():
    assert {m.file.split("/")[1] for m in MUTANTS} == {"controller", "ha", "store", "broker"}
    assert len({m.id for m in MUTANTS}) == len(MUTANTS) >= 5


def test_the_unmutated_copy_passes_every_stage_of_the_sample(pristine: Path):
    code, res = _campaign(pristine, sorted({m.stage for m in MUTANTS}))
    assert (code, res["outcome"]) == (0, "survived"), res


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.id for m in MUTANTS])
def test_the_quick_campaign_kills_the_mutant(mutant: Mutant, pristine: Path, tmp_path: Path):
    tree = tmp_path / "tree"
    shutil.copytree(pristine, tree, symlinks=True)
    target = bench.tree_path(tree, mutant.file)
    text = target.read_text(encoding="utf-8")
    assert text.count(mutant.original) == 1, (
        f"{mutant.id}: {mutant.original!r} no longer occurs exactly once in {mutant.file}: the code moved on; "
        "pick the sample again from a fresh bench/mutation.py run (docs/mutation.md)")
    target.write_text(text.replace(mutant.original, mutant.mutated), encoding="utf-8")
    code, res = _campaign(tree, [mutant.stage])
    assert code == 1 and res["outcome"] == "killed", res
    assert res["check"] == mutant.check, res
