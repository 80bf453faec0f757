"""The payload from joint torques: the arm's own torques, the wrench through the Jacobian, joint-space rows.

Ground truth comes from MuJoCo (its computed-torque controller's applied torques and its F/T site), never from
our own regressor.
"""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.core.estimators import ESTIMATORS, make_estimator
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.regressor import samples_regressor
from payload_estimator.core.samples import SensorSamples
from payload_estimator.pipeline.arm_dynamics import (
    ArmCalibration,
    ArmDynamics,
    calibrate_arm,
    joint_recording,
)
from payload_estimator.pipeline.health import MISSING_EFFORT
from payload_estimator.pipeline.joint_torques import JointTorqueWrench
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.sources.joint_effort import JointEfforts
from payload_estimator.pipeline.stream import EstimationStream, StreamConfig
from payload_estimator.robots import get_robot, robot_urdf
from payload_estimator.sim.efforts import EffortModel
from payload_estimator.sim.mujoco_sim import simulate


@pytest.fixture(scope="module")
def xarm_run():
    return simulate(robot="xarm7", payload="hammer", duration=6.0, noise="none", seed=3, trajectory="thesis")


def _kinematics(run) -> SensorKinematics:
    return SensorKinematics(run.urdf, run.sensor_frame, run.joint_names)


def test_mujoco_torques_less_the_arm_are_the_payload_wrench_through_the_jacobian(xarm_run):
    run = xarm_run
    convert = JointTorqueWrench(ArmDynamics(_kinematics(run)))
    rows = slice(200, len(run.joint_t), 97)
    tw = convert(run.true_q[rows], run.true_dq[rows], run.true_ddq[rows], run.joint_effort[rows])
    truth = run.true_wrench_in_sensor[np.searchsorted(run.wrench_t, run.joint_t[rows])]
    scale = np.abs(truth).max(axis=0)
    assert np.all(scale[:3] > 0.5)  # the payload pulls
    np.testing.assert_allclose(tw.wrench_in_sensor, truth, atol=1e-6 * scale.max() + 1e-9)
    # and the joints feel exactly -J^T w
    J = convert.dynamics.kinematics.frame_jacobian(run.true_q[rows])
    np.testing.assert_allclose(tw.payload_torques, -np.einsum("nki,nk->ni", J, truth), atol=1e-6)


def test_joint_space_rows_are_exact_least_squares_at_every_pose_and_survive_a_singular_one():
    robot = "xarm7"
    urdf = robot_urdf(robot)
    spec = get_robot(robot)
    kin = SensorKinematics(urdf, spec.flange_frame, spec.joint_names)
    convert = JointTorqueWrench(ArmDynamics(kin), effort_std=np.linspace(0.2, 0.6, 7))
    rng = np.random.default_rng(0)
    n = 60
    q = np.array(spec.q_home) + rng.normal(0.0, 0.4, (n, 7))
    q[:10] = 0.0  # ten samples at a singular pose: the arm stretched straight up, the wrist's axes aligned
    dq, ddq = rng.normal(0.0, 0.5, (n, 7)), rng.normal(0.0, 2.0, (n, 7))
    motion = kin.compute(q, dq, ddq)
    samples0 = SensorSamples(np.arange(n) * 0.01, motion.lin_acc_in_sensor, motion.ang_vel_in_sensor,
                             motion.ang_acc_in_sensor, motion.gravity_in_sensor, np.zeros((n, 6)))
    truth = InertialParameters.from_mass_com_inertia(1.2, [0.01, -0.02, 0.08], np.diag([4e-3, 5e-3, 2e-3]))
    w_true = samples_regressor(samples0) @ truth.phi
    J = kin.frame_jacobian(q)
    effort = convert.dynamics.torques(q, dq, ddq) - np.einsum("nki,nk->ni", J, w_true)
    effort += rng.normal(0.0, 1.0, effort.shape) * convert.effort_std
    tw = convert(q, dq, ddq, effort)
    assert np.all(tw.min_singular[:10] < 1e-6) and np.all(tw.min_singular[10:] > 1e-3)
    assert np.all(np.isfinite(tw.wrench_in_sensor)) and np.abs(tw.wrench_in_sensor[:10]).max() < 1e3
    # the estimator on the whitened wrench samples == weighted least squares on the stacked joint rows
    samples = SensorSamples(samples0.t, samples0.lin_acc_in_sensor, samples0.ang_vel_in_sensor,
                            samples0.ang_acc_in_sensor, samples0.gravity_in_sensor, tw.wrench_in_sensor,
                            tw.information_sqrt)
    est = ESTIMATORS["ols"].create()
    est.update(samples)
    phi = est.estimate().params.phi
    Y = samples_regressor(samples0)  # (n, 6, 10)
    rows = -np.einsum("nki,nkp->nip", J, Y) / convert.effort_std[None, :, None]
    b = (effort - convert.dynamics.torques(q, dq, ddq)) / convert.effort_std
    direct, *_ = np.linalg.lstsq(rows.reshape(-1, 10), b.reshape(-1), rcond=None)
    np.testing.assert_allclose(phi, direct, rtol=1e-6, atol=1e-9)
    assert abs(phi[0] - 1.2) < 0.1
    # the plain pseudo-inverse (for comparison only) is the joint-space wrench with every joint alike, where J is
    # well conditioned
    same = np.ones(7)
    plain = JointTorqueWrench(convert.dynamics, same, joint_space_rows=False)(q, dq, ddq, effort)
    rows_alike = JointTorqueWrench(convert.dynamics, same)(q, dq, ddq, effort)
    assert plain.information_sqrt is None
    np.testing.assert_allclose(plain.wrench_in_sensor[10:], rows_alike.wrench_in_sensor[10:], rtol=1e-8, atol=1e-8)


def test_calibration_file_round_trip_and_checks(tmp_path, xarm_run):
    run = xarm_run
    kin = _kinematics(run)
    rec = joint_recording(run.joint_t, run.joint_q, run.joint_effort)
    cal, fit = calibrate_arm(kin, rec, robot="xarm7")
    path = tmp_path / "cal.yaml"
    cal.save(path)
    back = ArmCalibration.load(path)
    np.testing.assert_array_equal(back.body_parameters, cal.body_parameters)
    np.testing.assert_array_equal(back.coulomb, cal.coulomb)
    np.testing.assert_array_equal(back.coulomb_asymmetry, cal.coulomb_asymmetry)
    assert back.joint_names == cal.joint_names and back.robot == "xarm7"
    # a file written without the direction-dependent levels (an older version's) reads as symmetric levels
    data = cal.to_dict()
    data["friction"].pop("coulomb_asymmetry", None)
    np.testing.assert_array_equal(ArmCalibration.from_dict(data).coulomb_asymmetry, 0.0)
    with pytest.raises(ValueError, match="for the xarm7, not the panda"):
        back.check_matches("panda", get_robot("panda").joint_names)
    with pytest.raises(ValueError, match="joints"):
        back.check_matches("", cal.joint_names[:6])
    (tmp_path / "bad.yaml").write_text("just: text\n")
    with pytest.raises(ValueError, match="not an arm calibration"):
        ArmCalibration.load(tmp_path / "bad.yaml")
    with pytest.raises(ValueError, match="no such file"):
        ArmCalibration.load(tmp_path / "missing.yaml")
    # the fit explains the efforts: the description alone does not know the payload it carries
    assert np.all(fit.rms_calibrated < fit.rms_description + 1e-9)
    assert fit.rms_calibrated.max() < 0.2 * fit.rms_description.max()


def test_calibration_fits_coulomb_levels_that_differ_with_the_direction():
    # the Panda's friction as Gaz et al. identified it: sigmoids shifted off zero speed, so the Coulomb level
    # moving one way differs from the other (a direction-dependent part of 2-23 % of the level), and the friction
    # is 0 at rest. A model of symmetric levels plus an offset reads the difference as an offset: wrong at rest
    # and at low speed (measured 0.18-0.31 N·m on joints 4-6), and by how much in a payload's estimate depends
    # on the motion's share of slow samples
    efforts = EffortModel.for_robot("panda").without_noise()
    run = simulate(robot="panda", payload="none", duration=8.0, noise="none", seed=1, trajectory="thesis",
                   efforts=efforts, imu=False)
    kin = _kinematics(run)
    cal, _ = calibrate_arm(kin, joint_recording(run.joint_t, run.joint_q, run.joint_effort), robot="panda")
    seen = np.abs(run.true_dq).max(axis=0)
    speeds = np.linspace(-1.0, 1.0, 201)[:, None] * seen[None, :]
    error = ArmDynamics(kin, cal).friction(speeds) - efforts.friction.torque(speeds)
    assert np.any(np.abs(cal.coulomb_asymmetry) > 0.01)
    # joint 2's offset trades with its gravity torque on a motion this small (the offset stays the sensor's zero)
    others = np.delete(np.abs(error).max(axis=0), 1)
    assert np.all(others < 0.05), others
    # beyond the speeds the recording saw, the Coulomb terms hold their value at the edge: only the viscous grows
    lo, hi = cal.speed_range
    np.testing.assert_allclose(lo, run.true_dq.min(axis=0), atol=0.02)
    np.testing.assert_allclose(hi, run.true_dq.max(axis=0), atol=0.02)
    model = ArmDynamics(kin, cal)
    for edge in (lo, hi):
        grown = model.friction(3.0 * edge[None]) - model.friction(edge[None])
        np.testing.assert_allclose(grown[0], cal.viscous * 2.0 * edge, atol=1e-12)
    np.testing.assert_array_equal(ArmCalibration.from_dict(cal.to_dict()).speed_range, cal.speed_range)


def test_stream_without_efforts_counts_them_and_estimates_nothing(xarm_run):
    run = xarm_run
    spec = get_robot("xarm7")
    config = StreamConfig(urdf=run.urdf, sensor_frame=run.sensor_frame, joint_names=run.joint_names,
                          flange_frame=spec.flange_frame, wrench_source=JointEfforts())
    stream = EstimationStream(config, make_estimator("wls"))
    taken = stream.push_joint_states(run.joint_t[:500], run.joint_q[:500], list(run.joint_names))
    assert taken == 0
    assert stream.push_joint_states(run.joint_t[:5], run.joint_q[:5], efforts=np.zeros((5, 3))) == 0
    stream.process()
    assert stream.update_estimate() is None
    assert stream.health.snapshot()["counts"][MISSING_EFFORT] == 505
    # a wrench is not an input of a joint-torque stream
    assert stream.push_wrench(run.wrench_t[:5], run.wrench_in_sensor[:5, :3], run.wrench_in_sensor[:5, 3:]) == 0


def _played(run, calibration=None, factor: float = 1.0, robot: str = "xarm7") -> EstimationStream:
    """A joint-torque stream (WLS) fed the run's joint states, efforts times ``factor``, 50 at a time, estimating
    every turn."""
    config = StreamConfig(urdf=run.urdf, sensor_frame=run.sensor_frame, joint_names=run.joint_names,
                          flange_frame=get_robot(robot).flange_frame, wrench_source=JointEfforts(calibration))
    stream = EstimationStream(config, make_estimator("wls"))
    for k in range(0, len(run.joint_t), 50):
        s = slice(k, k + 50)
        stream.push_joint_states(run.joint_t[s], run.joint_q[s], list(run.joint_names),
                                 efforts=factor * run.joint_effort[s])
        stream.process()
        stream.update_estimate()
    return stream


def test_stream_estimates_the_payload_from_efforts(xarm_run):
    run = xarm_run
    est = _played(run).update_estimate()
    assert est is not None
    truth = InertialParameters(run.payload_phi)
    assert abs(est.estimate.params.mass - truth.mass) < 0.01 * truth.mass
    assert np.linalg.norm(est.estimate.params.com - truth.com) < 0.003


def test_an_estimate_names_the_joints_faster_than_the_calibration_saw(xarm_run):
    """A calibration records the speeds it saw; an estimate on a motion mostly beyond them (the friction
    extrapolated) names those joints in the stream's diagnostics, the node's estimate status (a WARN) and
    ``replay``'s warnings. The same motion, calibrated on itself: nothing to say."""
    from dataclasses import replace

    from payload_estimator.io import ros_outbound
    from payload_estimator.io.diagnostic_level import DiagnosticLevel

    run = xarm_run
    kin = _kinematics(run)
    rec = joint_recording(run.joint_t, run.joint_q, run.joint_effort)
    cal, _ = calibrate_arm(kin, rec, robot="xarm7")
    fastest = np.abs(rec.dq).max(axis=0)
    slow = replace(cal, speed_range=np.vstack([-0.5 * fastest, 0.5 * fastest]))  # as if calibrated at half speed
    lines = {}
    for label, calibration in (("same speeds", cal), ("half speed", slow)):
        diag = _played(run, calibration).diagnostics()
        lines[label] = diag["input_caveats"]
        status = ros_outbound._estimate_status(diag, "pe", "pe")
        if lines[label]:
            assert status["level"] == DiagnosticLevel.WARN and "faster than the arm calibration" in status["message"]
    assert lines["same speeds"] == []
    (line,) = lines["half speed"]
    assert line.startswith("faster than the arm calibration's recording: ") and "joint1 (" in line
    assert "excite --for calibration" in line


@pytest.mark.parametrize("factor, words", [(1.0, None), (1.0 / 40.0, "look like currents"), (-1.0, "wrong sign")])
def test_efforts_that_are_not_torques_give_no_estimate_and_say_why(xarm_run, factor, words):
    """Joint states whose efforts are motor currents read as N·m (a 40 N·m/A joint's), or of the wrong sign,
    with the settings saying torques: once the samples tell (2 s), the stream gives no estimate, its diagnostics
    and the node's estimate status (an ERROR) say which joints and which setting to change. Torques as they are
    (the payload's in them): an estimate, nothing refused."""
    from payload_estimator.io import ros_outbound
    from payload_estimator.io.diagnostic_level import DiagnosticLevel

    stream = _played(xarm_run, factor=factor)
    diag = stream.diagnostics()
    status = ros_outbound._estimate_status(diag, "pe", "pe")
    if words is None:
        assert stream.update_estimate() is not None and diag["input_refusal"] == ""
        assert status["level"] != DiagnosticLevel.ERROR
    else:
        assert stream.update_estimate() is None and stream.last is None
        assert words in diag["input_refusal"] and "torque_constants" in diag["input_refusal"]
        assert status["level"] == DiagnosticLevel.ERROR and status["message"].startswith("no estimate: the efforts")
