"""A simulated arm holding a known payload, the estimator, and rviz2:

    ros2 launch payload_estimator sim_demo.launch.py robot:=panda payload:=claw_hammer
    ros2 launch payload_estimator sim_demo.launch.py rviz:=false      # headless
    ros2 launch payload_estimator sim_demo.launch.py scenario:=cycle  # picks and places, contacts
    ros2 launch payload_estimator sim_demo.launch.py scenario:=identify  # still until trajectory goals come

The simulator (node ``payload_sim``) publishes joint states, the wrench (in the
robot's own convention), robot_description and tf; the estimator receives the
robot model from it (``use_builtin_description:=false``) and is given the
payload's outer shape for PMD. The truth is on ``/payload_sim/truth``. With
``scenario:=identify`` the simulator also serves the robot's
``control_msgs/FollowJointTrajectory`` action (its driver's controller name).
"""

from ament_index_python.packages import PackageNotFoundError, get_package_prefix, get_package_share_directory
from launch.actions import DeclareLaunchArgument, GroupAction, IncludeLaunchDescription, LogInfo, OpaqueFunction
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import Node, PushRosNamespace

from launch import LaunchDescription
from payload_estimator.robots import ROBOT_NAMES


def _nodes(context):
    from payload_estimator.core.shapes import format_shape_spec
    from payload_estimator.sim.payloads import get_payload

    share = get_package_share_directory("payload_estimator")
    robot = LaunchConfiguration("robot").perform(context)
    payload = LaunchConfiguration("payload").perform(context)
    scenario = LaunchConfiguration("scenario").perform(context)
    if scenario == "cycle":  # PMD's shape: the box around every payload of the cycle
        from payload_estimator.sim.cycle import arm_work_cycle

        shape = format_shape_spec(arm_work_cycle(robot).envelope)
    else:
        shape = format_shape_spec(get_payload(payload).envelope)
    use_sim_time = LaunchConfiguration("use_sim_time").perform(context).lower() in ("true", "1", "yes")
    actions = [
        Node(
            package="payload_estimator",
            executable="sim_node",
            name="payload_sim",
            parameters=[{
                "robot": robot,
                "payload": payload,
                "scenario": scenario,
                "trajectory": LaunchConfiguration("trajectory").perform(context),
                "duration": float(LaunchConfiguration("duration").perform(context)),
                "noise": LaunchConfiguration("noise").perform(context),
                "publish_clock": use_sim_time,
            }],
            output="screen",
            emulate_tty=True,
        ),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(PathJoinSubstitution([share, "launch", "estimator.launch.py"])),
            launch_arguments={
                "robot": robot,
                "estimator": LaunchConfiguration("estimator").perform(context),
                "payload_shape": shape,
                "use_builtin_description": "false",
                "use_sim_time": str(use_sim_time).lower(),
                "namespace": "",  # the group below pushes the namespace
            }.items(),
        ),
    ]
    if LaunchConfiguration("rviz").perform(context).lower() in ("true", "1", "yes"):
        try:
            get_package_prefix("rviz2")
        except PackageNotFoundError:
            actions.append(LogInfo(msg="rviz2 is not installed: running without it (rviz:=false to silence this)"))
        else:
            actions.append(Node(
                package="rviz2",
                executable="rviz2",
                arguments=["-d", PathJoinSubstitution([share, "rviz", "payload_estimator.rviz"])],
                parameters=[{"use_sim_time": use_sim_time}],
                output="screen",
            ))
    return [GroupAction([PushRosNamespace(LaunchConfiguration("namespace")), *actions])]


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="panda", choices=list(ROBOT_NAMES), description="simulated robot"),
        DeclareLaunchArgument("payload", default_value="claw_hammer",
                              description="payload of the catalogue (payload_estimator.sim.payloads)"),
        DeclareLaunchArgument("scenario", default_value="single", choices=["single", "cycle", "identify"],
                              description="single: the payload held throughout; cycle: picks and places of four "
                                          "payloads with contacts (payload, trajectory, duration do not apply); "
                                          "identify: the arm holds still at home until FollowJointTrajectory goals "
                                          "move it (trajectory, duration do not apply)"),
        DeclareLaunchArgument("trajectory", default_value="paper004", choices=["paper004", "thesis", "pickplace"],
                              description="excitation trajectory"),
        DeclareLaunchArgument("duration", default_value="20.0", description="simulated seconds before looping"),
        DeclareLaunchArgument("noise", default_value="moderate", choices=["none", "low", "moderate", "high"],
                              description="F/T noise level (paper 004 Table II)"),
        DeclareLaunchArgument("estimator", default_value="", description="ols, wls, rls, rtls or pmd "
                                                                          "(default: the robot's file)"),
        DeclareLaunchArgument("rviz", default_value="true", description="start rviz2 (if installed)"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="the simulator publishes /clock and the nodes use it"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of all nodes"),
        OpaqueFunction(function=_nodes),
    ])
