"""``~/calibrate`` (``payload_estimator/srv/Calibrate``) on the estimator node.

The service records the unloaded arm, writes its calibration and, in
joint-torque mode, estimates with it. The request is served by a
:class:`~payload_estimator.supervision.calibration_service.CalibrationService`
(ROS-free); this module only declares the service, fills the response and logs
the answer. The service records for seconds: it runs in a reentrant callback
group of its own, so that a second call is answered (refused) at once instead
of waiting behind the first.
"""

from __future__ import annotations

from typing import Any

from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.parameter import Parameter

from payload_estimator.srv import Calibrate
from payload_estimator.supervision.calibration_service import CalibrationService

__all__ = ["CalibrateService"]


class CalibrateService:
    """Serves ``~/calibrate`` on ``node`` (an :class:`~payload_estimator.ros.estimator_node.EstimatorNode`).

    Args:
        node: the node (its supervisor, lock, topic resolution, parameters and logger).
        guard: wraps the callback so that an internal error is an answer, not an exception.
    """

    def __init__(self, node: Any, guard: Any) -> None:
        self._node = node
        self.calibration = CalibrationService(node.supervisor, node.lock, self._set_arm_calibration,
                                              running=node.context.ok, resolve=node.resolved, log=node.get_logger())
        node.create_service(Calibrate, "~/calibrate", guard(self._on_calibrate),
                            callback_group=ReentrantCallbackGroup())

    def _on_calibrate(self, request: Calibrate.Request, response: Calibrate.Response) -> Calibrate.Response:
        result = self.calibration.calibrate(float(request.duration), str(request.path), bool(request.effort_scale),
                                            bool(request.load_friction), float(request.known_payload_mass),
                                            [float(v) for v in request.known_payload_com])
        response.success, response.message, response.path = result.success, result.message, result.path
        response.joint_names = list(result.joint_names)
        response.rms_before, response.rms_after = list(result.rms_before), list(result.rms_after)
        response.samples = int(result.samples)
        # (rclpy wants one severity per logging call site)
        if result.success:
            self._node.get_logger().info(f"~/calibrate: {result.message}")
        else:
            self._node.get_logger().warning(f"~/calibrate: {result.message}")
        return response

    def _set_arm_calibration(self, path: str) -> tuple[bool, str]:
        """Set the ``arm_calibration`` parameter: (accepted, why not)."""
        outcome = self._node.set_parameters([Parameter("arm_calibration", value=path)])[0]
        return bool(outcome.successful), str(outcome.reason)
