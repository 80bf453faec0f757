"""The identification motion: limits, every constraint checked, the design, its prediction, ``excite``."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from payload_estimator.cli import main
from payload_estimator.excitation import (
    ArmLimits,
    ExcitationError,
    FourierExcitation,
    MotionLimits,
    check_trajectory,
    design_excitation,
    flange_kinematics,
    predict_uncertainty,
)
from payload_estimator.excitation.check import trajectory_grid
from payload_estimator.excitation.trajectory import read_trajectory_csv
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.robots import ROBOT_NAMES, get_robot, robot_urdf
from payload_estimator.sim.trajectories import PaperWristSinusoids

SHORT = MotionLimits(duration=3.0)
"""A short motion keeps the designs in these tests quick (3 harmonics)."""


@pytest.fixture(scope="module")
def designs():
    """A 3 s design from home for every built-in robot (seed 0), and a second one of the Panda's."""
    out = {}
    for robot in ROBOT_NAMES:
        spec = get_robot(robot)
        out[robot] = design_excitation(flange_kinematics(robot), ArmLimits.from_robot(spec), spec.q_home, SHORT)
    return out


# ------------------------------------------------------------------ limits
def test_vendor_limits_carry_acceleration_and_jerk():
    panda = ArmLimits.from_robot("panda")
    assert panda.ddq_max[1] == 7.5 and panda.dddq_max[1] == 3750.0  # FCI: joint 2 is the slowest
    assert ArmLimits.from_robot("fr3").ddq_max.tolist() == [10.0] * 7
    assert ArmLimits.from_robot("xarm6").n_joints == 6


def test_limits_of_an_arm_known_by_its_urdf_alone():
    kin = SensorKinematics(robot_urdf("xarm7"), "link_eef")
    arm = ArmLimits.from_kinematics(kin)
    spec = get_robot("xarm7")
    assert np.allclose(arm.q_min, spec.q_min) and np.allclose(arm.dq_max, spec.dq_max)
    assert np.all(arm.ddq_max <= spec.ddq_max)  # the defaults are below every published limit


@pytest.mark.parametrize("bad", [dict(duration=0.0), dict(max_tcp_speed=-1.0), dict(velocity_fraction=1.5),
                                 dict(payload_radius=-0.1), dict(floor_height=float("nan"))])
def test_motion_limits_refuse_nonsense(bad):
    with pytest.raises(ExcitationError):
        MotionLimits(**bad)


def test_a_goal_overrides_only_what_it_sets():
    base = MotionLimits()
    assert base.with_overrides(duration=0.0, max_tcp_speed=None) == base  # 0 / None: the default
    assert base.with_overrides(duration=7.0).duration == 7.0


# -------------------------------------------------------------- the checks
def _panda():
    spec = get_robot("panda")
    return spec, flange_kinematics("panda"), ArmLimits.from_robot(spec)


def _one_joint(joint: int, amplitude: float, duration: float = 4.0, n: int = 7) -> np.ndarray:
    C = np.zeros((2, n))
    C[0, joint] = amplitude
    return C


@pytest.mark.parametrize("joint, amplitude, limits, words", [
    (6, 0.3, MotionLimits(), None),  # the wrist turning: admissible
    (6, 0.3, MotionLimits(velocity_fraction=0.05), "panda_joint7 speed"),
    (6, 0.3, MotionLimits(acceleration_fraction=0.01), "panda_joint7 acceleration"),
    (6, 0.3, MotionLimits(jerk_fraction=1e-4), "panda_joint7 jerk"),
    (6, 0.3, MotionLimits(max_excursion=0.1), "leaves its start"),
    (0, 0.6, MotionLimits(), "the TCP moves at"),
    (1, 0.8, MotionLimits(floor_height=0.3), "below the floor plane"),
    (3, -1.0, MotionLimits(), "too close to the robot's base"),
    (5, -1.6, MotionLimits(), "panda_joint6 comes within"),
])
def test_every_constraint_is_checked_on_the_sampled_motion(joint, amplitude, limits, words):
    spec, kin, arm = _panda()
    traj = FourierExcitation(spec.q_home, _one_joint(joint, amplitude), 4.0, 0.5)
    check = check_trajectory(traj, kin, arm, spec.q_home, limits)
    if words is None:
        assert check.ok, check.violations
    else:
        assert not check.ok and any(words in v for v in check.violations), check.violations


def test_a_motion_that_does_not_return_to_rest_at_the_start_is_refused():
    spec, kin, arm = _panda()
    paper = PaperWristSinusoids(spec, duration=5.0)  # ends wherever the sinusoids are at 5 s
    check = check_trajectory(paper, kin, arm, spec.q_home, MotionLimits())
    assert any("the end is not the start" in v for v in check.violations)


# -------------------------------------------------------------- the series
def test_the_series_derivatives_are_those_of_its_positions():
    rng = np.random.default_rng(3)
    traj = FourierExcitation(np.zeros(3), 0.1 * rng.normal(size=(6, 3)), 4.0, 0.6, harmonics=[1, 2, 4])
    t = np.linspace(0.0, 4.0, 40001)
    q, dq, ddq = traj(t)
    h = t[1] - t[0]
    assert np.allclose(np.gradient(q, h, axis=0)[1:-1], dq[1:-1], atol=1e-6)
    assert np.allclose(np.gradient(dq, h, axis=0)[1:-1], ddq[1:-1], atol=1e-5)
    # the snap jumps where the blends end: a central difference is off by O(h) there
    assert np.allclose(np.gradient(ddq, h, axis=0)[2:-2], traj.jerk(t)[2:-2], atol=1e-4 * np.max(np.abs(traj.jerk(t))))
    for k in (0, -1):  # rest at the start configuration at both ends
        assert np.allclose(q[k], 0.0, atol=1e-12) and np.allclose(dq[k], 0.0) and np.allclose(ddq[k], 0.0)


# -------------------------------------------------------------- the design
@pytest.mark.parametrize("robot", ROBOT_NAMES)
def test_a_design_for_every_robot_keeps_every_limit(designs, robot):
    d = designs[robot]
    spec = get_robot(robot)
    assert d.check.ok, d.check.violations
    assert d.check.peak_tcp_speed <= SHORT.max_tcp_speed
    q, dq, ddq = d.trajectory(np.array([0.0, d.trajectory.duration]))
    assert np.allclose(q, spec.q_home) and np.allclose(dq, 0.0) and np.allclose(ddq, 0.0)
    # the check is independent of the design: sampled again, at another rate, it still holds
    again = check_trajectory(d.trajectory, flange_kinematics(robot), ArmLimits.from_robot(spec), spec.q_home,
                             SHORT, rate_hz=2000.0)
    assert again.ok, again.violations
    # it uses what the limits allow: one of them nearly binds
    c = d.check
    used = max(c.peak_tcp_speed / SHORT.max_tcp_speed, np.max(c.peak_velocity_fraction) / SHORT.velocity_fraction,
               np.max(c.peak_acceleration_fraction) / SHORT.acceleration_fraction,
               np.max(c.max_excursion) / SHORT.max_excursion)
    assert used > 0.8


def test_the_same_seed_gives_the_same_motion_and_another_seed_another(designs):
    spec, kin, arm = _panda()
    again = design_excitation(kin, arm, spec.q_home, SHORT, seed=0)
    assert np.array_equal(again.trajectory.coefficients, designs["panda"].trajectory.coefficients)
    other = design_excitation(kin, arm, spec.q_home, SHORT, seed=1)
    assert not np.allclose(other.trajectory.coefficients, again.trajectory.coefficients)


def test_the_design_predicts_more_about_the_inertia_than_the_wrist_sinusoids_of_the_same_length(designs):
    spec, kin, _ = _panda()
    paper = PaperWristSinusoids(spec, duration=SHORT.duration)
    designed = designs["panda"].predicted
    theirs = predict_uncertainty(paper, kin)
    assert np.max(designed.inertia_rel_std) < 0.5 * np.max(theirs.inertia_rel_std)
    assert designs["panda"].condition_number < 1e5


def test_the_prediction_is_the_spread_of_least_squares_estimates(designs):
    """Cramér-Rao for white wrench noise: a Monte Carlo of least squares on exact regressors agrees."""
    from payload_estimator.core.regressor import regressor
    from payload_estimator.excitation.design import nominal_payload

    spec, kin, _ = _panda()
    traj = designs["panda"].trajectory
    payload = nominal_payload()
    predicted = predict_uncertainty(traj, kin, payload, force_std=0.5, torque_std=0.02, sensor_rate_hz=200.0,
                                    estimate_offsets=False)
    t = trajectory_grid(traj.duration, 200.0)
    motion = kin.compute(*traj(t))
    Y = regressor(motion.lin_acc_in_sensor, motion.ang_vel_in_sensor, motion.ang_acc_in_sensor,
                  motion.gravity_in_sensor)
    w = Y @ payload.phi
    rng = np.random.default_rng(0)
    std = np.array([0.5] * 3 + [0.02] * 3)
    A = (Y / std[None, :, None]).reshape(-1, 10)
    masses = [np.linalg.lstsq(A, ((w + rng.normal(size=w.shape) * std) / std).reshape(-1), rcond=None)[0][0]
              for _ in range(300)]
    assert np.std(masses) == pytest.approx(predicted.mass_std, rel=0.15)


def test_an_arm_known_by_its_urdf_alone_gets_a_design():
    urdf = re.sub(r'"joint(\d)"', r'"lab_j\1"', robot_urdf("xarm6"))
    kin = SensorKinematics(urdf, "link_eef")
    d = design_excitation(kin, ArmLimits.from_kinematics(kin), get_robot("xarm6").q_home, SHORT)
    assert d.check.ok and d.joint_names == tuple(f"lab_j{i}" for i in range(1, 7))


@pytest.mark.parametrize("start, limits, words", [
    (lambda q: q + np.r_[3.0, np.zeros(6)], SHORT, "outside its limits"),
    (lambda q: np.r_[2.85, q[1:]], SHORT, "within the margin"),
    (lambda q: q[:5], SHORT, "the start has 5 joint positions"),
    (lambda q: np.r_[np.nan, q[1:]], SHORT, "non-finite"),
    (lambda q: q, MotionLimits(duration=1.0), "too short"),
    (lambda q: q, MotionLimits(duration=3.0, floor_height=0.6), "start pose itself is unsafe"),
])
def test_a_start_or_a_duration_that_cannot_move_safely_is_refused_in_one_line(start, limits, words):
    spec, kin, arm = _panda()
    with pytest.raises(ExcitationError, match=words) as info:
        design_excitation(kin, arm, start(np.array(spec.q_home)), limits)
    assert "\n" not in str(info.value)


# -------------------------------------------------------------- excite CLI
def test_excite_writes_a_csv_and_a_summary(tmp_path, capsys):
    out = tmp_path / "motion.csv"
    assert main(["excite", "--robot", "xarm7", "--duration", "3", "--payload", "drill", "--out", str(out),
                 "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["ok"] and summary["robot"] == "xarm7" and summary["duration_s"] == 3.0
    assert 0.0 < summary["peak_velocity_fraction"] <= 0.5 and summary["peak_tcp_speed_m_s"] <= 0.25
    assert summary["predicted_payload"]["payload"] == "drill"
    assert summary["predicted_payload"]["mass_kg"] == pytest.approx(1.55, rel=0.01)
    assert summary["wrist"]["predicted_nominal"]["inertia_rel_std"]
    names, t, q = read_trajectory_csv(out)
    assert names == get_robot("xarm7").joint_names
    assert np.allclose(np.diff(t), 0.005) and t[-1] == pytest.approx(3.0)
    assert np.allclose(q[0], get_robot("xarm7").q_home) and np.allclose(q[-1], q[0], atol=1e-8)


def test_excite_prints_a_table(capsys):
    assert main(["excite", "--robot", "fr3", "--duration", "2.5", "--payload", "0.5@0,0,0.1"]) == 0
    out = capsys.readouterr().out
    assert "peak TCP speed" in out and "scaled condition number" in out and "0.5@0,0,0.1" in out


@pytest.mark.parametrize("argv, words", [
    (["--start", "0,0,0"], "--start has 3 joint positions"),
    (["--duration", "1"], "too short"),
    (["--start", "2.89,-0.785,0,-2.356,0,1.57,0.785"], "within the margin"),
    (["--dt", "0.02"], "at most 0.01"),
    (["--payload", "nothing"], "unknown payload"),
    (["--urdf", "/no/such.urdf", "--tcp-frame", "x", "--start", "0"], "/no/such.urdf"),
])
def test_excite_bad_input_is_one_line_and_exit_2(capsys, argv, words):
    try:
        status = main(["excite", *argv])
    except SystemExit as exc:  # argparse's own errors
        status = exc.code
    assert status == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and words in err, err


# ------------------------------------------------------- through MuJoCo and the pipeline
@pytest.mark.slow
def test_a_designed_motion_written_by_excite_identifies_the_payload_in_the_demo(tmp_path, capsys):
    """excite --out, then demo --trajectory FILE: MuJoCo tracks the file, the whole pipeline estimates."""
    motion = tmp_path / "motion.csv"
    assert main(["excite", "--robot", "xarm7", "--out", str(motion), "--json"]) == 0
    capsys.readouterr()
    assert main(["demo", "--robot", "xarm7", "--payload", "drill", "--trajectory", str(motion), "--json",
                 "--no-plot", "--out", str(tmp_path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["trajectory"] == "motion.csv" and summary["duration_s"] == pytest.approx(5.0)
    assert summary["trajectory_check"]["ok"], summary["trajectory_check"]
    assert summary["converged"] and summary["status"] == "ok"
    errors = summary["errors_percent"]
    assert errors["mass"] < 1.0 and errors["com"] < 1.0 and errors["inertia"] < 5.0, errors


@pytest.mark.slow
def test_demo_designs_the_optimal_motion_on_the_fly_and_warns_of_an_unsafe_file(tmp_path, capsys):
    assert main(["demo", "--trajectory", "optimal", "--duration", "4", "--json", "--no-plot",
                 "--out", str(tmp_path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["trajectory"] == "optimal" and summary["trajectory_check"]["ok"]
    assert summary["mass_com_converged_after_s"] is not None
    # a file that starts at home and swings joint 1 by 1 rad in 1 s: far too fast for a cobot
    spec = get_robot("panda")
    t = np.arange(0.0, 2.0 + 1e-9, 0.01)
    q = np.tile(spec.q_home, (len(t), 1))
    q[:, 0] += 0.5 * (1.0 - np.cos(np.pi * np.clip(t, 0.0, 1.0)))
    path = tmp_path / "fast.csv"
    from payload_estimator.excitation.trajectory import write_trajectory_csv

    write_trajectory_csv(path, spec.joint_names, t, q)
    assert main(["demo", "--trajectory", str(path), "--no-plot", "--out", str(tmp_path)]) == 0
    assert "warning: the trajectory breaks the motion limits" in capsys.readouterr().out
