"""The house rules, checked: data flows one way, no private name crosses modules, one registry
per concept, and everything but ``ros/`` imports without ROS."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import pytest

from payload_estimator.core.estimators import ESTIMATORS, METHODS, Estimator
from payload_estimator.robots import ROBOT_NAMES, ROBOTS
from payload_estimator.settings import Settings

PACKAGE = Path(__file__).resolve().parent.parent / "payload_estimator"

LAYERS = ("errors", "files", "core", "robots", "settings", "pipeline", "excitation", "outputs", "io", "sim",
          "supervision", "commands", "ros", "cli")
"""Bottom to top: a module may import its own layer and those below it, never one above.
errors: every exception the package raises on purpose; files: atomic file writing;
core: samples -> statistics -> estimators -> estimates; robots: models and URDF reading;
settings: values and descriptions; pipeline: raw signals -> samples, the stream, the driver loop;
excitation: identification motions (design, limits, trajectories);
outputs: estimates -> URDF, tables, plots, markers, robot load requests; io: files and messages;
sim: the simulator and simulated recordings; supervision: the ROS-free logic of the nodes; commands: the CLI;
ros: the rclpy shell; cli: the entry point."""
RANK = {name: i for i, name in enumerate(LAYERS)}


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, ast.parse(path.read_text(), filename=str(path))


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[1] in RANK else None


def _imports(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("payload_estimator"):
            yield node.module, [a.name for a in node.names]
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("payload_estimator"):
                    yield alias.name, []


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for module, tree in _modules():
        mine = _layer(module)
        for target, _ in _imports(tree):
            theirs = _layer(target)
            if mine and theirs and RANK[theirs] > RANK[mine]:
                upward.append(f"{module} imports {target}")
    assert not upward, "\n".join(upward)


def test_no_private_name_crosses_modules():
    crossing = [f"{module} imports {target}.{name}" for module, tree in _modules()
                for target, names in _imports(tree) for name in names
                if name.startswith("_") and not name.startswith("__") and target != module]
    assert not crossing, "\n".join(crossing)


def test_everything_but_the_ros_shell_imports_without_ros():
    modules = [m for m, _ in _modules() if _layer(m) != "ros" and not m.endswith("__main__")]
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "assert 'rclpy' not in sys.modules, 'rclpy was imported'\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_one_estimator_registry():
    assert METHODS == tuple(ESTIMATORS) and len(METHODS) >= 5
    settings_fields = {f.name for f in fields(Settings)}
    for name, cls in ESTIMATORS.items():
        assert issubclass(cls, Estimator) and cls.name == name and cls.summary
        assert set(cls.settings_options.values()) <= settings_fields, name
        params = list(inspect.signature(cls.__init__).parameters.values())[1:]
        positional = [p.name for p in params
                      if p.kind not in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)]
        assert positional == (["points_in_sensor"] if cls.needs_points else []), (name, positional)
        # an estimator that refines another (pmd-divide) forwards **options to its parent's constructor
        known = {p.name for k in cls.__mro__ if issubclass(k, Estimator)
                 for p in list(inspect.signature(k.__init__).parameters.values())[1:]}
        assert set(cls.settings_options) <= known, name
    choices = {f.name: f.metadata["choices"] for f in fields(Settings)}
    assert choices["estimator"] == METHODS


def test_one_robot_registry():
    assert ROBOT_NAMES == tuple(ROBOTS)
    choices = {f.name: f.metadata["choices"] for f in fields(Settings)}
    assert choices["robot"] == ("",) + ROBOT_NAMES
    settings_fields = {f.name for f in fields(Settings)}
    for name, spec in ROBOTS.items():
        assert spec.name == name and spec.parameters["robot"] == name
        assert set(spec.parameters) <= settings_fields, name


@pytest.mark.parametrize("command", ["estimate", "demo", "replay"])
def test_the_command_line_offers_what_the_registries_hold(command, capsys):
    from payload_estimator.cli import main

    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())
    flag = "--estimator"  # one name for the estimator choice, the setting's
    assert flag in text and "--method" not in text
    # every registered name offered: as argparse's {a,b,...} or, where the usage line would pass 80 columns,
    # listed in the option's help ("name: what it is")
    squeezed = text.replace(" ", "")
    assert "{" + ",".join(METHODS) + "}" in squeezed or all(f"{m}:" in text for m in METHODS), (command, flag)
    if command != "estimate":
        assert "{" + ",".join(ROBOT_NAMES) + "}" in squeezed or ", ".join(ROBOT_NAMES) in text, command


def test_every_exception_class_is_in_the_errors_module():
    """One module of exceptions: a class deriving from an exception anywhere else is a second home."""
    import builtins

    builtin_errors = {name for name in dir(builtins) if name.endswith(("Error", "Exception"))}
    elsewhere = []
    for module, tree in _modules():
        if module == "payload_estimator.errors":
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                bases = {b.id if isinstance(b, ast.Name) else getattr(b, "attr", "") for b in node.bases}
                if bases & builtin_errors or any(b.endswith(("Error", "Exception")) for b in bases if b):
                    elsewhere.append(f"{module}.{node.name}")
    assert not elsewhere, "\n".join(elsewhere)


def test_one_standard_gravity():
    """9.80665 is written once (core.samples.STANDARD_GRAVITY); everything else imports it."""
    found = [str(path) for path in PACKAGE.rglob("*.py") if "9.80665" in path.read_text()
             and path.name != "samples.py"]
    assert not found, found


@pytest.mark.parametrize("command", ["estimate", "demo", "replay"])
def test_every_estimator_setting_is_an_option_of_every_command_that_estimates(command, capsys):
    """A new estimator option is its class's ``settings_options`` plus one settings field: the commands offer it."""
    from payload_estimator.cli import main
    from payload_estimator.commands.options import option_name
    from payload_estimator.settings import ESTIMATOR_SETTINGS

    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = capsys.readouterr().out
    assert ESTIMATOR_SETTINGS and all(option_name(name) in text for name in ESTIMATOR_SETTINGS), ESTIMATOR_SETTINGS


def test_no_source_is_a_string_compared_in_the_code():
    """The wrench and motion sources are enums with registries (pipeline/sources): the code looks them up or
    reads their properties, and never compares a setting's text."""
    compared = []
    for module, tree in _modules():
        for node in ast.walk(tree):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            names = {s.attr for s in sides if isinstance(s, ast.Attribute)}
            literal = any(isinstance(s, ast.Constant) and isinstance(s.value, str) for s in sides)
            if literal and names & {"wrench_source", "motion_source"}:
                compared.append(f"{module}:{node.lineno}")
    assert not compared, compared


def test_no_two_modules_share_a_name():
    """A module's file name says what it is, once: ``bag.py`` in two layers is two things with one name."""
    names: dict[str, list[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        if path.name not in ("__init__.py", "__main__.py"):
            names.setdefault(path.name, []).append(str(path.relative_to(PACKAGE)))
    assert not {n: p for n, p in names.items() if len(p) > 1}


def test_every_name_the_launch_files_and_scripts_import_from_the_package_exists():
    """Launch files, scripts, examples and benchmarks are not imported by the ROS-free tests: a module
    moved or a name renamed breaks them unseen (a launch file once imported a function from the module
    it had left). Every ``from payload_estimator... import name`` in them must resolve."""
    import importlib

    root = PACKAGE.parent
    files = [p for folder in ("launch", "scripts", "examples", "benchmarks") for p in sorted((root / folder).glob("*"))
             if p.is_file() and (p.suffix == ".py" or p.read_bytes().startswith(b"#!/usr/bin/env python"))]
    assert any(p.parent.name == "launch" for p in files)
    missing = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("payload_estimator")):
                continue
            if node.module.split(".")[1:2] in (["ros"], ["msg"], ["srv"], ["action"]):
                continue  # the rclpy shell and the generated interfaces exist only with ROS (test/ros)
            module = importlib.import_module(node.module)
            missing += [f"{path.relative_to(root)}: {node.module}.{alias.name}" for alias in node.names
                        if not hasattr(module, alias.name)
                        and not (hasattr(module, "__path__")
                                 and importlib.util.find_spec(f"{node.module}.{alias.name}") is not None)]
    assert not missing, missing
