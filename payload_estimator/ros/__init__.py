"""The ROS 2 shell: the estimator node, the robot bridges for ``~/apply`` and the simulator node.

The estimator node serves ``~/calibrate`` and ``~/identify`` besides its topics.

Everything here imports rclpy; nothing outside this package does. The logic
lives in the ROS-free modules (``settings``, ``pipeline``, ``outputs``,
``io.ros_inbound``, ``io.ros_outbound``, ``supervision``, ``sim``); these nodes
only declare parameters, subscribe, queue what arrives, drain the queue into the
estimation stream in a processing loop and publish.
"""
