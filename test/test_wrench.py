"""Wrench conventions (pipeline/wrench.py).

Every source reading is built here from physics (a payload hanging at rest, or
a point force), in the source's own frame and sign, and must come back as the
wrench the payload exerts on the sensor, about the sensor origin, in S.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from payload_estimator.pipeline.health import SATURATED, InputHealth
from payload_estimator.pipeline.wrench import (
    FRANKA_K_F_EXT_HAT_K,
    FRANKA_O_F_EXT_HAT_K,
    FT_SENSOR_RAW,
    SaturationCheck,
    WrenchConvention,
    wrench_to_sensor,
)

G_IN_BASE = np.array([0.0, 0.0, -9.80665])
MASS = 1.7
COM_IN_SENSOR = np.array([0.012, -0.03, 0.085])

# Pose of the sensor S and of Franka's stiffness frame K in the base frame.
R_BASE_SENSOR = Rotation.from_euler("xyz", [2.8, -0.4, 0.9]).as_matrix()
P_BASE_SENSOR = np.array([0.45, 0.1, 0.52])
R_SENSOR_K = Rotation.from_euler("z", -np.pi / 4).as_matrix()
P_SENSOR_K = np.array([0.0, 0.0, 0.1034])  # K 10 cm beyond the sensor, rotated about z
R_BASE_K = R_BASE_SENSOR @ R_SENSOR_K
P_BASE_K = P_BASE_SENSOR + R_BASE_SENSOR @ P_SENSOR_K


def expected_static_wrench() -> np.ndarray:
    g_s = R_BASE_SENSOR.T @ G_IN_BASE
    return np.concatenate([MASS * g_s, np.cross(MASS * COM_IN_SENSOR, g_s)])


def test_raw_sensor_reading_of_a_static_payload() -> None:
    # The payload pulls on the sensor with its weight, applied at its COM.
    g_s = R_BASE_SENSOR.T @ G_IN_BASE
    f, tau = MASS * g_s, np.cross(COM_IN_SENSOR, MASS * g_s)
    w = wrench_to_sensor(f, tau, FT_SENSOR_RAW, np.eye(3), np.zeros(3))
    np.testing.assert_allclose(w[0], expected_static_wrench(), atol=1e-12)
    # A sensor that publishes the reaction is handled by the sign alone.
    reaction = dataclasses.replace(FT_SENSOR_RAW, sign=-1.0)
    w = wrench_to_sensor(-f, -tau, reaction, np.eye(3), np.zeros(3))
    np.testing.assert_allclose(w[0], expected_static_wrench(), atol=1e-12)


def franka_reading_in_base() -> tuple[np.ndarray, np.ndarray]:
    """O_F_ext_hat_K from physics: the environment (the payload's weight) acts on the
    robot; libfranka reports forces applied by the robot to the environment as positive,
    i.e. the negative of the external wrench on the robot, torque about K's origin."""
    com_in_base = P_BASE_SENSOR + R_BASE_SENSOR @ COM_IN_SENSOR
    force_on_robot = MASS * G_IN_BASE
    torque_on_robot_about_k = np.cross(com_in_base - P_BASE_K, force_on_robot)
    return -force_on_robot, -torque_on_robot_about_k


def test_franka_base_frame_reading_of_a_static_payload() -> None:
    f_o, tau_o = franka_reading_in_base()
    assert f_o[2] == pytest.approx(MASS * 9.80665)  # a hanging payload reads +m g upward
    w = wrench_to_sensor(
        f_o,
        tau_o,
        FRANKA_O_F_EXT_HAT_K,
        R_sensor_expressed=R_BASE_SENSOR.T,
        p_sensor_refpoint=R_BASE_SENSOR.T @ (P_BASE_K - P_BASE_SENSOR),
    )
    np.testing.assert_allclose(w[0], expected_static_wrench(), atol=1e-12)


def test_franka_stiffness_frame_reading_of_a_static_payload() -> None:
    f_o, tau_o = franka_reading_in_base()
    f_k, tau_k = R_BASE_K.T @ f_o, R_BASE_K.T @ tau_o
    w = wrench_to_sensor(f_k, tau_k, FRANKA_K_F_EXT_HAT_K, R_SENSOR_K, P_SENSOR_K)
    np.testing.assert_allclose(w[0], expected_static_wrench(), atol=1e-12)
    # Forgetting the moment transport (K is 10 cm away) would be caught.
    wrong = wrench_to_sensor(f_k, tau_k, FRANKA_K_F_EXT_HAT_K, R_SENSOR_K, np.zeros(3))
    assert np.abs(wrong[0, 3:] - expected_static_wrench()[3:]).max() > 0.1


def test_presets_describe_their_sources() -> None:
    assert FT_SENSOR_RAW.sign == 1.0 and FT_SENSOR_RAW.reference_frame == "ft_sensor"
    assert FRANKA_O_F_EXT_HAT_K.sign == -1.0
    assert FRANKA_O_F_EXT_HAT_K.expressed_in.endswith("link0")
    assert FRANKA_O_F_EXT_HAT_K.reference_frame.endswith("_K")
    assert FRANKA_K_F_EXT_HAT_K.sign == -1.0 and FRANKA_K_F_EXT_HAT_K.reference_frame.endswith("_K")


def test_point_force_is_transported_to_the_sensor_origin() -> None:
    force_in_sensor = np.array([3.0, -1.0, 2.0])
    point_in_sensor = np.array([0.2, 0.05, -0.1])  # where the force acts
    # The source uses rotated axes E and reports torque about a point A.
    R_sensor_e = Rotation.from_euler("zyx", [0.7, 0.2, -1.1]).as_matrix()
    a_in_sensor = np.array([-0.05, 0.3, 0.15])
    f_e = R_sensor_e.T @ force_in_sensor
    tau_e = R_sensor_e.T @ np.cross(point_in_sensor - a_in_sensor, force_in_sensor)
    conv = WrenchConvention("e", "a", 1.0)
    w = wrench_to_sensor(f_e, tau_e, conv, R_sensor_e, a_in_sensor)
    np.testing.assert_allclose(w[0, :3], force_in_sensor, atol=1e-12)
    np.testing.assert_allclose(w[0, 3:], np.cross(point_in_sensor, force_in_sensor), atol=1e-12)


def test_force_through_reference_point_has_moment_about_sensor_origin() -> None:
    # Sign of the transport term: a force along x applied at +y of S (and reported
    # about that point, so with zero torque) turns S about -z.
    w = wrench_to_sensor([1.0, 0, 0], [0, 0, 0], WrenchConvention("s", "p", 1.0), np.eye(3), [0, 1.0, 0])
    np.testing.assert_allclose(w[0], [1, 0, 0, 0, 0, -1], atol=1e-15)


def test_batched_rotations_and_points() -> None:
    rng = np.random.default_rng(0)
    n = 20
    R = Rotation.random(n, random_state=1).as_matrix()
    p = rng.normal(size=(n, 3))
    f, tau = rng.normal(size=(n, 3)), rng.normal(size=(n, 3))
    w = wrench_to_sensor(f, tau, FRANKA_O_F_EXT_HAT_K, R, p)
    assert w.shape == (n, 6)
    for i in range(n):
        wi = wrench_to_sensor(f[i], tau[i], FRANKA_O_F_EXT_HAT_K, R[i], p[i])
        np.testing.assert_allclose(w[i], wi[0], atol=1e-12)
    # fixed rotation and point broadcast over samples
    w2 = wrench_to_sensor(f, tau, FT_SENSOR_RAW, R[0], p[0])
    np.testing.assert_allclose(w2[3], wrench_to_sensor(f[3], tau[3], FT_SENSOR_RAW, R[0], p[0])[0])


def test_bad_shapes_and_signs_rejected() -> None:
    with pytest.raises(ValueError):
        WrenchConvention("s", None, 0.5)
    with pytest.raises(ValueError):
        wrench_to_sensor(np.zeros((4, 3)), np.zeros((3, 3)), FT_SENSOR_RAW, np.eye(3), np.zeros(3))
    with pytest.raises(ValueError):
        wrench_to_sensor(np.zeros((4, 3)), np.zeros((4, 3)), FT_SENSOR_RAW, np.zeros((3, 3, 3)), np.zeros(3))


# ---------------------------------------------------------------- saturation
def test_saturation_flags_samples_near_the_range() -> None:
    check = SaturationCheck((300.0, 300.0, 300.0), (30.0, 30.0, 30.0), margin=0.98)
    w = np.zeros((6, 6))
    w[1, 2] = 293.0  # below 0.98 * 300 = 294
    w[2, 2] = -294.0  # at the margin
    w[3, 4] = 31.0  # beyond the torque range
    w[4, 0] = np.nan
    w[5, 5] = -29.3  # below 29.4
    np.testing.assert_array_equal(check.flags(w), [False, False, True, True, True, False])
    health = InputHealth()
    keep = check.keep(w, health, "wrench")
    np.testing.assert_array_equal(keep, [True, True, False, False, False, True])
    assert health.counts == {SATURATED: 3}


def test_saturation_limits_configurable() -> None:
    check = SaturationCheck(force_limit_N=[100.0, 100.0, 200.0], torque_limit_Nm=5.0, margin=1.0)
    assert check.flags([[0, 0, 150.0, 0, 0, 0]]).tolist() == [False]
    assert check.flags([[150.0, 0, 0, 0, 0, 0]]).tolist() == [True]
    assert check.flags([[0, 0, 0, 0, 5.0, 0]]).tolist() == [True]
    with pytest.raises(ValueError):
        SaturationCheck(margin=1.5)
    with pytest.raises(ValueError):
        SaturationCheck(force_limit_N=-1.0)
