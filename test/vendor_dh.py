"""The vendors' published Denavit-Hartenberg tables, an independent reference for the robot tests.

Transcribed again from the vendors' documents, apart from the URDF writer:
Franka (FCI docs): modified (Craig) DH; UFACTORY (xArm support articles) and
Universal Robots ("DH parameters for calculations of kinematics and dynamics"):
the *standard* DH tables, a different convention from the modified tables the
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

# Universal Robots' DH article, e-Series: standard DH, rows (d_i, alpha_i, a_i, theta_offset_i), m.
UR_SDH = {
    "ur5e": [
        (0.1625, HALF_PI, 0.0, 0.0),
        (0.0, 0.0, -0.425, 0.0),
        (0.0, 0.0, -0.3922, 0.0),
        (0.1333, HALF_PI, 0.0, 0.0),
        (0.0997, -HALF_PI, 0.0, 0.0),
        (0.0996, 0.0, 0.0, 0.0),
    ],
    "ur10e": [
        (0.1807, HALF_PI, 0.0, 0.0),
        (0.0, 0.0, -0.6127, 0.0),
        (0.0, 0.0, -0.57155, 0.0),
        (0.17415, HALF_PI, 0.0, 0.0),
        (0.11985, -HALF_PI, 0.0, 0.0),
        (0.11655, 0.0, 0.0, 0.0),
    ],
}
STANDARD_DH = {**XARM_SDH, **UR_SDH}


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
    for (d, alpha, a, offset), qi in zip(STANDARD_DH[name], q):
        T = T @ standard_dh(d, alpha, a, qi + offset)
    return T


# Universal Robots' DH article, e-Series dynamics: per link, mass (kg) and centre of mass (m) in the link's
# *standard* DH frame (frame i of the rows above).
UR_LINK_MASS_COM = {
    "ur5e": [
        (3.761, (0.0, -0.02561, 0.00193)),
        (8.058, (0.2125, 0.0, 0.11336)),
        (2.846, (0.15, 0.0, 0.0265)),
        (1.37, (0.0, -0.0018, 0.01634)),
        (1.3, (0.0, 0.0018, 0.01634)),
        (0.365, (0.0, 0.0, -0.001159)),
    ],
    "ur10e": [
        (7.369, (0.021, 0.0, 0.027)),
        (13.051, (0.38, 0.0, 0.158)),
        (3.989, (0.24, 0.0, 0.068)),
        (2.1, (0.0, 0.007, 0.018)),
        (1.98, (0.0, 0.007, 0.018)),
        (0.615, (0.0, 0.0, -0.026)),
    ],
}


def vendor_gravity_torques(name: str, q: np.ndarray, g: float = 9.81) -> np.ndarray:
    """Joint torques (N·m) holding a UR arm against gravity (along -z of the base) at ``q``, from the
    vendor's standard DH table and link masses and centres of mass: ``sum_i J_i(q)^T m_i g z``."""
    frames = [np.eye(4)]
    for (d, alpha, a, offset), qi in zip(UR_SDH[name], q):
        frames.append(frames[-1] @ standard_dh(d, alpha, a, qi + offset))
    tau = np.zeros(len(q))
    for i, (mass, com) in enumerate(UR_LINK_MASS_COM[name], start=1):
        p = (frames[i] @ np.r_[com, 1.0])[:3]
        for j in range(i):  # joint j + 1 turns about z of frame j
            axis, origin = frames[j][:3, 2], frames[j][:3, 3]
            tau[j] += np.cross(axis, p - origin) @ np.array([0.0, 0.0, mass * g])
    return tau
