"""The rigid-body regressor: the wrench on the sensor is linear in ``phi``.

Nadeau, Giamou and Kelly ("Fast Object Inertial Parameter Identification for
Collaborative Robots"), eqs. (2)-(3), give the wrench the sensor applies to the body,
``[f; tau] = A_phi(a - g, omega, alpha) phi``. The sensor measures the opposite
wrench, the one the payload exerts on it (see :mod:`payload_estimator.core.samples`),
so this module returns ``Y = -A_phi``::

    w = Y(a, omega, alpha, g) phi
    f   = m (g - a) - ([alpha]x + [omega]x [omega]x) (m c)
    tau = (m c) x (g - a) - (J alpha + omega x J omega)

with ``J`` the inertia about the sensor origin. All vectors are in the sensor
frame. A payload at rest gives ``f = m g`` and ``tau = m c x g``.

The reduced model of their eq. (6) keeps gravity only (``a = omega = alpha = 0``):
``f = m g``, ``tau = m c x g``; the inertia tensor does not appear in it.

A force/torque sensor also has an offset ``beta`` (6,) that drifts. With it as
unknowns the model is ``w = Y phi + beta``: :func:`bias_regressor` gives the
six extra columns (an identity per sample).
"""

from __future__ import annotations

import numpy as np

from payload_estimator.core.samples import SensorSamples

__all__ = [
    "N_PARAMS",
    "N_BIAS",
    "batch_skew",
    "regressor",
    "regressor_reference",
    "reduced_regressor",
    "bias_regressor",
    "samples_regressor",
    "predict_wrench",
    "regressor_noise_gram",
    "regressor_features",
    "samples_features",
    "FEATURE_MATRIX",
    "features_regressor",
    "whitened_rows",
    "N_FEATURES",
]

N_PARAMS = 10
N_BIAS = 6


def batch_skew(v: np.ndarray) -> np.ndarray:
    """(N, 3) vectors -> (N, 3, 3) cross-product matrices ``[v]x``."""
    v = np.asarray(v, dtype=float)
    S = np.zeros(v.shape[:-1] + (3, 3))
    S[..., 0, 1] = -v[..., 2]
    S[..., 0, 2] = v[..., 1]
    S[..., 1, 0] = v[..., 2]
    S[..., 1, 2] = -v[..., 0]
    S[..., 2, 0] = -v[..., 1]
    S[..., 2, 1] = v[..., 0]
    return S


def _inertia_operator(v: np.ndarray) -> np.ndarray:
    """(N, 3) -> (N, 3, 6) matrices ``L(v)`` with ``J v = L(v) vech(J)`` (canonical order)."""
    n = v.shape[0]
    L = np.zeros((n, 3, 6))
    x, y, z = v[:, 0], v[:, 1], v[:, 2]
    # vech(J) = [Jxx, Jxy, Jxz, Jyy, Jyz, Jzz]
    L[:, 0, 0] = x
    L[:, 0, 1] = y
    L[:, 0, 2] = z
    L[:, 1, 1] = x
    L[:, 1, 3] = y
    L[:, 1, 4] = z
    L[:, 2, 2] = x
    L[:, 2, 4] = y
    L[:, 2, 5] = z
    return L


def regressor_reference(
    lin_acc_in_sensor: np.ndarray,
    ang_vel_in_sensor: np.ndarray,
    ang_acc_in_sensor: np.ndarray,
    gravity_in_sensor: np.ndarray,
) -> np.ndarray:
    """Full Newton-Euler regressor written as Nadeau et al.'s eq. (2) reads (sign of the measured wrench).

    Args:
        lin_acc_in_sensor: (N, 3) acceleration of the sensor origin, gravity excluded, m/s².
        ang_vel_in_sensor: (N, 3) angular velocity, rad/s.
        ang_acc_in_sensor: (N, 3) angular acceleration, rad/s².
        gravity_in_sensor: (N, 3) gravity vector in the sensor frame, m/s².

    Returns:
        (N, 6, 10) matrices ``Y`` with ``wrench_on_sensor = Y @ phi``.

    :func:`regressor` evaluates the same matrices faster.
    """
    a = np.atleast_2d(np.asarray(lin_acc_in_sensor, dtype=float))
    w = np.atleast_2d(np.asarray(ang_vel_in_sensor, dtype=float))
    al = np.atleast_2d(np.asarray(ang_acc_in_sensor, dtype=float))
    g = np.atleast_2d(np.asarray(gravity_in_sensor, dtype=float))
    n = a.shape[0]
    apparent = g - a  # the acceleration the body "feels": g - a
    Sw = batch_skew(w)
    Y = np.zeros((n, 6, N_PARAMS))
    Y[:, 0:3, 0] = apparent
    Y[:, 0:3, 1:4] = -(batch_skew(al) + Sw @ Sw)
    Y[:, 3:6, 1:4] = -batch_skew(apparent)
    Y[:, 3:6, 4:10] = -(_inertia_operator(al) + Sw @ _inertia_operator(w))
    return Y


def _feature_matrix() -> np.ndarray:
    """``K`` (12 x 60) with ``vec(Y) = features @ K``.

    ``Y`` is linear in ``g - a`` and ``alpha`` and in the products
    ``omega_i omega_j``; the rows of ``K`` are read off the reference regressor
    (polarisation for the cross products).
    """
    z = np.zeros((1, 3))
    rows = []
    for i in range(3):  # g - a
        e = np.zeros((1, 3))
        e[0, i] = 1.0
        rows.append(regressor_reference(z, z, z, e)[0].reshape(-1))
    for i in range(3):  # alpha
        e = np.zeros((1, 3))
        e[0, i] = 1.0
        rows.append(regressor_reference(z, z, e, z)[0].reshape(-1))
    squares = []
    for i in range(3):  # omega_i²
        e = np.zeros((1, 3))
        e[0, i] = 1.0
        squares.append(regressor_reference(z, e, z, z)[0].reshape(-1))
    rows.extend(squares)
    for i, j in ((0, 1), (0, 2), (1, 2)):  # omega_i omega_j
        e = np.zeros((1, 3))
        e[0, i] = e[0, j] = 1.0
        rows.append(regressor_reference(z, e, z, z)[0].reshape(-1) - squares[i] - squares[j])
    return np.array(rows)


_K = _feature_matrix()
N_FEATURES = 12
FEATURE_MATRIX = _K.copy()
"""(12, 60): ``Y.reshape(N, 60) = regressor_features(...) @ FEATURE_MATRIX`` (channel-major)."""
FEATURE_MATRIX.setflags(write=False)


def regressor_features(
    lin_acc_in_sensor: np.ndarray,
    ang_vel_in_sensor: np.ndarray,
    ang_acc_in_sensor: np.ndarray,
    gravity_in_sensor: np.ndarray,
) -> np.ndarray:
    """(N, 12) ``[g - a, alpha, omega_x², omega_y², omega_z², omega_x omega_y, omega_x omega_z, omega_y omega_z]``.

    Every channel's regressor row is a fixed linear map of them, so their Gram is enough
    to form the Gram of any two channels' rows (the cross-channel terms of a covariance).
    """
    a = np.atleast_2d(np.asarray(lin_acc_in_sensor, dtype=float))
    w = np.atleast_2d(np.asarray(ang_vel_in_sensor, dtype=float))
    al = np.atleast_2d(np.asarray(ang_acc_in_sensor, dtype=float))
    g = np.atleast_2d(np.asarray(gravity_in_sensor, dtype=float))
    features = np.empty((a.shape[0], N_FEATURES))
    features[:, 0:3] = g - a
    features[:, 3:6] = al
    features[:, 6:9] = w * w
    features[:, 9] = w[:, 0] * w[:, 1]
    features[:, 10] = w[:, 0] * w[:, 2]
    features[:, 11] = w[:, 1] * w[:, 2]
    return features


def features_regressor(features: np.ndarray) -> np.ndarray:
    """(N, 6, 10) regressor from (N, 12) :func:`regressor_features`."""
    return (np.asarray(features, dtype=float) @ _K).reshape(-1, 6, N_PARAMS)


def whitened_rows(
    samples: SensorSamples, features: np.ndarray
) -> tuple[np.ndarray | None, np.ndarray, np.ndarray | None]:
    """Return ``(Y, wrench, features)`` of a batch for :meth:`RegressorStatistics.add`.

    Samples without their own wrench information: no regressor (the statistics map the
    features), the wrench and the features. Otherwise the whitened regressor and wrench
    (:meth:`SensorSamples.whitened`) and no features (whitening mixes the channels)."""
    if samples.wrench_information_sqrt is None:
        return None, samples.wrench_in_sensor, features
    Y, wrench, _ = samples.whitened(features_regressor(features))
    return Y, wrench, None


def samples_features(samples: SensorSamples, apparent_gravity: np.ndarray | None = None) -> np.ndarray:
    """Return the (N, 12) features of a batch.

    With ``apparent_gravity`` (N, 3), m/s², they are those of the reduced model
    (:func:`reduced_regressor` of it: every other feature 0)."""
    if apparent_gravity is not None:
        f = np.zeros((len(samples), N_FEATURES))
        f[:, 0:3] = apparent_gravity
        return f
    return regressor_features(
        samples.lin_acc_in_sensor, samples.ang_vel_in_sensor, samples.ang_acc_in_sensor, samples.gravity_in_sensor
    )


def regressor(
    lin_acc_in_sensor: np.ndarray,
    ang_vel_in_sensor: np.ndarray,
    ang_acc_in_sensor: np.ndarray,
    gravity_in_sensor: np.ndarray,
) -> np.ndarray:
    """Full Newton-Euler regressor, Nadeau et al.'s eqs. (2)-(3), sign of the measured wrench.

    Same arguments and result as :func:`regressor_reference`: (N, 6, 10) ``Y`` with
    ``wrench_on_sensor = Y @ phi``, evaluated as one product of the 12 features
    ``[g - a, alpha, omega_x², omega_y², omega_z², omega_x omega_y, omega_x omega_z, omega_y omega_z]``
    with a constant matrix.
    """
    features = regressor_features(lin_acc_in_sensor, ang_vel_in_sensor, ang_acc_in_sensor, gravity_in_sensor)
    return (features @ _K).reshape(-1, 6, N_PARAMS)


def reduced_regressor(gravity_in_sensor: np.ndarray) -> np.ndarray:
    """Gravity-only regressor, Nadeau et al.'s eq. (6) extended with the force rows.

    ``f = m g`` and ``tau = m c x g``: the full regressor with ``a = omega = alpha = 0``.
    Returns (N, 6, 10); the six inertia columns are zero.
    """
    g = np.atleast_2d(np.asarray(gravity_in_sensor, dtype=float))
    Y = np.zeros((g.shape[0], 6, N_PARAMS))
    Y[:, 0:3, 0] = g
    Y[:, 3:6, 1:4] = -batch_skew(g)
    return Y


def bias_regressor(n: int) -> np.ndarray:
    """(n, 6, 6) identity blocks: the columns of the six F/T offsets ``beta``."""
    return np.broadcast_to(np.eye(N_BIAS), (n, N_BIAS, N_BIAS))


def samples_regressor(samples: SensorSamples, reduced: bool = False) -> np.ndarray:
    """The (N, 6, 10) regressor of a batch of samples (full, or reduced when asked)."""
    if reduced:
        return reduced_regressor(samples.gravity_in_sensor)
    return regressor(
        samples.lin_acc_in_sensor,
        samples.ang_vel_in_sensor,
        samples.ang_acc_in_sensor,
        samples.gravity_in_sensor,
    )


def predict_wrench(
    phi: np.ndarray, samples: SensorSamples, bias: np.ndarray | None = None
) -> np.ndarray:
    """(N, 6) wrench that a body with parameters ``phi`` exerts on the sensor (+ offset)."""
    w = samples_regressor(samples) @ np.asarray(phi, dtype=float)
    if bias is not None:
        w = w + np.asarray(bias, dtype=float)
    return w


def regressor_noise_gram(lin_acc_std: float, ang_acc_std: float, reduced: bool = False) -> np.ndarray:
    """(6, 10, 10) expected ``dY_k^T dY_k`` per sample and wrench channel ``k`` (errors in variables).

    ``Y`` is linear in the measured ``a`` and ``alpha`` (the first six features), so white noise
    of std ``lin_acc_std`` (m/s²) and ``ang_acc_std`` (rad/s²) per axis in them perturbs every row
    by ``dY = dfeatures @ K`` whatever the motion: the Gram of a batch of ``N`` noisy rows exceeds
    the noise-free one by ``N`` times this matrix on average, which biases least squares towards
    zero (attenuation). The reduced model (``f = m (g - a)``, ``tau = m c x (g - a)``) carries the
    ``a`` noise only. Gravity (from the orientation) and the F/T offset columns are taken as exact;
    noise in ``omega`` is not modelled (gyro and encoder rates are orders of magnitude cleaner).
    """
    lin, ang = float(lin_acc_std) ** 2, 0.0 if reduced else float(ang_acc_std) ** 2
    var = np.array([lin, lin, lin, ang, ang, ang])
    outer = _NOISE_OUTER_REDUCED if reduced else _NOISE_OUTER
    return (var @ outer).reshape(6, N_PARAMS, N_PARAMS)


def _noise_outer(reduced: bool) -> np.ndarray:
    """(6, 6 * 10 * 10) ``K_fki K_fkj`` per acceleration feature ``f``: :func:`regressor_noise_gram`'s terms."""
    K = _K[:6].reshape(6, 6, N_PARAMS).copy()  # feature, channel, parameter
    if reduced:
        K[:, :, 4:] = 0.0  # the reduced regressor has no inertia columns
    return np.einsum("fki,fkj->fkij", K, K).reshape(6, -1)


_NOISE_OUTER = _noise_outer(False)
_NOISE_OUTER_REDUCED = _noise_outer(True)
