"""A real arm's joint torques: the simulator's structured residual and irregular stamps, and a payload tracker
that judges changes against a model's correlated error rather than white noise."""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.core.change_detection import ChangeFit, ResidualCorrelation
from payload_estimator.sim.arm_residual import WRIST_JOINTS, ArmResidual

pytest.importorskip("mujoco")

N_JOINTS = 7


def _joint_path(seconds: float, rate_hz: float = 100.0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    t = np.arange(0.0, seconds, 1.0 / rate_hz)
    f = 0.1 + 0.05 * np.arange(N_JOINTS)
    q = 0.8 * np.sin(2.0 * np.pi * np.outer(t, f))
    dq = 0.8 * 2.0 * np.pi * f * np.cos(2.0 * np.pi * np.outer(t, f))
    return t, q, dq


def test_the_residual_is_the_physical_arms_and_its_drift_each_runs():
    t, q, dq = _joint_path(20.0)
    friction = 0.5 * np.tanh(dq / 0.02)
    a = ArmResidual(seed=3)
    first = a.torque(t, q, dq, friction, np.random.default_rng(1))
    again = a.torque(t, q, dq, friction, np.random.default_rng(1))
    later = a.torque(t, q, dq, friction, np.random.default_rng(2))  # another run of the same arm
    other_arm = ArmResidual(seed=4).torque(t, q, dq, friction, np.random.default_rng(1))
    np.testing.assert_array_equal(first, again)
    assert not np.allclose(first, later)
    # the pose-dependent part is the arm's: two runs differ far less than two arms
    assert np.std(first - later) < 0.8 * np.std(first - other_arm)
    rms = np.sqrt(np.mean(first**2, axis=0))
    assert np.all(rms[: N_JOINTS - WRIST_JOINTS] > 2.0 * rms[N_JOINTS - WRIST_JOINTS:].max())


def test_the_residual_is_correlated_over_seconds_not_white():
    t, q, dq = _joint_path(60.0)
    r = ArmResidual(seed=0).torque(t, q, dq, None, np.random.default_rng(0))
    r = r - r.mean(axis=0)
    lag = 20  # 0.2 s at 100 Hz: white noise would be uncorrelated after one sample
    corr = np.sum(r[lag:] * r[:-lag], axis=0) / np.sum(r * r, axis=0)
    assert np.min(corr) > 0.5


def test_residual_correlation_is_one_for_white_noise_and_large_for_a_models_error():
    rng = np.random.default_rng(0)
    t = np.arange(0.0, 40.0, 0.01)
    white = ResidualCorrelation()
    white.add(t, rng.normal(size=(len(t), 6)), np.eye(6))
    assert white.measured and 0.6 < white.factor() < 1.6
    a = np.exp(-0.01 / 1.0)  # an AR(1) of a second's correlation time, unit variance
    e = rng.normal(size=(len(t), 6))
    slow = np.empty_like(e)
    slow[0] = e[0]
    for i in range(1, len(t)):
        slow[i] = a * slow[i - 1] + np.sqrt(1.0 - a * a) * e[i]
    correlated = ResidualCorrelation()
    correlated.add(t, slow, np.eye(6))
    assert correlated.factor() > 20.0
    assert not ResidualCorrelation().measured and ResidualCorrelation().factor() == 1.0


def test_a_change_to_a_negative_mass_explains_nothing():
    def fit(reference_mass: float, delta_mass: float) -> ChangeFit:
        return ChangeFit(np.zeros((10, 6)), np.zeros((10, 6, 6)), before=100.0, after=6.0,
                         delta=np.array([delta_mass, 0.0, 0.0, 0.0]), covariance=np.diag([0.01**2] * 4), onset=0.0,
                         reference_mass=reference_mass)

    assert fit(0.8, -0.8).explains  # put down: an empty gripper
    assert fit(float("nan"), -0.8).explains  # no reference mass known: not judged
    assert not fit(0.8, -1.6).explains  # a payload lighter than nothing


def test_irregular_stamps_come_every_2_to_30_ms_at_100_hz_on_average():
    from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate

    run = simulate("panda", NO_PAYLOAD, "thesis", duration=3.0, rate_hz=100.0, seed=0, imu=False,
                   irregular_stamps=True)
    gaps = np.diff(run.joint_t)
    assert gaps.min() >= 0.002 - 1e-9 and gaps.max() <= 0.030 + 1e-9
    assert 0.0085 < gaps.mean() < 0.0115 and gaps.std() > 0.003
    assert len(run.joint_t) == len(run.joint_effort)


@pytest.mark.slow
def test_a_calibrated_real_arm_leaves_a_real_arms_residual():
    """After a calibration the residual RMS is 1.5-4 N·m on the shoulder and elbow, 0.3-1 N·m on the wrist (on
    average; a joint the calibration fits better, down to 0.8 and 0.2)."""
    from payload_estimator.pipeline.arm_dynamics import calibrate_arm, joint_recording
    from payload_estimator.pipeline.kinematics import SensorKinematics
    from payload_estimator.sim.efforts import ArmMismatch, EffortModel
    from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate

    efforts = EffortModel.for_robot("panda").with_residual(ArmResidual(seed=0))
    run = simulate("panda", NO_PAYLOAD, "thesis", duration=30.0, seed=1, efforts=efforts,
                   arm_mismatch=ArmMismatch(seed=0), imu=False)
    kinematics = SensorKinematics(run.urdf, run.sensor_frame, run.joint_names)
    _, fit = calibrate_arm(kinematics, joint_recording(run.joint_t, run.joint_q, run.joint_effort), robot="panda")
    big, wrist = fit.rms_calibrated[:-WRIST_JOINTS], fit.rms_calibrated[-WRIST_JOINTS:]
    assert 1.5 <= np.mean(big) <= 4.0 and np.all((big > 0.8) & (big < 4.5)), fit.rms_calibrated
    assert 0.3 <= np.mean(wrist) <= 1.0 and np.all((wrist > 0.2) & (wrist < 1.0)), fit.rms_calibrated


@pytest.mark.slow
def test_the_tracker_raises_no_change_from_a_real_arms_model_error(tmp_path, capsys):
    """Two minutes of one payload on the real-shaped Panda, from its joint torques: no change is raised."""
    import json

    from payload_estimator.cli import main

    status = main(["demo", "--wrench-source", "joint_torques", "--real-arm", "--duration", "120", "--out",
                   str(tmp_path), "--no-plot", "--json", "--estimator", "wls"])
    assert status == 0
    summary = json.loads(capsys.readouterr().out.splitlines()[0])
    assert summary["tracking"]["changes"] == 0 and summary["tracking"]["contacts"] <= 1, summary["tracking"]


@pytest.mark.slow
def test_a_real_urs_currents_get_their_torque_constants_as_first_guess():
    """A UR's currents on a real arm: the torques' variation is lost in the model's error, their level is not."""
    from payload_estimator.pipeline.arm_calibration import _initial_scale
    from payload_estimator.pipeline.arm_dynamics import ArmDynamics, joint_recording
    from payload_estimator.pipeline.kinematics import SensorKinematics
    from payload_estimator.sim.efforts import ArmMismatch, EffortModel
    from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate

    efforts = EffortModel.for_robot("ur10e").with_residual(ArmResidual(seed=0))
    run = simulate("ur10e", NO_PAYLOAD, "thesis", duration=20.0, seed=1, efforts=efforts,
                   arm_mismatch=ArmMismatch(seed=0), imu=False)
    kinematics = SensorKinematics(run.urdf, run.sensor_frame, run.joint_names)
    guess, informed = _initial_scale(ArmDynamics(kinematics, None),
                                     joint_recording(run.joint_t, run.joint_q, run.joint_effort))
    truth = 1.0 / efforts.scale  # N·m per A
    shoulder = slice(1, 3)  # the joints that carry the arm's weight
    assert np.all(informed[shoulder])
    np.testing.assert_allclose(guess[shoulder], truth[shoulder], rtol=0.3)
