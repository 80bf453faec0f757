"""The vendors' published Denavit-Hartenberg tables, an independent reference for the robot tests.

Transcribed again from the vendors' documents, apart from the URDF writer:
Franka (FCI docs): modified (Craig) DH; UFACTORY (xArm support articles): the
*standard* DH tables, a different convention from the modified tables the
writer uses.
"""

from __future__ import annotations

import math

import numpy as np

HALF_PI = math.pi / 2

# Franka FCI documentation: modified (Craig) DH, rows (a_{i-1}, d_i, alpha_{i-1}); flange last.
FRANKA_MDH = [
    (0.0, 0.333, 0.0),
    (0.0, 0.0, -HALF_PI),
    (0.0, 0.316, HALF_PI),
    (0.0825, 0.0, HALF_PI),
    (-0.0825, 0.384, -HALF_PI),
    (0.0, 0.0, HALF_PI),
    (0.088, 0.0, HALF_PI),
]
FRANKA_FLANGE_MDH = (0.0, 0.107, 0.0)

# UFACTORY support articles: standard DH, rows (d_i, alpha_i, a_i, theta_offset_i), mm -> m.
XARM6_T2 = -math.atan(284.5 / 53.5)
XARM_SDH = {
    "xarm7": [
        (0.267, -HALF_PI, 0.0, 0.0),
        (0.0, HALF_PI, 0.0, 0.0),
        (0.293, HALF_PI, 0.0525, 0.0),
        (0.0, HALF_PI, 0.0775, 0.0),
        (0.3425, HALF_PI, 0.0, 0.0),
        (0.0, -HALF_PI, 0.076, 0.0),
        (0.097, 0.0, 0.0, 0.0),
    ],
    "xarm6": [
        (0.267, -HALF_PI, 0.0, 0.0),
        (0.0, 0.0, math.sqrt(284.5**2 + 53.5**2) / 1000, XARM6_T2),
        (0.0, -HALF_PI, 0.0775, -XARM6_T2),
        (0.3425, HALF_PI, 0.0, 0.0),
        (0.0, -HALF_PI, 0.076, 0.0),
        (0.097, 0.0, 0.0, 0.0),
    ],
}


def modified_dh(a: float, d: float, alpha: float, theta: float) -> np.ndarray:
    """Craig: Rot_x(alpha) Trans_x(a) Rot_z(theta) Trans_z(d)."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array(
        [
            [ct, -st, 0.0, a],
            [st * ca, ct * ca, -sa, -sa * d],
            [st * sa, ct * sa, ca, ca * d],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def standard_dh(d: float, alpha: float, a: float, theta: float) -> np.ndarray:
    """Denavit-Hartenberg: Rot_z(theta) Trans_z(d) Trans_x(a) Rot_x(alpha)."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    return np.array(
        [
            [ct, -st * ca, st * sa, a * ct],
            [st, ct * ca, -ct * sa, a * st],
            [0.0, sa, ca, d],
            [0.0, 0.0, 0.0, 1.0],
        ]
    )


def vendor_flange_pose(name: str, q: np.ndarray) -> np.ndarray:
    """Base-to-flange transform (4x4) of robot ``name`` at ``q`` from the vendor's DH table."""
    T = np.eye(4)
    if name in ("panda", "fr3"):
        for (a, d, alpha), qi in zip(FRANKA_MDH, q):
            T = T @ modified_dh(a, d, alpha, qi)
        return T @ modified_dh(*FRANKA_FLANGE_MDH, 0.0)
    for (d, alpha, a, offset), qi in zip(XARM_SDH[name], q):
        T = T @ standard_dh(d, alpha, a, qi + offset)
    return T
