"""Real RocketMQ under the kit (``rmqha real``): the layout and properties, the verdict's checks on planted
violations, and two real runs of Apache RocketMQ 5.3.3 from Maven Central (a master killed in the safe
configuration: a new master from the SyncStateSet, nothing acknowledged lost; the master isolated from its slaves
then killed with unclean election on: SYNC-NO-ACK-LOSS). After each run nothing of it is left: no process, no
network namespace.

The real runs need root (network namespaces), Java and Maven; without them they are skipped, unless
``RMQHA_REQUIRE_REAL=1`` (``.ci/run`` sets it), which turns a missing prerequisite into a failure.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from rmqha.impl.sim.config import ConfigError
from rmqha.models.controller_log import validate_log

from rmqha.real import check as K
from rmqha.real import control as C
from rmqha.real import files as F
from rmqha.real import maven, netns
from rmqha.real import supervisor as SV
from rmqha.real.observe import BrokerView, ControllerView, Snapshot
from rmqha.real.run import RealTestOptions, run_test
from rmqha.real.spec import create, real_config, run_id

# ----------------------------------------------------------------------------------------- no cluster


def test_real_config_refuses_what_a_real_cluster_does_not_have() -> None:
    with pytest.raises(ConfigError, match="fidelity"):
        real_config("fidelity", {})
    with pytest.raises(ConfigError, match=r"\[sim\] is simulator-only"):
        real_config("safe", {"sim": {"file_boundaries": True}})
    with pytest.raises(ConfigError, match="1 or 3 controllers"):
        real_config("safe", {"cluster": {"controllers": 5}})
    cfg = real_config("unclean", {})
    assert cfg.controller.enable_elect_unclean_master and cfg.store.all_ack_in_sync_state_set


def test_properties_carry_the_kits_settings_and_advertise_front_addresses(tmp_path: Path) -> None:
    spec = create(tmp_path / "r", real_config("safe", {"broker": {"brokerName": "bs"}}), version="5.3.3",
                  profile="safe", lifetime_s=60)
    b1 = spec.properties("b1")
    h = spec.host("b1")
    assert b1["enableControllerMode"] == "true" and b1["allAckInSyncStateSet"] == "true"
    assert b1["brokerName"] == "bs" and b1["brokerId"] == "-1"
    assert b1["bindAddress"] == h.addr and b1["brokerIP1"] == h.front == b1["brokerIP2"]
    assert b1["controllerAddr"] == spec.front_addr("c0") and b1["namesrvAddr"] == spec.namesrv_addr
    assert b1["controllerHeartBeatTimeoutMills"] == "3000"  # LOCAL_TIMING, as rmqha cluster
    assert "reputIntervalMs" not in b1 and "controllerRpcTimeoutMillis" not in b1  # the kit's own knobs
    c0 = spec.properties("c0")
    assert c0["controllerDLegerPeers"] == f"c0-{spec.host('c0').front}:9880"
    assert "dledgerCommitLatencyMs" not in c0 and c0["enableElectUncleanMaster"] == "false"
    j = create(tmp_path / "j", real_config("jraft", {}), version="5.3.3", profile="jraft", lifetime_s=60)
    p = j.properties("c1")
    assert p["controllerType"] == "jRaft" and p["jRaftServerId"] == f"{j.host('c1').front}:9880"
    assert p["jRaftInitConf"].count(",") == 2
    routes = C.proxy_config(spec)["routes"]
    assert {r["name"] for r in routes} >= {"b1.remoting", "b1.fast", "b1.ha", "c0.remoting", "ns.remoting"}
    assert all(r["listen"][0] != r["target"][0] for r in routes)


def _entry(index: int, *events: Any) -> F.ControllerEntry:
    return F.ControllerEntry(index, 1, 0, 0, 0, 0, 0, b"", tuple(events))


def _log(*entries: F.ControllerEntry) -> list[K.CtlEntry]:
    return K.dledger_entries(F.DLedgerLog(Path("c0"), list(entries), None, None, None,
                                          F.StopInfo(F.StopReason.END_OF_DATA, 0, ""), 0))


def _apply(i: int) -> F.ApplyBrokerIdEvent:
    return F.ApplyBrokerIdEvent("c", "bs", f"10.0.0.{i}:10911", i, f"10.0.0.{i}:10911;1")


def _controller_verdict(tmp_path: Path, *later: Any, unclean: bool = False) -> K.Verdict:
    spec = create(tmp_path / "v", real_config("unclean" if unclean else "safe", {}), version="5.3.3",
                  profile="safe", lifetime_s=60)
    entries = [_entry(1, _apply(1), _apply(2), _apply(3)), _entry(2, F.ElectMasterEvent("bs", True, 1)),
               _entry(3, F.AlterSyncStateSetEvent("bs", frozenset({1, 2})))]
    entries += [_entry(4 + i, ev) for i, ev in enumerate(later)]
    files = K.Files({}, {}, {}, {}, {"c0": _log(*entries)}, [])
    v = K.Verdict()
    K.check_controller(v, spec, files)
    return v


def test_the_controller_log_checks_catch_planted_violations(tmp_path: Path) -> None:
    clean = _controller_verdict(tmp_path, F.ElectMasterEvent("bs", True, 2))  # 2 was in the SSS {1, 2}
    assert clean.violations == [] and "CTL-CLEAN-ELECTION" in clean.checked
    outside = _controller_verdict(tmp_path, F.ElectMasterEvent("bs", True, 3))  # 3 was not
    assert [x["invariant"] for x in outside.violations] == ["CTL-CLEAN-ELECTION"]
    assert _controller_verdict(tmp_path, F.ElectMasterEvent("bs", True, 3), unclean=True).violations == []
    drop = _controller_verdict(tmp_path, F.AlterSyncStateSetEvent("bs", frozenset({2, 3})))
    assert {x["invariant"] for x in drop.violations} == {"CTL-ALTER-FENCED", "CTL-MASTER-IN-SSS"}
    unreg = _controller_verdict(tmp_path, F.AlterSyncStateSetEvent("bs", frozenset({1, 2, 7})))
    assert [x["invariant"] for x in unreg.violations] == ["CTL-SSS-REGISTERED"]
    twice = _controller_verdict(tmp_path, F.ApplyBrokerIdEvent("c", "bs", "10.0.0.9:10911", 2, "x;2"))
    assert [x["invariant"] for x in twice.violations] == ["CTL-ID-UNIQUE"]


def test_the_history_checks_catch_planted_violations() -> None:
    def res(key: str, q: int = 0) -> dict[str, Any]:
        return {"k": "client.send-result", "key": key, "status": "PUT_OK", "queue": q, "t": 0}

    def seen(key: str, q: int, o: int) -> dict[str, Any]:
        return {"k": "client.seen", "key": key, "queue": q, "queueOffset": o, "t": 0}

    h = K.History([], [res("a"), res("b")], [seen("a", 0, 0), seen("b", 0, 1), seen("c", 0, 1), seen("d", 1, 2)])
    v = K.Verdict()
    K.check_history(v, h, None, K.Files({}, {}, {}, {}, {}, []))
    assert {x["invariant"] for x in v.violations} == {"CLI-QUEUE-POSITION-STABLE", "CLI-NO-SKIP"}
    assert any("no final master" in n for n in v.notes)


def test_the_progress_checks_catch_planted_violations() -> None:
    """check_live on a settled run's last snapshot: the controller's master b2 (id 1) with SyncStateSet [1, 2, 3],
    where id 3 (b3) does not answer, b1 (id 2) is behind the master's confirmOffset, and the workload's last send
    after the last fault failed; then the same run healthy."""
    def snap(sss: list[int], b1_max: int, b3_ok: bool) -> Snapshot:
        ctl = ControllerView("c0", True, is_leader=True, master="b2", master_id=1, master_epoch=4, sss=sss,
                             ids={1: "b2", 2: "b1", 3: "b3"}, alive={1: True, 2: True, 3: b3_ok})
        brokers = {"b2": BrokerView("b2", True, broker_id=1, role="MASTER", max_offset=900, confirm_offset=900,
                                    epochs=[(3, 0, 100), (4, 100, -1)]),
                   "b1": BrokerView("b1", True, broker_id=2, role="SLAVE", max_offset=b1_max),
                   "b3": BrokerView("b3", b3_ok, broker_id=3, role="SLAVE" if b3_ok else None, max_offset=900)}
        return Snapshot(0, {"c0": ctl}, brokers)

    def res(key: str, status: str, t: int) -> dict[str, Any]:
        return {"k": "client.send-result", "key": key, "status": status, "rocketmqStatus": status, "t": t}

    faults = [{"t": 100, "do": "crash", "node": "b2"}, {"t": 200, "do": "restart", "node": "b2"},
              {"t": 900, "do": "stop-producer", "node": "p1"}]
    bad = K.Verdict()
    K.check_live(bad, snap([1, 2, 3], 800, False), K.History([], [res("a", "PUT_OK", 300),
                                                                   res("b", "FLUSH_SLAVE_TIMEOUT", 400)], []), faults)
    assert {x["invariant"] for x in bad.violations} == {"LIVE-SSS-NO-DEAD", "LIVE-SSS-CATCHUP", "LIVE-PUTS"}
    good = K.Verdict()
    K.check_live(good, snap([1, 2, 3], 900, True), K.History([], [res("a", "PUT_OK", 300)], []), faults)
    assert good.violations == [] and {"LIVE-MASTER", "LIVE-PUTS"} <= set(good.checked)
    none = K.Verdict()
    K.check_live(none, None, K.History([], [], []), faults)
    assert [x["invariant"] for x in none.violations] == ["LIVE-MASTER"]


# ------------------------------------------------------------------------------------------- real runs


def _prerequisites() -> str | None:
    ok, why = netns.available()
    if not ok:
        return why
    if not maven.maven_status()[0]:
        return "no Maven"
    try:
        maven.fetch(maven.PINNED)
    except maven.FetchError as exc:
        return str(exc)
    return None


@pytest.fixture(scope="module")
def real_ready() -> None:
    why = _prerequisites()
    if why is not None:
        if os.environ.get("RMQHA_REQUIRE_REAL") == "1":
            pytest.fail(f"real RocketMQ runs are required here: {why}")
        pytest.skip(f"real RocketMQ: {why}")


def _nothing_left(folder: Path) -> None:
    run = run_id(folder)
    assert netns.existing(run) == []
    left = _procs(folder)
    assert left == "", left


def _run(tmp_path: Path, name: str, profile: str, faults: tuple[str, ...], duration: float) -> dict[str, Any]:
    folder = tmp_path / name
    opts = RealTestOptions(folder, real_config(profile, {}), profile, maven.PINNED, duration=duration, faults=faults,
                           down=4.0, settle=60.0)
    try:
        return run_test(opts, lambda m: print(m, file=sys.stderr))
    finally:
        _nothing_left(folder)


@pytest.fixture(scope="module")
def safe_run(real_ready: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run(tmp_path_factory.mktemp("real"), "safe", "safe", ("kill-master",), 20.0)


@pytest.fixture(scope="module")
def unclean_run(real_ready: None, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run(tmp_path_factory.mktemp("real"), "unclean", "unclean", ("isolate-master",), 20.0)


def test_real_master_kill_fails_over_inside_the_sync_state_set_and_loses_nothing(safe_run: dict[str, Any]) -> None:
    r = safe_run
    assert r["valid"], (r["violations"], r["notes"])
    (fo,) = r["failovers"]
    assert fo["newMaster"] not in (None, fo["oldMaster"]) and fo["newMasterInSss"], fo
    assert fo["firstWriteAfterMs"] is not None, fo
    assert r["counts"]["acked"] > 50 and r["counts"]["controllerEvents"] >= 5
    for inv in ("SYNC-NO-ACK-LOSS", "CTL-CLEAN-ELECTION", "HA-LOG-MATCHING", "QUEUE-OFFSET-GAPLESS"):
        assert inv in r["checked"], inv
    assert r["convergence"]["outcome"] == "converged" and r["convergence"]["afterS"] is not None, r["convergence"]
    assert Path(r["report"]).is_file()


def test_real_unclean_election_loses_acknowledged_messages(unclean_run: dict[str, Any]) -> None:
    r = unclean_run
    assert not r["valid"]
    ids = {v["invariant"] for v in r["violations"]}
    assert "SYNC-NO-ACK-LOSS" in ids, r["violations"]
    (fo,) = r["failovers"]
    assert fo["newMaster"] is not None and fo["newMasterInSss"] is False, fo


def test_the_log_conformance_catches_events_no_model_action_explains() -> None:
    def apply(i: int) -> dict[str, Any]:
        return _apply(i).to_kit()

    base = [apply(1), apply(2), apply(3), F.ElectMasterEvent("bs", True, 1).to_kit(),
            F.AlterSyncStateSetEvent("bs", frozenset({1, 2})).to_kit()]
    ok = validate_log(enumerate([*base, F.ElectMasterEvent("bs", True, 2).to_kit()]), 3, False)
    assert ok.ok and ok.actions["ControllerElect"] == 1 and ok.extensions["Register"] == 3
    outside = validate_log(enumerate([*base, F.ElectMasterEvent("bs", True, 3).to_kit()]), 3, False)
    assert not outside.ok and outside.divergence is not None and outside.divergence.index == 5
    assert validate_log(enumerate([*base, F.ElectMasterEvent("bs", True, 3).to_kit()]), 3, True).ok
    same = validate_log(enumerate([*base, F.AlterSyncStateSetEvent("bs", frozenset({1, 2})).to_kit()]), 3, False)
    assert same.divergence is not None and "check 2" in same.divergence.why
    drop = validate_log(enumerate([*base, F.AlterSyncStateSetEvent("bs", frozenset({2, 3})).to_kit()]), 3, False)
    assert drop.divergence is not None and "check 7" in drop.divergence.why


def test_rmqha_conform_takes_a_real_runs_folder(tmp_path: Path) -> None:
    """``rmqha conform`` on a real run's folder (or its controller log) checks the committed controller log against
    the model: exit 0 when every event conforms, 1 at the first that does not; a folder without a log is one line."""
    def folder(name: str, last: dict[str, Any]) -> Path:
        spec = create(tmp_path / name, real_config("safe", {"broker": {"brokerName": "bs"}}), version="5.3.3",
                      profile="safe", lifetime_s=60)
        events = [_apply(1).to_kit(), _apply(2).to_kit(), _apply(3).to_kit(),
                  F.ElectMasterEvent("bs", True, 1).to_kit(),
                  F.AlterSyncStateSetEvent("bs", frozenset({1, 2})).to_kit(), last]
        (spec.dir / "controller-log.jsonl").write_text(
            "".join(json.dumps({"index": i, "event": e}) + "\n" for i, e in enumerate(events, 1)))
        return spec.dir

    def conform(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "rmqha", "conform", *args], capture_output=True, text=True,
                              timeout=120)

    good = folder("good", F.ElectMasterEvent("bs", True, 2).to_kit())
    p = conform(str(good), "--json")
    assert p.returncode == 0, p.stderr
    rep = json.loads(p.stdout)
    assert rep["conforms"] and rep["events"] == 6 and rep["actions"]["ControllerElect"] == 1
    assert conform(str(good / "controller-log.jsonl")).returncode == 0
    bad = folder("bad", F.ElectMasterEvent("bs", True, 3).to_kit())  # 3 is not in the SyncStateSet {1, 2}
    p = conform(str(bad))
    assert p.returncode == 1 and "diverges" in p.stdout and "at log index 6" in p.stdout, p.stdout
    (good / "controller-log.jsonl").unlink()
    p = conform(str(good))
    assert p.returncode == 2 and p.stderr.startswith("rmqha: ") and "no controller-log.jsonl" in p.stderr


def test_rmqha_invariants_says_what_a_real_run_checks() -> None:
    p = subprocess.run([sys.executable, "-m", "rmqha", "invariants", "--json"], capture_output=True, text=True,
                       timeout=120)
    rows = {r["id"]: r["realRun"] for r in json.loads(p.stdout)}
    assert set(K.REAL_CHECKS) <= set(rows)
    assert {i for i, w in rows.items() if w} == set(K.REAL_CHECKS)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_a_real_test_killed_mid_run_leaves_nothing(real_ready: None, tmp_path: Path, sig: signal.Signals) -> None:
    """``rmqha real test`` ended by a signal while its workload runs: SIGTERM runs its ``finally`` (the cluster
    ends, exit 143 as every command of the kit); SIGKILL gives it no chance, and the supervisor, which watches its
    owner, ends the cluster."""
    folder = tmp_path / "sig"
    proc = subprocess.Popen([sys.executable, "-m", "rmqha", "real", "test", "--dir", str(folder), "--duration", "300",
                             "--faults", "none"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + 240
        for line in proc.stdout:
            if line.startswith("topic ") or time.monotonic() > deadline:
                break
        proc.send_signal(sig)
        try:
            code = proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            rest = proc.communicate(timeout=30)[0]
            pytest.fail(f"{sig.name} did not end the run within 120 s; what it printed after the signal:\n{rest}")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    if sig == signal.SIGTERM:
        assert code == 143
    end = time.monotonic() + 30  # SIGKILL: the supervisor notices its owner is gone within half a second
    while time.monotonic() < end and (netns.existing(run_id(folder)) or _procs(folder)):
        time.sleep(0.5)
    _nothing_left(folder)


def _procs(folder: Path) -> str:
    return subprocess.run(["pgrep", "-af", str(folder)], capture_output=True, text=True).stdout.strip()


def test_a_jvm_that_does_not_start_is_one_line_with_its_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The supervisor's readiness wait: a node that exits before it listens is one line naming its output file
    (no hang, no traceback); checked without a JVM, with a node whose command exits at once."""
    spec = create(tmp_path / "r", real_config("safe", {}), version="5.3.3", profile="safe", lifetime_s=60)
    monkeypatch.setattr(SV.netns, "exec_prefix", lambda run, node: [])
    monkeypatch.setattr(type(spec), "java_argv", lambda self, node, cp: ["sh", "-c", "echo no JVM here; exit 3"])
    monkeypatch.setattr(netns.Host, "addr", property(lambda self: "127.0.0.1"))  # nothing listens on port 1 there
    monkeypatch.setattr(type(spec), "main_port", lambda self, node: 1)
    sv = SV.Supervisor(spec, "", None)

    async def go() -> str:
        try:
            await sv.start(["b1"])
        except ValueError as exc:
            return str(exc)
        return "started"

    msg = asyncio.run(go())
    sv.events.close()
    assert msg.startswith("b1 exited with status 3 before it listened on") and str(spec.out_path("b1")) in msg
    assert "no JVM here" in spec.out_path("b1").read_text()
    assert "\n" not in msg
