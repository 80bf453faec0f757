"""Build a robot's URDF string from its parameter table, or from its own URDF (no meshes).

The tree is ``base -> link1 -> ... -> link_n -> flange -> sensor [-> imu]``:
revolute joints about the local ``z`` axis for the arm, fixed joints for the
flange, the force/torque sensor frame (mount offset given in the flange frame)
and the optional IMU frame (offset given in the sensor frame).

An arm without a table (:meth:`~payload_estimator.robots.RobotSpec.from_urdf`)
keeps its own URDF: its geometry is removed (``<visual>``, ``<collision>``: meshes
the simulator cannot load), the ``<mujoco>`` element set, and the same sensor and
IMU frames added to its flange.

From modified DH rows to URDF joint origins
-------------------------------------------
Craig's row ``i`` gives ``T_{i-1,i} = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(q_i + o_i) Tz(d_i)``.
The URDF link frame ``L_i`` is the DH frame ``F_i`` turned about its ``z`` axis
by minus the accumulated offsets ``S_i = o_1 + ... + o_i``, ``L_i = F_i Rz(-S_i)``,
so that ``q = 0`` is the vendor's mechanical zero and the link frames are the
vendor's (for the xArm 6, whose ``o_2 = -o_3``, only link 2 differs from its DH
frame, as in ``xarm_description``). Because ``Rz`` commutes with ``Tz``::

    L_{i-1}^{-1} L_i = [Rz(S_{i-1}) Rx(alpha_{i-1}) Tx(a_{i-1}) Tz(d_i) Rz(-S_{i-1})] Rz(q_i)

so the bracket is the joint's ``<origin>`` and the joint axis is ``z``. With no
offsets this is the familiar ``xyz = (a, -d sin(alpha), d cos(alpha))``,
``rpy = (alpha, 0, 0)``.

URDF ``rpy`` are fixed-axis roll, pitch, yaw: ``R = Rz(yaw) Ry(pitch) Rx(roll)``,
which is scipy's extrinsic ``"xyz"`` sequence. Lengths in metres, angles in
radians, masses in kg, inertias in kg·m².
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.errors import ConfigurationError
from payload_estimator.robots.description import parse_description
from payload_estimator.robots.spec import RobotSpec, resolve_robot
from payload_estimator.robots.tables import ArmTable, LinkInertial, ModifiedDH

__all__ = ["robot_urdf", "arm_urdf", "MUJOCO_ELEMENT"]

_MUJOCO_COMPILER = {"discardvisual": "true", "fusestatic": "false"}
MUJOCO_ELEMENT = '<mujoco><compiler discardvisual="true" fusestatic="false"/></mujoco>'
"""Tells MuJoCo's URDF importer to keep massless fixed frames as bodies."""

_NAME_RE = re.compile(r"^[A-Za-z0-9_./\-]+$")
_DECIMALS = 15  # removes the cos(pi/2) = 6e-17 kind of noise, keeps every real digit


def _num(x: float) -> str:
    """Shortest text that round-trips the value rounded to ``_DECIMALS`` places."""
    v = round(float(x), _DECIMALS)
    return "0" if v == 0.0 else repr(v)


def _vec(values: Sequence[float] | np.ndarray) -> str:
    return " ".join(_num(v) for v in values)


def _rot_x(angle: float) -> np.ndarray:
    return Rotation.from_rotvec([angle, 0.0, 0.0]).as_matrix()


def _rot_z(angle: float) -> np.ndarray:
    return Rotation.from_rotvec([0.0, 0.0, angle]).as_matrix()


def _homogeneous(R: np.ndarray, p: Sequence[float]) -> np.ndarray:
    T = np.eye(4)
    T[:3, :3] = R
    T[:3, 3] = p
    return T


def _dh_origin(row: ModifiedDH, accumulated_offset: float) -> tuple[np.ndarray, np.ndarray]:
    """URDF origin ``(xyz, rpy)`` of the joint described by ``row``; see the module docstring."""
    T = (
        _homogeneous(_rot_z(accumulated_offset), (0.0, 0.0, 0.0))
        @ _homogeneous(_rot_x(row.alpha_prev), (0.0, 0.0, 0.0))
        @ _homogeneous(np.eye(3), (row.a_prev, 0.0, row.d))
        @ _homogeneous(_rot_z(-accumulated_offset), (0.0, 0.0, 0.0))
    )
    rpy = Rotation.from_matrix(T[:3, :3]).as_euler("xyz")
    return T[:3, 3], rpy


def _check_name(name: str, what: str) -> None:
    if not _NAME_RE.match(name):
        raise ConfigurationError(f"{what} {name!r} is not a valid frame name")


def _link(name: str, inertial: LinkInertial | None) -> list[str]:
    if inertial is None:
        return [f'  <link name="{name}"/>']
    ixx, ixy, ixz, iyy, iyz, izz = inertial.inertia_at_com
    return [
        f'  <link name="{name}">',
        "    <inertial>",
        f'      <origin xyz="{_vec(inertial.com_in_link)}" rpy="0 0 0"/>',
        f'      <mass value="{_num(inertial.mass)}"/>',
        f'      <inertia ixx="{_num(ixx)}" ixy="{_num(ixy)}" ixz="{_num(ixz)}"'
        f' iyy="{_num(iyy)}" iyz="{_num(iyz)}" izz="{_num(izz)}"/>',
        "    </inertial>",
        "  </link>",
    ]


def _fixed_joint(
    name: str, parent: str, child: str, xyz: Sequence[float] | np.ndarray, rpy: Sequence[float] | np.ndarray
) -> list[str]:
    return [
        f'  <joint name="{name}" type="fixed">',
        f'    <origin xyz="{_vec(xyz)}" rpy="{_vec(rpy)}"/>',
        f'    <parent link="{parent}"/>',
        f'    <child link="{child}"/>',
        "  </joint>",
    ]


def _as3(values: Sequence[float], what: str) -> tuple[float, float, float]:
    arr = np.asarray(values, dtype=float).reshape(-1)
    if arr.shape != (3,) or not np.all(np.isfinite(arr)):
        raise ConfigurationError(f"{what} must be 3 finite numbers, got {values!r}")
    return (float(arr[0]), float(arr[1]), float(arr[2]))


def _arm_lines(table: ArmTable) -> list[str]:
    lines = _link(table.base_link, table.base_inertial)
    parent = table.base_link
    accumulated = 0.0  # S_{i-1}
    for joint, link, row, lim, inertial in zip(
        table.joint_names, table.link_names, table.dh, table.limits, table.link_inertials
    ):
        xyz, rpy = _dh_origin(row, accumulated)
        accumulated += row.theta_offset
        lines += [
            f'  <joint name="{joint}" type="revolute">',
            f'    <origin xyz="{_vec(xyz)}" rpy="{_vec(rpy)}"/>',
            f'    <parent link="{parent}"/>',
            f'    <child link="{link}"/>',
            '    <axis xyz="0 0 1"/>',
            f'    <limit lower="{_num(lim.lower)}" upper="{_num(lim.upper)}"'
            f' effort="{_num(lim.effort)}" velocity="{_num(lim.velocity)}"/>',
            "  </joint>",
        ]
        lines += _link(link, inertial)
        parent = link
    xyz, rpy = _dh_origin(table.flange_dh, accumulated)
    lines += _fixed_joint(table.flange_joint, parent, table.flange_link, xyz, rpy)
    lines += _link(table.flange_link, None)
    return lines


def _table_document(table: ArmTable, frame_lines: list[str]) -> str:
    lines = [
        '<?xml version="1.0"?>',
        "<!-- Generated by payload_estimator.robots.urdf_writer; do not edit by hand.",
        f"     {table.source} -->",
        f'<robot name="{table.name}">',
        f"  {MUJOCO_ELEMENT}",
    ]
    lines += _arm_lines(table)
    lines += frame_lines
    lines.append("</robot>")
    return "\n".join(lines) + "\n"


def _urdf_document(urdf: str, frame_lines: list[str]) -> str:
    """``urdf`` without geometry, with the ``<mujoco>`` compiler options and the frames added."""
    root = ET.fromstring(urdf)
    for link in root.iter("link"):
        for geometry in link.findall("visual") + link.findall("collision"):
            link.remove(geometry)
    mujoco = root.find("mujoco")
    if mujoco is None:
        mujoco = ET.Element("mujoco")
        root.insert(0, mujoco)
    compiler = mujoco.find("compiler")
    if compiler is None:
        compiler = ET.SubElement(mujoco, "compiler")
    compiler.attrib.update(_MUJOCO_COMPILER)
    root.extend(ET.fromstring("<frames>" + "".join(frame_lines) + "</frames>"))
    return '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def _links(spec: RobotSpec) -> set[str]:
    if spec.table is None:
        return set(parse_description(spec.arm_urdf).links)
    return {spec.table.base_link, spec.table.flange_link, *spec.table.link_names}


def _document(spec: RobotSpec, frame_lines: list[str]) -> str:
    if spec.table is None:
        return _urdf_document(spec.arm_urdf, frame_lines)
    return _table_document(spec.table, frame_lines)


def arm_urdf(robot: str | RobotSpec) -> str:
    """Return the URDF of the arm alone, base to flange (no sensor frame).

    What :meth:`RobotSpec.from_urdf` reads, with a ``<mujoco>`` element so that MuJoCo keeps the
    fixed frames as bodies.

    Args:
        robot: a name of :data:`payload_estimator.robots.ROBOT_NAMES`, or a spec.
    """
    return _document(resolve_robot(robot), [])


def robot_urdf(
    robot: str | RobotSpec,
    sensor_xyz_in_flange: Sequence[float] = (0.0, 0.0, 0.0),
    sensor_rpy_in_flange: Sequence[float] = (0.0, 0.0, 0.0),
    sensor_frame: str = "ft_sensor",
    imu_xyz_in_sensor: Sequence[float] | None = None,
    imu_rpy_in_sensor: Sequence[float] = (0.0, 0.0, 0.0),
    imu_frame: str = "imu_link",
) -> str:
    """URDF of an arm with a force/torque sensor frame and an optional IMU frame.

    Args:
        robot: one of :data:`payload_estimator.robots.ROBOT_NAMES`, or a spec (an arm from its
            URDF: that URDF without geometry, the frames added; module docstring).
        sensor_xyz_in_flange: sensor origin in the flange frame, m.
        sensor_rpy_in_flange: sensor orientation in the flange frame, URDF
            roll/pitch/yaw (fixed axes x, y, z), rad.
        sensor_frame: name of the sensor link (a fixed child of the flange).
        imu_xyz_in_sensor: IMU origin in the sensor frame, m; ``None`` for no IMU frame.
        imu_rpy_in_sensor: IMU orientation in the sensor frame, roll/pitch/yaw, rad.
        imu_frame: name of the IMU link (a fixed child of the sensor frame).

    Returns:
        The URDF document (kinematics, inertials, limits; no geometry), with a
        ``<mujoco>`` element so that MuJoCo keeps the fixed frames as bodies.

    Raises:
        ConfigurationError: unknown robot, bad offsets, or frame names that are invalid
            or already used by the arm.
    """
    spec = resolve_robot(robot)
    sensor_xyz = _as3(sensor_xyz_in_flange, "sensor_xyz_in_flange")
    sensor_rpy = _as3(sensor_rpy_in_flange, "sensor_rpy_in_flange")
    _check_name(sensor_frame, "sensor_frame")
    taken = _links(spec)
    if sensor_frame in taken:
        raise ConfigurationError(f"sensor_frame {sensor_frame!r} is already a link of {spec.name}")
    lines = _fixed_joint(f"{sensor_frame}_joint", spec.flange_frame, sensor_frame, sensor_xyz, sensor_rpy)
    lines += _link(sensor_frame, None)
    if imu_xyz_in_sensor is not None:
        imu_xyz = _as3(imu_xyz_in_sensor, "imu_xyz_in_sensor")
        imu_rpy = _as3(imu_rpy_in_sensor, "imu_rpy_in_sensor")
        _check_name(imu_frame, "imu_frame")
        if imu_frame in taken | {sensor_frame}:
            raise ConfigurationError(f"imu_frame {imu_frame!r} is already a link of the URDF")
        lines += _fixed_joint(f"{imu_frame}_joint", sensor_frame, imu_frame, imu_xyz, imu_rpy)
        lines += _link(imu_frame, None)
    return _document(spec, lines)
