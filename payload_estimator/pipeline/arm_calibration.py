"""The calibration of the unloaded arm's joint-torque model from a recording of it.

Calibration (:func:`calibrate_arm`) fits ``pi``, the friction and optionally ``s`` to a recording
of the arm *without* payload, as a maximum a posteriori estimate around the robot description:
the description's inertial parameters are the prior mean, with standard deviations of
:class:`ArmPrior` (a vendor URDF's masses are off by 10-20 %, its COMs by a centimetre). What the
motion excites comes from the data; the combinations no motion of a fixed-base arm can separate
(the base parameters' null space) and the ones this motion did not excite stay at the description.
That is what lets a calibration generalise to another motion: the fitted combinations are the
ones that matter for any motion, the rest is no worse than the vendor's. Everything is linear: the
fit solves normal equations (sufficient statistics, as in the estimators), with each joint's friction
kept dissipative at speed (its viscous term and its Coulomb levels at speed, either way, not negative, a bounded
least squares), so that a speed the calibration did not see cannot turn friction into a motor.

The model and its parameters are :mod:`~payload_estimator.pipeline.arm_model`'s;
:func:`joint_recording` prepares a recording (filtered, differentiated) for :func:`calibrate_arm`.

Units SI: N·m, rad, rad/s, N·m·s/rad, kg, m, kg·m².
"""

from __future__ import annotations

import datetime
from dataclasses import dataclass
from typing import Any

import numpy as np

from payload_estimator.core.inertia import (
    InertialParameters,
    from_pseudo_inertia,
    phi_to_pinocchio,
    pseudo_inertia,
)
from payload_estimator.errors import CalibrationError
from payload_estimator.pipeline.arm_model import (
    COULOMB_VELOCITIES,
    FRICTION_TERMS,
    ArmCalibration,
    ArmDynamics,
    ArmPrior,
    body_from_pinocchio,
    friction_regressor,
    load_friction_regressor,
)
from payload_estimator.pipeline.effort_check import effort_ratio, effort_ratio_from_sums, effort_ratio_sums
from payload_estimator.pipeline.kinematics import SensorKinematics

__all__ = [
    "ArmPrior",
    "CalibrationFit",
    "JointRecording",
    "calibrate_arm",
    "joint_recording",
    "residual_rms",
    "SHAPE_PRIOR_STD",
]


@dataclass(frozen=True, eq=False)
class JointRecording:
    """Joint states of the arm on a uniform time grid, already low-pass filtered and differentiated alike.

    The efforts are filtered with the same filter as the positions.

    Attributes:
        t: (N,) s. q: (N, n) rad. dq: (N, n) rad/s. ddq: (N, n) rad/s². effort: (N, n) N·m.
    """

    t: np.ndarray
    q: np.ndarray
    dq: np.ndarray
    ddq: np.ndarray
    effort: np.ndarray

    def __len__(self) -> int:
        return int(len(self.t))


@dataclass(frozen=True, eq=False)
class CalibrationFit:
    """Figures of a calibration: effort residual RMS per joint, N·m.

    With the description alone (no friction) and with the calibration, on the data it was
    fitted to and on held-out data."""

    rms_description: np.ndarray
    rms_calibrated: np.ndarray
    samples: int
    rms_description_held_out: np.ndarray | None = None
    rms_calibrated_held_out: np.ndarray | None = None
    held_out_samples: int = 0


def _carried_inertias(nominal: np.ndarray, fitted: np.ndarray) -> np.ndarray:
    """Return the prior's mean (b, 10) for the inertias once the data have moved a body's mass and COM.

    ``nominal`` with each body's inertia about its joint replaced by the description's inertia
    about the COM, scaled by the fitted mass, carried to the fitted COM (the description's
    inertia about the joint would otherwise stay behind a COM that moved, and the inertia about
    the COM turn negative)."""
    out = nominal.copy()
    for k, (p0, p) in enumerate(zip(nominal, fitted)):
        if not (p0[0] > 0.0 and p[0] > 0.0):
            continue
        described, fitted_body = body_from_pinocchio(p0), body_from_pinocchio(p)
        moved = InertialParameters.from_mass_com_inertia(
            fitted_body.mass, fitted_body.com, described.inertia_com * (fitted_body.mass / described.mass))
        out[k, 4:10] = phi_to_pinocchio(moved.phi)[4:10]
    return out


_UPPER = np.triu_indices(3, 1)


def _parameters_from_log_cholesky(theta: np.ndarray) -> np.ndarray:
    """Return the (b, 10) parameters of log-Cholesky coordinates ``theta`` (b, 10).

    Coordinates ``[alpha, d (3), s (3), t (3)]``: ``J = U U^T``,
    ``U = e^alpha [[diag(e^d) + s above it, t], [0, 1]]`` (Rucker & Wensing, RA-L 2022), a real
    body for every ``theta``."""
    b = theta.shape[0]
    U = np.zeros((b, 4, 4))
    idx = np.arange(3)
    U[:, idx, idx] = np.exp(theta[:, 1:4])
    U[:, _UPPER[0], _UPPER[1]] = theta[:, 4:7]
    U[:, :3, 3] = theta[:, 7:10]
    U[:, 3, 3] = 1.0
    U *= np.exp(theta[:, 0])[:, None, None]
    return np.array([phi_to_pinocchio(from_pseudo_inertia(J).phi) for J in U @ np.transpose(U, (0, 2, 1))])


def _log_cholesky(p: np.ndarray) -> np.ndarray:
    """Return the (b, 10) log-Cholesky coordinates of bodies' parameters ``p`` (b, 10).

    A body that is not a real one is first moved to the nearest pseudo-inertia with eigenvalues
    at least 1e-9 of its largest."""
    out = np.zeros((len(p), 10))
    flip = np.eye(4)[::-1]
    for k, pk in enumerate(p):
        Jk = pseudo_inertia(body_from_pinocchio(pk))
        lam, V = np.linalg.eigh(0.5 * (Jk + Jk.T))
        Jk = (V * np.maximum(lam, 1e-9 * max(float(lam[-1]), 1e-12))) @ V.T
        L = np.linalg.cholesky(flip @ Jk @ flip)
        U = flip @ L @ flip  # upper triangular, J = U U^T
        scale = U[3, 3]
        Un = U / scale
        out[k] = np.concatenate([[np.log(scale)], np.log(np.diag(Un)[:3]), Un[:3, :3][_UPPER], Un[:3, 3]])
    return out


SHAPE_PRIOR_STD = 2.0
"""Std of the weak prior on each body's log-Cholesky coordinates (a factor e² on the pseudo-inertia's
scales) in the consistent calibration."""


def _consistent_fit(A: np.ndarray, y: np.ndarray, sigma: np.ndarray, x_linear: np.ndarray, mean: np.ndarray,
                    std: np.ndarray, n_pi: int, b: int) -> np.ndarray:
    """Return the MAP fit of :func:`calibrate_arm` over real bodies.

    The bodies' parameters go through log-Cholesky coordinates, the rest (friction, scales) as
    they are; the fit starts from the linear fit projected onto real bodies."""
    from scipy.optimize import least_squares

    # the data term through its sufficient statistics: |rows x - target|² = |R x - R^-T c|² + constant
    weighted = (A / sigma[None, :, None]).reshape(-1, A.shape[2])
    G = weighted.T @ weighted
    c = weighted.T @ (y / sigma[None, :]).reshape(-1)
    R = np.linalg.cholesky(G + 1e-12 * np.trace(G) / len(G) * np.eye(len(G))).T
    rows, target = R, np.linalg.solve(R.T, c)
    theta0 = np.concatenate([_log_cholesky(x_linear[:n_pi].reshape(b, 10)).ravel(), x_linear[n_pi:]])
    # a weak prior on the coordinates themselves, around the description's bodies: it keeps a body from
    # degenerating to a rod or a disc (a log-diagonal going to -inf) where the data cannot tell
    theta_mean = _log_cholesky(mean[:n_pi].reshape(b, 10)).ravel()

    def unpack(z: np.ndarray) -> np.ndarray:
        return np.concatenate([_parameters_from_log_cholesky(z[:n_pi].reshape(b, 10)).ravel(), z[n_pi:]])

    def residuals(z: np.ndarray) -> np.ndarray:
        x = unpack(z)
        return np.concatenate([rows @ x - target, (x - mean) / std, (z[:n_pi] - theta_mean) / SHAPE_PRIOR_STD])

    def jacobian(z: np.ndarray) -> np.ndarray:
        # d x / d z: block-diagonal, 10 x 10 per body (central differences), identity for the rest
        D = np.eye(len(z))
        thetas = z[:n_pi].reshape(b, 10)
        h = 1e-6
        for j in range(10):
            step = np.zeros((b, 10))
            step[:, j] = h
            d = (_parameters_from_log_cholesky(thetas + step) - _parameters_from_log_cholesky(thetas - step)) / (2 * h)
            for k in range(b):
                D[10 * k:10 * k + 10, 10 * k + j] = d[k]
        shape = np.zeros((n_pi, len(z)))
        shape[:, :n_pi] = np.eye(n_pi) / SHAPE_PRIOR_STD
        return np.vstack([rows @ D, D / std[:, None], shape])

    solution = least_squares(residuals, theta0, jac=jacobian, method="trf", x_scale="jac", max_nfev=200,
                             ftol=1e-10, xtol=1e-10)
    return unpack(solution.x)


def _dissipative_coordinates(n_pi: int, n: int, n_s: int, n_load: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(T, lower)``: ``x = T z`` with ``z >= lower`` exactly when every joint's friction dissipates.

    Dissipating at speed: its viscous coefficient and the level reached at speed in either direction (the
    sum of its Coulomb levels plus, or minus, the sum of their direction-dependent parts) are not negative.
    Per joint ``z`` holds the viscous term, every Coulomb level and direction-dependent part but the last,
    and the two levels at speed (forwards, backwards) in place of the last two; the rest of ``x`` is ``z``.
    Of the ``n_s`` columns after the friction, the first ``n_load`` (each joint's load-dependent Coulomb
    coefficient) are not negative."""
    k = len(COULOMB_VELOCITIES)
    p = n_pi + FRICTION_TERMS * n + n_s
    T = np.eye(p)
    lower = np.full(p, -np.inf)
    for i in range(n):
        lower[n_pi + i] = 0.0  # viscous
        cols = n_pi + n + i * k + np.arange(k)
        parts = n_pi + (1 + k) * n + i * k + np.arange(k)
        c_last, a_last = cols[-1], parts[-1]
        # z[c_last] is the level forwards F = sum c + sum a, z[a_last] the level backwards B = sum c - sum a
        T[c_last, c_last], T[c_last, a_last] = 0.5, 0.5  # the last level = (F + B) / 2 - the others
        T[c_last, cols[:-1]] = -1.0
        T[a_last, c_last], T[a_last, a_last] = 0.5, -0.5  # the last part = (F - B) / 2 - the others
        T[a_last, parts[:-1]] = -1.0
        lower[c_last] = lower[a_last] = 0.0
    start = n_pi + FRICTION_TERMS * n
    lower[start:start + n_load] = 0.0  # the load-dependent coefficients
    return T, lower


def _bounded_quadratic_minimum(H: np.ndarray, g: np.ndarray, lower: np.ndarray) -> np.ndarray:
    """Return ``argmin 1/2 z^T H z - g^T z`` over ``z >= lower`` for a positive definite ``H``.

    Solved by scipy's bounded linear least squares on its Cholesky factor."""
    from scipy.optimize import lsq_linear

    H = 0.5 * (H + H.T)
    try:
        R = np.linalg.cholesky(H).T  # H = R^T R
    except np.linalg.LinAlgError:  # positive definite in exact arithmetic (the prior): rounding, lifted
        lam, V = np.linalg.eigh(H)
        H = (V * np.maximum(lam, 1e-12 * max(float(lam[-1]), 1e-300))) @ V.T
        R = np.linalg.cholesky(H).T
    z = np.linalg.solve(R, np.linalg.solve(R.T, g))
    if np.all(z >= lower):
        return z
    return np.asarray(lsq_linear(R, np.linalg.solve(R.T, g), bounds=(lower, np.inf), method="bvls").x)


def residual_rms(dynamics: ArmDynamics, rec: JointRecording) -> np.ndarray:
    """(n,) RMS of the corrected effort minus the model's torque per joint, N·m."""
    r = dynamics.corrected_effort(rec.effort) - dynamics.torques(rec.q, rec.dq, rec.ddq, rec.effort)
    return np.sqrt(np.mean(r**2, axis=0))


def calibrate_arm(
    kinematics: SensorKinematics,
    recording: JointRecording,
    *,
    robot: str = "",
    effort_scale: bool = False,
    prior: ArmPrior | None = None,
    held_out: JointRecording | None = None,
    info: dict[str, Any] | None = None,
    consistent: bool = False,
    initial_scale: np.ndarray | None = None,
    loaded: JointRecording | None = None,
    loaded_torques: np.ndarray | None = None,
    load_friction: bool = False,
    load_friction_per_joint: bool = False,
) -> tuple[ArmCalibration, CalibrationFit]:
    """Fit the arm's inertial parameters, friction and effort scales to a recording of the unloaded arm.

    ``recording`` is of the arm without payload (module docstring); the effort scales are fitted with
    ``effort_scale``. A least-squares fit with the description as prior, each joint weighted by its own
    residual (iteratively reweighted, four passes; the inertias' prior mean follows the fitted COMs between
    passes), the friction kept dissipative.

    ``effort_scale``: the scales of :func:`_scale_fit`, their common factor anchored on the description's
    gravity torques; or, with ``loaded`` (a recording of the same arm holding a known payload) and
    ``loaded_torques`` (its (N, n) torques, :func:`~payload_estimator.pipeline.joint_torques.payload_torques`),
    fitted to both recordings at once, on that payload: the unloaded recording keeps the last body from
    taking the payload in, so the known mass fixes the scales' common factor and loads the joints the arm's
    own links hardly do. The figures are the unloaded recording's. ``initial_scale``: (n,) the scales
    to start from (default: :func:`_initial_scale`).

    ``held_out``: another recording (another motion) the figures are also computed on. ``consistent``:
    the same objective over real bodies only (every body's pseudo-inertia positive definite, through
    log-Cholesky coordinates; scipy's trust-region least squares from the linear fit projected onto real
    bodies), so that no body has a negative mass or an impossible inertia: an arm model fit for a
    simulator. Off by default because the payload estimate does not need it and, measured
    (``benchmarks/joint_torques.py --consistent``), it fits the efforts a little worse and moves the
    payload's COM more: the lumped combinations the data determine are split among the bodies by the
    prior, and real bodies cannot always take their share.

    ``load_friction``: also fit the load-dependent Coulomb coefficient ``mu`` (not negative, prior
    :attr:`ArmPrior.load_friction`; :mod:`~payload_estimator.pipeline.arm_model`) from the way the joints'
    loads (gravity, chiefly) vary along the motion, and the known payload's when given: one for the arm's
    gearboxes (the shoulder and elbow, which gravity loads most, tell it; the wrist joints, which the payload
    loads, take it), or one per joint with ``load_friction_per_joint`` (measured worse:
    ``benchmarks/load_friction.py``). Each joint's levels are ``mu`` times its Coulomb levels' shape
    (:func:`_coulomb_shape`). A ``mu`` the recording does not determine (:data:`LOAD_FRICTION_MAX_STD`,
    :data:`LOAD_FRICTION_MAX`) is kept at 0 and named in the info (``load_friction_determined``). The load is read from
    the rigid-body torques (the description's, then the fitted bodies', in a second pass; plus the known
    payload's), which :class:`ArmDynamics` reads from the effort, where the payload is not known.
    """
    prior = prior or ArmPrior()
    n = kinematics.n_joints
    nominal_model = ArmDynamics(kinematics)
    b = len(nominal_model.body_joints)
    n_pi = 10 * b
    n_f = FRICTION_TERMS * n
    k = len(COULOMB_VELOCITIES)
    n_l = (n if load_friction_per_joint else 1) if load_friction else 0
    joint_of_mu = np.arange(n) if load_friction_per_joint else np.zeros(n, dtype=int)  # each joint's mu
    x0 = np.concatenate([nominal_model.nominal.ravel(), np.zeros(n_f + n_l)])
    std0 = np.concatenate([prior.body_std(nominal_model.nominal).ravel(), np.full(n_f, prior.friction),
                           np.full(n_l, prior.load_friction)])
    if len(recording) < 10:
        raise CalibrationError(f"the recording has {len(recording)} usable samples; calibration needs seconds "
                               "of motion")
    figures_recording = recording
    known = None
    if loaded is not None:
        known_part = np.asarray(loaded_torques, dtype=float)
        if known_part.shape != loaded.effort.shape or not np.all(np.isfinite(known_part)):
            raise CalibrationError(f"the known payload's torques must be finite, {loaded.effort.shape}")
        known = np.concatenate([np.zeros_like(recording.effort), known_part])
        recording = JointRecording(*(np.concatenate([getattr(recording, f), getattr(loaded, f)])
                                     for f in ("t", "q", "dq", "ddq", "effort")))
    A_base = _calibration_rows(nominal_model, recording)
    effort = recording.effort

    shape = np.zeros((n, k))  # each joint's Coulomb shape, weights of its levels summing to 1 (_coulomb_shape)

    def with_load(pi: np.ndarray) -> np.ndarray:
        """The rows with the load-dependent columns, the load the rigid-body torques of the bodies ``pi``.

        Joint i's column: ``|load_i|`` times its Coulomb shape. (The load is not the effort: a column holding
        the target's noise would explain the target by itself.)"""
        if not n_l:
            return A_base
        load = A_base[:, :, :n_pi] @ pi + (known if known is not None else 0.0)
        cols = np.zeros((len(load), n, n_l))
        cols[:, np.arange(n), joint_of_mu] = np.einsum("Nik,ik->Ni", load_friction_regressor(recording.dq, load),
                                                       shape)
        return np.concatenate([A_base, cols], axis=2)

    def coulomb_shape(y: np.ndarray) -> np.ndarray:
        return _coulomb_shape(A_base, y, x0[:n_pi + n_f], std0[:n_pi + n_f], nominal_model.nominal) if n_l \
            else shape

    if effort_scale:
        if initial_scale is None:
            guess, informed = _initial_scale(nominal_model, recording, known)
        else:
            guess, informed = np.asarray(initial_scale, dtype=float).reshape(n), np.ones(n, dtype=bool)
        if np.any(~np.isfinite(guess)) or np.any(guess <= 0.0):
            raise CalibrationError("the initial effort scales must be positive numbers")
        shape = coulomb_shape(effort * guess - (known if known is not None else 0.0))
        A = with_load(nominal_model.nominal.ravel())  # the load: the description's torques
        if known is None:
            A_s, x0_s, std0_s, n_known = A, x0, std0, 0
            poses = recording.q[np.linspace(0, len(recording) - 1, min(GRAVITY_POSES, len(recording))).astype(int)]
            still = np.zeros_like(poses)
            gravity_rows: np.ndarray | None = nominal_model.regressor(poses, still, still)
        else:  # the payload's torques a column whose coefficient is known (1): the data fix the common factor
            A_s = np.concatenate([A, known[:, :, None]], axis=2)
            x0_s, std0_s, n_known = np.append(x0, 1.0), np.append(std0, KNOWN_STD), 1
            gravity_rows = None
        x, sigma, mean = _reweighted_fit(A_s, effort * guess, x0_s, std0_s, nominal_model.nominal,
                                         n_known + n_l, n_l)
        # an uninformed guess is left to the data where they can tell it: with a known payload (the unloaded
        # arm alone does not load the joints whose own ratio was undetermined)
        log_std = np.where(informed | (known is None), prior.effort_scale, UNINFORMED_SCALE_STD)
        _, scale, _, scale_std = _scale_fit(A_s, effort, x, guess, mean, std0_s, nominal_model.nominal,
                                            gravity_rows, n_known, log_std, n_l)
        # a scale the fit moved beyond SCALE_MAX_CHANGE of an informed first guess is not the data's but the
        # model's mismatch (a joint whose effort is mostly friction unlike the model's): kept at the guess, named;
        # an uninformed guess (another joint's ratio) the data alone decide, where they determine the scale
        believed = np.where(informed, np.abs(np.log(scale / guess)) <= np.log1p(SCALE_MAX_CHANGE),
                            scale_std <= SCALE_MAX_STD)
        determined = believed & (scale_std <= SCALE_MAX_STD)
        scale = np.where(believed, scale, guess)
        scale_info = {"effort_scale_std": [round(float(v), 5) for v in scale_std],
                      "effort_scale_determined": [bool(v) for v in determined],
                      "effort_scale_guess": [round(float(v), 6) for v in guess],
                      "effort_scale_anchor": ("known payload" if known is not None
                                              else "the description's gravity torques")}
    else:
        scale = np.ones(n)
        scale_info = {}
    # the parameters with the scales found (the same fit as without --effort-scale, on the corrected efforts)
    target = effort * scale - (known if known is not None else 0.0)
    shape = coulomb_shape(target)
    A = with_load(nominal_model.nominal.ravel())
    x, sigma, mean = _reweighted_fit(A, target, x0, std0, nominal_model.nominal, n_l, n_l)
    load_info: dict[str, Any] = {}
    if n_l:  # the load of the fitted bodies
        A = with_load(x[:n_pi])
        x, sigma, mean = _reweighted_fit(A, target, x0, std0, nominal_model.nominal, n_l, n_l)
        # a mu whose joints' loads the motion hardly varies cannot be told from the Coulomb levels: kept at 0 (a mu
        # fitted on a load that hardly varies would be extrapolated to a payload's), as is a mu beyond belief
        cov = _posterior_covariance(A, sigma, std0)[n_pi + n_f:, n_pi + n_f:]
        mu_std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        fitted = x[n_pi + n_f:]
        spread = np.zeros(n_l)
        np.maximum.at(spread, joint_of_mu, np.abs(shape).sum(axis=1))
        believable = np.abs(fitted) * spread < LOAD_FRICTION_MAX
        determined = (mu_std <= LOAD_FRICTION_MAX_STD) & believable
        if not np.all(determined):
            pinned = ~determined
            std0 = std0.copy()
            std0[n_pi + n_f:][pinned] = KNOWN_STD
            x0 = x0.copy()
            x0[n_pi + n_f:][pinned] = 0.0
            x, sigma, mean = _reweighted_fit(A, target, x0, std0, nominal_model.nominal, n_l, n_l)
        load_info = {"load_friction_std": [round(float(v), 5) for v in mu_std[joint_of_mu]],
                     "load_friction_determined": [bool(v) for v in determined[joint_of_mu]],
                     "load_friction_shared": not load_friction_per_joint}
    if consistent:
        x = _consistent_fit(A, target, sigma, x, mean, std0, n_pi, b)
    pi = x[:n_pi].reshape(b, 10)
    f = x[n_pi:n_pi + n_f]
    mu = np.zeros((n, k))
    if n_l:  # the levels: mu times the joint's Coulomb shape
        coefficient = np.clip(x[n_pi + n_f:n_pi + n_f + n_l], 0.0, None)[joint_of_mu]
        coefficient[~np.asarray(load_info["load_friction_determined"])] = 0.0  # pinned there by the prior: exactly
        mu = coefficient[:, None] * shape
    meta = {"created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "samples": int(len(figures_recording)), "effort_scale_calibrated": bool(effort_scale)}
    if loaded is not None:
        meta["known_payload_samples"] = int(len(loaded))
    meta.update(scale_info)
    meta.update(load_info)
    meta.update(info or {})
    calibration = ArmCalibration(
        robot=robot, joint_names=kinematics.joint_names, body_joints=nominal_model.body_joints, body_parameters=pi,
        viscous=f[:n], coulomb=f[n:n + n * k].reshape(n, k), offset=f[-n:], effort_scale=scale,
        residual_std=sigma, info=meta, load_friction=mu, coulomb_asymmetry=f[n + n * k:-n].reshape(n, k),
        speed_range=_speed_range(recording.dq),
    )
    return calibration, _fit_figures(nominal_model, ArmDynamics(kinematics, calibration), figures_recording,
                                     held_out)


def _speed_range(dq: np.ndarray) -> np.ndarray:
    """(2, n) each joint's slowest and fastest speed in ``dq`` (N, n), rad/s, the range its friction is known over.

    A direction a joint hardly moved in (below a tenth of its speed the other way) takes the other's magnitude."""
    lo, hi = np.minimum(dq.min(axis=0), 0.0), np.maximum(dq.max(axis=0), 0.0)
    reach = np.maximum(-lo, hi)
    return np.array([np.where(-lo < 0.1 * reach, -reach, lo), np.where(hi < 0.1 * reach, reach, hi)])


def _calibration_rows(nominal_model: ArmDynamics, recording: JointRecording) -> np.ndarray:
    """Return ``A`` (N, n, p): the calibration's rows ``[Y, F]`` per sample and joint (``A x`` the torques)."""
    return np.concatenate([nominal_model.regressor(recording.q, recording.dq, recording.ddq),
                           friction_regressor(recording.dq)], axis=2)


def _initial_scale(nominal_model: ArmDynamics, recording: JointRecording,
                   known: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(guess (n,), informed (n,))``: a first guess of each joint's effort scale, and where it is informed.

    The guess: 1, or the description's torque per unit of effort, the least-squares ratio of the description's
    rigid-body torques to the efforts (:func:`~payload_estimator.pipeline.effort_check.effort_ratio`), taken where
    it is determined and more than a factor :data:`OTHER_UNIT_FACTOR` from 1; for every joint when most are
    (efforts in other units, e.g. currents), and then the median ratio where a joint's is not determined. When no
    joint's ratio is determined by the torques' variation, the ratio through the origin (their level, the arm's
    gravity, counting too) on the joints that carry :data:`STATIC_LOAD_SHARE` of the load. Informed: the joint's
    own ratio, or 1 for efforts in N·m; not the median of other joints' ratios (the torque constants of a UR's
    wrist drives differ from its shoulder's by half), which the fit's prior then leaves to the data
    (:data:`UNINFORMED_SCALE_STD`)."""
    tau = nominal_model.rigid_body_torques(recording.q, recording.dq, recording.ddq)
    if known is not None:
        tau = tau + known
    ratio, determined = effort_ratio(tau, recording.effort)
    if not np.any(determined & (ratio > 0.0)):
        # the torques' variation along the motion is lost in what the description does not fit (a real arm's
        # model error): their level, the arm's own gravity, tells the joints that carry it
        ratio, determined = effort_ratio_from_sums(effort_ratio_sums(tau, recording.effort), centred=False)
        level = np.sum(tau**2, axis=0)
        determined &= level >= STATIC_LOAD_SHARE**2 * float(level.max(initial=0.0))
    good = determined & (ratio > 0.0)
    n = len(ratio)
    if not np.any(good):
        return np.ones(n), np.ones(n, dtype=bool)
    far = good & (np.abs(np.log(np.where(good, ratio, 1.0))) > np.log(OTHER_UNIT_FACTOR))
    if np.count_nonzero(far) * 2 > np.count_nonzero(good):  # most joints far off (currents): all of them
        return np.where(good, 1.0 / np.where(good, ratio, 1.0), 1.0 / float(np.median(ratio[good]))), good
    return np.where(far, 1.0 / np.where(far, ratio, 1.0), 1.0), np.ones(n, dtype=bool)


OTHER_UNIT_FACTOR = 2.0
"""A joint's ratio of effort to the description's torque beyond this factor (either way) is efforts in another
unit (currents: a torque constant's size), the first guess of its scale (:func:`_initial_scale`); within it, the
guess is 1 and the fit finds the scale: a real arm's model error moves the ratio by tens of per cent (a Panda's
torque sensors read 1.7 against a description the arm is unlike)."""
STATIC_LOAD_SHARE = 0.3
"""An effort scale's first guess from the torques' level (:func:`_initial_scale`) only on joints that carry this
share of the most loaded joint's torque (RMS) or more: on the others an offset or a model's error of a few N·m
is as large as the load."""
SCALE_MAX_CHANGE = 0.3
"""A fitted effort scale more than this fraction from its first guess is not believed (kept at the guess)."""
SCALE_MAX_STD = 0.05
"""An effort scale whose std (the data's, :func:`_log_scale_std`) is above this is not determined by the motion."""
UNINFORMED_SCALE_STD = 1.0
"""The std of the log of an effort scale whose first guess is another joint's ratio (:func:`_initial_scale`), when
a known payload's recording can tell it."""
SCALE_SEARCH = float(np.log(10.0))
"""How far from the first guesses (in log, per coordinate of the relative scales) the fit searches the scales."""
FALLBACK_SHAPE_LEVEL = 1
"""The Coulomb level (index in :data:`COULOMB_VELOCITIES`, 0.1 rad/s) whose shape the load-dependent term takes
for a joint whose own Coulomb levels give none (summing to nearly 0, or mostly cancelling)."""
LOAD_FRICTION_MAX_STD = 0.01
"""A joint's load-dependent Coulomb coefficient at speed (the sum of its levels) whose std (the data's and the
prior's) is above this is not determined by the motion: kept at 0."""
LOAD_FRICTION_MAX = 0.3
"""A joint whose load-dependent levels' magnitudes would sum to this or more (N·m per N·m of load) is not believed:
the model's mismatch, not a gearbox (kept at 0)."""
KNOWN_STD = 1e-6
"""Std of the known payload's coefficient (1): known."""
GRAVITY_POSES = 200
"""Poses of the recording the effort scales' common factor is anchored on (the description's gravity torques)."""


def _scale_fit(A: np.ndarray, effort: np.ndarray, x: np.ndarray, scale0: np.ndarray, mean: np.ndarray,
               std0: np.ndarray, nominal: np.ndarray, gravity_rows: np.ndarray | None,
               n_known: int = 0, log_std: float | np.ndarray = 0.15,
               n_load: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(x, scale, sigma, mean)``: the MAP fit of the parameters and the effort scales together.

    The model of each joint's effort *as reported* (the noise is the sensor's, in its units)::

        effort_i = u_i [A x]_i + noise,    u_i = 1 / scale_i

    A scale cannot buy a smaller residual by shrinking: ``u_i -> 0`` leaves the whole effort unexplained.
    The data determine the scales relative to each other (every body's parameters reach several joints' rows);
    their common factor they cannot tell (every ``u_i`` up and the torques ``A x`` down alike: an unloaded arm
    carries no known mass). That factor is anchored on what is known absolutely, gravity and the description's
    masses: the calibrated arm's gravity torques at the recording's poses (``gravity_rows`` (M, n, 10 b),
    the regressor at rest) match the description's in least squares. (Left to the prior on the parameters, the
    factor would be biased: a Gaussian prior around the description always prefers the smaller arm by the
    share of the fit it does not explain.)

    Solved by variable projection: for given ``u`` the parameters ``x`` are the bounded quadratic MAP
    (the friction kept dissipative); the cost that remains is minimised over the ``log u`` relative to their
    mean (n - 1 values, L-BFGS-B, the gradient by the envelope theorem), then the common factor is
    anchored; three passes, each joint weighted by its residual std with a floor (1 % of the joint's effort
    RMS) so the weights cannot collapse, the scales searched in the first (within :data:`SCALE_SEARCH` of the
    first guesses) and the arm refitted at them in the others. ``sigma`` is returned in N·m (times the scale).

    With a known payload (``gravity_rows`` None; its torques the last ``n_known`` column of ``A``, their
    coefficient pinned by the prior) the common factor is the data's: every ``log u`` is free. ``log_std``: the
    std of the prior on each ``log u`` around the first guess ``1 / scale0`` (:attr:`ArmPrior.effort_scale`).
    ``n_load``: load-dependent Coulomb columns between the friction and the known payload's (kept not negative)."""
    from scipy.optimize import minimize

    n = A.shape[1]
    b = len(nominal)
    n_pi = 10 * b
    T, lower = _dissipative_coordinates(n_pi, n, n_known + n_load, n_load)
    prior_info = 1.0 / std0**2
    G = np.einsum("kip,kiq->ipq", A, A)
    c = np.einsum("kip,ki->ip", A, effort)
    ee = np.einsum("ki,ki->i", effort, effort)
    log_u0 = -np.log(scale0)
    rms = np.sqrt(ee / len(effort))
    floor = np.maximum(1e-2 * rms, 1e-4 * float(rms.max())) + 1e-12
    tau_described = None if gravity_rows is None else gravity_rows @ nominal.ravel()
    # an orthonormal basis of the log-scales' zero-sum directions (the relative scales); all with a known payload
    basis = np.eye(n) if gravity_rows is None else np.linalg.svd(np.eye(n) - 1.0 / n)[0][:, :n - 1]
    log_u = log_u0.copy()
    sigma = np.maximum(np.sqrt(np.mean((effort - np.exp(log_u) * (A @ x)) ** 2, axis=0)), floor)
    for pass_ in range(3):
        w = 1.0 / sigma**2

        def inner(lu: np.ndarray, w: np.ndarray = w, mean: np.ndarray = mean) -> tuple[float, np.ndarray, np.ndarray]:
            uu = np.exp(lu)
            H = np.tensordot(w * uu**2, G, axes=1) + np.diag(prior_info)
            rhs = np.tensordot(w * uu, c, axes=1) + prior_info * mean
            xx = T @ _bounded_quadratic_minimum(T.T @ H @ T, T.T @ rhs, lower)
            cx = c @ xx
            xGx = np.einsum("p,ipq,q->i", xx, G, xx)
            data = w * (ee - 2.0 * uu * cx + uu**2 * xGx)
            cost = float(np.sum(data) + np.sum(prior_info * (xx - mean) ** 2)
                         + np.sum(((lu - log_u0) / log_std) ** 2))
            grad = w * (-2.0 * uu * cx + 2.0 * uu**2 * xGx) + 2.0 * (lu - log_u0) / log_std**2
            return cost, grad, xx

        # the scales are searched in the first pass, within a decade of the first guesses (each coordinate: a
        # line search cannot overflow); the reweighting passes refit the arm at them (measured: letting those
        # passes move the scales too walked an FR3's first four from within 2 % to 10-45 times the truth)
        if pass_ == 0:
            level = float(np.mean(log_u)) if gravity_rows is not None else 0.0

            def relative(v: np.ndarray, level: float = level, inner: Any = inner) -> tuple[float, np.ndarray]:
                cost, grad, _ = inner(level + basis @ v)
                return cost, basis.T @ grad

            centre = basis.T @ (log_u0 - level)
            v = minimize(relative, centre, jac=True, method="L-BFGS-B",
                         bounds=list(zip(centre - SCALE_SEARCH, centre + SCALE_SEARCH)),
                         options={"maxiter": 500, "ftol": 1e-14, "gtol": 1e-9}).x
            log_u = level + basis @ v
        x = inner(log_u)[2]
        # the common factor: the calibrated arm's gravity torques are the description's (least squares)
        tau_fitted = None if gravity_rows is None else gravity_rows @ x[:n_pi]
        power = 0.0 if tau_fitted is None else float(np.sum(tau_fitted**2))
        if tau_fitted is not None and tau_described is not None and power > 0.0:
            alpha = float(np.sum(tau_fitted * tau_described)) / power
            if alpha > 0.0:
                log_u -= np.log(alpha)
                x = inner(log_u)[2]
        u = np.exp(log_u)
        sigma = np.maximum(np.sqrt(np.mean((effort - u * (A @ x)) ** 2, axis=0)), floor)
        mean = mean.copy()
        mean[:n_pi] = _carried_inertias(nominal, x[:n_pi].reshape(b, 10)).ravel()
    return x, 1.0 / u, sigma / u, _log_scale_std(G, x, u, 1.0 / sigma**2, prior_info)


def _coulomb_shape(A: np.ndarray, y: np.ndarray, x0: np.ndarray, std0: np.ndarray, nominal: np.ndarray) -> np.ndarray:
    """Return (n, k) each joint's Coulomb shape: its fitted Coulomb levels over their sum.

    The load-dependent term scales the joint's own Coulomb friction (Hamon, Gautier and Garrec's law), so a
    load that does not vary is exactly a Coulomb level and only the load's variation tells ``mu``. From the
    fit of the rows ``A`` (N, n, p) without the term; a joint whose levels sum to less than 0.05 N·m, or whose
    levels' magnitudes sum to more than 3 times their sum, takes the shape of :data:`FALLBACK_SHAPE_LEVEL`."""
    n = y.shape[1]
    k = len(COULOMB_VELOCITIES)
    n_pi = 10 * len(nominal)
    x, _, _ = _reweighted_fit(A, y, x0, std0, nominal, 0)
    levels = x[n_pi + n:n_pi + n + n * k].reshape(n, k)
    total = levels.sum(axis=1)
    ok = (total > 0.05) & (np.abs(levels).sum(axis=1) <= 3.0 * np.maximum(total, 1e-12))
    fallback = np.zeros(k)
    fallback[FALLBACK_SHAPE_LEVEL] = 1.0
    return np.where(ok[:, None], levels / np.where(ok, total, 1.0)[:, None], fallback)


def _posterior_covariance(A: np.ndarray, sigma: np.ndarray, std0: np.ndarray) -> np.ndarray:
    """(p, p) the covariance of the linear MAP fit of the rows ``A`` (N, n, p).

    Joint ``i`` weighted by ``1 / sigma_i²``, with the prior ``std0`` (p,) (the bounds ignored)."""
    G = np.einsum("kip,kiq->ipq", A, A)
    H = np.tensordot(1.0 / sigma**2, G, axes=1) + np.diag(1.0 / std0**2)
    try:
        return np.linalg.inv(0.5 * (H + H.T))
    except np.linalg.LinAlgError:
        return np.full((len(std0), len(std0)), np.inf)


def _log_scale_std(G: np.ndarray, x: np.ndarray, u: np.ndarray, w: np.ndarray, prior_info: np.ndarray) -> np.ndarray:
    """(n,) the std of each log effort scale that the data (and the parameters' prior) give, without its own prior.

    The Gauss-Newton information of ``(x, log u)`` of :func:`_scale_fit`'s cost, the parameters marginalised
    (Schur complement); a joint whose own rows the motion hardly loads beyond friction and noise has a large one."""
    n = len(u)
    Gx = np.einsum("ipq,q->ip", G, x)
    Hxx = np.tensordot(w * u**2, G, axes=1) + np.diag(prior_info)
    Hxu = (w * u**2)[None, :] * Gx.T  # (p, n)
    Huu = np.diag(w * u**2 * np.einsum("ip,p->i", Gx, x))
    S = Huu - Hxu.T @ np.linalg.solve(Hxx, Hxu)
    S = 0.5 * (S + S.T) + 1e-12 * np.trace(S) / n * np.eye(n)
    try:
        return np.sqrt(np.clip(np.diag(np.linalg.pinv(S)), 0.0, None))
    except np.linalg.LinAlgError:
        return np.full(n, np.inf)


def _reweighted_fit(A: np.ndarray, y: np.ndarray, x0: np.ndarray, std0: np.ndarray, nominal: np.ndarray,
                    n_s: int, n_load: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ``(x, sigma, mean)``: the MAP fit of the rows ``A x = y`` with the prior ``x0 +- std0``.

    The friction is kept dissipative, each joint weighted by its own residual std ``sigma``
    (iteratively reweighted, four passes); ``mean`` is the prior mean it ended with (the
    description's inertias carried to the fitted COMs between passes; ``nominal`` (b, 10) the
    description's bodies). ``n_s`` columns follow the friction, the first ``n_load`` of them not negative."""
    n = y.shape[1]
    b = len(nominal)
    n_pi = 10 * b
    prior_info = 1.0 / std0**2
    # normal equations per joint (the rows are kept: a recording of minutes is a few MB)
    G = np.einsum("kip,kiq->ipq", A, A)
    c = np.einsum("kip,ki->ip", A, y)
    sigma = np.ones(n)
    x, mean = x0, x0.copy()
    T, lower = _dissipative_coordinates(n_pi, n, n_s, n_load)
    for _ in range(4):  # iteratively reweighted: each joint by its residual; the inertias' prior follows the COMs
        H = np.tensordot(1.0 / sigma**2, G, axes=1) + np.diag(prior_info)
        rhs = np.tensordot(1.0 / sigma**2, c, axes=1) + prior_info * mean
        x = T @ _bounded_quadratic_minimum(T.T @ H @ T, T.T @ rhs, lower)
        sigma = np.sqrt(np.mean((y - A @ x) ** 2, axis=0))
        sigma = np.maximum(sigma, 1e-3 * max(float(sigma.max()), 1e-9))
        mean[:n_pi] = _carried_inertias(nominal, x[:n_pi].reshape(b, 10)).ravel()
    return x, sigma, mean


def _fit_figures(nominal_model: ArmDynamics, calibrated: ArmDynamics, recording: JointRecording,
                 held_out: JointRecording | None) -> CalibrationFit:
    """The effort residuals of the description and of the calibration on ``recording`` (and ``held_out``)."""
    fit = CalibrationFit(
        rms_description=residual_rms(nominal_model, recording),
        rms_calibrated=residual_rms(calibrated, recording),
        samples=len(recording),
    )
    if held_out is not None and len(held_out):
        fit = CalibrationFit(fit.rms_description, fit.rms_calibrated, fit.samples,
                             residual_rms(nominal_model, held_out), residual_rms(calibrated, held_out), len(held_out))
    return fit


def joint_recording(
    t: np.ndarray,
    q: np.ndarray,
    effort: np.ndarray,
    *,
    rate_hz: float = 1000.0,
    cutoff_hz: float = 10.0,
    order: int = 4,
    fit_rate_hz: float = 100.0,
    max_gap_s: float = 0.05,
    trim_s: float = 0.2,
) -> JointRecording:
    """Turn a recording's raw joint states into a :class:`JointRecording` for :func:`calibrate_arm`.

    Raw joint states ``t`` (N,) s, ``q`` (N, n) rad, ``effort`` (N, n) N·m: samples sorted, those with a
    NaN/inf or a repeated stamp dropped, split where the stamps jump more than ``max_gap_s``, each piece
    interpolated onto a ``rate_hz`` grid, low-passed forward and backward (no lag: the calibration is
    offline) at ``cutoff_hz`` like the positions, differentiated with central differences, ``trim_s`` cut at
    both ends of every piece (the filters' edges) and kept at ``fit_rate_hz``."""
    from payload_estimator.pipeline.filters import zero_phase_lowpass

    t = np.asarray(t, dtype=float).reshape(-1)
    q = np.asarray(q, dtype=float).reshape(len(t), -1)
    effort = np.asarray(effort, dtype=float).reshape(q.shape)
    ok = np.isfinite(t) & np.isfinite(q).all(axis=1) & np.isfinite(effort).all(axis=1)
    t, q, effort = t[ok], q[ok], effort[ok]
    order_idx = np.argsort(t, kind="stable")
    t, q, effort = t[order_idx], q[order_idx], effort[order_idx]
    fresh = np.concatenate(([True], np.diff(t) > 0.0))
    t, q, effort = t[fresh], q[fresh], effort[fresh]
    pieces: list[JointRecording] = []
    if len(t) == 0:
        n = q.shape[1]
        z = np.zeros((0, n))
        return JointRecording(np.zeros(0), z, z, z, z)
    breaks = np.flatnonzero(np.diff(t) > max_gap_s) + 1
    step = max(1, int(round(rate_hz / fit_rate_hz)))
    T = 1.0 / rate_hz
    for seg_t, seg_q, seg_e in zip(np.split(t, breaks), np.split(q, breaks), np.split(effort, breaks)):
        grid = np.arange(seg_t[0], seg_t[-1], T)
        if grid[-1] - grid[0] < 2.0 * trim_s + 0.1:
            continue
        qg = np.column_stack([np.interp(grid, seg_t, seg_q[:, j]) for j in range(seg_q.shape[1])])
        eg = np.column_stack([np.interp(grid, seg_t, seg_e[:, j]) for j in range(seg_e.shape[1])])
        qf = zero_phase_lowpass(qg, rate_hz, cutoff_hz, order)
        ef = zero_phase_lowpass(eg, rate_hz, cutoff_hz, order)
        dq = np.gradient(qf, T, axis=0)
        ddq = np.gradient(dq, T, axis=0)
        keep = (grid >= grid[0] + trim_s) & (grid <= grid[-1] - trim_s)
        keep &= np.arange(len(grid)) % step == 0
        pieces.append(JointRecording(grid[keep], qf[keep], dq[keep], ddq[keep], ef[keep]))
    if not pieces:
        n = q.shape[1]
        z = np.zeros((0, n))
        return JointRecording(np.zeros(0), z, z, z, z)
    return JointRecording(*(np.concatenate([getattr(p, f) for p in pieces]) for f in ("t", "q", "dq", "ddq", "effort")))
