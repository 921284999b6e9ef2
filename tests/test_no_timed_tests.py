"""No test asserts on the wall clock (the project's rule: timings are bench/ rows, tests assert behaviour).

``tests/`` is read with ``ast``: a value is a *wall-clock reading* when it comes from ``time.time``,
``time.monotonic``, ``time.perf_counter``, ``time.process_time``, ``time.thread_time`` (or their ``_ns``
forms), ``datetime.now``/``utcnow``, ``timeit`` or an event loop's ``time()``, or is computed from one: a
name or attribute assigned from such a value, or a call of a function of the same file that returns one.
An ``assert`` whose test compares such a value fails this check, and so does an ``if`` comparing one
whose body fails the test (``pytest.fail``, ``raise AssertionError``). What stays allowed: a wait loop
bounded by a deadline (``while ... time.monotonic() < deadline``) that raises ``TimeoutError`` naming
what it waited for, and the virtual clock of ``tests/helpers/clock.py``, whose readings are its own.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

TESTS = Path(__file__).parent

_TIME_READINGS = frozenset(
    f"{name}{suffix}"
    for name in ("time", "monotonic", "perf_counter", "process_time", "thread_time")
    for suffix in ("", "_ns")
)
_DATETIME_READINGS = frozenset({"now", "utcnow", "today"})
_CONVERSIONS = frozenset({"int", "float", "round", "abs", "min", "max", "sum", "sorted", "list", "tuple"})


@dataclass(frozen=True)
class Timed:
    """A comparison of a wall-clock reading that decides a test's verdict: where it is."""

    path: str
    line: int
    source: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.source}"


class _Module:
    """The wall-clock facts of one file: names imported from ``time``, tainted names, attributes, functions."""

    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.from_time: dict[str, str] = {}
        self.names: set[str] = set()
        self.attributes: set[str] = set()
        self.functions: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in {"time", "timeit"}:
                self.from_time.update({alias.asname or alias.name: alias.name for alias in node.names})
        self._spread()

    def is_reading(self, node: ast.AST | None) -> bool:
        """Whether the expression ``node`` is a wall-clock reading or computed from one (arithmetic, a
        conversion, a method of it such as ``total_seconds``); a reading stored in a dict, set or list, or
        passed to another function, is a record of when, not a measurement."""
        if node is None:
            return False
        if isinstance(node, ast.Name):
            return node.id in self.names
        if isinstance(node, ast.Attribute):
            return node.attr in self.attributes or self.is_reading(node.value)
        if isinstance(node, ast.Call):
            func = node.func
            if self._reads_clock(func):
                return True
            if isinstance(func, ast.Name) and func.id in _CONVERSIONS:
                return any(self.is_reading(arg) for arg in node.args)
            return isinstance(func, ast.Attribute) and self.is_reading(func.value)
        if isinstance(node, ast.BinOp):
            return self.is_reading(node.left) or self.is_reading(node.right)
        if isinstance(node, ast.UnaryOp):
            return self.is_reading(node.operand)
        if isinstance(node, ast.IfExp):
            return self.is_reading(node.body) or self.is_reading(node.orelse)
        if isinstance(node, ast.Tuple):
            return any(self.is_reading(element) for element in node.elts)
        if isinstance(node, (ast.ListComp, ast.GeneratorExp)):
            return self.is_reading(node.elt)
        if isinstance(node, ast.Subscript):
            return self.is_reading(node.value)
        if isinstance(node, ast.Compare):
            return any(self.is_reading(part) for part in (node.left, *node.comparators))
        return False

    def _reads_clock(self, func: ast.expr) -> bool:
        if isinstance(func, ast.Name):
            imported = self.from_time.get(func.id)
            return imported in _TIME_READINGS | {"timeit", "default_timer"} or func.id in self.functions
        if not isinstance(func, ast.Attribute):
            return False
        owner = func.value
        owner_name = _called_name(owner)
        if func.attr in _TIME_READINGS and owner_name == "time":
            return True
        if func.attr in _DATETIME_READINGS and owner_name in {"datetime", "date"}:
            return True
        if func.attr in {"timeit", "default_timer", "repeat"} and owner_name == "timeit":
            return True
        if func.attr == "time" and isinstance(owner, ast.Call):  # an event loop's clock
            return _called_name(owner.func) in {"get_running_loop", "get_event_loop", "new_event_loop"}
        return False

    def _spread(self) -> None:
        """Taint names, attributes and functions assigned from readings until nothing more changes."""
        while True:
            before = (len(self.names), len(self.attributes), len(self.functions))
            for node in ast.walk(self.tree):
                if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
                    if node.value is not None and self.is_reading(node.value):
                        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                        for target in targets:
                            self._taint(target, node.value)
                elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    returned = [sub.value for sub in ast.walk(node) if isinstance(sub, ast.Return) and sub.value]
                    if any(self.is_reading(value) for value in returned):
                        self.functions.add(node.name)
            if (len(self.names), len(self.attributes), len(self.functions)) == before:
                return

    def _taint(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts):
            for one, its in zip(target.elts, value.elts, strict=True):
                if self.is_reading(its):
                    self._taint(one, its)
            return
        for sub in ast.walk(target):
            if isinstance(sub, ast.Name):
                self.names.add(sub.id)
            elif isinstance(sub, ast.Attribute):
                self.attributes.add(sub.attr)


def _called_name(node: ast.expr) -> str:
    """``time`` for ``time`` and ``mod.time`` alike; empty for anything else."""
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


def _fails_the_test(body: list[ast.stmt]) -> bool:
    for sub in (node for stmt in body for node in ast.walk(stmt)):
        if isinstance(sub, ast.Call) and isinstance(sub.func, ast.Attribute) and sub.func.attr == "fail":
            return True
        if isinstance(sub, ast.Raise) and sub.exc is not None:
            raised = sub.exc.func if isinstance(sub.exc, ast.Call) else sub.exc
            if isinstance(raised, ast.Name) and raised.id == "AssertionError":
                return True
    return False


def timed_assertions(source: str, path: str = "<source>") -> list[Timed]:
    """Every comparison of a wall-clock reading in ``source`` that decides whether a test passes."""
    module = _Module(ast.parse(source, filename=path))
    found: list[Timed] = []
    for node in ast.walk(module.tree):
        if not (isinstance(node, ast.Assert) or (isinstance(node, ast.If) and _fails_the_test(node.body))):
            continue
        verdict = node.test
        for compare in (sub for sub in ast.walk(verdict) if isinstance(sub, ast.Compare)):
            if module.is_reading(compare):
                found.append(Timed(path, compare.lineno, ast.get_source_segment(source, compare) or "?"))
    return found


def test_no_test_asserts_on_the_wall_clock() -> None:
    found = [
        timed
        for path in sorted(TESTS.rglob("*.py"))
        if path.name != "clock.py" or path.parent.name != "helpers"
        for timed in timed_assertions(path.read_text(encoding="utf-8"), str(path.relative_to(TESTS.parent)))
    ]
    assert not found, (
        "wall-clock assertions in tests/ (assert the behaviour the timing stands for, or make it a bench/ row):\n"
        + "\n".join(map(str, found))
    )


TIMED = [
    "import time\nt = time.perf_counter()\nwork()\nassert time.perf_counter() - t < 0.5\n",
    "import time\nstart = time.monotonic()\nwork()\nelapsed = time.monotonic() - start\nassert elapsed < 0.5\n",
    "from time import perf_counter as pc\ns = pc()\nassert pc() - s < 1\n",
    "from time import perf_counter\ns = perf_counter()\nassert perf_counter() - s <= 0.05, 'slow'\n",
    "import time\ndef timed():\n    s = time.time()\n    go()\n    return time.time() - s\nassert timed() < 1\n",
    "import time\nclass T:\n    def run(self):\n        self.took = time.process_time()\nassert t.took < 2\n",
    "import datetime as dt\nwhen = dt.datetime.now()\nassert (dt.datetime.now() - when).total_seconds() < 1\n",
    "import asyncio\nasync def f():\n    s = asyncio.get_running_loop().time()\n    assert s > 0\n",
    "import time, pytest\ns = time.monotonic()\nif time.monotonic() - s > 0.2:\n    pytest.fail('slow')\n",
    "import time\nagent_time, at_once = time.time(), 0\nassert agent_time < 0.5\n",
    "import time\ntimes = [time.perf_counter() for _ in range(3)]\nassert max(times) - min(times) < 0.1\n",
]
UNTIMED = [
    "import time\ndeadline = time.monotonic() + 60\nwhile not ready():\n    if time.monotonic() > deadline:\n"
    "        raise TimeoutError('x')\n    time.sleep(0.1)\n",
    "import time\ndeadline = time.monotonic() + 5\nwhile not got and time.monotonic() < deadline:\n    pass\n",
    "def timed(clock):\n    return [(clock.now, c) for c in range(3)]\nassert [w for w, _ in timed(c)] == [0.0] * 3\n",
    "import time\nrow = {'quoted_at': time.time()}\nassert row['sku'] == 'a'\n",
    "assert response.elapsed is not None and count < 0.5\n",
    "import time\nagent_time, calls = time.time(), 0\nassert calls < 1\n",
]


def test_the_check_finds_timed_assertions_and_lets_deadline_waits_and_virtual_clocks_pass() -> None:
    for source in TIMED:
        assert len(timed_assertions(source)) == 1, source
    for source in UNTIMED:
        assert timed_assertions(source) == [], source
