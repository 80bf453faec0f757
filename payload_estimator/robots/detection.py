"""Which built-in robot a robot description or a recording belongs to.

Every robot's :attr:`~payload_estimator.robots.RobotSpec.detection` says how its description is
recognised (its ``<robot name>``, its vendor's joint names) and its
:attr:`~payload_estimator.robots.RobotSpec.topics` where its driver publishes: these functions
only read them.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from payload_estimator.robots.description import parse_description
from payload_estimator.robots.spec import ROBOT_NAMES, ROBOTS

__all__ = ["detect_preset", "detect_preset_from_topics"]


def detect_preset(urdf: str | None, presets: tuple[str, ...]) -> str | None:
    """Which of ``presets`` (built-in robot names) a robot description belongs to, or None.

    By ``<robot name>`` first, then by the joint names and, where a vendor names several models' joints
    alike, their torque limits (each robot's
    :class:`~payload_estimator.robots.tables.DescriptionPattern`): the first of ``presets`` that matches.
    """
    if not urdf:
        return None
    try:
        desc = parse_description(urdf)
    except ValueError:
        return None
    patterns = [(name, ROBOTS[name].detection) for name in presets if name in ROBOTS]
    for name, pattern in patterns:
        if pattern is not None and pattern.matches_name(desc.name):
            return name
    efforts = {joint.name: joint.effort for joint in desc.joints}
    for name, pattern in patterns:
        if pattern is not None and pattern.matches_joints(desc.joint_names) and pattern.matches_limits(efforts):
            return name
    return None


def detect_preset_from_topics(
    topics: Collection[str],
    joint_names_on: Callable[[str], Collection[str]],
    wrench: bool = True,
    presets: tuple[str, ...] = ROBOT_NAMES,
) -> str | None:
    """The built-in robot whose driver's topics a recording holds, or None.

    Args:
        topics: the recording's topic names.
        joint_names_on: the joint names of the first joint state on a topic (called only when
            several robots share their topics, as the xArm 6 and 7 do).
        wrench: also require the robot's wrench topic (False: the wrench comes from joint
            torques, only the joint states are recorded).
        presets: the robots to consider.

    Returns:
        The one candidate, or of robots sharing topics the one with the most arm joints, all of
        them named in its joint states; None when no robot fits, or when several fit alike (the
        UR5e and UR10e: same topics, same joint names).
    """
    candidates = [(name, ROBOTS[name].topics.joint_states) for name in presets if name in ROBOTS
                  and ROBOTS[name].topics.joint_states in topics
                  and (ROBOTS[name].topics.wrench in topics or not wrench)]
    if len(candidates) <= 1:
        return candidates[0][0] if candidates else None
    names: dict[str, set[str]] = {}
    for _, topic in candidates:
        if topic not in names:
            names[topic] = {str(n) for n in joint_names_on(topic)}
    fits = [(ROBOTS[r].n_joints, r) for r, topic in candidates if set(ROBOTS[r].joint_names) <= names[topic]]
    if not fits:
        return None
    most = max(n for n, _ in fits)
    best = [r for n, r in fits if n == most]
    return best[0] if len(best) == 1 else None
