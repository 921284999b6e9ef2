"""The package's shape, checked over its source: the subpackage dependency direction, a top level
that defines nothing, private modules, and printing only in the CLI."""

from __future__ import annotations

import ast
import importlib
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import otel_agent_replay

PACKAGE = Path(otel_agent_replay.__file__).parent

LAYERS: tuple[str, ...] = (
    "core",
    "capture",
    "conversation",
    "tape",
    "comparison",
    "store",
    "pages",
    "backends",
    "instrumentation",
    "integrations",
    "proxy",
    "seal",
    "recorder",
    "timetravel",
    "replayer",
    "regression",
    "pytest_plugin",
    "cli",
)
"""Low to high: a subpackage may import only from itself and from those before it (docs/design.md)."""


def _modules(root: Path = PACKAGE) -> list[Path]:
    return sorted(p for p in root.rglob("*.py") if p.parent != root)


def _subpackage(path: Path, root: Path = PACKAGE) -> str:
    return path.relative_to(root).parts[0]


def _imports(path: Path, root: Path = PACKAGE) -> list[tuple[int, str]]:
    """Every module this file imports from the package, absolute (relative imports resolved), with its line."""
    here = ["otel_agent_replay", *path.relative_to(root).with_suffix("").parts]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - node.level]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found.append((node.lineno, module))
    return [(line, m) for line, m in found if m == "otel_agent_replay" or m.startswith("otel_agent_replay.")]


def test_every_module_belongs_to_a_layer() -> None:
    subpackages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert subpackages == set(LAYERS)


def _upward_imports(root: Path) -> list[str]:
    wrong: list[str] = []
    for path in _modules(root):
        mine = LAYERS.index(_subpackage(path, root))
        for line, module in _imports(path, root):
            where = f"{path.relative_to(root.parent)}:{line}"
            if module == "otel_agent_replay":
                wrong.append(f"{where} imports the top-level package")
                continue
            other = module.split(".")[1]
            if other in LAYERS and LAYERS.index(other) > mine:
                wrong.append(f"{where} imports {module}, above {_subpackage(path, root)}")
    return wrong


def test_subpackages_import_only_downwards_and_never_the_top_level() -> None:
    assert _upward_imports(PACKAGE) == []


def test_other_subpackages_are_reached_through_their_init() -> None:
    """``from otel_agent_replay.tape import Run``, never ``otel_agent_replay.tape._values``, across subpackages."""
    wrong = []
    for path in _modules():
        for line, module in _imports(path):
            parts = module.split(".")
            if len(parts) > 2 and parts[1] != _subpackage(path) and parts[2].startswith("_"):
                wrong.append(f"{path.relative_to(PACKAGE.parent)}:{line} imports {module}")
    assert wrong == []


def test_the_top_level_defines_nothing() -> None:
    """The top level only re-exports, each name on first use: its imports (under ``TYPE_CHECKING``, for
    type checkers), the table ``_HOMES`` the lazy lookup reads, and ``__all__`` name the same things."""
    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    lazy = {"TYPE_CHECKING", "_HOMES", "_WHERE", "__getattr__", "__dir__", "__all__"}
    checking = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    lookup = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "not TYPE_CHECKING")
    defined = [
        type(node).__name__
        for node in [*tree.body, *lookup.body]
        if not isinstance(node, (ast.ImportFrom, ast.Import, ast.Expr, ast.If))
        and not (isinstance(node, ast.FunctionDef) and node.name in lazy)
        and not (isinstance(node, (ast.Assign, ast.AnnAssign)) and _target_names(node) <= lazy)
    ]
    assert defined == []
    assert all(isinstance(node, ast.ImportFrom) for node in checking.body)
    homes = {(home, name) for home, names in otel_agent_replay._HOMES.items() for name in names}
    assert homes == set(_pairs(checking)), "_HOMES and the TYPE_CHECKING imports disagree"
    assert set(otel_agent_replay.__all__) == {name for _, name in homes}


def _target_names(node: ast.Assign | ast.AnnAssign) -> set[str]:
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    return {t.id for t in targets if isinstance(t, ast.Name)} or {"?"}


def _pairs(checking: ast.If) -> list[tuple[str, str]]:
    return [
        ((node.module or "").removeprefix("otel_agent_replay."), alias.asname or alias.name)
        for node in checking.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]


def test_every_public_name_is_there_on_first_use_and_only_then() -> None:
    """In a fresh interpreter ``import otel_agent_replay`` imports none of the subpackages; a public name
    asked for is its subpackage's own object, and only its subpackage (and what that needs) is imported."""
    probe = (
        "import sys, otel_agent_replay as p\n"
        "before = sorted(m for m in sys.modules if m.startswith('otel_agent_replay.'))\n"
        "from otel_agent_replay import load_tape\n"
        "from otel_agent_replay.tape import load_tape as own\n"
        "after = sorted(m.split('.')[1] for m in sys.modules if m.startswith('otel_agent_replay.'))\n"
        "print(before, load_tape is own, p.load_tape is own, sorted(set(after)))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[] True True ['_version', 'capture', 'core', 'tape']"
    where = {name: home for home, names in otel_agent_replay._HOMES.items() for name in names}
    for name in otel_agent_replay.__all__:
        home = where[name]
        assert getattr(otel_agent_replay, name) is getattr(importlib.import_module(f"otel_agent_replay.{home}"), name)
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        otel_agent_replay.nothing_here  # noqa: B018
    assert set(otel_agent_replay.__all__) <= set(dir(otel_agent_replay))


def test_modules_inside_subpackages_are_private() -> None:
    public = [
        str(p.relative_to(PACKAGE))
        for p in _modules()
        if p.name != "__init__.py" and not p.name.startswith("_") and p.name != "attributes.py"
    ]
    assert public == []


@pytest.mark.parametrize("name", LAYERS)
def test_each_init_is_a_list_of_what_it_offers(name: str) -> None:
    module = importlib.import_module(f"otel_agent_replay.{name}")
    assert module.__doc__, f"otel_agent_replay.{name} has no docstring"
    offered = getattr(module, "__all__", None)
    assert offered, f"otel_agent_replay.{name} has no __all__"
    assert all(hasattr(module, n) for n in offered)
    tree = ast.parse(Path(module.__file__ or "").read_text(encoding="utf-8"))
    assert all(isinstance(node, (ast.ImportFrom, ast.Import, ast.Expr, ast.Assign)) for node in tree.body)


def test_only_the_cli_prints() -> None:
    printing = []
    for path in _modules():
        if _subpackage(path) == "cli":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                fn = node.func
                if isinstance(fn, ast.Name) and fn.id == "print":
                    printing.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} print()")
                if (
                    isinstance(fn, ast.Attribute)
                    and fn.attr == "write"
                    and isinstance(fn.value, ast.Attribute)
                    and isinstance(fn.value.value, ast.Name)
                    and fn.value.value.id == "sys"
                ):
                    printing.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} sys.{fn.value.attr}.write")
    assert printing == []


def test_a_subpackage_is_never_named_like_a_public_function() -> None:
    assert not set(LAYERS) & {"record", "replay", "compare", "tool", "model_call", "agent_run", "load_tape"}


def test_the_import_check_sees_a_violation(tmp_path: Path) -> None:
    """The check itself: in a copy of the package, an upward import and a top-level import are found."""
    copy = tmp_path / "otel_agent_replay"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    (copy / "tape" / "_probe.py").write_text("from otel_agent_replay.replayer import replay\nfrom .. import tool\n")
    found = _upward_imports(copy)
    assert found == [
        "otel_agent_replay/tape/_probe.py:1 imports otel_agent_replay.replayer, above tape",
        "otel_agent_replay/tape/_probe.py:2 imports the top-level package",
    ]


def _module_name(path: Path, root: Path) -> str:
    parts = ["otel_agent_replay", *path.relative_to(root).with_suffix("").parts]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_graph(root: Path) -> dict[str, set[str]]:
    """Module → the package's modules it imports (at the top, in functions, or for type checking only)."""
    modules = {_module_name(p, root): p for p in root.rglob("*.py")}
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join([*up, node.module] if node.module else up)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            graph[name].update(t for t in targets if t in modules and t != name)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group: list[str] = []
            while not group or group[-1] != v:
                group.append(stack.pop())
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_module_imports_one_that_imports_it_back() -> None:
    """No circles between modules, counting imports in functions and for type checking (design.md, Modules)."""
    assert _circles(_import_graph(PACKAGE)) == []


def test_the_circle_check_sees_a_circle(tmp_path: Path) -> None:
    copy = tmp_path / "otel_agent_replay"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    probe = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._load import x\n"
    (copy / "tape" / "_probe.py").write_text(probe)
    load = copy / "tape" / "_load.py"
    load.write_text(load.read_text(encoding="utf-8") + "\n\ndef _late() -> None:\n    from . import _probe\n")
    assert _circles(_import_graph(copy)) == [["otel_agent_replay.tape._load", "otel_agent_replay.tape._probe"]]
