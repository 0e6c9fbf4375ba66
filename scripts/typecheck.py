"""Type-check the whole kit with mypy, through a tree of links that shows static tools the package mapping.

``pyproject.toml`` maps the top-level folders into one package (``impl/`` is ``rmqha.impl``, ``spec/`` is
``rmqha.spec``, ...: ``[tool.setuptools] package-dir``). The editable install makes that work at run time through
an import hook, which static tools do not run. This script lays the mapping out as links under ``.typecheck/``
(git-ignored): ``.typecheck/rmqha/`` holds a link to every entry of ``rmqha/`` and one link per mapped folder
(``.typecheck/rmqha/impl -> ../../impl``, ...). ``[tool.mypy] mypy_path`` and ``[tool.pyright] extraPaths`` point
at ``.typecheck``, so mypy, pyright and IDEs resolve ``rmqha.impl.config`` to ``impl/config.py``.

    python scripts/typecheck.py              # (re)build the links, then run mypy over the package
    python scripts/typecheck.py --links      # only (re)build the links (for an IDE, after a fresh clone)

The links are rebuilt on every run (cheap), so a new folder of ``rmqha/`` or a new entry of ``package-dir`` needs
nothing else. ``.ci/run`` runs this before the tests; its exit status is mypy's.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TREE = ROOT / ".typecheck"


def package_dirs(root: Path = ROOT) -> dict[str, str]:
    """``[tool.setuptools] package-dir`` of the project: package name -> folder."""
    data = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))
    dirs: dict[str, str] = data["tool"]["setuptools"]["package-dir"]
    return dirs


def build_links(root: Path = ROOT, tree: Path = TREE) -> Path:
    """Lay the package mapping out as relative links under ``tree``; returns ``tree / "rmqha"``."""
    dirs = package_dirs(root)
    top = tree / "rmqha"
    if tree.exists():
        shutil.rmtree(tree)
    top.mkdir(parents=True)
    mapped = {name.split(".", 1)[1]: folder for name, folder in dirs.items() if name.startswith("rmqha.")}
    if any("." in child for child in mapped):
        raise SystemExit(f"typecheck: only one level of mapping is supported, got {sorted(mapped)}")
    for entry in sorted((root / dirs["rmqha"]).iterdir()):
        if entry.name == "__pycache__" or entry.name in mapped:
            continue
        (top / entry.name).symlink_to(os.path.relpath(entry, top))
    for child, folder in sorted(mapped.items()):
        (top / child).symlink_to(os.path.relpath(root / folder, top))
    (tree / ".gitignore").write_text("*\n")
    return top


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--links", action="store_true", help="only build the links")
    args, rest = ap.parse_known_args(argv)
    build_links()
    if args.links:
        print(f"links in {TREE.relative_to(ROOT)}/rmqha")
        return 0
    exe = shutil.which("mypy", path=str(Path(sys.executable).parent)) or shutil.which("mypy")
    if exe is None:
        print("typecheck: mypy is not installed (pip install -c constraints.txt -e '.[test]')", file=sys.stderr)
        return 2
    return subprocess.run([exe, *rest], cwd=ROOT).returncode


if __name__ == "__main__":
    sys.exit(main())
