"""The built-in robots: one registry of names, frames, home pose, limits and parameters.

All angles in rad, speeds in rad/s, torques in N·m. Frame and joint names are
the vendors' (``franka_description``, ``xarm_description``), so a configuration
written against a :class:`RobotSpec` transfers to the real robot's
``robot_description`` and ``joint_states``.

:data:`ROBOTS` is the only list of built-in robots: the settings' choices,
the command line, the launch files, the packaged URDFs and preset detection
all read it. Any other arm needs no entry here: the estimator takes its URDF
from ``robot_description`` (or ``--urdf``) once its flange frame is named.
To add a built-in robot, write its table module (like ``franka.py``) and add
one line to :data:`_BUILTIN`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np

from payload_estimator.robots import franka, xarm
from payload_estimator.robots.tables import ArmTable

__all__ = ["RobotSpec", "ROBOTS", "ROBOT_NAMES", "get_robot", "get_table", "default_urdf_path"]

_BUILTIN: tuple[tuple[ArmTable, Mapping[str, Any]], ...] = (
    (franka.PANDA, franka.PANDA_PARAMETERS),
    (franka.FR3, franka.FR3_PARAMETERS),
    (xarm.XARM7, xarm.XARM7_PARAMETERS),
    (xarm.XARM6, xarm.XARM6_PARAMETERS),
)
_URDF_DIR = Path(__file__).resolve().parent / "urdf"


def _frozen(values: tuple[float, ...]) -> np.ndarray:
    arr = np.array(values, dtype=float)
    arr.setflags(write=False)
    return arr


@dataclass(frozen=True, eq=False)
class RobotSpec:
    """Static description of one built-in arm.

    Attributes:
        name: short name, a key of :data:`ROBOTS`.
        joint_names: the arm joints, base to flange (the order of ``q`` vectors).
        base_frame: URDF root link (the robot's base frame).
        flange_frame: the flange link.
        q_home: (n,) home configuration: elbow up, flange ``z`` axis pointing
            down (along gravity) for an upright base, away from singularities, rad.
        q_min: (n,) lower position limits, rad.
        q_max: (n,) upper position limits, rad.
        dq_max: (n,) speed limits, rad/s.
        ddq_max: (n,) acceleration limits, rad/s².
        dddq_max: (n,) jerk limits, rad/s³.
        tau_max: (n,) torque limits, N·m.
        wrist_joints: indices (into ``joint_names``) of the three joints nearest
            the flange, used for excitation.
        table: the DH and inertia table the packaged URDF is written from.
        parameters: the estimator settings of this robot's preset (topics, wrench
            source, apply target, payload limit; ``Settings`` field names).
    """

    name: str
    joint_names: tuple[str, ...]
    base_frame: str
    flange_frame: str
    q_home: np.ndarray
    q_min: np.ndarray
    q_max: np.ndarray
    dq_max: np.ndarray
    ddq_max: np.ndarray
    dddq_max: np.ndarray
    tau_max: np.ndarray
    wrist_joints: tuple[int, int, int]
    table: ArmTable = field(repr=False)
    parameters: Mapping[str, Any] = field(repr=False)

    @property
    def n_joints(self) -> int:
        """Number of arm joints."""
        return len(self.joint_names)

    @property
    def urdf_path(self) -> Path:
        """The packaged default URDF (see :func:`default_urdf_path`)."""
        return default_urdf_path(self.name)


def _spec(table: ArmTable, parameters: Mapping[str, Any]) -> RobotSpec:
    return RobotSpec(
        name=table.name,
        joint_names=table.joint_names,
        base_frame=table.base_link,
        flange_frame=table.flange_link,
        q_home=_frozen(table.q_home),
        q_min=_frozen(tuple(lim.lower for lim in table.limits)),
        q_max=_frozen(tuple(lim.upper for lim in table.limits)),
        dq_max=_frozen(tuple(lim.velocity for lim in table.limits)),
        ddq_max=_frozen(tuple(lim.acceleration for lim in table.limits)),
        dddq_max=_frozen(tuple(lim.jerk for lim in table.limits)),
        tau_max=_frozen(tuple(lim.effort for lim in table.limits)),
        wrist_joints=table.wrist_joints,
        table=table,
        parameters=MappingProxyType({"robot": table.name, **parameters}),
    )


ROBOTS: Mapping[str, RobotSpec] = MappingProxyType({t.name: _spec(t, p) for t, p in _BUILTIN})
"""Name -> :class:`RobotSpec` of every built-in robot."""
ROBOT_NAMES: tuple[str, ...] = tuple(ROBOTS)
"""Names accepted by :func:`get_robot` and :func:`~payload_estimator.robots.robot_urdf`."""


def get_robot(name: str) -> RobotSpec:
    """The :class:`RobotSpec` of ``name``; ``ValueError`` listing the valid names if unknown."""
    try:
        return ROBOTS[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown robot {name!r}; valid names: {', '.join(ROBOT_NAMES)}") from None


def get_table(name: str) -> ArmTable:
    """The parameter table of robot ``name``; ``ValueError`` listing the valid names if unknown."""
    return get_robot(name).table


def default_urdf_path(name: str) -> Path:
    """Path of the packaged URDF of ``name`` (zero mount offset, IMU frame included)."""
    return _URDF_DIR / f"{get_robot(name).name}.urdf"
