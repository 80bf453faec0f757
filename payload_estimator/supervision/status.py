"""The estimator node's own state, as a ``diagnostic_msgs/DiagnosticStatus`` (ROS-free).

The stream's diagnostics (:func:`payload_estimator.io.ros_outbound.diagnostic_array_msg`)
say how the inputs and the estimate are doing once there is a stream. Before
that, and whenever the node cannot build one, this status says why:

* :data:`WAITING_DESCRIPTION` (WARN): no ``robot_description`` yet; inputs are dropped.
* :data:`WAITING_FRAMES` (WARN): frames the URDF lacks are being looked up in tf2.
* :data:`CONFIGURATION_ERROR` (ERROR): the stream cannot be built (a frame that
  exists nowhere, a bad shape, unknown joints ...); inputs are dropped; the
  last good estimate, if any, is kept.
* :data:`RUNNING` (OK, or WARN when the input queue overflowed recently).

Levels are :class:`~payload_estimator.io.diagnostic_level.DiagnosticLevel`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from payload_estimator.io.diagnostic_level import DiagnosticLevel

__all__ = [
    "NodeStatus",
    "node_status_fields",
    "WAITING_DESCRIPTION",
    "WAITING_FRAMES",
    "CONFIGURATION_ERROR",
    "RUNNING",
]

WAITING_DESCRIPTION = "waiting for robot_description"
WAITING_FRAMES = "waiting for tf frames"
CONFIGURATION_ERROR = "configuration error"
RUNNING = "running"

_LEVELS = {
    WAITING_DESCRIPTION: DiagnosticLevel.WARN,
    WAITING_FRAMES: DiagnosticLevel.WARN,
    CONFIGURATION_ERROR: DiagnosticLevel.ERROR,
    RUNNING: DiagnosticLevel.OK,
}


@dataclass
class NodeStatus:
    """What the node is doing and why.

    Attributes:
        state: one of the module's states.
        detail: one line for a person (e.g. the error, the frames awaited).
        values: extra key/values for the diagnostic (counts, frames, sources).
    """

    state: str = WAITING_DESCRIPTION
    detail: str = ""
    values: dict[str, Any] = field(default_factory=dict)

    @property
    def level(self) -> DiagnosticLevel:
        """The diagnostic level of :attr:`state` (WARN for a state the module does not list)."""
        return _LEVELS.get(self.state, DiagnosticLevel.WARN)

    @property
    def message(self) -> str:
        """``"<state>: <detail>"``, or the state alone without a detail."""
        return f"{self.state}: {self.detail}" if self.detail else self.state


def node_status_fields(status: NodeStatus, node_name: str, overflow: Mapping[str, int] | None = None) -> dict[str, Any]:
    """``diagnostic_msgs/DiagnosticStatus`` fields named ``"<node_name>: node"``.

    ``overflow``: input messages dropped because the queue was full since the
    last status, per stream; any makes a running node WARN.
    """
    level = status.level
    message = status.message
    values = {"state": status.state, **status.values}
    lost = {k: int(v) for k, v in (overflow or {}).items() if int(v) > 0}
    if lost:
        values.update({f"queue overflow {k}": n for k, n in sorted(lost.items())})
        if level == DiagnosticLevel.OK:
            level = DiagnosticLevel.WARN
            message += "; input queue overflowed: " + ", ".join(f"{n} {k}" for k, n in sorted(lost.items()))
    return {
        "level": level,
        "name": f"{node_name}: node",
        "message": message,
        "hardware_id": node_name,
        "values": [{"key": str(k), "value": str(v)} for k, v in values.items()],
    }
