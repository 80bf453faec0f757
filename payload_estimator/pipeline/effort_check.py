"""The efforts checked against the arm model's torques: can they be this arm's torques in N·m?

Each joint's effort is compared with the torque the model predicts (:func:`joint_ratios`), on the slower half
of a recording (gravity dominates there): the least-squares ratio ``r_i`` of ``effort_i ~ r_i tau_i +
friction_i``, the joint's own friction (the calibration's columns: viscous, Coulomb, their direction-dependent
parts and an offset) fitted alongside, so that the friction of a joint the links hardly load does not bias its
ratio. A ratio is judged against its uncertainty: the data's, and the description's, whose inertial parameters
may be off by :class:`~payload_estimator.pipeline.arm_model.ArmPrior` (propagated to the ratio; large for a
joint the links hardly load, whose small torque a wrist link's error changes by a large fraction).

What cannot be this arm's torques in N·m is refused (:attr:`EffortCheck.refusal`, one line naming the setting
to change, :func:`check_efforts`):

* currents read as N·m: most joints' ratios 1/5 or less, or 5 or more, the size of a torque constant;
* a flipped sign: a negative ratio the description's error cannot explain (more than :data:`RATIO_SIGMAS`
  of its std from 1);
* a scale no calibration of the unloaded arm corrects: the joints' common ratio (weighted by their
  uncertainty) more than :data:`RATIO_FAR` from 1 and beyond its uncertainty, or one joint's ratio as far
  and beyond the description's error.

A joint more than :data:`RATIO_NOTED` from 1 but within what the description's error explains is named in a
warning (:meth:`EffortCheck.warning`): the description is off there, and the calibration fits the arm's links
to the efforts (with the ratio after the calibration, to show it did).

The stream's check (:func:`effort_check_ratios` of the running sums :func:`effort_ratio_sums`) judges the
currents and signs only: the payload's torques are in its efforts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from payload_estimator.pipeline.arm_model import COULOMB_VELOCITIES, ArmDynamics, ArmPrior, friction_regressor

if TYPE_CHECKING:  # the recording's type only: arm_calibration imports this module
    from payload_estimator.pipeline.arm_calibration import JointRecording

__all__ = ["EffortCheck", "JointRatios", "check_efforts", "effort_check_line", "effort_check_ratios", "joint_ratios",
           "effort_ratio", "effort_ratio_sums", "effort_ratio_from_sums", "RATIO_FAR", "RATIO_NOTED", "RATIO_SIGMAS"]

RATIO_FAR = 0.3
"""A scale more than this fraction from 1 (and beyond its uncertainty) is refused: the joints' common ratio, which a
calibration of the unloaded arm cannot tell from its links' masses, or one joint's beyond the description's error."""
RATIO_NOTED = 0.25
"""A joint's ratio more than this fraction from 1, within what the description's error explains, is named in a
warning: the description is off there (a vendor URDF's masses are off by 10-20 %)."""
RATIO_SIGMAS = 4.0
"""How many of its standard deviations a ratio may be from 1 and still be the description's error."""
CURRENT_RATIO = 5.0
"""Ratios this far from 1 (a factor, either way) on most joints are currents: a torque constant's size."""


@dataclass(frozen=True, eq=False)
class JointRatios:
    """Each joint's effort per N·m of the model's torque, with its uncertainty.

    Attributes:
        ratio: (n,) the least-squares ratio. se: (n,) its standard error (the data's).
        model_std: (n,) the std of the ratio that the description's error gives (dimensionless, relative to
            the efforts' own scale; :class:`~payload_estimator.pipeline.arm_model.ArmPrior`).
        determined: (n,) where the ratio is told: the joint's torque varies by 5 % of the most loaded joint's or
            more, explains half the effort's variation beyond friction or more, and the ratio's standard error
            is below 10 % of it.
    """

    ratio: np.ndarray
    se: np.ndarray
    model_std: np.ndarray
    determined: np.ndarray


def joint_ratios(dynamics: ArmDynamics, rec: JointRecording, prior: ArmPrior | None = None) -> JointRatios:
    """Return the :class:`JointRatios` of a recording against a model of the arm (module docstring).

    The model's torques (the calibration's, friction included, or the description's rigid body) at the
    recording's slower half of samples (by the fastest joint's speed), against the corrected efforts."""
    prior = prior or ArmPrior()
    speed = np.abs(rec.dq).max(axis=1)
    slow = speed <= np.median(speed)
    q, dq, ddq = rec.q[slow], rec.dq[slow], rec.ddq[slow]
    effort = dynamics.corrected_effort(rec.effort[slow])
    tau = dynamics.torques(q, dq, ddq, rec.effort[slow])
    Y = dynamics.regressor(q, dq, ddq)
    F = friction_regressor(dq)
    body_std = prior.body_std(dynamics.nominal).ravel()
    N, n = tau.shape
    k = len(COULOMB_VELOCITIES)
    ratio, se, model_std, spread, explained = (np.zeros(n) for _ in range(5))
    for i in range(n):  # the joint's own friction columns, projected out of its torque and effort
        cols = np.concatenate([[i], n + i * k + np.arange(k), (1 + k) * n + i * k + np.arange(k),
                               [(1 + 2 * k) * n + i]])
        U, sv, _ = np.linalg.svd(F[:, i, cols], full_matrices=False)
        U = U[:, sv > 1e-9 * max(float(sv[0]), 1e-300)]
        t = tau[:, i] - U @ (U.T @ tau[:, i])
        e = effort[:, i] - U @ (U.T @ effort[:, i])
        spread[i] = tt = float(t @ t)
        if tt <= 0.0:
            continue
        ratio[i] = float(t @ e) / tt
        rss = max(float(e @ e) - ratio[i] ** 2 * tt, 0.0)
        se[i] = np.sqrt(rss / max(N - U.shape[1] - 1, 1) / tt)
        explained[i] = 1.0 - rss / float(e @ e) if float(e @ e) > 0.0 else 0.0
        # the ratio moves by (t . Y_i dpi) / (t . t) for an error dpi of the bodies' parameters
        model_std[i] = float(np.linalg.norm((t @ Y[:, i, :]) / tt * body_std))
    loaded = spread >= 0.05**2 * float(spread.max(initial=0.0))
    determined = (spread > 0.0) & loaded & (se < 0.1 * np.abs(ratio)) & (explained >= 0.5)
    return JointRatios(ratio, se, model_std, determined)


@dataclass(frozen=True, eq=False)
class EffortCheck:
    """What :func:`check_efforts` found.

    Attributes:
        refusal: one line saying why the efforts cannot be read as this arm's torques in N·m, with the setting to
            change, or None.
        flipped: the refusal names a flipped sign (which fitted effort scales do not correct).
        noted: the joints more than :data:`RATIO_NOTED` from the description, within its error (:meth:`warning`).
        ratios: the ratios judged. joint_names: the arm's joints.
    """

    refusal: str | None
    flipped: bool
    noted: tuple[int, ...]
    ratios: JointRatios
    joint_names: tuple[str, ...]

    def warning(self, after: JointRatios | None = None, where: str = "") -> str | None:
        """One line naming the :attr:`noted` joints, or None.

        ``after``: their ratios against the calibrated model (on the recording ``where`` names), which say whether
        the calibration fitted them."""
        if not self.noted:
            return None
        r = self.ratios
        listed = ", ".join(f"{self.joint_names[j]} {r.ratio[j]:.2f} ±{_std(r, j, 1.0):.2f}" for j in self.noted)
        line = (f"the efforts are more than {RATIO_NOTED:.0%} from the description's torques on {listed} (effort per "
                "N·m, ± what the description's error allows): its links are off there, and the calibration fits them "
                "to the efforts")
        if after is None:
            return line
        still = [j for j in self.noted if after.determined[j] and abs(after.ratio[j] - 1.0) > RATIO_NOTED]
        fitted = ", ".join(f"{self.joint_names[j]} {after.ratio[j]:.2f}" for j in self.noted)
        line += f" (against the calibrated model{where}: {fitted})"
        if still:
            line += (f"; {', '.join(self.joint_names[j] for j in still)} still off: if a joint's torque constant is "
                     "off instead, set torque_constants or calibrate --effort-scale")
        return line


def _std(r: JointRatios, j: int, unit: float) -> float:
    """The std of joint ``j``'s ratio over ``unit`` if the efforts are the model's torques (ratio 1) in that unit."""
    return max(float(np.hypot(r.model_std[j], r.se[j] / unit)), 1e-3)


def check_efforts(dynamics: ArmDynamics, rec: JointRecording, scale: bool = True,
                  currents: bool = False) -> EffortCheck:
    """Judge a recording's efforts against a model of the arm (module docstring).

    ``scale``: judge the ratios' size too (an unloaded arm's recording; not one that holds a payload).
    ``currents``: the efforts are currents of unknown torque constants (``effort_unit: current``, none given):
    their common unit is the median ratio's, and their signs alone are judged."""
    names = tuple(dynamics.kinematics.joint_names)
    if len(rec) < 10:
        n = len(names)
        none = JointRatios(np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n, dtype=bool))
        return EffortCheck(None, False, (), none, names)
    ratios = joint_ratios(dynamics, rec)
    refusal, flipped, noted = _judge(ratios, names, scale, currents)
    return EffortCheck(refusal, flipped, noted, ratios, names)


def effort_check_line(dynamics: ArmDynamics, rec: JointRecording, scale: bool = True,
                      currents: bool = False) -> str | None:
    """The :attr:`EffortCheck.refusal` of :func:`check_efforts`."""
    return check_efforts(dynamics, rec, scale, currents).refusal


def effort_check_ratios(ratio: np.ndarray, determined: np.ndarray, joint_names: Sequence[str],
                        currents: bool = False) -> str | None:
    """The refusal of ratios without their uncertainty: currents read as N·m and flipped signs only.

    A stream's running sums (:func:`effort_ratio_from_sums`), whose efforts hold the payload's torques."""
    n = len(ratio)
    ratios = JointRatios(np.asarray(ratio, dtype=float), np.zeros(n), np.zeros(n), np.asarray(determined, dtype=bool))
    return _judge(ratios, tuple(joint_names), False, currents)[0]


def _judge(r: JointRatios, names: tuple[str, ...], scale: bool,
           currents: bool) -> tuple[str | None, bool, tuple[int, ...]]:
    """``(refusal, flipped, noted)`` of :func:`check_efforts`."""
    shown = [j for j in range(len(names)) if r.determined[j]]
    if not shown:
        return None, False, ()
    unit = float(np.median(np.abs(r.ratio[shown]))) if currents else 1.0
    rho = r.ratio / unit
    std = np.array([_std(r, j, unit) for j in range(len(names))])
    beyond = np.abs(rho - 1.0) > RATIO_SIGMAS * std
    negative = [j for j in shown if rho[j] < 0.0 and beyond[j]]
    order = [j for j in shown if not currents and rho[j] > 0.0
             and (rho[j] <= 1.0 / CURRENT_RATIO or rho[j] >= CURRENT_RATIO)]
    judged = scale and not currents and len(order) * 2 <= len(shown)
    positive = [j for j in shown if rho[j] > 0.0]
    common, common_std = _common_ratio(rho[positive], std[positive])
    common_far = judged and len(positive) >= 2 and abs(common - 1.0) > max(RATIO_FAR, RATIO_SIGMAS * common_std)
    off = [j for j in positive if judged and not common_far and beyond[j] and abs(rho[j] - 1.0) > RATIO_FAR]
    noted = tuple(j for j in positive if judged and not common_far and j not in off
                  and abs(rho[j] - 1.0) > RATIO_NOTED)

    def listed(js: list[int], spread: bool = False) -> str:
        return ", ".join(f"{names[j]} {r.ratio[j]:.3g}" + (f" (±{std[j]:.2g})" if spread else "") for j in js)

    parts = []
    if len(order) * 2 > len(shown):
        parts.append(f"look like currents, not N·m (effort per N·m of the model's torque: {listed(order)}): set "
                     "effort_unit: current with torque_constants (N m/A at the joint), or calibrate --effort-scale")
    if negative:
        parts.append(f"have the wrong sign ({listed(negative)}): flip the sign of torque_constants for "
                     f"{'that joint' if len(negative) == 1 else 'those joints'} (-1 where it is unset, 1 for the "
                     "others)")
    if common_far:
        parts.append(f"are scaled far from the model, alike on every joint ({common:.3g} times its torques, more "
                     f"than {RATIO_FAR:.0%}: {listed(positive)}): set torque_constants, or calibrate --effort-scale")
    elif off:
        parts.append(f"are scaled far from the model (more than {RATIO_FAR:.0%} and than the description's error "
                     f"explains: {listed(off, True)}): set torque_constants, or calibrate --effort-scale")
    refusal = "the efforts " + "; and ".join(parts) if parts else None
    return refusal, bool(negative), noted


def _common_ratio(rho: np.ndarray, std: np.ndarray) -> tuple[float, float]:
    """Return ``(common, std)``: the joints' common ratio and its std.

    The median of the ratios ``rho`` weighted by ``1 / std²`` (one joint's own scale does not make it); its std
    that of their weighted mean."""
    if not len(rho):
        return 1.0, np.inf
    order = np.argsort(rho)
    weight = 1.0 / std[order] ** 2
    half = np.searchsorted(np.cumsum(weight), 0.5 * float(np.sum(weight)))
    return float(rho[order][min(int(half), len(rho) - 1)]), float(1.0 / np.sqrt(np.sum(weight)))


def effort_ratio(tau: np.ndarray, effort: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(ratio (n,), determined (n,))``: each joint's effort per N·m of the model's torque.

    The least-squares ``effort_i ~ ratio_i tau_i + offset_i`` over the samples ``tau, effort`` (N, n)
    (:func:`effort_ratio_from_sums` of :func:`effort_ratio_sums`)."""
    return effort_ratio_from_sums(effort_ratio_sums(tau, effort))


def effort_ratio_sums(tau: np.ndarray, effort: np.ndarray) -> np.ndarray:
    """(6, n) the sums :func:`effort_ratio_from_sums` reads: count, Σtau, Σeffort, Σtau², Σeffort², Σtau·effort.

    Sums of batches add up: a stream keeps them as it goes."""
    tau = np.asarray(tau, dtype=float)
    effort = np.asarray(effort, dtype=float)
    return np.stack([np.full(tau.shape[1], float(len(tau))), tau.sum(axis=0), effort.sum(axis=0),
                     np.sum(tau**2, axis=0), np.sum(effort**2, axis=0), np.sum(tau * effort, axis=0)])


def effort_ratio_from_sums(sums: np.ndarray, centred: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(ratio (n,), determined (n,))`` from :func:`effort_ratio_sums`.

    ``determined`` where the ratio's standard error is below 10 % of it and the model's torque explains half
    the effort's variance or more, and the joint's torque varies by 5 % of the most loaded joint's or more
    (not a joint whose effort is mostly friction: a wrist joint of an unloaded arm). ``centred``: with an offset
    per joint (what the torques' variation tells); not centred, ``effort_i ~ ratio_i tau_i`` through the origin,
    the static gravity load counting too: the check of efforts that hold a payload, whose torques can dominate
    the variation where the arm's own gravity still dominates the level."""
    count, st, se_, stt, see, ste = np.asarray(sums, dtype=float)
    m = np.maximum(count, 1.0)
    if centred:
        var = np.maximum(stt - st**2 / m, 0.0)
        spread = np.maximum(see - se_**2 / m, 0.0)
        cov = ste - st * se_ / m
    else:
        var, spread, cov = stt, see, ste
    ratio = np.divide(cov, var, out=np.zeros_like(var), where=var > 0.0)
    resid2 = np.maximum(spread - ratio * cov, 0.0)
    dof = np.maximum(count - (2.0 if centred else 1.0), 1.0)
    se = np.sqrt(resid2 / dof / np.where(var > 0.0, var, np.inf))
    explained = 1.0 - np.divide(resid2, spread, out=np.ones_like(spread), where=spread > 0.0)
    loaded = var >= (0.05**2) * float(var.max(initial=0.0))  # the joint's own torque is not lost beside the others'
    return ratio, (var > 0.0) & loaded & (se < 0.1 * np.abs(ratio)) & (explained >= 0.5)
