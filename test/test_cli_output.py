"""What the commands print when their output is a file or another program, and where they write."""

from __future__ import annotations

import argparse
import dataclasses
import io
import re
from pathlib import Path

import numpy as np
import pytest

from payload_estimator.cli import main
from payload_estimator.commands.common import PIPED_WIDTH, default_out_dir, make_console

SAMPLES = Path(__file__).resolve().parents[1] / "examples" / "samples.csv"
HAMMER_SHAPE = "box:0.25,0.05,0.04@0.06,0,0.02"  # the envelope of the object in examples/samples.csv


def run_cli(argv: list[str]) -> int:
    try:
        return main([str(a) for a in argv])
    except SystemExit as exc:
        return int(exc.code or 0)


def test_piped_output_is_not_wrapped_at_80_columns():
    """A URDF line or a table row is one line in a file, not cut at rich's 80 columns."""
    console = make_console()
    assert not console.is_terminal  # pytest captures the output
    assert console.width == PIPED_WIDTH
    line = '  <inertia ixx="0.00291847" ixy="-5.61025e-07" ixz="-0.000219198" iyy="0.00348778" iyz="-1.50392e-05"/>'
    console.file = io.StringIO()
    console.print(line, markup=False, highlight=False)
    assert console.file.getvalue() == line + "\n"


def test_the_tests_never_write_into_the_users_cache():
    assert not default_out_dir("demo").is_relative_to(Path.home() / ".cache")


def test_an_empty_gripper_has_no_centre_of_mass_to_print():
    """PMD on an empty gripper (the wrench is noise only) puts the mass on its bound, 0, and the data say
    zero within grams: no payload. The table says the COM and inertia do not apply instead of printing
    m c / m = 0 / 0 as nan."""
    import numpy as np

    from payload_estimator.core.estimators import make_estimator
    from payload_estimator.core.inertia import InertialParameters
    from payload_estimator.core.noise import TABLE_II
    from payload_estimator.core.shapes import parse_shape_spec, sample_points
    from payload_estimator.outputs.report import estimate_table
    from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

    nothing = InertialParameters.zero()
    samples, _ = simulate_wrist(nothing, WristTrajectory(0.6), duration=4.0, noise=TABLE_II["moderate"],
                                rng=np.random.default_rng(2))
    estimator = make_estimator("pmd", sample_points(parse_shape_spec("box:0.1,0.1,0.1@0,0,0.05")))
    estimator.update(samples)
    estimate = estimator.estimate()
    console = make_console()
    console.file = io.StringIO()
    console.print(estimate_table(estimate))
    text = console.file.getvalue()
    assert estimate.mass == 0.0 and not np.any(np.isfinite(estimate.com))  # this seed's noise: on the bound
    assert estimate.identification.empty
    assert text.count("n/a (no payload)") == 9 and "nan" not in text


# ------------------------------------------------------------------ --help in the user's words

COMMANDS = ("", "estimate", "demo", "simulate", "replay", "excite", "calibrate")
ALL_CAPS = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+\b")
"""A constant's name (``CALIBRATION_DURATION_S``); an option's metavar of that form is argparse's own."""
ITALIC = re.compile(r"(?:^|\s)\*[A-Za-z][^*]{0,80}?[A-Za-z.]\*(?=[\s.,;:)]|$)")


def _subparsers() -> dict[str, argparse.ArgumentParser]:
    from payload_estimator.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return {"": parser, **sub.choices}


def _metavars(parser: argparse.ArgumentParser) -> set[str]:
    names = set()
    for action in parser._actions:
        metavar = action.metavar if isinstance(action.metavar, str) else action.dest.upper()
        names.update(re.findall(r"[A-Z][A-Z0-9_]*", metavar))
    return names


@pytest.mark.parametrize("command", COMMANDS)
def test_help_is_plain_words_within_80_columns(capsys, monkeypatch, command):
    """Every command's --help in an 80-column terminal: no line longer, no markup (bold, italics, code
    quotes, literal-block markers), no module paths, constants or scripts of the source tree (a pip
    install has no benchmarks/)."""
    monkeypatch.setenv("COLUMNS", "80")
    assert run_cli([command, "--help"] if command else ["--help"]) == 0
    out = capsys.readouterr().out
    long = [line for line in out.splitlines() if len(line) > 80]
    assert not long, long
    assert "**" not in out and not ITALIC.search(out), ITALIC.search(out)
    assert not re.search(r"`[^`\n]+`", out) and not re.search(r"::(\s|$)", out)
    assert "payload_estimator." not in out and "benchmarks/" not in out
    constants = set(ALL_CAPS.findall(out)) - _metavars(_subparsers()[command]) - {"XDG_CACHE_HOME"}
    assert not constants, constants
    for internal in ("EstimationStream", "build_stream", "calibrate_arm", "SimulatedRun", "C1_DEFAULT"):
        assert internal not in out, internal


@pytest.mark.parametrize("command", COMMANDS)
def test_every_option_says_what_it_does(command):
    parser = _subparsers()[command]
    bare = [a.option_strings for a in parser._actions if a.option_strings and not a.help]
    assert not bare, bare


def test_help_states_the_demos_calibration_duration(capsys, monkeypatch):
    """The demo's description gives the calibration motion's length in seconds, the constant's value."""
    from payload_estimator.commands.demo import CALIBRATION_DURATION_S

    monkeypatch.setenv("COLUMNS", "80")
    assert run_cli(["demo", "--help"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert f"all joints, {CALIBRATION_DURATION_S:g} s)" in out


def test_a_description_keeps_its_paragraphs_and_commands():
    """Paragraphs are re-filled to the width; an indented command is kept as written."""
    from payload_estimator.cli import ParagraphHelpFormatter

    text = ("first paragraph, " * 10).strip() + "\n\nsecond ``code`` one\n\n    $ a command \\\n        --option\n"
    filled = ParagraphHelpFormatter("prog", width=40)._fill_text(text, 40, "")
    paragraphs = filled.split("\n\n")
    assert len(paragraphs) == 3 and all(len(line) <= 40 for line in filled.splitlines())
    assert paragraphs[1] == "second code one"
    assert paragraphs[2] == "    $ a command \\\n        --option"


# ------------------------------------------------------------------ the quality report


def _estimate_output(capsys, *options: str) -> str:
    assert run_cli(["estimate", str(SAMPLES), "--bias", *options]) == 0
    return capsys.readouterr().out


def _rows(text: str, title: str) -> list[list[str]]:
    """The cells of the rows of the table titled ``title`` in ``text``."""
    lines = text.splitlines()
    start = lines.index(next(line for line in lines if line.strip().startswith(title)))
    rows = []
    for line in lines[start + 1:]:
        if line.startswith("└"):
            break
        if line.startswith("│"):
            rows.append([cell.strip() for cell in line.strip("│").split("│")])
    return rows


def test_quality_report_of_pmd_with_a_shape(capsys):
    """The shipped sample with its shape: mass and COM from the data, the inertia from the shape, and the
    table says just that (never "not identifiable" beside "not identified: none"); the stds have no sign;
    the figures behind the model fit and the dynamism only with --verbose."""
    out = _estimate_output(capsys, "--shape", HAMMER_SHAPE)
    quality = dict(_rows(out, "Quality"))
    assert quality["determined by the data"] == "mass and COM"
    assert quality["from the payload's shape"] == "inertia"
    assert quality["not determined"] == "none"
    assert quality["model fit"] in ("good", "POOR") and quality["physically consistent"] == "yes"
    assert "identifiable" not in out and "prior-driven" not in out and "eq. 4" not in out
    assert "persistence" not in out and "dynamism" not in out and "excess" not in out
    assert not re.search(r"[+-]\d", quality["residual RMS force (N)"] + quality["residual RMS torque (N m)"])
    stds = [row[-1] for row in _rows(out, "Payload estimate")]
    assert len(stds) == 10 and all(stds) and not any(s.startswith(("+", "-")) for s in stds), stds
    assert "note: the inertia comes from the payload's shape" in out
    verbose = _estimate_output(capsys, "--shape", HAMMER_SHAPE, "--verbose")
    quality = dict(_rows(verbose, "Quality"))
    assert "persistence" in quality["model fit"] and float(quality["mean dynamism"]) > 0


def test_quality_report_of_wls_says_what_to_do(capsys):
    """WLS on the shipped sample is not physically consistent and does not determine the inertia: the
    table says so without contradiction, and a line says what to do (pmd with the shape, or more motion)."""
    out = _estimate_output(capsys, "--estimator", "wls")
    quality = dict(_rows(out, "Quality"))
    assert quality["not determined"] == "inertia" and "inertia" not in quality["determined by the data"]
    assert quality["physically consistent"] == "NO"
    todo = [line for line in out.splitlines() if line.startswith("what to do:")]
    assert any("not physically consistent" in line and "pmd" in line and "--shape" in line for line in todo), todo
    assert any("do not determine the inertia" in line and "excite" in line for line in todo), todo
    assert "no URDF fragment" in out


def test_next_steps_name_nothing_to_do_for_an_identified_consistent_estimate():
    from payload_estimator.core.results import IDENTIFIED, Identification
    from payload_estimator.outputs.report import convergence_hint, next_steps

    estimate = _sample_estimate("pmd")
    fully = dataclasses.replace(estimate, identification=Identification(IDENTIFIED, (IDENTIFIED,) * 3, IDENTIFIED))
    assert fully.physically_consistent and next_steps(fully) == []
    assert next_steps(estimate, shape_option="")[0].startswith("note: the inertia comes from the payload's shape")
    assert convergence_hint("mass uncertainty 3.0 %") and convergence_hint("model fit poor: a contact") == ""


def _sample_estimate(name: str):
    from payload_estimator.core.estimators import make_estimator
    from payload_estimator.core.shapes import parse_shape_spec, sample_points
    from payload_estimator.io.samples_file import read_samples

    estimator = make_estimator(name, sample_points(parse_shape_spec(HAMMER_SHAPE)))
    estimator.update(read_samples(SAMPLES).samples)
    return estimator.estimate()


# ------------------------------------------------------------------ warnings never ask for what was given


def _calibration(**info: object):
    from payload_estimator.pipeline.arm_model import ArmCalibration

    body = np.array([1.0, 0.0, 0.0, 0.0, 0.01, 0.0, 0.0, 0.01, 0.0, 0.01])
    return ArmCalibration(robot="", joint_names=("j1", "j2"), body_joints=("j1", "j2"),
                          body_parameters=np.stack([body, body]), viscous=np.zeros(2),
                          coulomb=np.zeros((2, 3)), offset=np.zeros(2), effort_scale=np.ones(2),
                          residual_std=np.full(2, 0.1),
                          info={"effort_scale_determined": [True, False], "effort_scale_std": [0.01, 0.2],
                                "load_friction_determined": [False, False], **info})


def test_a_calibration_with_a_known_payload_does_not_ask_for_one():
    """A scale (or load friction) the recordings did not determine: without a known payload the warning asks
    for one (calibrate --known-payload-bag); with one given, it asks for a payload that loads the joints more."""
    unloaded = _calibration().caveats()
    assert len(unloaded) == 2 and all("--known-payload-bag" in line for line in unloaded), unloaded
    for info in ({"known_payload_bag": "weight_bag", "known_payload_mass": 2.0}, {"known_payload_mass": 2.0}):
        given = _calibration(**info).caveats()
        assert len(given) == 2, given
        assert not any("--known-payload-bag" in line or "known_payload_mass" in line for line in given), given
        assert all("loads these joints more" in line for line in given), given
