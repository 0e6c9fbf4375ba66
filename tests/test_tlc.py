"""rmqha.spec.tlc: the TLA+ value parser, the .cfg reader, the -tool output reader, and real TLC 2.15 runs of toy specs.

The TLC runs (about 1-2 s each, mostly JVM start-up) are started together, three at a time, by the module-scoped
``runs`` fixture; the tests then look at their results. Counts are exact: BFS with one worker is deterministic.
"""

from __future__ import annotations

import itertools
import pickle
import shutil
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from rmqha.spec.tlc import (
    Fun,
    ModelValue,
    Record,
    TLAValueError,
    TLCResult,
    format_value,
    parse_tool_output,
    parse_value,
    read_cfg,
    run_tlc,
    simulate_tlc,
    tlc_jar,
)

DATA = Path(__file__).parent / "data" / "tlc"
M = ModelValue

# ---------------------------------------------------------------------------------------------- value parser

# Captured from TLC 2.15 (-tool message 2107, "Invariant Inv is violated by the initial state:"), values verbatim.
CAPTURED = {
    "a": '[x |-> -3, y |-> <<A, "q\\"uo\\\\te", {}>>, z |-> <<>>]',
    "b": "(A :> [n |-> 1, s |-> {<<1, B>>, <<2, Nil>>}] @@ B :> [n |-> -1, s |-> {}])",
    "c": """<< [epoch |-> 1, val |-> B, ok |-> FALSE],
   [epoch |-> 2, val |-> A, ok |-> FALSE],
   [epoch |-> 12, val |-> A, ok |-> TRUE] >>""",
    "d": "{{}, {1}, {1, 2}}",
    "e": "[k1 |-> 1, k2 |-> -2]",
    "f": '(0 :> "zero" @@ 2 :> "two")',
    "g": "(A :> {} @@ B :> {})",
    "h": '<<TRUE, FALSE, "", "tab\\there", "line\\nbreak">>',
    "i": "1..3",
    "j": "{<<1, 3>>, <<2, 3>>}",
    "log": """( n1 :> <<[s |-> "a\\"b\\\\c", t |-> <<-1, TRUE>>, m |-> {n1}, v |-> 1]>> @@
  n2 :> <<>> )""",
}
EXPECTED = {
    "a": Record(x=-3, y=(M("A"), 'q"uo\\te', frozenset()), z=()),
    "b": Fun({M("A"): Record(n=1, s=frozenset({(1, M("B")), (2, M("Nil"))})), M("B"): Record(n=-1, s=frozenset())}),
    "c": tuple(Record(epoch=e, val=M(v), ok=ok) for e, v, ok in [(1, "B", False), (2, "A", False), (12, "A", True)]),
    "d": frozenset({frozenset(), frozenset({1}), frozenset({1, 2})}),
    "e": Record(k1=1, k2=-2),
    "f": Fun({0: "zero", 2: "two"}),
    "g": Fun({M("A"): frozenset(), M("B"): frozenset()}),
    "h": (True, False, "", "tab\there", "line\nbreak"),
    "i": frozenset({1, 2, 3}),
    "j": frozenset({(1, 3), (2, 3)}),
    "log": Fun({M("n1"): (Record(s='a"b\\c', t=(-1, True), m=frozenset({M("n1")}), v=1),), M("n2"): ()}),
}


@pytest.mark.parametrize("name", sorted(CAPTURED))
def test_parse_captured_values(name: str) -> None:
    value = parse_value(CAPTURED[name])
    assert value == EXPECTED[name]
    assert parse_value(format_value(value)) == value  # and back


def test_parse_types_and_edges() -> None:
    assert parse_value(" -42 ") == -42 and type(parse_value("7")) is int
    assert parse_value("TRUE") is True and parse_value("FALSE") is False
    b1 = parse_value("b1")
    assert type(b1) is ModelValue and repr(b1) == "ModelValue('b1')" and b1 == "b1"
    assert type(parse_value('"b1"')) is str
    assert parse_value("{}") == frozenset() and parse_value("<<>>") == ()
    assert parse_value("<<\n<<>>,\n\t{ }\n>>") == ((), frozenset())
    assert parse_value("(Nil :> <<1>>)") == Fun({M("Nil"): (1,)})
    assert parse_value('[a |-> [b |-> (x :> {<<"s", -1>>})]]') == Record(a=Record(b=Fun({M("x"): {("s", -1)}})))


@pytest.mark.parametrize("text", ["", "<<1,", "<<1 2>>", "[a 1]", "[a |-> 1, a |-> 2]", "(a :> 1 @@)", "(a)",
                                  "{1, }", "1 2", "@", '"open', "1..x", "(a :> 1 @@ a :> 2)", "]"])
def test_parse_errors_are_one_line(text: str) -> None:
    with pytest.raises(TLAValueError) as exc:
        parse_value(text)
    assert "\n" not in str(exc.value) and str(exc.value)


def test_record_and_fun_are_frozen_hashable_mappings() -> None:
    r = Record(a=1, b=(1, 2))
    f = Fun({M("n1"): r, 3: frozenset({M("n2")})})
    assert r["a"] == 1 and list(r) == ["a", "b"] and dict(r.items()) == {"a": 1, "b": (1, 2)} and len(r) == 2
    assert r.get("zz") is None and "b" in r and list(r.keys()) == ["a", "b"]
    assert {r, Record(b=(1, 2), a=1)} == {r} and hash(f) == hash(Fun({3: frozenset({"n2"}), "n1": r}))
    assert {f: "ok"}[parse_value("(n1 :> [a |-> 1, b |-> <<1, 2>>] @@ 3 :> {n2})")] == "ok"
    assert r == {"a": 1, "b": (1, 2)} and r != Record(a=1) and Record(a=1) == Fun({"a": 1})
    assert repr(r) == "Record({'a': 1, 'b': (1, 2)})" and repr(Fun({M("x"): 1})) == "Fun({ModelValue('x'): 1})"
    with pytest.raises(TypeError):
        r["a"] = 2  # type: ignore[index]
    assert pickle.loads(pickle.dumps(f)) == f and type(next(iter(pickle.loads(pickle.dumps(f))))) is ModelValue


def test_format_value() -> None:
    assert format_value(Record(a=M("n1"), b='q"\\', c=True)) == '[a |-> n1, b |-> "q\\"\\\\", c |-> TRUE]'
    assert format_value(frozenset({10, 2, -1})) == "{-1, 2, 10}" and format_value(Fun()) == "<<>>"
    assert format_value(Fun({M("b"): 1, M("a"): 2})) == "(b :> 1 @@ a :> 2)"
    with pytest.raises(TypeError):
        format_value(1.5)


# ---------------------------------------------------------------------------------------------- .cfg reader


def test_read_cfg(tmp_path: Path) -> None:
    cfg = tmp_path / "m.cfg"
    cfg.write_text(
        """\\* comment line
CONSTANTS Brokers = {b1, b2}   \\* model values
  Nil = Nil  MaxEpoch = 3  Name = "x\\"y"
  Pick <- PickImpl
(* block (* nested *) comment
   INVARIANT NotThis *)
SPECIFICATION Spec
INVARIANTS SYNC_NO_ACK_LOSS TypeOK
  EpochMonotone
INVARIANT Extra
PROPERTY Live CONSTRAINT Bound
SYMMETRY Perms VIEW View
ACTION_CONSTRAINT Small
""",
        encoding="utf-8",
    )
    got = read_cfg(cfg)
    assert got["constants"] == {"Brokers": frozenset({M("b1"), M("b2")}), "Nil": M("Nil"), "MaxEpoch": 3,
                                "Name": 'x"y'}
    assert all(type(b) is ModelValue for b in got["constants"]["Brokers"])
    assert got["overrides"] == {"Pick": "PickImpl"}
    assert got["invariants"] == ["SYNC_NO_ACK_LOSS", "TypeOK", "EpochMonotone", "Extra"]
    assert got["properties"] == ["Live"] and got["constraints"] == ["Bound"] and got["action_constraints"] == ["Small"]
    assert (got["specification"], got["symmetry"], got["view"], got["init"], got["next"]) == (
        "Spec", "Perms", "View", None, None)
    assert read_cfg(DATA / "ToyProp.cfg")["properties"] == ["CounterGrows", "UpStable"]
    assert read_cfg(DATA / "ToyInv.cfg")["constants"] == {"Nodes": frozenset({M("n1"), M("n2")}), "Max": 2}


@pytest.mark.parametrize(("text", "fragment"), [
    ("SPECIFICATION Spec\nFOO Bar\n", "line 2: unknown keyword FOO"),
    ("CONSTANTS N = 3\nCHECK_DEADLOCK FALSE\n", "CHECK_DEADLOCK"),
    ("INVARIANT Inv\nALIAS A\n", "unknown keyword ALIAS"),
    ("CONSTANTS N = {a, b\nINIT Init\n", "bad value for N"),
    ("CONSTANT Nodes 3\n", "expected '=' or '<-' after constant Nodes"),
    ("SPECIFICATION\n", "SPECIFICATION needs a name"),
    ("(* never closed\n", "unterminated"),
])
def test_read_cfg_errors(tmp_path: Path, text: str, fragment: str) -> None:
    cfg = tmp_path / "bad.cfg"
    cfg.write_text(text, encoding="utf-8")
    with pytest.raises(TLAValueError) as exc:
        read_cfg(cfg)
    assert fragment in str(exc.value) and "\n" not in str(exc.value)


# ---------------------------------------------------------------------------------------------- -tool transcripts

# Captured (abridged) from TLC 2.15: a .cfg syntax error, whose cause is nested inside message 1000 mid-line.
CFG_ERROR = """@!@!@STARTMSG 2262:0 @!@!@
TLC2 Version 2.15 of Day Month 20?? (rev: d5b5a7f)
@!@!@ENDMSG 2262 @!@!@
@!@!@STARTMSG 1000:1 @!@!@
TLC threw an unexpected exception.
This was probably caused by an error in the spec or model.
See the User Output or TLC Console for clues to what happened.
The exception was a tlc2.tool.ConfigFileException
: @!@!@STARTMSG 5006:0 @!@!@
TLC found an error in the configuration file at line 4
It was expecting a keyword, but did not find it.
@!@!@ENDMSG 5006 @!@!@
@!@!@ENDMSG 1000 @!@!@
@!@!@STARTMSG 2186:0 @!@!@
Finished in 431ms at (2026-11-23 10:58:31)
@!@!@ENDMSG 2186 @!@!@
"""

# Captured from TLC 2.15 (Cyc.tla, PROPERTY ReachFive), with thousands separators added to the progress line.
BACK_TO = """@!@!@STARTMSG 2116:1 @!@!@
Temporal properties were violated.

@!@!@ENDMSG 2116 @!@!@
@!@!@STARTMSG 2264:1 @!@!@
The following behavior constitutes a counter-example:

@!@!@ENDMSG 2264 @!@!@
@!@!@STARTMSG 2217:4 @!@!@
1: <Initial predicate>
x = 0

@!@!@ENDMSG 2217 @!@!@
@!@!@STARTMSG 2217:4 @!@!@
2: <Next line 6, col 9 to line 6, col 26 of module Cyc>
x = 1

@!@!@ENDMSG 2217 @!@!@
@!@!@STARTMSG 2122:4 @!@!@
1: Back to state: <Next line 6, col 9 to line 6, col 26 of module Cyc>

@!@!@ENDMSG 2122 @!@!@
@!@!@STARTMSG 2200:0 @!@!@
Progress(3) at 2026-11-23 10:57:57: 1,234,567 states generated (308 s/min), 3,210 distinct states found (231 ds/min), 0 states left on queue.
@!@!@ENDMSG 2200 @!@!@
"""  # noqa: E501


def test_parse_tool_output_nested_cfg_error() -> None:
    r = parse_tool_output(CFG_ERROR.splitlines(keepends=True), exit_code=255)
    assert r.status == "error" and r.exit_code == 255
    assert r.message == ("TLC found an error in the configuration file at line 4 "
                         "It was expecting a keyword, but did not find it.")


def test_parse_tool_output_back_to_and_progress() -> None:
    seen: list[dict[str, Any]] = []
    r = parse_tool_output(BACK_TO.splitlines(), exit_code=13, on_progress=seen.append)
    assert (r.status, r.violated, r.generated, r.distinct, r.left_on_queue, r.depth) == (
        "property", None, 1234567, 3210, 0, 3)
    assert [(s.index, s.kind, s.action, s.back_to, s.vars) for s in r.trace] == [
        (1, "state", None, None, {"x": 0}), (2, "state", "Next", None, {"x": 1}), (3, "back-to", "Next", 1, {"x": 0})]
    assert r.trace[1].location == "line 6, col 9 to line 6, col 26 of module Cyc"
    assert seen == [{"code": 2200, "generated": 1234567, "distinct": 3210, "queue": 0, "depth": 3,
                     "text": seen[0]["text"]}] and seen[0]["text"].startswith("Progress(3)")


# ---------------------------------------------------------------------------------------------- real TLC runs

BAD_SPEC = """---- MODULE Bad ----
EXTENDS Integers
VARIABLE x
Init == x = 0
Next == x' = x + + 1
====
"""


FAST_JVM = ["-XX:TieredStopAtLevel=1"]  # C1 only: about 0.4 s less start-up per run on these tiny models


def _cases(tmp: Path) -> dict[str, tuple[Any, ...]]:
    (tmp / "Bad.tla").write_text(BAD_SPEC, encoding="utf-8")
    (tmp / "Bad.cfg").write_text("INIT Init\nNEXT Next\n", encoding="utf-8")
    (tmp / "undefined.cfg").write_text("CONSTANTS Nodes = {n1, n2}\nMax = 2\nSPECIFICATION Spec\nINVARIANT Nope\n",
                                       encoding="utf-8")
    (tmp / "eval.model").write_text('CONSTANTS Nodes = {n1}\nMax = "two"\nSPECIFICATION Spec\n', encoding="utf-8")
    toy = DATA / "Toy.tla"
    return {
        "pass": (run_tlc, toy, DATA / "Toy.cfg", {"jvm_args": ()}),
        "invariant": (run_tlc, toy, DATA / "ToyInv.cfg", {}),
        "action": (run_tlc, toy, DATA / "ToyProp.cfg", {}),
        "stutter": (run_tlc, toy, DATA / "ToyLive.cfg", {}),
        "deadlock": (run_tlc, toy, DATA / "Toy.cfg", {"check_deadlock": True}),
        "back_to": (run_tlc, DATA / "Cyc.tla", DATA / "Cyc.cfg", {}),
        "symmetry": (run_tlc, DATA / "Sym.tla", DATA / "Sym.cfg", {}),
        "parse_error": (run_tlc, tmp / "Bad.tla", tmp / "Bad.cfg", {}),
        "undefined": (run_tlc, toy, tmp / "undefined.cfg", {}),  # cfg outside the spec's directory
        "eval_error": (run_tlc, toy, tmp / "eval.model", {}),  # and not named *.cfg
        "sim_invariant": (simulate_tlc, toy, DATA / "ToyInv.cfg", {"depth": 20, "num": 50, "seed": 1}),
        "sim_pass": (simulate_tlc, toy, DATA / "Toy.cfg", {"depth": 20, "num": 50, "seed": 1}),
        "timeout": (run_tlc, toy, DATA / "Toy.cfg", {"timeout": 0.2}),
    }


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[TLCResult, list[dict[str, Any]]]]:
    if shutil.which("java") is None:
        pytest.skip("java is not installed")
    before = sorted(p.name for p in DATA.iterdir())
    tmp = tmp_path_factory.mktemp("tlc")
    progress: dict[str, list[dict[str, Any]]] = {}
    with ThreadPoolExecutor(max_workers=3) as pool:
        futures: dict[str, Future[TLCResult]] = {}
        for name, (fn, spec, cfg, kw) in _cases(tmp).items():
            progress[name] = []
            kw.setdefault("jvm_args", FAST_JVM)
            futures[name] = pool.submit(fn, spec, cfg, on_progress=progress[name].append, **kw)
        out = {name: (f.result(), progress[name]) for name, f in futures.items()}
    assert sorted(p.name for p in DATA.iterdir()) == before  # no states/ or other litter next to the specs
    assert sorted(p.name for p in tmp.iterdir()) == ["Bad.cfg", "Bad.tla", "eval.model", "undefined.cfg"]
    for result, _ in out.values():  # the private work directory (cwd, metadir, java.io.tmpdir) is gone
        assert not Path(result.command[result.command.index("-metadir") + 1]).parent.exists()
    return out


Runs = dict[str, tuple[TLCResult, list[dict[str, Any]]]]


def test_jar() -> None:
    assert tlc_jar().name == "tla2tools.jar" and tlc_jar().is_file()


def test_pass_counts_and_progress(runs: Runs) -> None:
    r, progress = runs["pass"]
    assert (r.status, r.exit_code, r.violated, r.message, r.trace) == ("pass", 0, None, None, [])
    assert (r.distinct, r.generated, r.left_on_queue, r.depth) == (116, 205, 0, 7)
    assert [p["code"] for p in progress] == [2185, 2189, 2190, 2200]  # start, init, init done, final progress
    assert progress[-1] == {"code": 2200, "generated": 205, "distinct": 116, "queue": 0, "depth": 7,
                            "text": progress[-1]["text"]}
    assert 0 < r.seconds < 60 and r.command[r.command.index("-workers") + 1] == "1" and "-deadlock" in r.command
    js = r.to_json()
    assert js["status"] == "pass" and js["distinct"] == 116 and js["trace"] == []


def test_invariant_violation_trace(runs: Runs) -> None:
    r, _ = runs["invariant"]
    assert (r.status, r.exit_code, r.violated) == ("invariant", 12, "Quiet")
    assert r.message == "Invariant Quiet is violated."
    assert (r.distinct, r.generated, r.left_on_queue, r.depth) == (26, 32, 17, 4)
    assert [s.action for s in r.trace] == [None, "Inc", "Add", "Crash"]  # parameterised: the operator's name
    assert [s.index for s in r.trace] == [1, 2, 3, 4] and {s.kind for s in r.trace} == {"state"}
    assert r.trace[0].location is None
    assert r.trace[2].location is not None and r.trace[2].location.endswith("of module Toy")
    last = r.trace[-1].vars
    assert last == {"x": 1, "up": frozenset({M("n2")}),
                    "log": Fun({M("n1"): (Record(v=1, s='a"b\\c', m=frozenset({M("n1")}), t=(-1, True)),),
                                M("n2"): ()})}
    js = r.to_json()["trace"][-1]
    assert js["vars"]["log"]["n1"] == [{"v": 1, "s": 'a"b\\c', "m": ["n1"], "t": [-1, True]}]
    assert js["vars"]["up"] == ["n2"] and js["action"] == "Crash" and js["kind"] == "state"


def test_action_property_violation(runs: Runs) -> None:
    r, _ = runs["action"]
    assert (r.status, r.exit_code, r.violated) == ("property", 13, "UpStable")
    assert [s.action for s in r.trace] == [None, "Crash"]


def test_temporal_violation_stuttering(runs: Runs) -> None:
    r, _ = runs["stutter"]
    assert (r.status, r.exit_code, r.violated) == ("property", 13, "AllDown")  # the cfg's only PROPERTY
    assert r.message == "Temporal properties were violated."
    # The liveness checker's choice of counterexample is not deterministic: check its shape only.
    assert [s.kind for s in r.trace] == ["state"] * (len(r.trace) - 1) + ["stuttering"] and len(r.trace) >= 3
    assert [s.index for s in r.trace] == list(range(1, len(r.trace) + 1)) and r.trace[0].action is None
    assert r.trace[-1].vars == r.trace[-2].vars and r.trace[-1].action is None and r.trace[-2].vars["up"]


def test_temporal_violation_back_to_state(runs: Runs) -> None:
    r, _ = runs["back_to"]
    assert (r.status, r.violated, r.distinct, r.generated) == ("property", "ReachFive", 3, 4)
    assert [(s.index, s.kind, s.action, s.back_to, s.vars) for s in r.trace] == [
        (1, "state", None, None, {"x": 0}), (2, "state", "Next", None, {"x": 1}),
        (3, "state", "Next", None, {"x": 2}), (4, "back-to", "Next", 1, {"x": 0})]


def test_deadlock(runs: Runs) -> None:
    r, _ = runs["deadlock"]
    assert (r.status, r.exit_code, r.violated, r.message) == ("deadlock", 11, None, "Deadlock reached.")
    assert "-deadlock" not in r.command
    assert r.trace[-1].vars["x"] == 2 and r.trace[-1].vars["up"] == frozenset()


def test_symmetry_and_view_count_orbits(runs: Runs) -> None:
    r, _ = runs["symmetry"]
    assert r.status == "pass"
    # VIEW st hides `last`; SYMMETRY over 3 processes: a state is the multiset of the counters (each 0..Top).
    orbits = {tuple(sorted(st)) for st in itertools.product(range(3), repeat=3)}
    assert r.distinct == len(orbits) == 10
    assert r.generated == 21


def test_parse_error(runs: Runs) -> None:
    r, _ = runs["parse_error"]
    assert (r.status, r.exit_code) == ("error", 150)
    assert r.message == 'Bad.tla: parse error: Was expecting "==== or more Module body" Encountered "1" at line 5, ' \
                        'column 20 and token "+"'


def test_cfg_and_evaluation_errors(runs: Runs) -> None:
    r, _ = runs["undefined"]
    assert (r.status, r.exit_code) == ("error", 151)
    assert r.message == "The invariant Nope specified in the configuration file is not defined in the specification."
    r, _ = runs["eval_error"]
    assert (r.status, r.exit_code) == ("error", 75)
    assert r.message is not None and "\n" not in r.message
    assert r.message.startswith('The second argument of < should be an integer, but instead it is: "two"')
    assert r.message.endswith("in Toy)")


def test_simulation(runs: Runs) -> None:
    r, _ = runs["sim_invariant"]
    assert (r.status, r.violated, r.distinct, r.depth) == ("invariant", "Quiet", None, None)
    assert [s.action for s in r.trace] == [None, "Add", "Crash", "Inc"]  # the seed fixes the behaviour
    r, progress = runs["sim_pass"]
    assert (r.status, r.exit_code, r.trace) == ("pass", 0, [])  # num=50 behaviours, then TLC stops
    assert r.generated == 251
    assert "-simulate" in r.command and "num=50" in r.command and progress and progress[-1]["distinct"] is None


def test_timeout(runs: Runs) -> None:
    r, _ = runs["timeout"]
    assert (r.status, r.message) == ("error", "timed out after 0.2 s") and r.seconds < 10


def test_missing_java_and_files(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="java not found"):
        run_tlc(DATA / "Toy.tla", DATA / "Toy.cfg", java=str(tmp_path / "no-java"))
    with pytest.raises(FileNotFoundError):
        run_tlc(tmp_path / "Nope.tla", DATA / "Toy.cfg")
    with pytest.raises(FileNotFoundError):
        run_tlc(DATA / "Toy.tla", tmp_path / "nope.cfg")
