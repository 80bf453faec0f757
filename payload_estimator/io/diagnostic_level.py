"""The levels of a ``diagnostic_msgs/DiagnosticStatus``, defined once for every status we publish (ROS-free).

``DiagnosticStatus.level`` is a ``byte``; :class:`DiagnosticLevel` is an
:class:`~enum.IntEnum`, so its members go straight into the field dictionaries
the message factories (:mod:`payload_estimator.io.ros_factories`) turn into
messages, and compare equal to the plain integers read back from one.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["DiagnosticLevel"]


class DiagnosticLevel(IntEnum):
    """``diagnostic_msgs/DiagnosticStatus`` levels (the message's constants)."""

    OK = 0
    WARN = 1
    ERROR = 2
    STALE = 3
