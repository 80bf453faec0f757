"""What a real arm's joint-torque readings contain: friction, noise, scale, and an arm unlike its URDF.

The simulator (:func:`~payload_estimator.sim.mujoco_sim.simulate`,
:class:`~payload_estimator.sim.live_arm.LiveArm`) uses these values opt-in; without them it reports
the controller's torque with the nominal joint noise, from an arm that is exactly its URDF.

Conventions
-----------
* Joint friction ``tau_friction(dq)`` (n,) N·m is the torque the **motor supplies** to overcome
  friction (the sign of ``dq``): the friction torque on the joint is its opposite. The robot's
  dynamics are ``M(q) ddq + C(q, dq) dq + g(q) + tau_friction(dq) = tau + J_S^T w_ext``.
* The reported effort is ``scale * tau + noise``, ``tau`` the motor's torque (rigid body plus
  friction, the payload's load included), ``noise ~ N(0, noise_std²)`` per joint and sample.

Friction law (per joint, :meth:`JointFriction.torque`)::

    tau_f(dq) = c [tanh((dq + v_o) / v_c) - tanh(v_o / v_c)]      smooth Coulomb, asymmetric
              + s tanh(dq / v_c) exp(-(dq / v_s)²)                 Stribeck bump at low speed
              + b dq                                               viscous

It is zero at rest and, at speeds well above ``v_c``, tends to ``±c - c tanh(v_o / v_c) + b dq``:
the two Coulomb levels differ through the velocity offset ``v_o``. Its first term is the sigmoid
Gaz et al. identified on the Panda (``phi1 / (1 + exp(-phi2 (dq + phi3))) - phi1 / (1 +
exp(-phi2 phi3))`` is this term with ``c = phi1 / 2``, ``v_c = 2 / phi2``, ``v_o = phi3``). It is
deliberately *not* the estimator's calibration model (viscous plus Coulomb ``sign(dq)`` plus an
offset): the low-speed region (smooth transition, Stribeck bump) cannot be matched by it.

Model mismatch (:func:`perturb_arm`): the simulated arm's moving links get their mass scaled by
``1 + U(-mass_rel, mass_rel)``, their inertia about the COM by the same factor, and their COM moved
by ``U(-com_m, com_m)`` per axis of the link frame; the estimator keeps the nominal URDF.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike

__all__ = [
    "JointFriction",
    "EffortModel",
    "ArmMismatch",
    "perturb_arm",
    "moving_links",
    "FRANKA_TAU_J",
    "XARM_CURRENT",
    "MISMATCH_STREAM",
    "EFFORT_STREAM",
    "SCALE_STREAM",
]

FRANKA_TAU_J = "franka_tau_j"
"""Name of the Franka model: link-side joint-torque sensors (τ_J of ``measured_joint_states``)."""
XARM_CURRENT = "xarm_current"
"""Name of the xArm model: efforts estimated from the motor currents (gearbox friction included)."""
EFFORT_STREAM = 9
"""The effort noise is drawn from ``np.random.default_rng([seed, EFFORT_STREAM])``."""
MISMATCH_STREAM = 91
"""An :class:`ArmMismatch` draws from ``np.random.default_rng([its seed, MISMATCH_STREAM])``."""
SCALE_STREAM = 92
"""Effort-scale errors draw from ``np.random.default_rng([seed, SCALE_STREAM])``."""


def _per_joint(value: ArrayLike, n: int, name: str) -> np.ndarray:
    arr = np.broadcast_to(np.asarray(value, dtype=float), (n,)).copy() if np.ndim(value) == 0 else \
        np.asarray(value, dtype=float).copy()
    if arr.shape != (n,):
        raise ValueError(f"{name} must have {n} entries, got shape {arr.shape}")
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class JointFriction:
    """Per-joint friction parameters of the law in the module docstring, each (n,).

    Attributes:
        coulomb: ``c``, N·m (half the gap between the two Coulomb levels).
        coulomb_velocity: ``v_c`` > 0, rad/s (width of the smooth sign).
        velocity_offset: ``v_o``, rad/s (asymmetry of the Coulomb levels).
        stribeck: ``s``, N·m (extra torque at low speed).
        stribeck_velocity: ``v_s`` > 0, rad/s (where the Stribeck bump fades).
        viscous: ``b``, N·m·s/rad.
    """

    coulomb: np.ndarray
    coulomb_velocity: np.ndarray
    velocity_offset: np.ndarray
    stribeck: np.ndarray
    stribeck_velocity: np.ndarray
    viscous: np.ndarray

    def __post_init__(self) -> None:
        n = np.size(self.coulomb)
        for f in ("coulomb", "coulomb_velocity", "velocity_offset", "stribeck", "stribeck_velocity", "viscous"):
            object.__setattr__(self, f, _per_joint(getattr(self, f), n, f))
        if np.any(self.coulomb_velocity <= 0.0) or np.any(self.stribeck_velocity <= 0.0):
            raise ValueError("coulomb_velocity and stribeck_velocity must be positive")
        if np.any(self.coulomb < 0.0) or np.any(self.stribeck < 0.0) or np.any(self.viscous < 0.0):
            raise ValueError("friction coefficients must not be negative")

    @property
    def n_joints(self) -> int:
        return len(self.coulomb)

    @classmethod
    def none(cls, n: int) -> JointFriction:
        """No friction on ``n`` joints."""
        zeros = np.zeros(n)
        return cls(zeros, np.ones(n), zeros, zeros, np.ones(n), zeros)

    def torque(self, dq: ArrayLike) -> np.ndarray:
        """``tau_friction(dq)``, (..., n) N·m, for joint velocities ``dq`` (..., n) rad/s: the torque
        the motors supply against friction (same sign as ``dq``)."""
        dq = np.asarray(dq, dtype=float)
        c, vc, vo = self.coulomb, self.coulomb_velocity, self.velocity_offset
        smooth_sign = np.tanh(dq / vc)
        return (c * (np.tanh((dq + vo) / vc) - np.tanh(vo / vc))
                + self.stribeck * smooth_sign * np.exp(-np.square(dq / self.stribeck_velocity))
                + self.viscous * dq)


@dataclass(frozen=True, eq=False)
class EffortModel:
    """A joint-torque sensor and the friction it sees (module docstring), for ``n`` joints.

    Attributes:
        name: what it models (:data:`FRANKA_TAU_J`, :data:`XARM_CURRENT`, or a user's name).
        friction: the joints' friction, applied in the physics and compensated by the controller.
        noise_std: (n,) effort noise std, N·m.
        scale: (n,) reported effort per N·m of true torque (1: exact).
    """

    name: str
    friction: JointFriction
    noise_std: np.ndarray
    scale: np.ndarray = field(default_factory=lambda: np.ones(0))

    def __post_init__(self) -> None:
        n = self.friction.n_joints
        object.__setattr__(self, "noise_std", _per_joint(self.noise_std, n, "noise_std"))
        scale = np.ones(n) if np.size(self.scale) == 0 else self.scale
        object.__setattr__(self, "scale", _per_joint(scale, n, "scale"))
        if np.any(self.noise_std < 0.0) or np.any(self.scale <= 0.0):
            raise ValueError("noise_std must not be negative and scale must be positive")

    @property
    def n_joints(self) -> int:
        return self.friction.n_joints

    def without_noise(self) -> EffortModel:
        """The same sensor with no noise."""
        return replace(self, noise_std=np.zeros(self.n_joints))

    def measure(self, tau: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """(N, n) reported efforts for the motor torques ``tau`` (N, n) N·m: ``scale * tau + noise``,
        the noise drawn from ``rng`` as an (N, n) standard normal (also when its std is 0)."""
        tau = np.asarray(tau, dtype=float).reshape(-1, self.n_joints)
        return self.scale * tau + rng.normal(0.0, 1.0, tau.shape) * self.noise_std

    @classmethod
    def for_robot(cls, robot: str, effort_scale_error: float = 0.0, seed: int = 0) -> EffortModel:
        """The default model of catalogue ``robot``'s efforts.

        * ``panda``, ``fr3`` (:data:`FRANKA_TAU_J`): link-side torque sensors; friction of Gaz et
          al., IEEE RA-L 2019 (the Panda's identified sigmoid, also used for the FR3, for which no
          identification is published), plus a small Stribeck bump (10 % of ``c``) and viscous term
          (0.01-0.04 N·m·s/rad), chosen; noise 0.08 N·m on joints 1-4, 0.05 N·m on 5-7.
        * ``xarm7``, ``xarm6`` (:data:`XARM_CURRENT`): efforts from the motor currents, gearbox
          friction included; values chosen as plausible for harmonic drives of that size (no
          published identification): Coulomb 1-2.8 N·m, viscous 0.5-1.8 N·m·s/rad, Stribeck
          0.3-0.9 N·m fading by 0.08 rad/s, Coulomb levels about 10 % asymmetric; noise
          0.3-0.6 N·m (larger on the big joints).

        Args:
            effort_scale_error: each joint's scale is ``1 + U(-e, e)`` (e.g. 0.03 for a few % of
                torque-constant error), drawn from ``default_rng([seed, SCALE_STREAM])``; 0: exact.
            seed: see ``effort_scale_error``.
        """
        if robot in ("panda", "fr3"):
            phi1 = np.array([0.54615, 0.87224, 0.64068, 1.2794, 0.83904, 0.30301, 0.56489])
            phi2 = np.array([5.1181, 9.0657, 10.136, 5.5903, 8.3469, 17.133, 10.336])
            phi3 = np.array([0.039533, 0.025882, -0.04607, 0.036194, 0.026226, -0.021047, 0.0035526])
            v_c = 2.0 / phi2
            friction = JointFriction(
                coulomb=phi1 / 2.0, coulomb_velocity=v_c, velocity_offset=phi3, stribeck=0.1 * phi1 / 2.0,
                stribeck_velocity=3.0 * v_c, viscous=np.array([0.04, 0.04, 0.03, 0.03, 0.02, 0.01, 0.01]),
            )
            name, noise = FRANKA_TAU_J, np.array([0.08, 0.08, 0.08, 0.08, 0.05, 0.05, 0.05])
        elif robot in ("xarm7", "xarm6"):
            # xArm 7 joints 1..7; the xArm 6 has the 7's joints 1, 2, 4, 5, 6, 7 (drive sizes alike)
            idx = np.arange(7) if robot == "xarm7" else np.array([0, 1, 3, 4, 5, 6])
            coulomb = np.array([2.6, 2.8, 1.8, 1.9, 1.2, 1.1, 1.0])[idx]
            friction = JointFriction(
                coulomb=coulomb,
                coulomb_velocity=np.full(len(idx), 0.02),
                velocity_offset=np.array([0.002, -0.0025, 0.002, 0.0015, -0.002, 0.002, -0.0015])[idx],
                stribeck=np.array([0.8, 0.9, 0.6, 0.6, 0.4, 0.35, 0.3])[idx],
                stribeck_velocity=np.full(len(idx), 0.08),
                viscous=np.array([1.6, 1.8, 1.1, 1.1, 0.7, 0.6, 0.5])[idx],
            )
            name, noise = XARM_CURRENT, np.array([0.6, 0.6, 0.45, 0.45, 0.35, 0.3, 0.3])[idx]
        else:
            raise ValueError(f"no default effort model for robot {robot!r}; build an EffortModel")
        scale = np.ones(friction.n_joints)
        if effort_scale_error > 0.0:
            rng = np.random.default_rng([int(seed), SCALE_STREAM])
            scale = 1.0 + rng.uniform(-effort_scale_error, effort_scale_error, friction.n_joints)
        return cls(name, friction, noise, scale)


# ----------------------------------------------------------------- mismatch
@dataclass(frozen=True)
class ArmMismatch:
    """How far the simulated arm is from its URDF (:func:`perturb_arm`).

    Attributes:
        mass_rel: each moving link's mass is scaled by ``1 + U(-mass_rel, mass_rel)``.
        com_m: its COM moves by ``U(-com_m, com_m)`` per axis, m.
        seed: which arm: runs with the same seed (e.g. a calibration and an estimation) simulate the
            same physical robot, whatever their own seeds.
    """

    mass_rel: float = 0.15
    com_m: float = 0.01
    seed: int = 0

    def __post_init__(self) -> None:
        if not 0.0 <= self.mass_rel < 1.0 or self.com_m < 0.0:
            raise ValueError("mass_rel must be in [0, 1) and com_m not negative")

    def apply(self, urdf: str, keep: tuple[str, ...] = ()) -> str:
        """``urdf`` perturbed (:func:`perturb_arm`), drawn from ``default_rng([seed, MISMATCH_STREAM])``."""
        rng = np.random.default_rng([int(self.seed), MISMATCH_STREAM])
        return perturb_arm(urdf, rng, self.mass_rel, self.com_m, keep)


def moving_links(root: ET.Element) -> list[str]:
    """Names of the links of a parsed URDF that a non-fixed joint moves, in document order."""
    children: dict[str, list[tuple[str, bool]]] = {}
    for joint in root.iter("joint"):
        parent, child = joint.find("parent"), joint.find("child")
        if parent is None or child is None:
            continue
        moves = joint.get("type", "fixed") != "fixed"
        children.setdefault(parent.get("link", ""), []).append((child.get("link", ""), moves))
    moving: set[str] = set()
    stack = [link for kids in children.values() for link, moves in kids if moves]
    while stack:  # everything below a moving joint moves
        link = stack.pop()
        if link not in moving:
            moving.add(link)
            stack.extend(child for child, _ in children.get(link, []))
    return [lk.get("name", "") for lk in root.iter("link") if lk.get("name") in moving]


def _fmt(values: ArrayLike) -> str:
    return " ".join(repr(float(v)) for v in np.atleast_1d(np.asarray(values, dtype=float)))


def perturb_arm(
    urdf: str, rng: np.random.Generator, mass_rel: float = 0.15, com_m: float = 0.01, keep: tuple[str, ...] = ()
) -> str:
    """``urdf`` with each moving link's ``<inertial>`` perturbed (module docstring).

    Links a non-fixed joint moves (:func:`moving_links`), with a positive mass, in document order,
    except those named in ``keep`` (e.g. the F/T sensor body); per link it draws the mass factor
    ``1 + U(-mass_rel, mass_rel)``, then 3 COM offsets ``U(-com_m, com_m)`` m (link frame). The
    inertia about the COM (its axes unchanged) is scaled with the mass. The result is re-serialised
    (comments dropped); everything but those inertials is unchanged.
    """
    root = ET.fromstring(urdf)
    moving = set(moving_links(root)) - set(keep)
    for link in root.iter("link"):
        inertial = link.find("inertial")
        mass_el = inertial.find("mass") if inertial is not None else None
        if link.get("name") not in moving or inertial is None or mass_el is None:
            continue
        mass = float(mass_el.get("value", "0"))
        if mass <= 0.0:
            continue
        factor = 1.0 + rng.uniform(-mass_rel, mass_rel)
        shift = rng.uniform(-com_m, com_m, 3)
        mass_el.set("value", repr(mass * factor))
        origin = inertial.find("origin")
        if origin is None:
            origin = ET.SubElement(inertial, "origin", rpy="0 0 0")
        xyz = np.array([float(v) for v in origin.get("xyz", "0 0 0").split()])
        origin.set("xyz", _fmt(xyz + shift))
        inertia = inertial.find("inertia")
        if inertia is not None:
            for key in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz"):
                if key in inertia.attrib:
                    inertia.set(key, repr(float(inertia.get(key, "0")) * factor))
    return ET.tostring(root, encoding="unicode")
