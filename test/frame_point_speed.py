"""The speed of points fixed to a robot's frame, computed by pinocchio alone (no code of the package's).

For the tests of the speed limit at the payload's points: each point becomes a frame of its own on the
frame's joint, and pinocchio's frame velocity gives its linear velocity.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def frame_point_speeds(urdf: str, frame: str, joint_names: Sequence[str], q: np.ndarray, dq: np.ndarray,
                       points: np.ndarray) -> np.ndarray:
    """(N, K) speeds (m/s) of ``points`` (K, 3, in ``frame``'s axes, m) for joint states ``q``, ``dq`` (N, n)."""
    import pinocchio as pin

    model = pin.buildModelFromXML(urdf)
    parent_id = model.getFrameId(frame)
    parent = model.frames[parent_id]
    joint = parent.parentJoint if hasattr(parent, "parentJoint") else parent.parent  # pinocchio 3 / 2
    ids = []
    for k, p in enumerate(np.asarray(points, dtype=float).reshape(-1, 3)):
        placement = parent.placement * pin.SE3(np.eye(3), p)
        ids.append(model.addFrame(pin.Frame(f"point_{k}", joint, parent_id, placement, pin.FrameType.OP_FRAME)))
    data = model.createData()
    columns = [model.joints[model.getJointId(name)].idx_q for name in joint_names]
    out = np.empty((len(q), len(ids)))
    for i, (qi, dqi) in enumerate(zip(q, dq)):
        q_full, v_full = pin.neutral(model), np.zeros(model.nv)
        q_full[columns], v_full[columns] = qi, dqi
        pin.forwardKinematics(model, data, q_full, v_full)
        for k, frame_id in enumerate(ids):
            out[i, k] = np.linalg.norm(pin.getFrameVelocity(model, data, frame_id, pin.LOCAL_WORLD_ALIGNED).linear)
    return out
