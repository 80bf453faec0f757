"""benchmarks/gate.py, CI's accuracy gate: a worsening beyond tolerance, a missing figure or an entry without
a reason fails; an improvement and a move within tolerance pass; --update rewrites values with the reason.

The scripts are loaded from their files (benchmarks are not a package).
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def gate():
    sys.path.insert(0, str(BENCHMARKS))  # as when run as a script: figures.py beside it
    try:
        yield _load("gate")
    finally:
        sys.path.remove(str(BENCHMARKS))


def _entry(value: float, tolerance: float, worse: str = "higher", why: str = "measured") -> dict:
    return {"value": value, "tolerance": tolerance, "worse": worse, "why": why}


BASELINE = {
    "bench.mass_pct": _entry(1.0, 0.1),
    "bench.detected_pct": _entry(90.0, 0.0, worse="lower"),
}


def _verdicts(gate, figures: dict, baseline: dict = BASELINE) -> tuple[dict, bool]:
    rows, ok = gate.compare(baseline, figures)
    return {r[0]: r[4] for r in rows}, ok


def test_a_worsening_beyond_tolerance_fails(gate):
    verdicts, ok = _verdicts(gate, {"bench.mass_pct": 1.11, "bench.detected_pct": 90.0})
    assert not ok and verdicts["bench.mass_pct"] == "FAIL: worse" and verdicts["bench.detected_pct"] == "ok"
    verdicts, ok = _verdicts(gate, {"bench.mass_pct": 1.0, "bench.detected_pct": 87.5})  # lower is worse here
    assert not ok and verdicts["bench.detected_pct"] == "FAIL: worse"


def test_a_move_within_tolerance_passes(gate):
    for mass in (0.95, 1.0, 1.1):  # 1.1: at the tolerance's edge
        verdicts, ok = _verdicts(gate, {"bench.mass_pct": mass, "bench.detected_pct": 90.0})
        assert ok and verdicts["bench.mass_pct"] == "ok", mass


def test_an_improvement_passes_with_a_note(gate):
    verdicts, ok = _verdicts(gate, {"bench.mass_pct": 0.5, "bench.detected_pct": 100.0})
    assert ok and all(v.startswith("better") for v in verdicts.values())


def test_a_missing_or_unreadable_figure_fails(gate):
    verdicts, ok = _verdicts(gate, {"bench.mass_pct": 1.0})
    assert not ok and verdicts["bench.detected_pct"].startswith("FAIL: missing")
    verdicts, ok = _verdicts(gate, {"bench.mass_pct": None, "bench.detected_pct": 90.0})
    assert not ok and verdicts["bench.mass_pct"].startswith("FAIL")


def test_an_entry_without_a_reason_fails(gate):
    baseline = {**BASELINE, "bench.com_mm": _entry(2.0, 0.1, why=" ")}
    verdicts, ok = _verdicts(gate, {"bench.mass_pct": 1.0, "bench.detected_pct": 90.0, "bench.com_mm": 2.0},
                             baseline)
    assert not ok and "no why" in verdicts["bench.com_mm"]


def test_a_figure_the_baseline_lacks_is_listed_not_gated(gate):
    verdicts, ok = _verdicts(gate, {"bench.mass_pct": 1.0, "bench.detected_pct": 90.0, "other.com_mm": 9.0})
    assert ok and verdicts["other.com_mm"].startswith("new")


def test_the_command_line_exit_status_and_update(gate, tmp_path, capsys):
    baseline, figures = tmp_path / "baseline.json", tmp_path / "figures.json"
    baseline.write_text(json.dumps({"figures": BASELINE}))
    figures.write_text(json.dumps({"bench.mass_pct": 1.5, "bench.detected_pct": 90.0, "bench.false_changes_count": 0}))
    assert gate.main([str(figures), "--baseline", str(baseline)]) == 1
    assert "| bench.mass_pct | 1 | 1.5 | 0.1 | FAIL: worse |" in capsys.readouterr().out
    with pytest.raises(SystemExit):  # an update must say why
        gate.main([str(figures), "--baseline", str(baseline), "--update"])
    assert gate.main([str(figures), "--baseline", str(baseline), "--update", "--why", "a trade-off"]) == 0
    entries = json.loads(baseline.read_text())["figures"]
    assert entries["bench.mass_pct"] == _entry(1.5, 0.1, why="a trade-off")  # the tolerance kept
    assert entries["bench.detected_pct"] == BASELINE["bench.detected_pct"]  # unchanged: its reason kept
    assert entries["bench.false_changes_count"] == _entry(0, 0.0, why="a trade-off")  # new: counts exact
    assert gate.main([str(figures), "--baseline", str(baseline)]) == 0


def test_new_figures_get_their_direction_and_tolerance_from_their_name(gate):
    assert gate.worse_direction("x.detected_pct") == "lower" and gate.worse_direction("x.within_2sd_pct") == "lower"
    assert gate.worse_direction("x.mass_pct") == "higher" and gate.worse_direction("x.false_alarms_pct") == "higher"
    assert gate.default_tolerance("x.missed_count", 3) == 0.0
    assert gate.default_tolerance("x.false_alarms_pct", 25.0) == 0.0
    assert gate.default_tolerance("x.mass_pct", 2.0) == pytest.approx(0.1)
    assert gate.default_tolerance("x.com_mm", 0.1) == pytest.approx(0.01)


def test_the_benchmarks_write_their_figures_into_one_object(gate, tmp_path):
    figures = _load("figures")
    path = tmp_path / "figures.json"
    figures.write(path, {figures.name("real_objects", "moderate", "PMD, own cloud", "mass_pct"): 0.7412345678})
    figures.write(path, {"drift.pmd.com_pct": float("nan")})
    figures.write(None, {"ignored": 1.0})
    assert json.loads(path.read_text()) == {"drift.pmd.com_pct": None,
                                            "real_objects.moderate.pmd_own_cloud.mass_pct": 0.741235}
