"""The size limits docs/development.md states, kept: modules, functions, classes and import circles.

No module over :data:`MODULE_LINES` lines, no function over :data:`FUNCTION_LINES`, no class with more than
:data:`CLASS_ATTRIBUTES` attributes but the declared settings tables, no import circle (at run time: imports
inside functions count, those under ``TYPE_CHECKING`` do not). What exceeds them today is
listed with its size: it may shrink, never grow, and once within the limit it must leave the list (a ratchet).
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "payload_estimator"
MODULE_LINES = 600
FUNCTION_LINES = 80
CLASS_ATTRIBUTES = 20
SETTINGS_TABLES = {"payload_estimator.settings:Settings"}
"""Classes that are a table of declared settings, one attribute per setting: no limit."""

OVER_MODULE_LINES = {
    "payload_estimator.commands.calibrate": 633,
    "payload_estimator.core.estimators.pmd": 796,
    "payload_estimator.core.estimators.qp": 661,
    "payload_estimator.core.offset_windows": 704,
    "payload_estimator.core.statistics": 842,
    "payload_estimator.core.tracking": 698,
    "payload_estimator.pipeline.arm_calibration": 770,
    "payload_estimator.supervision.supervisor": 610,
}
OVER_FUNCTION_LINES = {
    "payload_estimator.commands.bag_topics:find_inputs": 96,
    "payload_estimator.pipeline.arm_calibration:calibrate_arm": 189,
    "payload_estimator.pipeline.arm_calibration:_scale_fit": 93,
    "payload_estimator.supervision.calibration_service:fit_calibration": 85,
}
OVER_CLASS_ATTRIBUTES = {
    "payload_estimator.core.estimators.pmd:PointMassDiscretization": 43,
    "payload_estimator.core.estimators.qp:LiftedPointMassQP": 25,
    "payload_estimator.core.tracking:PayloadTracker": 23,
    "payload_estimator.pipeline.stream_config:StreamConfig": 21,
    "payload_estimator.ros.sim_node:SimNode": 24,
    "payload_estimator.sim.live_arm:LiveArm": 32,
    "payload_estimator.sim.run:SimulatedRun": 39,
    "payload_estimator.supervision.identify:IdentifySession": 21,
    "payload_estimator.supervision.supervisor:Supervisor": 24,
}
KNOWN_CIRCLES: list[set[str]] = []
"""Import circles that exist today (none): each a set of modules."""


def _modules() -> dict[str, tuple[str, ast.Module]]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        source = path.read_text()
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = (source, ast.parse(source))
    return out


MODULES = _modules()


def _ratchet(measured: dict[str, int], limit: int, listed: dict[str, int], what: str) -> list[str]:
    problems = [f"{name}: {size} {what} (limit {limit})" for name, size in measured.items()
                if size > limit and name not in listed]
    problems += [f"{name}: {measured[name]} {what}, more than the {size} it was allowed"
                 for name, size in listed.items() if measured.get(name, 0) > size]
    problems += [f"{name} is within the limit now: remove it from the list" for name in listed
                 if measured.get(name, 0) <= limit]
    return problems


def test_no_module_is_longer_than_the_limit():
    lines = {name: len(source.splitlines()) for name, (source, _) in MODULES.items()}
    assert not _ratchet(lines, MODULE_LINES, OVER_MODULE_LINES, "lines")


def test_no_function_is_longer_than_the_limit():
    lines = {}
    for name, (_, tree) in MODULES.items():
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                key = f"{name}:{node.name}"
                lines[key] = max(lines.get(key, 0), node.end_lineno - node.lineno + 1)
    assert not _ratchet(lines, FUNCTION_LINES, OVER_FUNCTION_LINES, "lines")


def _attributes(cls: ast.ClassDef) -> set[str]:
    """The class's fields (annotated or assigned in its body) and what its methods assign to ``self``."""
    names = set()
    for node in cls.body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) \
            else []
        names.update(t.id for t in targets if isinstance(t, ast.Name))
    for node in ast.walk(cls):
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                names.update(e.attr for e in ast.walk(target) if isinstance(e, ast.Attribute)
                             and isinstance(e.value, ast.Name) and e.value.id == "self")
    return names


def test_no_class_has_more_attributes_than_the_limit():
    counts = {f"{name}:{node.name}": len(_attributes(node)) for name, (_, tree) in MODULES.items()
              for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
    counts = {k: v for k, v in counts.items() if k not in SETTINGS_TABLES}
    assert not _ratchet(counts, CLASS_ATTRIBUTES, OVER_CLASS_ATTRIBUTES, "attributes")


def _runtime_imports(tree: ast.Module) -> list[str]:
    """The package's modules ``tree`` imports at run time (inside functions too; not under ``TYPE_CHECKING``)."""
    skip = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
            for n in ast.walk(node)}
    out = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("payload_estimator"):
            # ``from package import submodule`` imports the submodule; a name imports the module that holds it
            out += [f"{node.module}.{alias.name}" if f"{node.module}.{alias.name}" in MODULES else node.module
                    for alias in node.names]
        elif isinstance(node, ast.Import):
            out += [alias.name for alias in node.names if alias.name.startswith("payload_estimator")]
    return out


def _circles() -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    graph = {name: {m for m in _runtime_imports(tree) if m in MODULES and m != name}
             for name, (_, tree) in MODULES.items()}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    for v in graph:
        if v not in index:
            visit(v)
    return found


def test_no_new_import_circle():
    circles = _circles()
    new = [c for c in circles if not any(c <= known for known in KNOWN_CIRCLES)]
    assert not new, f"import circles: {[sorted(c) for c in new]}"
    gone = [known for known in KNOWN_CIRCLES if not any(known & c for c in circles)]
    assert not gone, f"no longer circles, remove them from the list: {[sorted(c) for c in gone]}"
