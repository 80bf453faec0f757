"""``~/apply``: hand the estimate to the robot or to a gravity-compensation filter.

The robot takes it through Franka's ``SetLoad``, the xArm's ``set_tcp_load`` or UR's ``SetPayload``,
a filter as its ``tool.mass`` and ``tool.CoG`` through ``SetParameters``. What
is sent, and whether it may be, is decided ROS-free
(:meth:`payload_estimator.supervision.supervisor.Supervisor.apply`, with
:mod:`payload_estimator.outputs.apply`); this module only fills the request and
calls the service. ``franka_msgs``, ``xarm_msgs`` and ``ur_msgs`` are optional: they are
imported when first needed, and without them ``~/apply`` answers with the
missing package's name (``dry_run`` still returns the request).

The call is made from the ``~/apply`` service callback, so it must not wait on
the thread that would deliver the answer: the clients live in a callback group
of their own and the node runs in a :class:`~rclpy.executors.MultiThreadedExecutor`
(the pattern of the ROS 2 guide "Using callback groups"), and every wait has a
timeout.
"""

from __future__ import annotations

import importlib
import threading
from typing import Any

from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node

from payload_estimator.io.ros_factories import fill_message
from payload_estimator.outputs.apply import ApplyRequest

__all__ = ["RobotBridge", "SERVICE_WAIT_S", "CALL_TIMEOUT_S"]

SERVICE_WAIT_S = 2.0
"""How long to wait for the target service to appear, s."""
CALL_TIMEOUT_S = 10.0
"""How long to wait for its answer, s (Franka refuses SetLoad while moving, quickly)."""


def service_type(type_name: str) -> Any:
    """The service class of ``"pkg/srv/Type"`` (``ImportError`` naming the package when it is absent)."""
    package, _, name = type_name.split("/")
    try:
        module = importlib.import_module(f"{package}.srv")
    except ImportError as exc:
        raise ImportError(f"{package} is not installed") from exc
    try:
        return getattr(module, name)
    except AttributeError:
        raise ImportError(f"{package} has no service {name}") from None


def _answer(target: str, response: Any) -> tuple[bool, str]:
    """Whether the robot or filter accepted the request, and what it said."""
    if target == "franka":  # franka_msgs/srv/SetLoad: bool success, string error
        return bool(response.success), str(response.error)
    if target == "xarm":  # xarm_msgs/srv/SetTcpLoad: int32 ret (0: done), string message
        return int(response.ret) == 0, f"ret {int(response.ret)}: {response.message}"
    if target == "ur":  # ur_msgs/srv/SetPayload: bool success
        return bool(response.success), "success" if response.success else "refused"
    results = list(response.results)  # rcl_interfaces/srv/SetParameters
    refused = [r.reason for r in results if not r.successful]
    return (bool(results) and not refused), ("; ".join(refused) if refused else "parameters set")


class RobotBridge:
    r"""Sends :class:`~payload_estimator.outputs.apply.ApplyRequest`\ s for a node.

    Args:
        node: the node that owns the clients.
        callback_group: the clients' group (not the one of the calling service).
    """

    def __init__(self, node: Node, callback_group: CallbackGroup) -> None:
        self._node = node
        self._group = callback_group
        self._clients: dict[tuple[str, str], Any] = {}

    def send(self, request: ApplyRequest) -> tuple[bool, str]:
        """Send ``request`` and wait for the answer.

        Args:
            request: what :meth:`Supervisor.apply <payload_estimator.supervision.supervisor.Supervisor.apply>`
                decided to send.

        Returns:
            ``(success, message)`` for ``~/apply``'s answer.
        """
        try:
            srv_type = service_type(request.service_type)
        except ImportError as exc:
            return False, (f"{exc}: cannot call {request.service_type}; build it in this workspace, or use "
                           "dry_run to get the request")
        return self._call(request, srv_type)

    def _call(self, request: ApplyRequest, srv_type: Any) -> tuple[bool, str]:
        key = (request.service_type, request.service_name)
        client = self._clients.get(key)
        if client is None:
            client = self._node.create_client(srv_type, request.service_name, callback_group=self._group)
            self._clients[key] = client
        if not client.wait_for_service(timeout_sec=SERVICE_WAIT_S):
            return False, f"service {request.service_name} ({request.service_type}) is not available"
        message = srv_type.Request()
        fields, left_out = request.fields_for(message.get_fields_and_field_types())
        try:
            fill_message(message, fields)
        except (AttributeError, TypeError, ValueError, AssertionError) as exc:
            return False, f"cannot fill {request.service_type}: {exc}"
        # call_async and a bounded wait (what Jazzy's Client.call(timeout_sec) does; Humble's has no timeout):
        # the answer is delivered by another executor thread, in the clients' callback group.
        answered = threading.Event()
        future = client.call_async(message)
        future.add_done_callback(lambda _: answered.set())
        if not future.done() and not answered.wait(CALL_TIMEOUT_S):
            if hasattr(client, "remove_pending_request"):
                client.remove_pending_request(future)
            return False, f"no answer from {request.service_name} within {CALL_TIMEOUT_S:.0f} s"
        if future.exception() is not None:
            return False, f"{request.service_name} failed: {future.exception()}"
        response = future.result()
        ok, said = _answer(request.target, response)
        verdict = "applied" if ok else "rejected"
        note = f" (this {request.package} has no {', '.join(left_out)}: not sent)" if left_out else ""
        return ok, f"{verdict} by {request.service_name}: {said}{note}"
