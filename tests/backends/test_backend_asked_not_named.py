"""Outside ``backends/`` a backend is asked what it does, never which one it is.

Whether a figure is modelled, whether runs build ahead, which device a timing leases,
how a layer kernel is measured: each is an answer of
:class:`aoe_optuna.backends.base.BackendBase`, so a new backend is a package and a
registry line, not a branch in a dozen places. This scan fails on a comparison with a
backend's name (a literal, a module constant bound to one, ``backend["name"]``,
``backend.get("name")``) and on ``isinstance`` with a backend class.
"""

from __future__ import annotations

import ast
from pathlib import Path

import aoe_optuna
from aoe_optuna.backends.registry import BACKENDS

PACKAGE = Path(aoe_optuna.__file__).parent
NAMES = set(BACKENDS)
CLASSES = {target.partition(":")[2] for target in BACKENDS.values()}
# Comparisons with a backend's name that ask no backend anything: (module, operand).
NOT_A_BACKEND = {
    ("cli/doctor.py", "args.mode"),  # doctor's run mode (npu, sim, cpu), a CANN setting
    ("bench/seed_run.py", "case.kind"),  # a bench case's source: a spec or a recorded space
    ("bench/command.py", "case.kind"),
    ("bench/command.py", "c.kind"),
    ("bench/seed_run.py", "case.prior.kind"),  # the --prior-space case's source
    # a prior's source ("simulator", "study", "recording"), not the study's backend
    ("spec/prior.py", "document"),
    ("spec/prior.py", "self.kind"),
    ("study/prior_of.py", "source.kind"),
    # a study's default name names its backend unless it is the default one
    ("spec/loader.py", "self.backend['name']"),
}


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py")
                  if p.relative_to(PACKAGE).parts[0] != "backends")


def _names_bound_to_backends(trees: list[ast.Module]) -> set[str]:
    """Module constants whose value is a backend's name, or names only backends'."""
    bound: set[str] = set()

    def names_backends(node: ast.expr) -> bool:
        if isinstance(node, ast.Constant):
            return node.value in NAMES
        if isinstance(node, ast.Name):
            return node.id in bound
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            return bool(node.elts) and all(names_backends(e) for e in node.elts)
        if isinstance(node, ast.Call) and node.args:  # frozenset({...}), tuple([...])
            return names_backends(node.args[0])
        return False

    for tree in trees:
        for node in tree.body:
            if isinstance(node, ast.Assign) and names_backends(node.value):
                bound |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return bound


def _asks_a_name(node: ast.expr, bound: set[str]) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in NAMES
    if isinstance(node, (ast.Name, ast.Attribute)):
        return (node.id if isinstance(node, ast.Name) else node.attr) in bound
    text = ast.unparse(node)
    return "backend" in text and ("['name']" in text or ".get('name'" in text)


def _findings(path: Path, tree: ast.Module, bound: set[str]) -> list[str]:
    where = path.relative_to(PACKAGE).as_posix()
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_asks_a_name(o, bound) for o in operands) and not any(
                    (where, ast.unparse(o)) in NOT_A_BACKEND for o in operands):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "isinstance" and len(node.args) == 2
              and {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)} & CLASSES):
            found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_no_code_outside_backends_asks_a_backend_its_name_or_type() -> None:
    paths = _modules()
    trees = [ast.parse(p.read_text()) for p in paths]
    bound = _names_bound_to_backends(trees)
    found = [f for p, t in zip(paths, trees, strict=True) for f in _findings(p, t, bound)]
    assert len(paths) > 100  # the scan saw the package
    assert found == []


def test_the_scan_finds_each_way_of_asking() -> None:
    """Each form the scan is for, in a module of its own: none slips through."""
    source = '''
NPU = "npu"
BOTH = ("simulator", NPU)
a = spec.backend.get("name") != "simulator"
b = backend_name == "cpu"
c = name in BOTH
d = kind != NPU
e = isinstance(backend, NpuBackend)
f = spec.backend["name"] == other
g = args.mode == "npu"
'''
    tree = ast.parse(source)
    found = _findings(PACKAGE / "operators" / "example.py", tree, _names_bound_to_backends([tree]))
    assert [f.split(":")[1] for f in found] == ["4", "5", "6", "7", "8", "9", "10"]
