"""The estimator node's logic without ROS; the rclpy shell (:mod:`payload_estimator.ros`) only forwards into it.

Here are the supervisor that builds and drives the stream, what it publishes
(the outputs table, stale estimates) and hands over, its parameters, frames,
input queue, processing loop, log and status, and the logic of the ~/identify
action and the ~/calibrate service.
"""
