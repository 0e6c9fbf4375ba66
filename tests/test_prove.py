"""z3 inductive checks of the controller (``symbolic/``, ``rmqha prove``): what stock RocketMQ proves, what each
controller switch breaks, that counterexamples replay on the model and the implementation, and that the encoding is
neither vacuous nor different from the implementation."""

import dataclasses
import json
import random

import pytest
from rmqha.impl.codes import ResponseCode as RC
from rmqha.symbolic.concrete import Controller, Environment, Witness
from rmqha.symbolic.prover import prove, run_step, step_satisfiable
from rmqha.symbolic.replay import ImplRun, replay_on_impl, replay_on_model
from rmqha.symbolic.transitions import PROVER_SWITCHES, STOCK, SWITCH_INVARIANT, TRANSITIONS, Switches

from rmqha.cli import main

DOCUMENTED = {  # (obligation, transition) cells whose only counterexamples are catalogue exceptions
    ("CTL-SSS-REGISTERED", "brk-elect"), ("CTL-SSS-REGISTERED", "adm-elect"),  # first time: requester unchecked
    ("CTL-CLEAN-ELECTION", "brk-elect"), ("CTL-CLEAN-ELECTION", "adm-elect"),  # first time: no check at all
    ("CTL-MASTER-IN-SSS", "clean-ids"),  # an explicit-id clean removes the master from the SSS
    ("CTL-EPOCH-MONO", "register"),  # a cleaned set (whole, or its SSS) returns at epoch 0
}
STOCK_CTIS: set[tuple[str, str]] = set()  # stock RocketMQ: every CTI is a documented exception
ELECTIONS = {"ctl-elect", "brk-elect", "adm-elect"}
SWITCH_TRANSITIONS = {"alter-skip-sss-epoch-check": {"alter"}, "elect-ignores-liveness": ELECTIONS,
                      "unclean-election": ELECTIONS}


@pytest.fixture(scope="module")
def stock():
    return prove(3)


def _cells(results):
    return {(r.obligation, r.transition) for r in results}


def test_stock_proves_everything_but_the_documented_exceptions(stock):
    assert _cells(stock.exceptions) == DOCUMENTED | STOCK_CTIS  # the CTI's cell also has its documented exception
    assert _cells(stock.failures) == STOCK_CTIS
    assert not stock.diverged
    assert sum(r.verdict == "proved" for r in stock.results) == len(stock.results) - len(DOCUMENTED) - len(STOCK_CTIS)
    for r in stock.exceptions:  # each documented exception is real in the implementation
        assert r.exception_replays["impl"].status == "reproduced", (r.obligation, r.exception_replays["impl"].text)


def test_a_half_present_set_is_a_cti_under_the_narrower_exception(monkeypatch):
    """z3 found it: an explicit-id clean that empties the SSS drops the SyncStateInfo but keeps the replica table;
    the next applyBrokerId builds the set anew at epoch 0. Read as "a whole set only", the exception misses it."""
    import dataclasses

    from rmqha.symbolic import properties as P

    narrow = dataclasses.replace(P.OBLIGATIONS["CTL-EPOCH-MONO"], exception=P._whole_set_only)
    monkeypatch.setitem(P.OBLIGATIONS, "CTL-EPOCH-MONO", narrow)
    run = prove(3, obligations=["CTL-EPOCH-MONO"], transitions=["register"])
    (r,) = run.failures
    w = r.witness
    assert w.pre.registered and not w.pre.info and (w.pre.me, w.pre.se) > (0, 0)
    assert w.code == RC.SUCCESS and w.post.info and (w.post.me, w.post.se) == (0, 0)
    assert r.replays["impl"].status == "reproduced" and "pre-state by events:" in r.replays["impl"].text


def test_a_cleaned_set_returning_at_epoch_0_is_the_documented_exception(stock):
    (r,) = [r for r in stock.results if (r.obligation, r.transition) == ("CTL-EPOCH-MONO", "register")]
    w = r.exception
    assert not w.pre.info and w.post.info and (w.pre.me, w.pre.se) > (0, 0) == (w.post.me, w.post.se)
    assert r.exception_replays["impl"].status == "reproduced"


@pytest.mark.parametrize("name", sorted(PROVER_SWITCHES))
def test_each_controller_switch_gives_a_cti_that_replays_on_model_and_implementation(name, stock):
    run = prove(3, Switches.from_names([name]))
    inv = SWITCH_INVARIANT[name]
    new = _cells(run.failures) - STOCK_CTIS
    assert new == {(inv, t) for t in SWITCH_TRANSITIONS[name]}
    assert all(stock.verdict(inv, t) in ("proved", "exception") for _, t in new)
    assert not run.diverged
    ctis = [r for r in run.failures if r.obligation == inv]
    assert all(r.replays["impl"].status == "reproduced" for r in ctis), [r.replays["impl"].text for r in ctis]
    assert any(r.replays["model"].status == "reproduced" for r in ctis), [r.replays["model"].text for r in ctis]


def test_a_replay_notices_a_post_state_the_layer_does_not_reach():
    (r,) = prove(3, Switches.from_names(["alter-skip-sss-epoch-check"]), obligations=["CTL-ALTER-FENCED"],
                 transitions=["alter"]).failures
    w = r.witness
    wrong = dataclasses.replace(w, post=dataclasses.replace(w.post, se=w.post.se + 1))
    sw = Switches(skip_sss_epoch_check=True)
    assert replay_on_impl(w, r.obligation, 3, sw).status == "reproduced"
    assert replay_on_impl(wrong, r.obligation, 3, sw).status == "diverged"
    assert replay_on_model(w, r.obligation, 3, sw).status == "reproduced"
    assert replay_on_model(wrong, r.obligation, 3, sw).status == "diverged"
    assert replay_on_model(w, r.obligation, 3, STOCK).status == "diverged"  # the stock model refuses it (check 5)


# ------------------------------------------------------------------------------------------ not vacuous


@pytest.mark.parametrize("dropped, transition", [("history-none-above", "ctl-elect"),
                                                 ("history-current", "alter")])
def test_the_strengthening_is_needed(dropped, transition):
    kept = prove(3, obligations=["CTL-ONE-MASTER-PER-EPOCH"], transitions=[transition], replay=False)
    assert kept.ok
    weak = prove(3, drop=[dropped], obligations=["CTL-ONE-MASTER-PER-EPOCH"], transitions=[transition],
                 replay=False)
    assert [r.verdict for r in weak.results] == ["cti"]


@pytest.mark.parametrize("name", list(TRANSITIONS))
def test_every_transition_can_change_the_state_and_succeed(name):
    assert step_satisfiable(name) == {"changes": True, "succeeds": True}


def _ids(rng, n):
    return tuple(i for i in range(1, n + 1) if rng.random() < 0.5)


def _sample(rng, name, n):
    pre = Controller(_ids(rng, n), rng.random() < 0.85, rng.choice([None, *range(1, n + 1)]), rng.randint(0, 3),
                     rng.randint(0, 3), _ids(rng, n))
    alive = _ids(rng, n)
    env = Environment(alive, tuple(sorted(set(alive) | set(_ids(rng, n)))),
                      {i: (rng.randint(-1, 2), rng.randint(-1, 2), rng.randint(0, 2)) for i in range(1, n + 1)})
    if name in ("brk-elect", "adm-elect"):
        params = {"brokerId": rng.randint(1, n)}
    elif name == "alter":
        master = rng.randint(1, n)
        new = tuple(sorted(set(_ids(rng, n)) | ({master} if rng.random() < 0.8 else set())))
        if rng.random() < 0.5:  # the current master asks, its set registered and alive
            pre = dataclasses.replace(pre, info=True, master=master, registered=tuple(sorted({*pre.registered, *new})))
            env = dataclasses.replace(env, alive=tuple(sorted({*env.alive, *new})),
                                      live_info=tuple(sorted({*env.live_info, *new})))
        params = {"masterBrokerId": master, "masterEpoch": rng.choice([pre.me, rng.randint(0, 3)]),
                  "syncStateSetEpoch": rng.choice([pre.se, rng.randint(0, 3)]), "newSyncStateSet": new}
    elif name == "register":
        params = {"appliedBrokerId": rng.randint(1, n), "sameCheckCode": rng.random() < 0.5}
    elif name == "clean-ids":
        params = {"isCleanLivingBroker": False, "brokerControllerIdsToClean": _ids(rng, n) or (rng.randint(1, n),)}
    elif name == "clean-set":
        living = rng.random() < 0.5
        params = {"isCleanLivingBroker": living, "brokerControllerIdsToClean": _ids(rng, n) if living else ()}
    else:
        params = {}
    return pre, params, env


@pytest.mark.parametrize("switches", [STOCK, Switches(True, True, True)], ids=["stock", "all-switches"])
def test_the_encoding_agrees_with_the_implementation_on_random_steps(switches):
    """Each transition, evaluated by z3 on a random concrete pre-state, request and environment, gives the response
    code and the state the implementation gives (``ReplicasInfoManager`` with the same switches)."""
    rng = random.Random(11)
    codes: dict[str, set[int]] = {}
    for name in TRANSITIONS:
        for _ in range(25):
            n = rng.randint(1, 4)
            pre, params, env = _sample(rng, name, n)
            post, code = run_step(name, n, switches, pre, params, env)
            w = Witness(name, pre, params, env, post, code, {}, "none")
            run = ImplRun(w, n, switches)
            run.build(pre)
            got_code, _ = run.step(w)
            after = run.view() or Controller((), False, None, 0, 0, ())
            assert got_code == code, (name, pre, params, env)
            assert (after.registered, after.info) == (post.registered, post.info), (name, pre, params, env)
            if post.info:
                assert (after.master, after.me, after.se, after.sss) == (post.master, post.me, post.se, post.sss)
            codes.setdefault(name, set()).add(code)
    for name, seen in codes.items():  # the samples reach both outcomes of every transition
        assert RC.SUCCESS in seen and len(seen) > 1, (name, seen)


# ----------------------------------------------------------------------------------------------- CLI


def test_cli_exit_codes_and_json(capsys):
    assert main(["prove", "--brokers", "2"]) == 0
    assert "0 with a CTI" in capsys.readouterr().out
    assert main(["prove", "--bug", "alter-skip-sss-epoch-check", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["switches"] == ["alter-skip-sss-epoch-check"] and not report["ok"]
    bad = {(r["obligation"], r["transition"]) for r in report["results"] if r["verdict"] == "cti"}
    assert bad == STOCK_CTIS | {("CTL-ALTER-FENCED", "alter")}
    assert main(["prove"]) == 0


@pytest.mark.parametrize("args", [["prove", "--bug", "no-such-bug"], ["prove", "--bug", "ack-local-sss-only"],
                                  ["prove", "--brokers", "0"], ["prove", "--brokers", "x"]])
def test_cli_mistakes_are_one_line_exit_2(args, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("rmqha: ") and "Traceback" not in err
