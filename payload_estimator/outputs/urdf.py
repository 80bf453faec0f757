"""The URDF ``<inertial>`` element of an estimate."""

from __future__ import annotations

import numpy as np

from payload_estimator.core.inertia import InertialParameters

__all__ = ["urdf_inertial"]


def _num(x: float) -> str:
    return f"{float(x):.6g}"


def urdf_inertial(params: InertialParameters, frame: str = "", indent: str = "", note: str = "") -> str:
    """A URDF ``<inertial>`` element for a link whose frame the parameters are expressed in.

    The ``<origin>`` is the COM (no rotation) and the ``<inertia>`` is about the
    COM in the link's axes, as URDF specifies. ``frame`` names the link frame
    in a comment; ``note`` adds a comment of its own (e.g. that it was forced out).
    """
    com = params.com
    I = params.inertia_com
    lines = []
    if frame:
        lines.append(f"<!-- payload inertial parameters in frame '{frame}' -->")
    lines += [
        "<inertial>",
        f'  <origin xyz="{_num(com[0])} {_num(com[1])} {_num(com[2])}" rpy="0 0 0"/>',
        f'  <mass value="{_num(params.mass)}"/>',
        (
            f'  <inertia ixx="{_num(I[0, 0])}" ixy="{_num(I[0, 1])}" ixz="{_num(I[0, 2])}" '
            f'iyy="{_num(I[1, 1])}" iyz="{_num(I[1, 2])}" izz="{_num(I[2, 2])}"/>'
        ),
        "</inertial>",
    ]
    if note:
        lines.insert(0, "<!-- " + note.replace("--", "- -") + " -->")
    if not np.all(np.isfinite(params.phi)):
        lines.insert(0, "<!-- WARNING: the estimate has non-finite values -->")
    return "\n".join(indent + line for line in lines)
