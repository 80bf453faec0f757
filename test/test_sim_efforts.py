"""The simulator's joint efforts (``sim.efforts``): friction, noise, scale, model mismatch, no payload.

References independent of the simulator's own bookkeeping:

* the rigid-body torques are MuJoCo's inverse dynamics (``mj_inverse``) of a separately compiled
  model at the recorded states;
* the payload's torques are ``-J_S^T w`` with pinocchio's LOCAL Jacobian of the sensor frame on
  the *nominal* URDF and the MuJoCo F/T truth ``w`` (the sign convention of ``pipeline.joint_torques``);
* the Panda friction is Gaz et al.'s sigmoid written out.
"""

from __future__ import annotations

import dataclasses
import functools
import xml.etree.ElementTree as ET

import numpy as np
import pinocchio as pin
import pytest

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.io import bag as rb
from payload_estimator.robots import get_robot, robot_urdf
from payload_estimator.robots.generate import DEFAULT_IMU_XYZ_IN_SENSOR
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim import bag_writer as sb
from payload_estimator.sim.efforts import (
    FRANKA_TAU_J,
    UR_CURRENT,
    XARM_CURRENT,
    ArmMismatch,
    EffortModel,
    JointFriction,
    moving_links,
    perturb_arm,
)
from payload_estimator.sim.live_arm import LiveArm
from payload_estimator.sim.mujoco_model import IMU_FRAME, SENSOR_FRAME, build_model, rigid_body_torque
from payload_estimator.sim.mujoco_sim import NO_PAYLOAD, simulate
from payload_estimator.sim.run import SimulatedRun
from payload_estimator.sim.trajectories import make_trajectory

SIGNALS = ("joint_q", "joint_dq", "wrench_in_sensor", "true_ft_bias", "imu_gyro_in_imu",
           "imu_specific_force_in_imu")


@functools.cache
def runs(robot: str) -> tuple[SimulatedRun, SimulatedRun]:
    """(plain run, the same with the default effort model and a model mismatch), all joints moving."""
    kw = dict(robot=robot, payload="claw_hammer", trajectory="thesis", duration=1.5, seed=4)
    return simulate(**kw), simulate(**kw, efforts=EffortModel.for_robot(robot), arm_mismatch=ArmMismatch())


def unloaded_arm(urdf: str, robot: str):
    spec = get_robot(robot)
    return build_model(urdf, spec.joint_names, InertialParameters.zero(), spec.tau_max, SENSOR_FRAME, None)


# ---------------------------------------------------------------- friction law
def test_friction_law_opposes_motion_is_asymmetric_and_not_the_calibration_model() -> None:
    dq = np.linspace(-1.5, 1.5, 3001)[:, None]
    for robot in ("panda", "xarm7", "xarm6", "ur5e", "ur10e"):
        f = EffortModel.for_robot(robot).friction
        tau = f.torque(dq)
        assert tau.shape == (len(dq), f.n_joints)
        np.testing.assert_array_equal(f.torque(np.zeros(f.n_joints)), 0.0)  # zero at rest
        assert np.all(tau * dq >= 0.0)  # the motor supplies it in the direction of motion
        high = f.torque(np.array([[1.0], [-1.0]]) * np.ones(f.n_joints))
        assert np.all(np.abs(high[0] + high[1]) > 1e-3)  # the two levels differ
        # the estimator's model (viscous + Coulomb sign + offset) leaves a clear low-speed residual
        basis = np.stack([dq[:, 0], np.sign(dq[:, 0]), np.ones(len(dq))], axis=1)
        for j in range(f.n_joints):
            coef, *_ = np.linalg.lstsq(basis, tau[:, j], rcond=None)
            residual = tau[:, j] - basis @ coef
            assert np.max(np.abs(residual)) > 0.2 * f.coulomb[j]


def test_franka_friction_is_gaz_sigmoid_plus_small_terms() -> None:
    f = EffortModel.for_robot("panda").friction
    sigmoid_only = dataclasses.replace(f, stribeck=np.zeros(7), viscous=np.zeros(7))
    phi1 = np.array([0.54615, 0.87224, 0.64068, 1.2794, 0.83904, 0.30301, 0.56489])
    phi2 = np.array([5.1181, 9.0657, 10.136, 5.5903, 8.3469, 17.133, 10.336])
    phi3 = np.array([0.039533, 0.025882, -0.04607, 0.036194, 0.026226, -0.021047, 0.0035526])
    dq = np.random.default_rng(0).uniform(-2.0, 2.0, (50, 7))
    gaz = phi1 / (1 + np.exp(-phi2 * (dq + phi3))) - phi1 / (1 + np.exp(-phi2 * phi3))
    np.testing.assert_allclose(sigmoid_only.torque(dq), gaz, atol=1e-12)
    assert 0.03 < np.max(np.abs(f.torque(dq) - gaz)) < 0.2  # Stribeck + viscous: small, N·m


def test_default_models_per_robot_family() -> None:
    panda, xarm7, xarm6 = (EffortModel.for_robot(r) for r in ("panda", "xarm7", "xarm6"))
    assert panda.name == EffortModel.for_robot("fr3").name == FRANKA_TAU_J
    assert xarm7.name == xarm6.name == XARM_CURRENT and xarm6.n_joints == 6
    assert np.all((panda.noise_std >= 0.05) & (panda.noise_std <= 0.1))
    assert np.all(xarm7.noise_std >= 0.3) and xarm7.noise_std[0] > xarm7.noise_std[-1]
    assert np.all((xarm7.friction.coulomb >= 1.0) & (xarm7.friction.coulomb <= 3.0))
    assert np.all((xarm7.friction.viscous >= 0.5) & (xarm7.friction.viscous <= 2.0))
    np.testing.assert_array_equal(xarm7.scale, 1.0)
    scaled = EffortModel.for_robot("xarm7", effort_scale_error=0.03, seed=1)
    assert np.all(np.abs(scaled.scale - 1.0) <= 0.03) and np.ptp(scaled.scale) > 0.0
    with pytest.raises(ValueError, match="no default effort model"):
        EffortModel.for_robot("ur5")


def test_ur_efforts_are_motor_currents() -> None:
    """The UR driver reports currents: the model's scale is A per N·m (reciprocal torque constants), its
    noise in A; the preset says so (effort_unit current, no torque constants: calibrate --effort-scale)."""
    for robot in ("ur5e", "ur10e"):
        model = EffortModel.for_robot(robot)
        assert model.name == UR_CURRENT and model.n_joints == 6
        k = 1.0 / model.scale  # N·m/A at the joint
        assert np.all((k >= 5.0) & (k <= 30.0)) and k[0] >= k[-1]
        table = get_robot(robot).efforts
        np.testing.assert_allclose(model.noise_std, np.array(table.noise_std) * model.scale, rtol=1e-12)
        assert get_robot(robot).parameters["effort_unit"] == "current"
        scaled = EffortModel.for_robot(robot, effort_scale_error=0.03, seed=1)
        assert np.all(np.abs(scaled.scale / model.scale - 1.0) <= 0.03)
    rng = np.random.default_rng(0)
    model = EffortModel.for_robot("ur10e").without_noise()
    np.testing.assert_allclose(model.measure(np.full((1, 6), 18.0), rng)[0, :2], 1.0, rtol=1e-12)
    with pytest.raises(ValueError, match="noise_std must have 7 entries"):
        EffortModel("x", JointFriction.none(7), np.ones(6))


# ------------------------------------------------------------------ simulate
def test_without_effort_model_nothing_changes() -> None:
    kw = dict(robot="xarm7", payload="drill", duration=0.5, seed=7)
    plain, explicit = simulate(**kw), simulate(**kw, efforts=None, arm_mismatch=None)
    for f in dataclasses.fields(SimulatedRun):
        a, b = getattr(plain, f.name), getattr(explicit, f.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, f.name
    assert plain.effort_model == "" and plain.true_urdf == "" and plain.true_joint_friction.shape == (0, 7)
    np.testing.assert_array_equal(plain.effort_noise_std, 0.05)
    # without an effort model: the applied torque plus the nominal joint noise, from the run's own stream
    assert 0.04 < np.std(plain.joint_effort - plain.true_joint_torque) < 0.06


@pytest.mark.parametrize("robot", ["panda", "xarm7"])
def test_efforts_keep_the_other_signals_and_the_tracking(robot: str) -> None:
    plain, real = runs(robot)
    for name in SIGNALS:
        np.testing.assert_allclose(getattr(real, name), getattr(plain, name), rtol=0, atol=1e-8, err_msg=name)
    np.testing.assert_allclose(real.tracking_error_max, plain.tracking_error_max, atol=1e-9)
    assert real.torque_clipped_steps == 0 and real.effort_model == EffortModel.for_robot(robot).name
    assert np.min(np.max(np.abs(real.true_dq), axis=0)) > 0.05  # every joint moves


@pytest.mark.parametrize("robot", ["panda", "xarm7"])
def test_effort_minus_rigid_body_torque_is_the_friction_law(robot: str) -> None:
    _, real = runs(robot)
    model = EffortModel.for_robot(robot)
    true_arm = build_model(real.simulated_urdf, real.joint_names, real.payload_params,
                           get_robot(robot).tau_max, SENSOR_FRAME, None)
    rigid = rigid_body_torque(true_arm, real.true_q, real.true_dq, real.true_ddq)
    friction = model.friction.torque(real.true_dq)
    np.testing.assert_allclose(real.true_joint_torque - rigid, friction, atol=1e-8)
    np.testing.assert_allclose(real.true_joint_friction, friction, atol=1e-12)
    np.testing.assert_allclose(real.true_rigid_body_torque, rigid, atol=1e-8)
    assert np.max(np.abs(friction)) > (1.0 if robot == "xarm7" else 0.2)  # friction is there
    # without noise the reported effort is exactly the motor torque
    quiet = simulate(robot, "claw_hammer", "thesis", duration=0.2, seed=4, efforts=model.without_noise())
    quiet_arm = build_model(quiet.urdf, quiet.joint_names, quiet.payload_params, get_robot(robot).tau_max,
                            SENSOR_FRAME, None)
    np.testing.assert_allclose(
        quiet.joint_effort - rigid_body_torque(quiet_arm, quiet.true_q, quiet.true_dq, quiet.true_ddq),
        model.friction.torque(quiet.true_dq), atol=1e-8)


@pytest.mark.parametrize("robot", ["panda", "xarm7"])
def test_payload_torques_are_minus_sensor_jacobian_transpose_wrench(robot: str) -> None:
    """Loaded minus unloaded rigid-body torques at the same states = -J_S^T w (design.md's sign)."""
    _, real = runs(robot)
    assert real.wrench_rate_hz == real.rate_hz
    unloaded = rigid_body_torque(unloaded_arm(real.simulated_urdf, robot), real.true_q, real.true_dq,
                                 real.true_ddq)
    delta = real.true_rigid_body_torque - unloaded
    model = pin.buildModelFromXML(real.urdf)  # the nominal URDF: the kinematics are not perturbed
    data = model.createData()
    frame = model.getFrameId(SENSOR_FRAME)
    cols = [model.joints[model.getJointId(n)].idx_v for n in real.joint_names]
    rows = [model.joints[model.getJointId(n)].idx_q for n in real.joint_names]
    expected = np.empty_like(delta)
    for i in range(0, len(delta)):
        q = np.zeros(model.nq)
        q[rows] = real.true_q[i]
        J = pin.computeFrameJacobian(model, data, q, frame, pin.ReferenceFrame.LOCAL)[:, cols]
        expected[i] = -J.T @ real.true_wrench_in_sensor[i]
    assert np.max(np.abs(expected)) > 2.0  # N·m: the hammer's load is visible
    np.testing.assert_allclose(delta, expected, atol=1e-8)


def test_mismatch_changes_the_arm_not_the_urdf_given() -> None:
    plain, real = runs("xarm7")
    nominal = robot_urdf("xarm7", sensor_frame=SENSOR_FRAME, imu_frame=IMU_FRAME,
                         imu_xyz_in_sensor=DEFAULT_IMU_XYZ_IN_SENSOR)
    assert real.urdf == plain.urdf == nominal and real.true_urdf and real.true_urdf != nominal
    again = simulate("xarm7", NO_PAYLOAD, duration=0.1, seed=99, arm_mismatch=ArmMismatch())
    assert again.true_urdf == real.true_urdf  # the arm is the mismatch's seed, not the run's
    assert simulate("xarm7", NO_PAYLOAD, duration=0.1, arm_mismatch=ArmMismatch(seed=1)).true_urdf != real.true_urdf

    def inertials(urdf: str) -> dict[str, tuple[float, np.ndarray, np.ndarray]]:
        out = {}
        for link in ET.fromstring(urdf).iter("link"):
            el = link.find("inertial")
            if el is not None:
                i = el.find("inertia").attrib
                out[link.get("name")] = (
                    float(el.find("mass").get("value")),
                    np.array(el.find("origin").get("xyz").split(), dtype=float),
                    np.array([float(i[k]) for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")]))
        return out

    nom, true = inertials(nominal), inertials(real.true_urdf)
    moving = set(moving_links(ET.fromstring(nominal)))
    assert set(nom) == set(true) and "link_base" not in moving and SENSOR_FRAME in moving
    for name, (m, c, inertia) in nom.items():
        m2, c2, inertia2 = true[name]
        if name not in moving:
            assert (m2, list(c2), list(inertia2)) == (m, list(c), list(inertia))
            continue
        assert 0.85 <= m2 / m <= 1.15 and m2 != m
        assert np.all(np.abs(c2 - c) <= 0.01 + 1e-12) and np.any(c2 != c)
        np.testing.assert_allclose(inertia2, inertia * m2 / m, rtol=1e-12)
    # gravity torques of the unloaded arm change by a plausible amount
    spec = get_robot("xarm7")
    poses = np.random.default_rng(3).uniform(spec.q_min / 3, spec.q_max / 3, (20, 7))
    zero = np.zeros_like(poses)
    g_nom = rigid_body_torque(unloaded_arm(nominal, "xarm7"), poses, zero, zero)
    g_true = rigid_body_torque(unloaded_arm(real.true_urdf, "xarm7"), poses, zero, zero)
    rel = np.linalg.norm(g_true - g_nom, axis=0)[1:4] / np.linalg.norm(g_nom, axis=0)[1:4]  # joints 2-4
    assert np.all(rel > 0.005) and np.all(rel < 0.3), rel


def test_perturb_arm_spares_kept_links_and_draws_reproducibly() -> None:
    urdf = robot_urdf("panda", sensor_frame=SENSOR_FRAME)
    a = perturb_arm(urdf, np.random.default_rng(5), keep=("panda_link7",))
    b = perturb_arm(urdf, np.random.default_rng(5), keep=("panda_link7",))
    assert a == b
    link7 = [lk for lk in ET.fromstring(a).iter("link") if lk.get("name") == "panda_link7"][0]
    assert link7.find("inertial").find("mass").get("value") == "0.735522"
    assert perturb_arm(urdf, np.random.default_rng(5), mass_rel=0.0, com_m=0.0) == \
        ET.tostring(ET.fromstring(urdf), encoding="unicode")


@pytest.mark.parametrize("robot", ["panda", "xarm7"])
def test_effort_noise_and_scale(robot: str) -> None:
    model = EffortModel.for_robot(robot, effort_scale_error=0.05, seed=2)
    run = simulate(robot, "claw_hammer", duration=2.0, seed=5, efforts=model)
    np.testing.assert_array_equal(run.effort_scale, model.scale)
    np.testing.assert_array_equal(run.effort_noise_std, model.noise_std)
    residual = run.joint_effort - model.scale * run.true_joint_torque
    np.testing.assert_allclose(residual.std(axis=0), model.noise_std, rtol=0.08)
    assert np.all(np.abs(residual.mean(axis=0)) < 4 * model.noise_std / np.sqrt(len(residual)))
    quiet = simulate(robot, "claw_hammer", duration=0.1, seed=5, efforts=model, noise="none")
    np.testing.assert_allclose(quiet.joint_effort, model.scale * quiet.true_joint_torque, atol=1e-12)


# -------------------------------------------------------------- unloaded arm
def test_unloaded_arm_by_name_or_zero_parameters() -> None:
    model = EffortModel.for_robot("xarm6").without_noise()
    by_name = simulate("xarm6", NO_PAYLOAD, "thesis", duration=0.3, seed=1, efforts=model)
    by_phi = simulate("xarm6", InertialParameters(np.zeros(10)), "thesis", duration=0.3, seed=1, efforts=model)
    assert by_name.payload_name == by_phi.payload_name == NO_PAYLOAD
    np.testing.assert_array_equal(by_name.payload_phi, 0.0)
    np.testing.assert_array_equal(by_name.joint_effort, by_phi.joint_effort)
    np.testing.assert_allclose(by_name.true_wrench_in_sensor, 0.0, atol=1e-12)
    bare = unloaded_arm(by_name.urdf, "xarm6")
    np.testing.assert_allclose(by_name.true_rigid_body_torque,
                               rigid_body_torque(bare, by_name.true_q, by_name.true_dq, by_name.true_ddq), atol=1e-8)
    with pytest.raises(ValueError, match="zero mass"):
        simulate("xarm6", InertialParameters(np.r_[0.0, np.zeros(3), 1e-3, 0, 0, 1e-3, 0, 1e-3]), duration=0.1)


# ------------------------------------------------------------------ files
def test_npz_round_trip_and_old_files(tmp_path) -> None:
    _, real = runs("xarm7")
    real.save(tmp_path / "run.npz")
    back = SimulatedRun.load(tmp_path / "run.npz")
    for f in dataclasses.fields(SimulatedRun):
        a, b = getattr(real, f.name), getattr(back, f.name)
        assert np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b, f.name
    new = {"true_joint_torque", "true_joint_friction", "effort_model", "effort_noise_std", "effort_scale",
           "true_urdf"}
    with np.load(tmp_path / "run.npz") as z:
        np.savez(tmp_path / "old.npz", **{k: z[k] for k in z.files if k not in new})
    old = SimulatedRun.load(tmp_path / "old.npz")
    assert old.effort_model == "" and old.true_joint_torque.shape == (0, 7) and old.simulated_urdf == old.urdf
    np.testing.assert_array_equal(old.joint_effort, real.joint_effort)


def test_bag_carries_the_new_efforts(tmp_path) -> None:
    run = simulate("xarm7", "drill", duration=0.2, seed=3, imu=False, efforts=EffortModel.for_robot("xarm7"))
    path = sb.write_simulated_bag(run, tmp_path / "bag")
    settings = settings_for_robot("xarm7")
    efforts = [np.array(m.msg.effort) for m in rb.read_bag(path, settings) if m.msg.__msgtype__.endswith("JointState")]
    np.testing.assert_array_equal(np.array(efforts), run.joint_effort)
    assert rb.bag_info(path).custom_data[rb.CUSTOM_DATA_PREFIX + "effort_model"] == XARM_CURRENT


# -------------------------------------------------------------- live arm
def test_live_arm_efforts() -> None:
    spec = get_robot("xarm7")
    kw = dict(robot="xarm7", payload="drill", seed=6, rate_hz=500.0)
    plain = LiveArm(**kw)
    model = EffortModel.for_robot("xarm7")
    real = LiveArm(**kw, efforts=model, arm_mismatch=ArmMismatch())
    assert real.urdf == plain.urdf and real.true_urdf != real.urdf and plain.true_urdf == plain.urdf
    traj = make_trajectory("thesis", spec, duration=1.0, seed=2)
    samples = []
    for arm in (plain, real):
        arm.hold(traj(np.zeros(1))[0][0])
        arm.advance(0.2)  # settle onto the trajectory's start
        arm.follow(traj)
        samples.append(arm.advance(1.0))
    a, b = samples
    np.testing.assert_allclose(b.joint_q, a.joint_q, atol=1e-8)  # same noise draws, same tracking
    np.testing.assert_allclose(b.wrench, a.wrench, atol=1e-8)
    np.testing.assert_allclose((a.joint_effort - a.true_joint_torque).std(axis=0), 0.05, rtol=0.15)  # no model
    residual = b.joint_effort - b.true_joint_torque
    np.testing.assert_allclose(residual.std(axis=0), model.noise_std, rtol=0.15)
    true_arm = build_model(real.true_urdf, real.joint_names, real.truth, spec.tau_max, SENSOR_FRAME, None)
    rigid = rigid_body_torque(true_arm, b.true_q, b.true_dq, b.true_ddq)
    np.testing.assert_allclose(b.true_joint_torque - rigid, model.friction.torque(b.true_dq), atol=1e-8)
