"""Launch the payload estimator for a robot.

For example: ``ros2 launch payload_estimator estimator.launch.py robot:=fr3``.

Parameters come from ``config:=`` (default: the package's ``config/<robot>.yaml``, or
``config/<robot>_joint_torques.yaml`` with ``wrench_source:=joint_torques``: no wrist sensor, the
wrench from the joints' efforts and the unloaded arm's calibration ``arm_calibration:=``, which the
node's ``~/calibrate`` records); the other arguments override single parameters when given. The robot model
comes from ``robot_description`` (robot_state_publisher's topic) unless
``use_builtin_description:=true``. An arm that is no built-in preset runs with
``robot:=''`` and ``config:=`` a parameter file of its own, whose ``robot`` is
empty and which names ``flange_frame`` and the topics.
"""

import os

from ament_index_python.packages import get_package_share_directory
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node

from launch import LaunchDescription
from payload_estimator.core.estimators import METHODS
from payload_estimator.robots import ROBOT_NAMES


def _estimator_node(context):
    """The node, with the parameter file read here so that it applies in any namespace."""
    from payload_estimator.settings import Settings, load_parameters_yaml, preset_file_name

    robot = LaunchConfiguration("robot").perform(context)
    config = LaunchConfiguration("config").perform(context)
    if not config and not robot:
        raise RuntimeError("robot:='' (an arm that is no built-in preset) needs config:=<parameter file>")
    variant = "joint_torques" if LaunchConfiguration("wrench_source").perform(context) == "joint_torques" else ""
    config = config or os.path.join(get_package_share_directory("payload_estimator"), "config",
                                    preset_file_name(robot, variant))
    params = load_parameters_yaml(config).to_dict()  # a bad file stops here, with the reason
    for name in ("wrench_source", "estimator", "payload_shape", "trajectory_action", "arm_calibration", "cloud_topic"):
        value = LaunchConfiguration(name).perform(context)
        if value:
            params[name] = "" if name == "arm_calibration" and value == "none" else value
    builtin = LaunchConfiguration("use_builtin_description").perform(context)
    if builtin:
        params["use_builtin_description"] = builtin.lower() in ("true", "1", "yes")
    Settings.from_dict(params)  # the overrides are checked before anything starts
    # launch_ros cannot pass an empty list (the node's default of every list parameter is empty anyway)
    params = {k: v for k, v in params.items() if v != []}
    use_sim_time = LaunchConfiguration("use_sim_time").perform(context).lower() in ("true", "1", "yes")
    return [Node(
        package="payload_estimator",
        executable="estimator_node",
        name="payload_estimator",
        namespace=LaunchConfiguration("namespace").perform(context),
        parameters=[params, {"use_sim_time": use_sim_time}],
        output="screen",
        emulate_tty=True,
    )]


def generate_launch_description():
    """Return the launch description: the arguments (module docstring) and the estimator node."""
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="panda", choices=[*ROBOT_NAMES, ""],
                              description="built-in robot preset; selects the default parameter file "
                                          "('': any arm, with config:=)"),
        DeclareLaunchArgument("config", default_value="",
                              description="parameter file (default: share/payload_estimator/config/<robot>.yaml)"),
        DeclareLaunchArgument("wrench_source", default_value="",
                              description="ft_sensor, franka_base, franka_stiffness or joint_torques (no wrist "
                                          "sensor; default file config/<robot>_joint_torques.yaml) (default: the "
                                          "file's)"),
        DeclareLaunchArgument("arm_calibration", default_value="",
                              description="joint_torques: the unloaded arm's calibration file (~/calibrate writes "
                                          "it); none: uncalibrated (default: the file's)"),
        DeclareLaunchArgument("estimator", default_value="",
                              description=f"{', '.join(METHODS)} (default: the file's)"),
        DeclareLaunchArgument("payload_shape", default_value="",
                              description="payload shape for PMD, sensor frame (default: the file's)"),
        DeclareLaunchArgument("use_builtin_description", default_value="",
                              description="true: use the package's URDF of the robot instead of "
                                          "robot_description (default: the file's)"),
        DeclareLaunchArgument("trajectory_action", default_value="",
                              description="FollowJointTrajectory action that ~/identify moves the arm with, e.g. "
                                          "/fr3_arm_controller/follow_joint_trajectory (default: the file's)"),
        DeclareLaunchArgument("cloud_topic", default_value="",
                              description="a camera's PointCloud2 of the held payload (default: the file's: none)"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of the node"),
        DeclareLaunchArgument("use_sim_time", default_value="false", description="use /clock"),
        OpaqueFunction(function=_estimator_node),
    ])
