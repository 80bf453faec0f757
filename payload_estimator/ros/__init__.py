"""The ROS 2 shell: the estimator node, the robot bridges for ``~/apply`` and the simulator node.

Everything here imports rclpy; nothing outside this package does. The logic
lives in the ROS-free modules (``settings``, ``pipeline``, ``outputs``,
``io.ros_inbound``, ``io.ros_outbound``, ``node``, ``sim``); these nodes only
declare parameters, queue what arrives, drain the queue into the estimation
stream on a timer and publish.
"""
