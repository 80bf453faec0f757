"""``replay``'s payload clouds: a camera's ``sensor_msgs/PointCloud2`` of the payload, each applied at its stamp.

The cloud topic is ``--cloud-topic TOPIC`` (or the setting ``cloud_topic``); without either, the bag's one
PointCloud2 topic when it has exactly one (the output says so). Each cloud goes through the node's chain
(:mod:`payload_estimator.pipeline.payload_cloud`): placed at its stamp from the joint states recorded, a
frame the URDF lacks from the bag's ``/tf_static``, checked, completed (``cloud_completion``), applied.
"""

from __future__ import annotations

import argparse
from typing import Any

from payload_estimator.commands import CommandError

__all__ = ["add_cloud_argument", "cloud_topic_setting", "cloud_summary", "cloud_line"]


def add_cloud_argument(p: argparse.ArgumentParser) -> None:
    """``--cloud-topic TOPIC``."""
    p.add_argument("--cloud-topic", metavar="TOPIC",
                   help="a camera's sensor_msgs/PointCloud2 of the held payload, made PMD's shape at each cloud's "
                        "stamp (the setting cloud_topic; frames from the URDF or the bag's /tf_static; default: the "
                        "bag's one PointCloud2 topic when it has exactly one)")


def cloud_topic_setting(args: argparse.Namespace, settings: Any, topics: dict[str, tuple[str, int]]) -> tuple[str, str]:
    """``(topic, how)``: the cloud topic to read ("" for none) and how it was chosen ("" when not automatically).

    Raises:
        CommandError: ``--cloud-topic`` (or ``cloud_topic``) names a topic the bag lacks or of another type.
    """
    from payload_estimator.io.bag import POINT_CLOUD2_TYPE

    clouds = sorted(t for t, (msgtype, _) in topics.items() if msgtype == POINT_CLOUD2_TYPE)
    topic = getattr(args, "cloud_topic", None) or settings.cloud_topic
    if topic:
        if topics.get(topic, ("", 0))[0] != POINT_CLOUD2_TYPE:
            what = f"is {topics[topic][0]}" if topic in topics else "is not in the bag"
            raise CommandError(f"cloud topic {topic} {what}, not {POINT_CLOUD2_TYPE}; the bag's PointCloud2 "
                               f"topics: {', '.join(clouds) or 'none'}")
        return topic, ""
    if len(clouds) == 1:
        return clouds[0], "the bag's only PointCloud2 topic"
    return "", ""


def cloud_summary(stream: Any, topic: str, how: str, messages: int) -> dict:
    """What became of the clouds: a plain dictionary for ``--json`` and the tables."""
    shapes = stream.shapes.diagnostics()
    return {"topic": topic, "chosen": how or "given", "messages": messages,
            "applied": shapes["clouds_applied"], "refused": shapes["clouds_refused"],
            "ignored": shapes["clouds_ignored"], "shape": shapes["shape_source"],
            "point_masses": shapes["shape_point_masses"], "last_refusal": shapes["cloud_refusal"]}


def cloud_line(summary: dict) -> str:
    """One line for the tables."""
    how = "" if summary["chosen"] == "given" else f" ({summary['chosen']})"
    line = (f"payload clouds on {summary['topic']}{how}: {summary['messages']} read, {summary['applied']} applied, "
            f"{summary['refused']} refused; the shape at the end: {summary['shape']}, {summary['point_masses']} "
            "point masses")
    if summary["ignored"]:
        line += f"; {summary['ignored']} ignored (the estimator uses no point masses)"
    return line + (f"; last refusal: {summary['last_refusal']}" if summary["last_refusal"] else "")
