"""Parent-to-child transforms of every joint of a URDF, for tf (ROS-free).

What ``robot_state_publisher`` does, in Python: for each URDF joint, the pose
of its child link in its parent link, from pinocchio's forward kinematics of
the joint positions. Fixed joints are computed once (``/tf_static``), movable
ones for each joint state (``/tf``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

from payload_estimator.errors import InputError
from payload_estimator.robots.description import parse_description

__all__ = ["LinkTransform", "UrdfTransforms"]


@dataclass(frozen=True)
class LinkTransform:
    """Pose of link ``child`` in link ``parent``: ``xyz`` (3,) m and ``quat_xyzw`` (4,) unit quaternion."""

    parent: str
    child: str
    xyz: np.ndarray
    quat_xyzw: np.ndarray


class UrdfTransforms:
    """Link-to-link transforms of a URDF.

    Args:
        urdf: the robot description (geometry is not loaded).

    Raises:
        InputError: a URDF that is not XML or that pinocchio cannot load.
    """

    def __init__(self, urdf: str) -> None:
        self._joints = [j for j in parse_description(urdf).joints if j.parent and j.child]
        try:
            self._model = pin.buildModelFromXML(urdf)
        except (RuntimeError, ValueError) as exc:
            raise InputError(f"pinocchio could not build a model from the URDF: {exc}") from None
        self._data = self._model.createData()
        self._q_neutral = pin.neutral(self._model)
        self._index: dict[str, tuple[int, bool]] = {}  # joint -> (idx_q, continuous)
        for jid in range(1, self._model.njoints):
            joint = self._model.joints[jid]
            if joint.nv == 1:
                self._index[self._model.names[jid]] = (joint.idx_q, joint.nq == 2)
        self._frame: dict[str, int] = {}  # link -> pinocchio frame id
        for joint in self._joints:
            for link in (joint.parent, joint.child):
                if link not in self._frame:
                    self._frame[link] = self._model.getFrameId(link, pin.FrameType.BODY)
        self._fixed = self._transforms(self._q_neutral, moving=False)

    @property
    def joint_names(self) -> tuple[str, ...]:
        """The movable 1-DoF joints, in model order."""
        return tuple(self._index)

    def configuration(self, names: Sequence[str], positions: Sequence[float] | np.ndarray) -> np.ndarray:
        """Return pinocchio's configuration from named joint positions (others at zero; unknown names ignored)."""
        q = self._q_neutral.copy()
        for name, value in zip(names, positions):
            entry = self._index.get(name)
            if entry is None or not np.isfinite(value):
                continue
            idx, continuous = entry
            if continuous:
                q[idx], q[idx + 1] = np.cos(value), np.sin(value)
            else:
                q[idx] = value
        return q

    def fixed(self) -> list[LinkTransform]:
        """Transforms of the fixed joints (constant)."""
        return list(self._fixed)

    def moving(self, names: Sequence[str], positions: Sequence[float] | np.ndarray) -> list[LinkTransform]:
        """Transforms of the movable joints at the given joint positions (rad or m)."""
        return self._transforms(self.configuration(names, positions), moving=True)

    def _transforms(self, q: np.ndarray, moving: bool) -> list[LinkTransform]:
        pin.forwardKinematics(self._model, self._data, q)
        pin.updateFramePlacements(self._model, self._data)
        out = []
        for joint in self._joints:
            if (joint.type != "fixed") != moving:
                continue
            M = self._data.oMf[self._frame[joint.parent]].actInv(self._data.oMf[self._frame[joint.child]])
            out.append(LinkTransform(joint.parent, joint.child, np.array(M.translation),
                                     Rotation.from_matrix(M.rotation).as_quat()))
        return out
