"""The package's layers and the imports allowed between them (``docs/architecture.md``).

Every import of every module of the ``rmqha`` package is read with ``ast``: at module level, inside
``if TYPE_CHECKING:``, and inside functions. The test fails on an import cycle among the imports that run (module
level and inside functions), on an arrow between layers that the picture in ``docs/architecture.md`` does not
draw (type-only imports included), on the core doing I/O or reading a clock, on a module outside ``rmqha/cli/``
importing the command line, and on an import inside a function that is not an optional heavy dependency with a
``# lazy: <reason>`` comment.

Type-only imports (under ``if TYPE_CHECKING:``) never run; they may name the class that owns a module's objects
(``impl/ha/service.py`` names ``BrokerNode``, its host) without making a cycle, but not cross a layer boundary.
"""

from __future__ import annotations

import ast
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# layer -> the layers it may import (itself included). ``docs/architecture.md`` draws exactly these arrows.
ALLOWED: dict[str, set[str]] = {
    "core": {"core"},
    "sim": {"sim", "core"},
    "models": {"models", "sim", "core"},
    "spec": {"spec", "models", "sim", "core"},
    "symbolic": {"symbolic", "models", "sim", "core"},
    "fuzz": {"fuzz", "models", "sim", "core", "top"},
    "cluster": {"cluster", "models", "sim", "core"},
    "real": {"real", "cluster", "models", "sim", "core"},
    "cli": {"cli", "fuzz", "cluster", "real", "spec", "symbolic", "models", "sim", "core", "top"},
    "top": set(),
}

# The core (the RocketMQ rules) does no I/O and reads no clock: a driver hands it time and bytes.
CORE_DENIED = {"asyncio", "concurrent", "datetime", "glob", "gzip", "http", "io", "logging", "multiprocessing", "os",
               "pathlib", "pickle", "random", "selectors", "shutil", "signal", "socket", "socketserver", "sqlite3",
               "subprocess", "sys", "tempfile", "threading", "time", "urllib"}
CORE_DENIED_CALLS = {"open", "input", "print", "exec", "eval"}

# Optional heavy dependencies that may be imported inside a function (each such import carries "# lazy: <reason>").
LAZY_OK = {"pyspark", "z3", "rmqha.symbolic", "networkx", "rmqha.models.liveness"}


def layer_of(module: str) -> str:
    parts = module.split(".")
    if module == "rmqha":
        return "top"
    sub = parts[1]
    if sub == "impl":
        return "sim" if len(parts) > 2 and parts[2] == "sim" else "core"
    return {"models": "models", "spec": "spec", "symbolic": "symbolic", "spark_fuzz": "fuzz", "cluster": "cluster",
            "real": "real", "cli": "cli", "__main__": "cli"}.get(sub, f"unknown:{sub}")


@dataclass
class Imp:
    target: str  # the module imported (an internal one), or the top-level name of an external one
    line: int
    where: str  # "module", "type-checking" or "function"
    internal: bool
    comment: str = ""


@dataclass
class Module:
    name: str
    path: Path
    imports: list[Imp] = field(default_factory=list)
    calls: set[str] = field(default_factory=set)


def modules() -> dict[str, Module]:
    """Every module of the package, with the files ``[tool.setuptools] package-dir`` maps it from."""
    dirs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    out: dict[str, Module] = {}
    mapped = {pkg: ROOT / folder for pkg, folder in dirs.items()}
    for pkg, base in sorted(mapped.items(), key=lambda kv: -kv[0].count(".")):
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            if "__pycache__" in rel.parts or any(p.startswith(".") for p in rel.parts):
                continue
            name = ".".join([pkg, *parts])
            owner = next(p for p in sorted(mapped, key=lambda p: -p.count("."))
                         if name == p or name.startswith(p + "."))
            if owner != pkg:
                continue  # a mapped subpackage's folder inside another's: it belongs to the deeper mapping
            out[name] = Module(name, path)
    for m in out.values():
        _read(m, set(out))
    return out


def _read(m: Module, names: set[str]) -> None:
    text = m.path.read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    is_pkg = m.path.name == "__init__.py"

    def resolve(node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        base = m.name.split(".") if is_pkg else m.name.split(".")[:-1]
        base = base[: len(base) - (node.level - 1)]
        return ".".join(base + ([node.module] if node.module else []))

    def add(node: ast.Import | ast.ImportFrom, where: str) -> None:
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        else:
            mod = resolve(node)
            for a in node.names:
                sub = f"{mod}.{a.name}"
                targets.append(sub if sub in names else mod)
        here = lines[node.lineno - 1]
        above = lines[node.lineno - 2] if node.lineno > 1 else ""
        comment = here.split("#", 1)[1].strip() if "#" in here else above.strip().lstrip("#").strip() \
            if above.strip().startswith("#") else ""
        for t in dict.fromkeys(targets):
            internal = t == "rmqha" or t.startswith("rmqha.")
            m.imports.append(Imp(t if internal else t.split(".")[0], node.lineno, where, internal, comment))

    def visit(node: ast.AST, where: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                add(child, where)
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, "function")
            elif isinstance(child, ast.If) and where == "module" and "TYPE_CHECKING" in ast.unparse(child.test):
                visit(child, "type-checking")
            else:
                if isinstance(child, ast.Call) and isinstance(child.func, ast.Name):
                    m.calls.add(child.func.id)
                visit(child, where)

    visit(tree, "module")


MODULES = modules()


def graph(modules: dict[str, Module] = MODULES) -> dict[str, set[str]]:
    """Module -> the package modules it imports when it runs (type-only imports left out)."""
    return {m.name: {i.target for i in m.imports if i.internal and i.target in modules and i.target != m.name
                     and i.where != "type-checking"} for m in modules.values()}


def cycles(g: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (or a module importing itself)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]

    def strong(v: str) -> None:  # Tarjan, iteratively deep enough for this graph
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(g.get(v, ())):
            if w not in index:
                strong(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in g.get(v, ()):
                out.append(sorted(comp))

    for v in sorted(g):
        if v not in index:
            strong(v)
    return out


def test_every_module_has_a_layer():
    unknown = sorted(n for n in MODULES if layer_of(n).startswith("unknown"))
    assert not unknown, unknown
    assert len(MODULES) > 80  # the walk found the package


def test_no_import_cycle():
    found = cycles(graph())
    assert not found, "import cycles (imports at module level and inside functions): " + "; ".join(
        " -> ".join(c) for c in found)


def test_cycle_detection_works():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_layers_import_only_what_the_picture_allows():
    bad = []
    for m in MODULES.values():
        src = layer_of(m.name)
        for i in m.imports:
            if i.internal and i.target in MODULES and layer_of(i.target) not in ALLOWED[src] | {src}:
                bad.append(f"{m.name}:{i.line} ({src}) imports {i.target} ({layer_of(i.target)})")
    assert not bad, "\n".join(bad)


def test_nothing_outside_the_cli_imports_it():
    bad = [f"{m.name}:{i.line}" for m in MODULES.values() if layer_of(m.name) != "cli"
           for i in m.imports if i.internal and layer_of(i.target) == "cli"]
    assert not bad, bad


def test_the_package_imports_no_test_code():
    bad = [f"{m.name}:{i.line} imports {i.target}" for m in MODULES.values() for i in m.imports
           if not i.internal and i.target in ("tests", "property_tests", "pytest", "hypothesis")]
    assert not bad, bad


def test_the_core_does_no_io():
    bad = []
    for m in MODULES.values():
        if layer_of(m.name) != "core":
            continue
        bad += [f"{m.name}:{i.line} imports {i.target}" for i in m.imports if not i.internal and i.target in
                CORE_DENIED]
        bad += [f"{m.name} calls {c}()" for c in sorted(m.calls & CORE_DENIED_CALLS)]
    assert not bad, bad


def test_imports_inside_functions_are_only_lazy_heavy_dependencies():
    bad = []
    for m in MODULES.values():
        for i in m.imports:
            if i.where != "function":
                continue
            heavy = any(i.target == h or i.target.startswith(h + ".") for h in LAZY_OK)
            if not heavy or not i.comment.startswith("lazy:"):
                bad.append(f"{m.path.relative_to(ROOT)}:{i.line} imports {i.target}"
                           + ("" if heavy else " (not an optional heavy dependency)")
                           + ("" if i.comment.startswith("lazy:") else " (no '# lazy: <reason>' comment)"))
    assert not bad, "\n".join(bad)


def test_every_state_invariant_runs_in_one_chain():
    from rmqha.impl.invariants import CATALOGUE, STATE_CHAINS

    chained = [i for chain in STATE_CHAINS for i in chain]
    assert len(chained) == len(set(chained))
    assert set(chained) == {i.id for i in CATALOGUE if i.reads}
    for chain in STATE_CHAINS:  # a chain re-runs as a whole: its checks read the same parts of the cluster
        assert len({i.reads for i in CATALOGUE if i.id in chain}) == 1, chain
