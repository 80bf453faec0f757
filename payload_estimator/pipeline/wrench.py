"""Wrench conventions of the sources we read, converted once to ours.

Our convention (see :mod:`payload_estimator.core.samples`): ``wrench_in_sensor``
is the force and the torque *about the origin of the sensor frame S*, with
components in S, that the payload exerts *on the sensor*. A payload of mass
``m`` with centre of mass ``c`` (in S) at rest gives ``f = m g_S`` and
``tau = m c x g_S``.

A source reports a wrench with components in some frame ``E``
(``expressed_in``), torque about the origin of some frame ``K``
(``torque_about``) and a sign convention. :func:`wrench_to_sensor` applies::

    f_S   = sign * R_sensor_expressed @ f
    tau_S = sign * R_sensor_expressed @ tau + p_sensor_refpoint x f_S

where ``p_sensor_refpoint`` is the origin of ``K`` in S: the moment of a force
``f`` about the origin of S is its moment about ``K`` plus ``(r_K - r_S) x f``.

Offsets of a raw sensor (its reading with no load) are not removed here; the
estimator can identify them (``core.regressor.bias_regressor``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from payload_estimator.errors import ConfigurationError
from payload_estimator.pipeline.health import SATURATED, InputHealth

__all__ = [
    "WrenchConvention",
    "FT_SENSOR_RAW",
    "FRANKA_O_F_EXT_HAT_K",
    "FRANKA_K_F_EXT_HAT_K",
    "wrench_to_sensor",
    "SaturationCheck",
    "FT300_FORCE_LIMIT_N",
    "FT300_TORQUE_LIMIT_NM",
]


@dataclass(frozen=True)
class WrenchConvention:
    """How a source reports a wrench.

    Attributes:
        expressed_in: frame whose axes the components use (``"ft_sensor"``,
            ``"panda_link0"``, ``"panda_K"`` ...).
        torque_about: frame whose origin the torque is taken about; None means
            the origin of ``expressed_in``.
        sign: +1 if the reading is the wrench the payload exerts on the sensor
            (our convention); -1 if it is the wrench the robot applies to the
            environment (the reaction).
    """

    expressed_in: str
    torque_about: str | None
    sign: float

    def __post_init__(self) -> None:
        if self.sign not in (1.0, -1.0):
            raise ConfigurationError(f"sign must be +1 or -1, got {self.sign}")

    @property
    def reference_frame(self) -> str:
        """The frame whose origin the torque is about."""
        return self.torque_about if self.torque_about is not None else self.expressed_in


FT_SENSOR_RAW = WrenchConvention(expressed_in="ft_sensor", torque_about=None, sign=1.0)
"""A force/torque sensor's own reading, in its measurement frame, about its origin.

A sensor between the wrist and the tool normally reports the load applied to
its tool side, which is our convention, sign +1. This is not documented the
same way by every vendor, and drivers differ (some publish the reaction, some
flip axes to match a tool frame): check once with a known weight, whose force
must point along gravity, and use ``dataclasses.replace(FT_SENSOR_RAW, sign=-1.0)``
if it points up. Use the
*raw* reading: load-compensated streams (e.g. xArm ``uf_ftsensor_ext_states``)
have already had a payload model subtracted. Replace ``expressed_in`` by the
sensor's TF frame name.
"""

FRANKA_O_F_EXT_HAT_K = WrenchConvention(
    expressed_in="panda_link0", torque_about="panda_K", sign=-1.0
)
"""libfranka ``O_F_ext_hat_K`` (franka_ros2 ``o_f_ext_hat_k``, ``~/external_wrench_in_base_frame``).

libfranka: "Estimated external wrench (force, torque) acting on stiffness
frame, expressed relative to the base frame. Forces applied by the robot to
the environment are positive, while forces applied by the environment on the
robot are negative. Becomes [0,0,0,0,0,0] when near or in a singularity."

So the components are in the base frame ``<arm>_link0``, the torque is about
the origin of the stiffness frame K, and the sign is -1: a payload hanging
from the robot pulls it down, which reads as ``+m 9.81`` *up*. The estimate
comes from joint torques and the robot model; it excludes the end effector
and load configured in the robot (set them to zero, or to the gripper alone,
while estimating). For an FR3 use
``dataclasses.replace(FRANKA_O_F_EXT_HAT_K, expressed_in="fr3_link0", torque_about="fr3_K")``.
"""

FRANKA_K_F_EXT_HAT_K = WrenchConvention(expressed_in="panda_K", torque_about=None, sign=-1.0)
"""libfranka ``K_F_ext_hat_K`` (franka_ros2 ``k_f_ext_hat_k``, ``~/external_wrench_in_stiffness_frame``).

libfranka: "Estimated external wrench (force, torque) acting on stiffness
frame, expressed relative to the stiffness frame. Forces applied by the robot
to the environment are positive, while forces applied by the environment on
the robot are negative." Components in K, torque about K's origin, sign -1.
K is the end-effector frame shifted by ``EE_T_K`` (identity by default).
"""


def _rotations(R: np.ndarray, n: int, name: str) -> np.ndarray:
    R = np.asarray(R, dtype=float)
    if R.shape == (3, 3):
        return R
    if R.shape != (n, 3, 3):
        raise ValueError(f"{name} must have shape (3, 3) or ({n}, 3, 3), got {R.shape}")
    return R


def _vectors(x: np.ndarray, n: int | None, name: str) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim == 1 and x.shape[0] == 3:
        return x[None, :] if n is None else np.broadcast_to(x, (n, 3))
    if x.ndim != 2 or x.shape[1] != 3 or (n is not None and x.shape[0] != n):
        raise ValueError(f"{name} must have shape (N, 3) or (3,), got {x.shape}")
    return x


def wrench_to_sensor(
    force: np.ndarray,
    torque: np.ndarray,
    convention: WrenchConvention,
    R_sensor_expressed: np.ndarray,
    p_sensor_refpoint: np.ndarray,
) -> np.ndarray:
    """A source's wrench converted to ``wrench_in_sensor`` (N, 6): [f (N), tau (N·m)].

    Args:
        force: (N, 3) or (3,) force as reported, components in ``expressed_in``, N.
        torque: (N, 3) or (3,) torque as reported, about the origin of
            ``convention.reference_frame``, components in ``expressed_in``, N·m.
        convention: how the source reports.
        R_sensor_expressed: (3, 3) or (N, 3, 3) rotation taking ``expressed_in``
            components to S components.
        p_sensor_refpoint: (3,) or (N, 3) position of the torque reference point
            (origin of ``convention.reference_frame``) in S, m.
    """
    f = _vectors(force, None, "force")
    n = f.shape[0]
    tau = _vectors(torque, n, "torque")
    R = _rotations(R_sensor_expressed, n, "R_sensor_expressed")
    p = _vectors(p_sensor_refpoint, n, "p_sensor_refpoint")
    s = float(convention.sign)
    if R.ndim == 2:
        f_S = s * (f @ R.T)
        tau_rot = s * (tau @ R.T)
    else:
        f_S = s * np.einsum("nij,nj->ni", R, f)
        tau_rot = s * np.einsum("nij,nj->ni", R, tau)
    return np.hstack([f_S, tau_rot + np.cross(p, f_S)])


FT300_FORCE_LIMIT_N = (300.0, 300.0, 300.0)
"""Robotiq FT 300 force range, ±N per axis."""
FT300_TORQUE_LIMIT_NM = (30.0, 30.0, 30.0)
"""Robotiq FT 300 torque range, ±N·m per axis."""


class SaturationCheck:
    """Flags wrench samples near or beyond the sensor's range.

    Apply it to the raw reading in the sensor's own axes (where the range is
    specified), before any conversion.

    Args:
        force_limit_N: (3,) or scalar range per force axis, N (±).
        torque_limit_Nm: (3,) or scalar range per torque axis, N·m (±).
        margin: a sample is flagged when any ``|component| >= margin * limit``.
    """

    def __init__(
        self,
        force_limit_N: ArrayLike = FT300_FORCE_LIMIT_N,
        torque_limit_Nm: ArrayLike = FT300_TORQUE_LIMIT_NM,
        margin: float = 0.98,
    ) -> None:
        fl = np.broadcast_to(np.asarray(force_limit_N, dtype=float), (3,))
        tl = np.broadcast_to(np.asarray(torque_limit_Nm, dtype=float), (3,))
        limits = np.concatenate([fl, tl])
        if not np.all(limits > 0):
            raise ConfigurationError(f"sensor limits must be positive, got {limits}")
        if not 0 < margin <= 1:
            raise ConfigurationError(f"margin must be in (0, 1], got {margin}")
        self.limits = limits
        self.margin = float(margin)
        self._threshold = self.margin * limits

    def flags(self, wrench: np.ndarray) -> np.ndarray:
        """(N,) True where the sample (N, 6) is near or over the range (or not finite)."""
        w = np.asarray(wrench, dtype=float).reshape(-1, 6)
        return ~np.all(np.abs(w) < self._threshold, axis=1)

    def keep(
        self, wrench: np.ndarray, health: InputHealth | None = None, stream: str | None = "wrench"
    ) -> np.ndarray:
        """(N,) True for usable samples; the flagged ones are counted as SATURATED."""
        bad = self.flags(wrench)
        n_bad = int(bad.sum())
        if n_bad and health is not None:
            health.report(
                SATURATED,
                f"{n_bad} samples at or beyond {self.margin:.0%} of the sensor range dropped",
                stream,
                n_bad,
            )
        return ~bad
