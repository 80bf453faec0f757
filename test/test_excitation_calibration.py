"""The motion for calibrating the unloaded arm (``excitation.calibration``, ``excite --for calibration``)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from payload_estimator.cli import main
from payload_estimator.excitation import (
    ArmLimits,
    ExcitationError,
    arm_information,
    calibration_limits,
    check_trajectory,
    design_calibration_motion,
    flange_kinematics,
)
from payload_estimator.excitation.calibration import CALIBRATION_DURATION_S
from payload_estimator.excitation.trajectory import read_trajectory_csv
from payload_estimator.pipeline.arm_dynamics import ArmPrior
from payload_estimator.robots import get_robot
from payload_estimator.sim.trajectories import PaperWristSinusoids, ThesisSinusoids

SHORT = calibration_limits(duration=8.0)
"""A short calibration motion keeps the determinism checks quick."""


@pytest.fixture(scope="module")
def xarm7():
    """The default calibration motion of the xArm 7 from home (30 s, seed 0), its kinematics and limits."""
    spec = get_robot("xarm7")
    kin, arm = flange_kinematics("xarm7"), ArmLimits.from_robot(spec)
    return design_calibration_motion(kin, arm, spec.q_home), kin, arm


def test_the_calibration_motion_keeps_every_limit_and_returns_to_rest_at_the_start(xarm7):
    motion, kin, arm = xarm7
    assert motion.trajectory.duration == CALIBRATION_DURATION_S
    check = check_trajectory(motion.trajectory, kin, arm, motion.q_start, motion.limits)  # 1 kHz, every constraint
    assert check.ok, check.violations
    assert motion.check.ok and check.peak_tcp_speed <= motion.limits.max_tcp_speed
    q, dq, ddq = motion.trajectory(np.array([0.0, motion.trajectory.duration]))
    assert np.allclose(q, motion.q_start, atol=1e-9) and np.allclose(dq, 0.0) and np.allclose(ddq, 0.0)


def test_every_joint_moves_both_ways_over_a_range_of_speeds(xarm7):
    motion, kin, _ = xarm7
    t = np.linspace(0.0, motion.trajectory.duration, 6001)
    q, dq, _ = motion.trajectory(t)
    # measured: peaks 0.25-0.90 rad/s each way, 21-38 % of the time above 0.1 rad/s each way, 16-34 % below
    # 0.05 rad/s, sweeps of 0.74-2.2 rad
    assert np.all(dq.min(axis=0) < -0.2) and np.all(dq.max(axis=0) > 0.2), (dq.min(axis=0), dq.max(axis=0))
    assert np.all(np.mean(dq > 0.1, axis=0) > 0.15) and np.all(np.mean(dq < -0.1, axis=0) > 0.15)
    assert np.all(np.mean(np.abs(dq) < 0.05, axis=0) > 0.1)  # and near zero: the Coulomb transition
    assert np.all(np.ptp(q, axis=0) > 0.5)  # poses spread: every joint sweeps more than 0.5 rad
    info = motion.information
    assert np.allclose(info.speed_min, dq.min(axis=0), atol=0.02) and np.allclose(info.speed_max, dq.max(axis=0),
                                                                                   atol=0.02)


def test_the_design_tells_the_calibration_more_than_the_sinusoids_of_the_same_length(xarm7):
    motion, kin, arm = xarm7
    spec = get_robot("xarm7")
    designed = motion.information
    thesis = arm_information(ThesisSinusoids(spec, duration=CALIBRATION_DURATION_S), kin, arm=arm)
    paper = arm_information(PaperWristSinusoids(spec, duration=CALIBRATION_DURATION_S), kin, arm=arm)
    # measured (ArmPrior's friction std 1): 278 against 233 (Lambert's) and 167 (Nadeau et al.'s, the wrist only)
    assert designed.log_det_gain > thesis.log_det_gain + 20.0
    assert thesis.log_det_gain > paper.log_det_gain + 30.0
    assert designed.better_than_prior > thesis.better_than_prior
    assert designed.identifiable >= thesis.identifiable
    # the wrist sinusoids leave joints 1-4 at rest: their friction stays at the prior; the design learns it
    # (measured: viscous std at most 0.89 of the prior's, Coulomb at most 0.25 of the prior's)
    prior = ArmPrior().friction
    at_prior = paper.coulomb_std[0]
    assert np.all(paper.viscous_std[:4] > 0.99 * prior) and np.allclose(paper.coulomb_std[:4], at_prior)
    assert np.all(designed.viscous_std < 0.95 * prior) and np.all(designed.coulomb_std < 0.5 * at_prior)
    assert np.mean(np.log(designed.coulomb_std)) < np.mean(np.log(thesis.coulomb_std))


def test_more_effort_noise_predicts_larger_friction_stds(xarm7):
    motion, kin, _ = xarm7
    quiet = arm_information(motion.trajectory, kin, effort_std=0.1)
    noisy = arm_information(motion.trajectory, kin, effort_std=1.0)
    assert np.all(noisy.coulomb_std > quiet.coulomb_std) and noisy.log_det_gain < quiet.log_det_gain


@pytest.mark.slow
def test_the_same_seed_gives_the_same_motion_and_another_seed_another():
    spec = get_robot("panda")
    kin, arm = flange_kinematics("panda"), ArmLimits.from_robot(spec)
    a = design_calibration_motion(kin, arm, spec.q_home, SHORT, seed=3)
    b = design_calibration_motion(kin, arm, spec.q_home, SHORT, seed=3)
    c = design_calibration_motion(kin, arm, spec.q_home, SHORT, seed=4)
    assert np.array_equal(a.trajectory.coefficients, b.trajectory.coefficients)
    assert a.information.log_det_gain == b.information.log_det_gain
    assert not np.allclose(a.trajectory.coefficients, c.trajectory.coefficients)
    assert a.check.ok and c.check.ok


def test_a_start_that_cannot_move_safely_is_refused_in_one_line():
    spec = get_robot("panda")
    start = np.array(spec.q_home)
    start[3] = spec.q_max[3] - 0.01
    with pytest.raises(ExcitationError, match="within the margin") as info:
        design_calibration_motion(flange_kinematics("panda"), ArmLimits.from_robot(spec), start, SHORT)
    assert "\n" not in str(info.value)


def test_excite_for_calibration_writes_a_csv_and_a_summary(tmp_path, capsys):
    out = tmp_path / "calibration.csv"
    assert main(["excite", "--for", "calibration", "--robot", "panda", "--duration", "8", "--out", str(out),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["purpose"] == "calibration" and summary["ok"] and summary["duration_s"] == 8.0
    info = summary["information"]
    assert len(info["viscous_std"]) == 7 and info["directions_better_than_prior"] > 0
    assert summary["thesis"]["information"]["log_det_gain"] < info["log_det_gain"]
    names, t, q = read_trajectory_csv(out)
    assert names == get_robot("panda").joint_names and t[-1] == pytest.approx(8.0, abs=0.01)
    assert np.allclose(q[0], get_robot("panda").q_home) and np.allclose(q[-1], get_robot("panda").q_home, atol=1e-6)


def test_excite_for_calibration_prints_a_table(capsys):
    assert main(["excite", "--for", "calibration", "--robot", "xarm6", "--duration", "6"]) == 0
    text = capsys.readouterr().out
    for words in ("Calibration motion for xarm6", "speeds rad/s", "directions known better than the URDF",
                  "all limits respected", "thesis"):
        assert words in text, words


@pytest.mark.parametrize("argv", [["--payload", "drill"], ["--no-bias"]])
def test_payload_options_with_for_calibration_are_one_line_and_exit_2(capsys, argv):
    assert main(["excite", "--for", "calibration", *argv]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "applies to --for payload" in err
