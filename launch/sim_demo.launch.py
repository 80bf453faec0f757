"""Launch a simulated arm holding a known payload, the estimator, and rviz2.

For example::

    ros2 launch payload_estimator sim_demo.launch.py robot:=panda payload:=claw_hammer
    ros2 launch payload_estimator sim_demo.launch.py rviz:=false      # headless
    ros2 launch payload_estimator sim_demo.launch.py scenario:=cycle  # picks and places, contacts
    ros2 launch payload_estimator sim_demo.launch.py scenario:=identify  # still until trajectory goals come
    ros2 launch payload_estimator sim_demo.launch.py camera:=true  # a camera's cloud of the payload: PMD's shape
    ros2 launch payload_estimator sim_demo.launch.py wrench_source:=joint_torques payload:=none  # then call
        # ~/calibrate (the arm moves, unloaded); a loaded run later uses the same arm (arm_mismatch_seed)

The simulator (node ``payload_sim``) publishes joint states, the wrench (in the
robot's own convention), robot_description and tf; the estimator receives the
robot model from it (``use_builtin_description:=false``) and is given the
payload's outer shape for PMD. The truth is on ``/payload_sim/truth``. With
``scenario:=identify`` the simulator also serves the robot's
``control_msgs/FollowJointTrajectory`` action (its driver's controller name).

With ``wrench_source:=joint_torques`` the robot has no wrist sensor: the simulator reports realistic
joint efforts (``efforts``, default true then) from an arm unlike its URDF (``arm_mismatch_seed``,
default 0 then) on the topic of ``config/<robot>_joint_torques.yaml``, and the estimator runs that
file, with ``arm_calibration:=`` (default: the file's; ``none``: uncalibrated). Without a calibration
file the estimator reports an ERROR diagnostic until ``~/calibrate`` (``payload:=none``) writes it.
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
        from payload_estimator.sim.arm_cycle import arm_work_cycle

        shape = format_shape_spec(arm_work_cycle(robot).envelope)
    else:
        shape = format_shape_spec(get_payload(payload if payload != "none" else "claw_hammer").envelope)
    use_sim_time = LaunchConfiguration("use_sim_time").perform(context).lower() in ("true", "1", "yes")
    wrench_source = LaunchConfiguration("wrench_source").perform(context)
    joint_torques = wrench_source == "joint_torques"
    sim_extra = {}
    if joint_torques:  # the joint states where the joint-torque preset reads them
        from payload_estimator.settings import settings_for_robot

        sim_extra["joint_states_topic"] = settings_for_robot(robot, "joint_torques").joint_states_topic
    efforts = LaunchConfiguration("efforts").perform(context).lower()
    mismatch = LaunchConfiguration("arm_mismatch_seed").perform(context)
    camera = LaunchConfiguration("camera").perform(context).lower() in ("true", "1", "yes")
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
                "efforts": efforts in ("true", "1", "yes") if efforts else joint_torques,
                "arm_mismatch_seed": int(mismatch) if mismatch else (0 if joint_torques else -1),
                "camera": camera,
                **sim_extra,
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
                "wrench_source": wrench_source,
                "arm_calibration": LaunchConfiguration("arm_calibration").perform(context),
                "cloud_topic": "/camera/payload/points" if camera else "",  # the simulator's camera (camera_feed)
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
    """Return the launch description: the arguments, the simulator, the estimator and rviz2 (if installed)."""
    return LaunchDescription([
        DeclareLaunchArgument("robot", default_value="panda", choices=list(ROBOT_NAMES), description="simulated robot"),
        DeclareLaunchArgument("payload", default_value="claw_hammer",
                              description="payload of the catalogue (payload_estimator.sim.payloads); none: the "
                                          "unloaded arm (to calibrate it)"),
        DeclareLaunchArgument("scenario", default_value="single", choices=["single", "cycle", "identify"],
                              description="single: the payload held throughout; cycle: picks and places of four "
                                          "payloads with contacts (payload, trajectory, duration do not apply); "
                                          "identify: the arm holds still at home until FollowJointTrajectory goals "
                                          "move it (trajectory, duration do not apply)"),
        DeclareLaunchArgument("trajectory", default_value="wrist", choices=["wrist", "thesis", "pickplace"],
                              description="excitation trajectory: wrist (Nadeau et al.'s wrist sinusoids), "
                                          "thesis (Lambert's all-joint sinusoids) or pickplace"),
        DeclareLaunchArgument("duration", default_value="20.0",
                              description="seconds of excitation; the arm then returns to its start (a second or "
                                          "two) and the run loops, seamlessly"),
        DeclareLaunchArgument("noise", default_value="moderate", choices=["none", "low", "moderate", "high"],
                              description="F/T noise level (Nadeau et al.'s Table II)"),
        DeclareLaunchArgument("wrench_source", default_value="",
                              description="the estimator's wrench source (default: the robot's file); "
                                          "joint_torques: no wrist sensor, config/<robot>_joint_torques.yaml"),
        DeclareLaunchArgument("arm_calibration", default_value="",
                              description="joint_torques: the arm calibration file (default: the file's; none: "
                                          "uncalibrated)"),
        DeclareLaunchArgument("efforts", default_value="",
                              description="the simulator reports realistic joint efforts (default: true with "
                                          "wrench_source:=joint_torques)"),
        DeclareLaunchArgument("arm_mismatch_seed", default_value="",
                              description="the simulated arm differs from its URDF, drawn from this seed; -1: it "
                                          "does not (default: 0 with wrench_source:=joint_torques, else -1)"),
        DeclareLaunchArgument("estimator", default_value="", description="ols, wls, rls, rtls or pmd "
                                                                          "(default: the robot's file)"),
        DeclareLaunchArgument("camera", default_value="false",
                              description="the simulator publishes a tripod camera's cloud of the payload (1 Hz) "
                                          "and the estimator makes it PMD's shape (cloud_topic)"),
        DeclareLaunchArgument("rviz", default_value="true", description="start rviz2 (if installed)"),
        DeclareLaunchArgument("use_sim_time", default_value="false",
                              description="the simulator publishes /clock and the nodes use it"),
        DeclareLaunchArgument("namespace", default_value="", description="namespace of all nodes"),
        OpaqueFunction(function=_nodes),
    ])
