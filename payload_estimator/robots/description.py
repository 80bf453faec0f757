"""Reading a robot description (URDF XML): the one place the package parses one.

Everything that needs a fact from a URDF's text asks :func:`parse_description`
(root link, links, joints with their type, parent, child and limits, the
robot's name); :func:`~payload_estimator.robots.detection.detect_preset` tells
which built-in robot, if any, it describes. Kinematics and dynamics come from
pinocchio, which reads the same XML itself. Limits as URDF gives them: rad or
m, rad/s or m/s, N·m or N.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from functools import lru_cache

from payload_estimator.errors import ConfigurationError, InputError

__all__ = ["UrdfJoint", "RobotDescription", "parse_description", "MOVABLE_JOINT_TYPES"]

MOVABLE_JOINT_TYPES = frozenset({"revolute", "continuous", "prismatic"})
"""URDF joint types with one degree of freedom."""


@dataclass(frozen=True)
class UrdfJoint:
    """One ``<joint>``: its name, type (``revolute``, ``fixed`` ...), parent and child link, and its limits.

    The limits are the attributes of its ``<limit>`` (``lower``, ``upper``, ``effort``,
    ``velocity``; None when absent or not a number)."""

    name: str
    type: str
    parent: str
    child: str
    lower: float | None = None
    upper: float | None = None
    effort: float | None = None
    velocity: float | None = None

    @property
    def movable(self) -> bool:
        """Whether the joint has one degree of freedom (revolute, continuous, prismatic)."""
        return self.type in MOVABLE_JOINT_TYPES


@dataclass(frozen=True)
class RobotDescription:
    """The structure of a URDF (no geometry, no inertials).

    Attributes:
        name: the ``<robot name>``.
        links: link names, in document order.
        joints: every joint, in document order (parent and child empty when missing).
    """

    name: str
    links: tuple[str, ...]
    joints: tuple[UrdfJoint, ...]

    @property
    def root_link(self) -> str:
        """The link that is no joint's child (``InputError`` unless there is exactly one)."""
        children = {j.child for j in self.joints if j.child}
        roots = [name for name in self.links if name not in children]
        if len(roots) != 1:
            raise InputError(f"robot description must have exactly one root link, found {roots}")
        return roots[0]

    @property
    def joint_names(self) -> tuple[str, ...]:
        """Every joint's name, in document order."""
        return tuple(j.name for j in self.joints)

    @property
    def movable_joint_names(self) -> tuple[str, ...]:
        """The 1-DoF joints, in document order."""
        return tuple(j.name for j in self.joints if j.movable)

    def has_link(self, name: str) -> bool:
        """Whether the description has a link called ``name``."""
        return name in self.links

    def joint(self, name: str) -> UrdfJoint:
        """Return the joint called ``name`` (``ConfigurationError`` if there is none)."""
        for joint in self.joints:
            if joint.name == name:
                return joint
        raise ConfigurationError(f"joint {name!r} is not in the robot description")

    def chain_joints(self, tip: str) -> tuple[str, ...]:
        """Return the 1-DoF joints from the root link to link ``tip``, base first.

        An arm's joints, without a gripper's fingers; ``ConfigurationError`` if ``tip`` is not a
        link."""
        if tip not in self.links:
            raise ConfigurationError(f"link {tip!r} is not in the robot description")
        parent_joint = {j.child: j for j in self.joints if j.child}
        chain: list[str] = []
        link, seen = tip, set()
        while link in parent_joint and link not in seen:
            seen.add(link)
            joint = parent_joint[link]
            if joint.movable:
                chain.append(joint.name)
            link = joint.parent
        return tuple(reversed(chain))


def _number(element: ET.Element | None, key: str) -> float | None:
    try:
        return None if element is None or element.get(key) is None else float(str(element.get(key)))
    except ValueError:
        return None


def _joint(element: ET.Element) -> UrdfJoint:
    parent, child, limit = element.find("parent"), element.find("child"), element.find("limit")
    return UrdfJoint(str(element.get("name")), str(element.get("type", "")),
                     "" if parent is None else str(parent.get("link", "")),
                     "" if child is None else str(child.get("link", "")),
                     *(_number(limit, key) for key in ("lower", "upper", "effort", "velocity")))


@lru_cache(maxsize=16)
def parse_description(urdf: str) -> RobotDescription:
    """Return the structure of a URDF (``InputError`` if it is not XML or has no ``<robot>`` root).

    Cached: the node and the pipeline ask for the same description many times.
    """
    try:
        root = ET.fromstring(urdf)
    except ET.ParseError as exc:
        raise InputError(f"robot description is not valid XML: {exc}") from None
    if root.tag != "robot":
        raise InputError(f"robot description's root element is <{root.tag}>, not <robot>")
    links = tuple(str(link.get("name")) for link in root.findall("link"))
    joints = tuple(_joint(joint) for joint in root.findall("joint"))
    return RobotDescription(str(root.get("name", "")), links, joints)
