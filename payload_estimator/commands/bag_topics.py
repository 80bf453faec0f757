"""The inputs of a bag recorded on other topics than the settings name, found by their message types.

A user's recording rarely uses a preset's topic names: a Panda recorded with the ros2_control
``/joint_states`` and an F/T sensor's ``geometry_msgs/WrenchStamped`` on a topic of its driver's
choosing, in the sensor's own frame. When the configured topics are not in the bag (and were not
given), :func:`find_inputs` looks at what is recorded, by type:

* one ``sensor_msgs/JointState`` topic (or one naming every arm joint of the robot) and one
  ``geometry_msgs/WrenchStamped`` topic: they are taken, the wrench source and the sensor frame
  with them (``ft_sensor``, the wrench messages' ``frame_id``; a Franka external-wrench topic under
  another namespace keeps its Franka source), and one line says which, as the ``--set`` settings
  that give the same;
* the sensor frame is not a frame of the robot description: its mounting on the flange cannot be
  read from the bag (an F/T sensor is often turned on its adapter): the replay stops with one line
  that names every setting to give, filled in from the bag, the mounting as placeholders;
* several candidates of a kind: one line lists them, with the setting that chooses (none: the
  bag's reading says which topic is missing, and lists the topics recorded).

Topics named by ``--config`` or ``--set`` are never replaced (a missing one is then an error that
names the recorded topics of its type).
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any

from payload_estimator.commands import CommandError
from payload_estimator.settings import MotionSource, Settings, WrenchSource

__all__ = ["find_inputs", "MOUNTING_SETTINGS"]

JOINT_STATE = "sensor_msgs/msg/JointState"
WRENCH_STAMPED = "geometry_msgs/msg/WrenchStamped"
IMU = "sensor_msgs/msg/Imu"
MOUNTING_SETTINGS = ("sensor_parent_frame", "sensor_xyz", "sensor_rpy")
"""The settings that place a sensor frame the robot description lacks on the arm."""
FRANKA_TOPIC_SOURCES = {"external_wrench_in_stiffness_frame": WrenchSource.FRANKA_STIFFNESS,
                        "external_wrench_in_base_frame": WrenchSource.FRANKA_BASE}
"""A topic name's last part -> the Franka source it carries (franka_robot_state_broadcaster, any namespace)."""


def _set(name: str, value: Any) -> str:
    text = "[" + ",".join(f"{v:g}" if isinstance(v, float) else str(v) for v in value) + "]" \
        if isinstance(value, list | tuple) else str(value)
    return f"--set '{name}={text}'" if any(c in text for c in "[] ") else f"--set {name}={text}"


def _description_frames(settings: Settings, urdf: str | None) -> set[str] | None:
    """The frames of the robot description used (the recorded or given one, else the preset's arm), or None."""
    from payload_estimator.robots import parse_description, robot_urdf

    probe = "payload_estimator_sensor_probe"
    try:
        if urdf is not None:
            return set(parse_description(urdf).links)
        if settings.robot:  # the package's URDF adds the sensor frame where the settings put it: leave it out
            return set(parse_description(robot_urdf(settings.robot, sensor_frame=probe)).links) - {probe}
    except Exception:  # an unreadable description is reported when the pipeline is built
        return None
    return None


def _wrench_frame(bag: Path, topic: str) -> str:
    from payload_estimator.io.bag import bag_first_message

    msg = bag_first_message(bag, topic, WRENCH_STAMPED)
    return "" if msg is None else str(msg.header.frame_id).strip().lstrip("/")


def _joint_topics(bag: Path, candidates: list[str], settings: Settings) -> list[str]:
    """Of several joint-state topics, those whose first message names every arm joint of the robot."""
    from payload_estimator.io.bag import JOINT_STATE_TYPE, bag_first_message
    from payload_estimator.robots import ROBOTS

    joints = set(settings.joint_names) or (set(ROBOTS[settings.robot].joint_names) if settings.robot in ROBOTS
                                           else set())
    if not joints:
        return candidates
    fits = []
    for topic in candidates:
        msg = bag_first_message(bag, topic, JOINT_STATE_TYPE)
        if msg is not None and joints <= {str(n) for n in msg.name}:
            fits.append(topic)
    return fits


def _several(setting: str, configured: str, kind: str, candidates: list[str]) -> str:
    """The line for a configured topic not recorded while several of its type are."""
    return (f"no {configured} ({kind}), and several {kind} topics: {_listing(candidates)} "
            f"(choose with --set {setting}=TOPIC)")


def _listing(topics: list[str]) -> str:
    return ", ".join(topics)


def find_inputs(bag: Path, topics: dict[str, tuple[str, int]], settings: Settings, given: Collection[str],
                urdf: str | None) -> tuple[dict[str, Any], str | None]:
    """Settings that read the bag's inputs when the configured topics are not recorded (module docstring).

    Args:
        bag: the bag.
        topics: its topics (topic -> (type, count)).
        settings: the settings so far.
        given: the names of the settings the user gave (``--set``, options).
        urdf: the robot description used, None for the preset's own.

    Returns:
        (overrides, line): the settings to change (empty when the configured topics are recorded)
        and the one line that says so (None without changes).

    Raises:
        CommandError: a topic of a kind is missing and the bag has none or several of that type, or
            the sensor frame's mounting is needed: one line naming the settings to give.
    """
    types = {t: m for t, (m, _) in topics.items()}
    of_type = {kind: sorted(t for t, m in types.items() if m == kind) for kind in (JOINT_STATE, WRENCH_STAMPED, IMU)}
    found: dict[str, Any] = {}
    needs_joints = types.get(settings.joint_states_topic) != JOINT_STATE and "joint_states_topic" not in given
    needs_wrench = (settings.wrench_source.reads_wrench_topic and types.get(settings.wrench_topic) != WRENCH_STAMPED
                    and "wrench_topic" not in given)
    needs_imu = (settings.motion_source is MotionSource.IMU and types.get(settings.imu_topic) != IMU
                 and "imu_topic" not in given)
    problems: list[str] = []
    if needs_joints:
        recorded = of_type[JOINT_STATE]
        joints = _joint_topics(bag, recorded, settings)
        if len(joints) == 1:
            found["joint_states_topic"] = joints[0]
        elif recorded and not joints:
            problems.append(f"no {settings.joint_states_topic} ({JOINT_STATE}), and the joint states recorded "
                            f"({_listing(recorded)}) do not name the {settings.robot}'s arm joints "
                            "(another robot? --robot or --urdf)")
        elif joints:  # none recorded: the bag's reading says so, with its topics
            problems.append(_several("joint_states_topic", settings.joint_states_topic, JOINT_STATE, joints))
    for needed, setting, kind in ((needs_wrench, "wrench_topic", WRENCH_STAMPED), (needs_imu, "imu_topic", IMU)):
        candidates = of_type[kind] if needed else []
        if len(candidates) == 1:
            found[setting] = candidates[0]
        elif candidates:
            problems.append(_several(setting, getattr(settings, setting) or f"{setting} set", kind, candidates))
    if problems:
        raise CommandError(f"{bag}: {'; '.join(problems)}")
    # the wrench topic read: found, or given without its source (a preset's Franka source on an F/T topic)
    wrench_topic = found.get("wrench_topic") or (
        settings.wrench_topic if "wrench_topic" in given and types.get(settings.wrench_topic) == WRENCH_STAMPED
        else None)
    if wrench_topic and "wrench_source" not in given and settings.wrench_source.reads_wrench_topic:
        source = FRANKA_TOPIC_SOURCES.get(wrench_topic.rstrip("/").rsplit("/", 1)[-1], WrenchSource.FT_SENSOR)
        if "wrench_topic" in found or source is not settings.wrench_source:
            found["wrench_source"] = source.value
    if not found:
        return {}, None
    frame = ""
    needs_mounting = False
    if (wrench_topic and WrenchSource(found.get("wrench_source", settings.wrench_source)) is WrenchSource.FT_SENSOR
            and "sensor_frame" not in given and ("wrench_topic" in found or "wrench_source" in found)):
        frame = _wrench_frame(bag, wrench_topic)
        frames = _description_frames(settings, urdf)
        if frame:
            found["sensor_frame"] = frame
        mounted = bool(frame) and frames is not None and frame in frames
        needs_mounting = not mounted and not any(name in given for name in MOUNTING_SETTINGS)
    changed = {k: v for k, v in found.items() if v != getattr(settings, k)}
    sets = " ".join(_set(k, v) for k, v in found.items())
    what = []
    if "joint_states_topic" in found:
        what.append(f"joint states on {found['joint_states_topic']}")
    if wrench_topic:
        kind = {"ft_sensor": "an F/T sensor's wrench"}.get(found.get("wrench_source", ""), "the wrench")
        what.append(f"{kind} on {wrench_topic}" + (f" (frame {frame})" if frame else ""))
    if "imu_topic" in found:
        what.append(f"the IMU on {found['imu_topic']}")
    missing = [t for t in (settings.joint_states_topic if needs_joints else None,
                           settings.wrench_topic if needs_wrench else None,
                           settings.imu_topic if needs_imu else None) if t]
    head = (f"not recorded: {', '.join(missing)}; " if missing else "") + f"read by their types: {', '.join(what)}"
    if needs_mounting:
        from payload_estimator.pipeline.build import flange_frame

        try:
            flange = flange_frame(settings)
        except ValueError:
            flange = "the flange"
        name = frame or "FRAME"
        why = f"its frame {frame} is not in the robot description" if frame else "its messages name no frame"
        raise CommandError(
            f"{bag}: {head}; {why}, so where the sensor sits on the flange is not in the bag: run again with "
            f"{sets}{' ' + _set('sensor_frame', name) if not frame else ''} --set 'sensor_xyz=[X,Y,Z]' "
            f"--set 'sensor_rpy=[ROLL,PITCH,YAW]' (the origin of {name} in {flange}, m, and its roll, pitch, yaw "
            "there, rad: [0,0,0] for both when the sensor's axes are the flange's)")
    return changed, f"{head}, as with {sets}"
