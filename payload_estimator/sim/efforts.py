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

Load-dependent Coulomb friction (opt-in, ``load`` ``mu`` > 0, default 0: off)::

    tau_f(dq, tau_load) = ... + mu |tau_load| tanh(dq / v_c)

The Coulomb level grows with the torque the joint transmits (``tau_load``: the rigid-body torque
of the arm and its payload, what the gearbox carries; the controller's torque before its friction
feed-forward): the tooth and bearing loads of a gearbox grow with it. This is the dry-friction law
of Hamon, Gautier and Garrec ("Dynamic identification of robots with a dry friction model
depending on load and velocity", IROS 2010), ``F_c = F_c0 + mu |tau_load|``, which they identified
on industrial arms' joints, without its velocity dependence and without distinguishing a motor
from a generator quadrant; Ponce Quiroga and Abba ("Load-dependent friction laws of three models of
harmonic drive gearboxes identified by using a force transfer diagram") measure a friction of
harmonic drives growing about linearly with the load. It is linear in ``mu`` given the load, so a
calibration can fit it (:mod:`payload_estimator.pipeline.arm_model`).

It is zero at rest and, at speeds well above ``v_c``, tends to ``±c - c tanh(v_o / v_c) + b dq``:
the two Coulomb levels differ through the velocity offset ``v_o``. Its first term is the sigmoid
Gaz et al. identified on the Panda (``phi1 / (1 + exp(-phi2 (dq + phi3))) - phi1 / (1 +
exp(-phi2 phi3))`` is this term with ``c = phi1 / 2``, ``v_c = 2 / phi2``, ``v_o = phi3``). It is
deliberately *not* the estimator's calibration model (viscous plus Coulomb ``sign(dq)`` plus an
offset): the low-speed region (smooth transition, Stribeck bump) cannot be matched by it.
A robot's default sensor (:meth:`EffortModel.for_robot`) is its spec's
:attr:`~payload_estimator.robots.RobotSpec.efforts`, from the robots' table modules.

Model mismatch (:func:`perturb_arm`): the simulated arm's moving links get their mass scaled by
``1 + U(-mass_rel, mass_rel)``, their inertia about the COM by the same factor, and their COM moved
by ``U(-com_m, com_m)`` per axis of the link frame; the estimator keeps the nominal URDF.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import ArrayLike

from payload_estimator.errors import ConfigurationError
from payload_estimator.robots import ROBOTS, RobotSpec
from payload_estimator.robots.franka import FRANKA_TAU_J
from payload_estimator.robots.spec import frozen_per_joint
from payload_estimator.robots.tables import EffortTable
from payload_estimator.robots.ur import UR_CURRENT
from payload_estimator.robots.xarm import XARM_CURRENT
from payload_estimator.sim.arm_residual import ArmResidual

__all__ = [
    "JointFriction",
    "EffortModel",
    "ArmMismatch",
    "perturb_arm",
    "moving_links",
    "FRANKA_TAU_J",
    "XARM_CURRENT",
    "UR_CURRENT",
    "MISMATCH_STREAM",
    "EFFORT_STREAM",
    "SCALE_STREAM",
]

EFFORT_STREAM = 9
"""The effort noise is drawn from ``np.random.default_rng([seed, EFFORT_STREAM])``."""
MISMATCH_STREAM = 91
"""An :class:`ArmMismatch` draws from ``np.random.default_rng([its seed, MISMATCH_STREAM])``."""
SCALE_STREAM = 92
"""Effort-scale errors draw from ``np.random.default_rng([seed, SCALE_STREAM])``."""


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
        load: ``mu``, dimensionless: N·m of Coulomb friction per N·m of load torque (default 0: no
            load-dependent friction).
    """

    coulomb: np.ndarray
    coulomb_velocity: np.ndarray
    velocity_offset: np.ndarray
    stribeck: np.ndarray
    stribeck_velocity: np.ndarray
    viscous: np.ndarray
    load: np.ndarray = field(default_factory=lambda: np.zeros(0))

    def __post_init__(self) -> None:
        n = np.size(self.coulomb)
        if np.size(self.load) == 0:
            object.__setattr__(self, "load", np.zeros(n))
        for f in ("coulomb", "coulomb_velocity", "velocity_offset", "stribeck", "stribeck_velocity", "viscous",
                  "load"):
            object.__setattr__(self, f, frozen_per_joint(getattr(self, f), n, f))
        if np.any(self.coulomb_velocity <= 0.0) or np.any(self.stribeck_velocity <= 0.0):
            raise ConfigurationError("coulomb_velocity and stribeck_velocity must be positive")
        if np.any(self.coulomb < 0.0) or np.any(self.stribeck < 0.0) or np.any(self.viscous < 0.0) \
                or np.any(self.load < 0.0):
            raise ConfigurationError("friction coefficients must not be negative")

    @property
    def n_joints(self) -> int:
        """Number of joints."""
        return len(self.coulomb)

    @classmethod
    def none(cls, n: int) -> JointFriction:
        """No friction on ``n`` joints."""
        zeros = np.zeros(n)
        return cls(zeros, np.ones(n), zeros, zeros, np.ones(n), zeros)

    @property
    def load_dependent(self) -> bool:
        """Whether any joint's Coulomb friction grows with its load (``load`` not all 0)."""
        return bool(np.any(self.load > 0.0))

    def with_load(self, mu: ArrayLike) -> JointFriction:
        """The same friction with load-dependent Coulomb coefficients ``mu`` (scalar or (n,), not negative)."""
        return replace(self, load=frozen_per_joint(mu, self.n_joints, "load"))

    def torque(self, dq: ArrayLike, load_torque: ArrayLike | None = None) -> np.ndarray:
        """Return ``tau_friction(dq)``, (..., n) N·m, for joint velocities ``dq`` (..., n) rad/s.

        The torque the motors supply against friction (same sign as ``dq``). ``load_torque`` (..., n) N·m:
        the torque each joint transmits, for the load-dependent term (ignored when ``load`` is 0; None:
        no load)."""
        dq = np.asarray(dq, dtype=float)
        c, vc, vo = self.coulomb, self.coulomb_velocity, self.velocity_offset
        smooth_sign = np.tanh(dq / vc)
        out = (c * (np.tanh((dq + vo) / vc) - np.tanh(vo / vc))
               + self.stribeck * smooth_sign * np.exp(-np.square(dq / self.stribeck_velocity))
               + self.viscous * dq)
        if load_torque is not None and self.load_dependent:
            out = out + self.load * np.abs(np.asarray(load_torque, dtype=float)) * smooth_sign
        return out


@dataclass(frozen=True, eq=False)
class EffortModel:
    """A joint-torque sensor and the friction it sees (module docstring), for ``n`` joints.

    Attributes:
        name: what it models (:data:`FRANKA_TAU_J`, :data:`XARM_CURRENT`, :data:`UR_CURRENT`, or a user's name).
        friction: the joints' friction, applied in the physics and compensated by the controller.
        noise_std: (n,) effort noise std, in the efforts' unit (N·m for torques).
        scale: (n,) reported effort per N·m of true torque (1: exact).
        residual: what a calibrated model leaves of a real arm's torques (None: nothing beyond the
            friction law and the noise).
    """

    name: str
    friction: JointFriction
    noise_std: np.ndarray
    scale: np.ndarray = field(default_factory=lambda: np.ones(0))
    residual: ArmResidual | None = None

    def __post_init__(self) -> None:
        n = self.friction.n_joints
        object.__setattr__(self, "noise_std", frozen_per_joint(self.noise_std, n, "noise_std"))
        scale = np.ones(n) if np.size(self.scale) == 0 else self.scale
        object.__setattr__(self, "scale", frozen_per_joint(scale, n, "scale"))
        if np.any(self.noise_std < 0.0) or np.any(self.scale <= 0.0):
            raise ConfigurationError("noise_std must not be negative and scale must be positive")

    @property
    def n_joints(self) -> int:
        """Number of joints."""
        return self.friction.n_joints

    def without_noise(self) -> EffortModel:
        """The same sensor with no noise."""
        return replace(self, noise_std=np.zeros(self.n_joints))

    def measure(self, tau: np.ndarray, rng: np.random.Generator, t: np.ndarray | None = None,
                q: np.ndarray | None = None, dq: np.ndarray | None = None,
                tau_friction: np.ndarray | None = None) -> np.ndarray:
        """Return (N, n) reported efforts for the motor torques ``tau`` (N, n) N·m: ``scale * tau + noise``.

        The noise is drawn from ``rng`` as an (N, n) standard normal (also when its std is 0). With a
        :attr:`residual`, ``scale * (tau + residual) + noise``: the residual at the samples' times ``t``
        (N,) s, true positions ``q`` and speeds ``dq`` (N, n), with the arm's friction ``tau_friction``
        (N, n) N·m, its drifts drawn from ``rng`` after the noise."""
        tau = np.asarray(tau, dtype=float).reshape(-1, self.n_joints)
        noise = rng.normal(0.0, 1.0, tau.shape) * self.noise_std
        if self.residual is not None:
            if t is None or q is None or dq is None:
                raise ConfigurationError("an effort model with a residual needs the samples' times and joint states")
            tau = tau + self.residual.torque(t, q, dq, tau_friction, rng)
        return self.scale * tau + noise

    def with_residual(self, residual: ArmResidual | None) -> EffortModel:
        """The same sensor on an arm that leaves ``residual`` to a calibrated model."""
        return replace(self, residual=residual)

    @classmethod
    def from_table(cls, table: EffortTable, scale: ArrayLike | None = None) -> EffortModel:
        """Return the model of a robot's joint-torque sensor with per-joint ``scale`` (default 1: exact).

        ``table`` is :attr:`~payload_estimator.robots.RobotSpec.efforts`; ``scale`` multiplies the table's own
        (a driver reporting currents: the reciprocal torque constants), and the noise, N·m in the table, is
        reported in the efforts' unit."""
        friction = JointFriction(*(np.array(values, dtype=float) for values in (
            table.coulomb, table.coulomb_velocity, table.velocity_offset, table.stribeck, table.stribeck_velocity,
            table.viscous)))
        n = friction.n_joints
        unit = np.array(table.scale, dtype=float) if table.scale else np.ones(n)
        return cls(table.name, friction, np.array(table.noise_std, dtype=float) * unit,
                   unit * (np.ones(n) if scale is None else np.asarray(scale, dtype=float)))

    @classmethod
    def for_robot(cls, robot: str | RobotSpec, effort_scale_error: float = 0.0, seed: int = 0,
                  load_friction: ArrayLike = 0.0) -> EffortModel:
        """Return the default model of a robot's efforts: its spec's joint-torque sensor.

        :attr:`~payload_estimator.robots.RobotSpec.efforts`; the values and their sources are in
        the robots' table modules.

        * ``panda``, ``fr3`` (:data:`FRANKA_TAU_J`): link-side torque sensors with the friction of
          Gaz et al., IEEE RA-L 2019.
        * ``xarm7``, ``xarm6`` (:data:`XARM_CURRENT`): efforts from the motor currents, gearbox
          friction included.
        * ``ur5e``, ``ur10e`` (:data:`UR_CURRENT`): the motor currents themselves, A (scale: reciprocal
          torque constants of our choosing), gearbox friction included.

        Args:
            robot: a built-in robot's name, or a spec.
            effort_scale_error: each joint's scale is ``1 + U(-e, e)`` times the table's (e.g. 0.03 for
                a few % of torque-constant error), drawn from ``default_rng([seed, SCALE_STREAM])``; 0: exact.
            seed: see ``effort_scale_error``.
            load_friction: ``mu`` of the load-dependent Coulomb friction (module docstring), scalar or
                per joint, e.g. 0.03; 0 (default): off.

        Raises:
            ConfigurationError: the robot is unknown or has no default model.
        """
        spec = ROBOTS.get(robot) if isinstance(robot, str) else robot
        if spec is None or spec.efforts is None:
            name = robot if isinstance(robot, str) else robot.name
            raise ConfigurationError(f"no default effort model for robot {name!r}; build an EffortModel")
        n = len(spec.efforts.coulomb)
        scale = np.ones(n)
        if effort_scale_error > 0.0:
            rng = np.random.default_rng([int(seed), SCALE_STREAM])
            scale = 1.0 + rng.uniform(-effort_scale_error, effort_scale_error, n)
        model = cls.from_table(spec.efforts, scale)
        if np.any(np.asarray(load_friction, dtype=float) != 0.0):
            model = replace(model, friction=model.friction.with_load(load_friction))
        return model


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
            raise ConfigurationError("mass_rel must be in [0, 1) and com_m not negative")

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
