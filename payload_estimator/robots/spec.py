"""The supported robots: names, frames, home pose and limits.

All angles in rad, speeds in rad/s, torques in N·m. Frame and joint names are
the vendors' (``franka_description``, ``xarm_description``), so a configuration
written against a :class:`RobotSpec` transfers to the real robot's
``robot_description`` and ``joint_states``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from payload_estimator.robots.franka import FR3, PANDA
from payload_estimator.robots.tables import ArmTable
from payload_estimator.robots.xarm import XARM6, XARM7

__all__ = ["RobotSpec", "ROBOT_NAMES", "get_robot", "get_table", "default_urdf_path"]

ROBOT_NAMES: tuple[str, ...] = ("panda", "fr3", "xarm7", "xarm6")
"""Names accepted by :func:`get_robot` and :func:`~payload_estimator.robots.robot_urdf`."""

_TABLES: dict[str, ArmTable] = {t.name: t for t in (PANDA, FR3, XARM7, XARM6)}
_URDF_DIR = Path(__file__).resolve().parent / "urdf"


def get_table(name: str) -> ArmTable:
    """The parameter table of robot ``name``; ``ValueError`` listing the valid names if unknown."""
    try:
        return _TABLES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown robot {name!r}; valid names: {', '.join(ROBOT_NAMES)}"
        ) from None


def default_urdf_path(name: str) -> Path:
    """Path of the packaged URDF of ``name`` (zero mount offset, IMU frame included)."""
    get_table(name)
    return _URDF_DIR / f"{name}.urdf"


def _frozen(values: tuple[float, ...]) -> np.ndarray:
    arr = np.array(values, dtype=float)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class RobotSpec:
    """Static description of one arm.

    Attributes:
        name: short name, one of :data:`ROBOT_NAMES`.
        joint_names: the arm joints, base to flange (the order of ``q`` vectors).
        base_frame: URDF root link (the robot's base frame).
        flange_frame: the flange link.
        q_home: (n,) home configuration: elbow up, flange ``z`` axis pointing
            down (along gravity) for an upright base, away from singularities, rad.
        q_min: (n,) lower position limits, rad.
        q_max: (n,) upper position limits, rad.
        dq_max: (n,) speed limits, rad/s.
        tau_max: (n,) torque limits, N·m.
        wrist_joints: indices (into ``joint_names``) of the three joints nearest
            the flange, used for excitation.
    """

    name: str
    joint_names: tuple[str, ...]
    base_frame: str
    flange_frame: str
    q_home: np.ndarray
    q_min: np.ndarray
    q_max: np.ndarray
    dq_max: np.ndarray
    tau_max: np.ndarray
    wrist_joints: tuple[int, int, int]

    @property
    def n_joints(self) -> int:
        """Number of arm joints."""
        return len(self.joint_names)

    @property
    def urdf_path(self) -> Path:
        """The packaged default URDF (see :func:`default_urdf_path`)."""
        return default_urdf_path(self.name)


def _spec_from_table(table: ArmTable) -> RobotSpec:
    return RobotSpec(
        name=table.name,
        joint_names=table.joint_names,
        base_frame=table.base_link,
        flange_frame=table.flange_link,
        q_home=_frozen(table.q_home),
        q_min=_frozen(tuple(lim.lower for lim in table.limits)),
        q_max=_frozen(tuple(lim.upper for lim in table.limits)),
        dq_max=_frozen(tuple(lim.velocity for lim in table.limits)),
        tau_max=_frozen(tuple(lim.effort for lim in table.limits)),
        wrist_joints=table.wrist_joints,
    )


_SPECS: dict[str, RobotSpec] = {name: _spec_from_table(t) for name, t in _TABLES.items()}


def get_robot(name: str) -> RobotSpec:
    """The :class:`RobotSpec` of ``name``; ``ValueError`` listing the valid names if unknown."""
    get_table(name)
    return _SPECS[name]
