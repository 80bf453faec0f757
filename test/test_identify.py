"""``~/identify`` without ROS: :mod:`payload_estimator.supervision.identify`.

The session runs against a real designed motion (the excitation layer's, for the Panda from its home
pose) and, end to end, a real estimation stream: the MuJoCo simulator runs the designed motion with a
claw hammer, its joint states and wrench go as ROS messages (``rosbags``) into the node's
:class:`~payload_estimator.supervision.supervisor.Supervisor`, turn by turn as the node's 100 Hz loop does,
and the session is ticked with the supervisor's estimates. What the controller would do (accept,
report its error, stop on cancel, follow the motion back) is done by the test as the session asks;
receive times are 100 s + run time.
"""

from __future__ import annotations

import math
import re
from dataclasses import fields, replace

import numpy as np
import pytest
import yaml
from frame_point_speed import frame_point_speeds

from payload_estimator.core.shapes import format_shape_spec
from payload_estimator.excitation import ExcitationError, MotionLimits, check_trajectory
from payload_estimator.io import ros_factories, ros_outbound
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.robots import get_robot, robot_urdf
from payload_estimator.settings import Settings, settings_for_robot
from payload_estimator.sim.live import LiveRun
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.supervision.identify import (
    ABORTED,
    CANCELED,
    FEEDBACK_PERIOD_S,
    SETTLE_S,
    STOP_SETTLE_S,
    STOP_TIMEOUT_S,
    SUCCEEDED,
    IdentifySession,
    dry_run_outcome,
)
from payload_estimator.supervision.identify_plan import (
    IdentifyGoal,
    JointReading,
    joint_reading,
    motion_limits,
    plan_identification,
    refusal,
    return_move,
)
from payload_estimator.supervision.supervisor import Supervisor

ROBOT = "panda"
SPEC = get_robot(ROBOT)
T0 = 100.0
TURN = 0.01
SETTINGS = settings_for_robot(ROBOT)


# ------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def plan():
    """The identification motion designed from the Panda's home pose (real design, checked)."""
    return plan_identification(SETTINGS, IdentifyGoal(), robot_urdf(ROBOT), SPEC.flange_frame, SPEC.joint_names,
                               np.array(SPEC.q_home))


@pytest.fixture(scope="module")
def run(plan):
    """The designed motion run by the MuJoCo Panda holding a claw hammer (low noise), held 1 s at the end."""
    return simulate(robot=ROBOT, payload=get_payload("claw_hammer"), trajectory=plan.trajectory,
                    duration=plan.duration + 1.0, noise="low", seed=3, imu=False)


@pytest.fixture(scope="module")
def make():
    return ros_factories.rosbags_factory(ros_typestore())


@pytest.fixture(scope="module")
def items(run, make):
    """The run as franka_ros2 publishes it: ``(kind, msg, receive time)``, receive time T0 + run time."""
    live = LiveRun(run, SETTINGS, loop=False)
    names = list(run.joint_names)
    out = []
    for i, t in enumerate(run.joint_t):
        t = T0 + float(t)
        out.append(("joint_states", ros_outbound.joint_state_msg(make, t, names, run.joint_q[i], run.joint_dq[i]), t))
        out.append(("wrench", ros_outbound.wrench_stamped_msg(make, t, live.wrench_frame_id, live.wrench_force[i],
                                                              live.wrench_torque[i]), t))
    return out


@pytest.fixture(scope="module")
def estimates(run, items, make):
    """(an unconverged estimate early in the motion, the converged one at its end) of a real stream."""
    sup = supervisor(make)
    early = None
    for now, batch in turns(items, T0, T0 + run.joint_t[-1]):
        sup.tick(now, batch)
        if early is None and sup.last_output is not None and not sup.last_output.converged:
            early = sup.last_output
    assert early is not None and sup.last_output is not None and sup.last_output.converged
    return early, sup.last_output


def supervisor(make, **parameters) -> Supervisor:
    """The node's supervisor with the Panda preset, PMD's shape the hammer's envelope (as sim_demo gives it)."""
    values = {**SETTINGS.to_dict(), "use_builtin_description": True,
              "payload_shape": format_shape_spec(get_payload("claw_hammer").envelope), **parameters}
    return Supervisor(values, make, name="payload_estimator")


def turns(items, start: float, stop: float):
    """``(now, items received in (now - TURN, now])`` every TURN over (start, stop]."""
    walls = np.array([w for _, _, w in items])
    a = int(np.searchsorted(walls, start, side="right"))
    for k in range(1, int(round((stop - start) / TURN)) + 1):
        now = round(start + k * TURN, 9)
        b = int(np.searchsorted(walls, now + 1e-9, side="right"))
        yield now, items[a:b]
        a = b


def at_rest(plan, now: float) -> JointReading:
    return JointReading(plan.q_start.copy(), now)


def started(plan, goal: IdentifyGoal | None = None, settings: Settings = SETTINGS) -> IdentifySession:
    """A session whose motion was just sent and accepted at T0."""
    session = IdentifySession()
    session.start(plan, goal or IdentifyGoal(), settings, T0 - TURN)
    step = session.tick(T0 - TURN, at_rest(plan, T0 - TURN), None, 0, False)
    assert step.reset and step.send is not None and not step.cancel_trajectory and step.outcome is None
    session.on_trajectory_response(True, T0)
    return session


def follow(session, plan, start: float, stop: float, estimate=None, saturated: int = 0, offset: float = 0.0):
    """Ticks over (start, stop] with the arm exactly on the reference (plus ``offset`` rad); the first step
    that does something other than feedback, or None."""
    for k in range(1, int(round((stop - start) / TURN)) + 1):
        now = round(start + k * TURN, 9)
        q, _, _ = plan.trajectory(np.array([now - T0]))
        step = session.tick(now, JointReading(q[0] + offset, now), estimate, saturated, False)
        if step.outcome or step.send or step.cancel_trajectory or step.apply:
            return now, step
    return stop, None


# ------------------------------------------------------------------ settings
def test_the_identification_defaults_are_the_excitation_layers():
    """Settings cannot import the excitation layer (it is above): the values are kept equal here.

    But for the payload's points: the library's default holds the speed at the TCP alone, the node's at
    the tip of a tool of ``identify_tool_length`` too."""
    node = motion_limits(Settings(), IdentifyGoal())
    assert replace(node, payload_points=(), payload_label=MotionLimits().payload_label) == MotionLimits()
    assert node.payload_points == ((0.0, 0.0, Settings().identify_tool_length),)
    names = {f.name for f in fields(Settings)}
    for f in fields(MotionLimits):
        if f"identify_{f.name}" in names:
            assert getattr(Settings(), f"identify_{f.name}") == getattr(MotionLimits(), f.name), f.name


def test_every_preset_names_its_trajectory_controller():
    assert settings_for_robot("panda").trajectory_action == "/panda_arm_controller/follow_joint_trajectory"
    assert settings_for_robot("fr3").trajectory_action == "/fr3_arm_controller/follow_joint_trajectory"
    assert settings_for_robot("xarm7").trajectory_action == "/xarm7_traj_controller/follow_joint_trajectory"
    assert settings_for_robot("xarm6").trajectory_action == "/xarm6_traj_controller/follow_joint_trajectory"
    assert Settings().trajectory_action == ""
    with pytest.raises(ValueError, match="identify_duration"):
        Settings(identify_duration=0.0)


def test_a_goal_overrides_duration_and_speed_zero_keeps_the_configured_ones():
    settings = SETTINGS.with_(identify_duration=6.0, identify_max_tcp_speed=0.2, identify_floor_height=-0.3)
    kept = motion_limits(settings, IdentifyGoal())
    assert (kept.duration, kept.max_tcp_speed, kept.floor_height) == (6.0, 0.2, -0.3)
    goal = motion_limits(settings, IdentifyGoal(duration=4.0, max_tcp_speed=0.1))
    assert (goal.duration, goal.max_tcp_speed, goal.floor_height) == (4.0, 0.1, -0.3)
    with pytest.raises(ExcitationError, match="duration"):
        motion_limits(settings, IdentifyGoal(duration=-1.0))


# ------------------------------------------------------------- preconditions
def test_refusals_say_why():
    fresh = JointReading(np.zeros(7), 10.0)
    ok = dict(settings=SETTINGS, running=True, status="running", paused=False, reading=fresh, now=10.1, busy=False)
    assert refusal(**ok) is None
    cases = {
        "another identification is running": dict(busy=True),
        "not running (waiting for robot_description)": dict(running=False, status="waiting for robot_description"),
        "trajectory_action is empty": dict(settings=SETTINGS.with_(trajectory_action="")),
        "paused": dict(paused=True),
        "no joint state": dict(reading=None),
        "stale (the last one is 0.60 s old": dict(now=10.6),
    }
    for says, change in cases.items():
        why = refusal(**{**ok, **change})
        assert why is not None and why.startswith("refused: ") and says in why, (says, why)
    # a dry run moves nothing: it needs no controller and may run beside an identification
    assert refusal(**{**ok, "busy": True, "settings": SETTINGS.with_(trajectory_action="")}, dry_run=True) is None


def test_joint_reading_takes_the_arm_joints_in_the_streams_order():
    names = ["panda_finger_joint1", *reversed(SPEC.joint_names)]
    positions = [0.04, *np.arange(7.0)[::-1]]
    reading = joint_reading(names, positions, 3.0, SPEC.joint_names)
    assert reading is not None and reading.received == 3.0
    assert np.array_equal(reading.positions, np.arange(7.0))
    assert joint_reading(names[:-1], positions[:-1], 3.0, SPEC.joint_names) is None  # a joint missing
    assert joint_reading(names, positions[:-1], 3.0, SPEC.joint_names) is None  # malformed
    assert joint_reading(names, [math.nan, *positions[1:]], 3.0, SPEC.joint_names) is not None  # gripper NaN: fine


def test_a_start_within_the_margin_of_a_limit_is_refused_by_the_design():
    q = np.array(SPEC.q_home)
    q[3] = SPEC.q_max[3] - 0.02
    with pytest.raises(ExcitationError, match="panda_joint4"):
        plan_identification(SETTINGS, IdentifyGoal(), robot_urdf(ROBOT), SPEC.flange_frame, SPEC.joint_names, q)



def test_a_wall_mounted_arm_is_designed_for_its_own_gravity_and_floor(plan):
    """base_rpy turns the world: the same joint motion sees gravity elsewhere, and the floor is the world's."""
    wall = replace(SETTINGS, base_rpy=(0.0, -math.pi / 2, 0.0))  # base z horizontal: mounted on a wall
    q = np.array(SPEC.q_home)
    sideways = plan_identification(wall, IdentifyGoal(duration=3.0), robot_urdf(ROBOT), SPEC.flange_frame,
                                   SPEC.joint_names, q)
    g_wall = sideways.kinematics.compute(q[None], 0 * q[None], 0 * q[None]).gravity_in_sensor[0]
    g_up = plan.kinematics.compute(q[None], 0 * q[None], 0 * q[None]).gravity_in_sensor[0]
    assert abs(g_up @ g_wall) < 1e-6 * 9.81**2  # a quarter turn apart
    upright = plan_identification(SETTINGS, IdentifyGoal(duration=3.0), robot_urdf(ROBOT), SPEC.flange_frame,
                                  SPEC.joint_names, q)
    # the flange of the home pose is 0.59 m above an upright base, 0.31 m beside (below or above) a wall's
    assert sideways.summary["min_floor_clearance_m"] != pytest.approx(upright.summary["min_floor_clearance_m"],
                                                                      abs=0.05)


# ------------------------------------------------------------------- design
def test_the_plan_is_the_checked_design_sampled_for_the_controller(plan):
    assert plan.joint_names == SPEC.joint_names and plan.duration == pytest.approx(5.0)
    spacing = np.diff(plan.t)
    assert plan.t[0] == 0.0 and plan.t[-1] == pytest.approx(plan.duration)
    assert np.all(spacing <= SETTINGS.identify_point_spacing + 1e-12)
    assert plan.q.shape == plan.dq.shape == plan.ddq.shape == (len(plan.t), 7)
    np.testing.assert_allclose(plan.q[0], plan.q_start, atol=1e-9)
    np.testing.assert_allclose(plan.q[-1], plan.q_start, atol=1e-6)
    np.testing.assert_allclose(plan.dq[[0, -1]], 0.0, atol=1e-6)
    assert check_trajectory(plan.trajectory, plan.kinematics, plan.arm_limits, plan.q_start, plan.limits).ok
    assert 0.0 < plan.peak_tcp_speed <= 0.25
    assert "duration_s: 5.0" in plan.summary_yaml
    # the tip of the default tool, 0.15 m out, within the limit too (pinocchio's own speed of that point)
    t = np.linspace(0.0, plan.duration, 2001)
    q, dq, _ = plan.trajectory(t)
    tip = frame_point_speeds(robot_urdf(ROBOT), SPEC.flange_frame, SPEC.joint_names, q, dq, [[0.0, 0.0, 0.15]])
    assert np.max(tip) <= plan.limits.max_tcp_speed
    assert plan.fastest.startswith("the tip of the tool (identify_tool_length 0.15 m) at (0.00, 0.00, 0.15) m in the "
                                   "flange frame: ") and yaml.safe_load(plan.summary_yaml)["fastest"] == plan.fastest
    dry = dry_run_outcome(plan)
    assert dry.status == SUCCEEDED and "nothing moved" in dry.message and dry.summary_yaml == plan.summary_yaml
    assert f"(fastest: {plan.fastest}; every limit kept)" in dry.message
    assert dry.motion_time == 0.0 and dry.planned_duration == plan.duration


def test_the_way_back_keeps_every_limit(plan):
    q_from = plan.trajectory(np.array([1.7]))[0][0]
    move = return_move(plan, q_from)
    check = check_trajectory(move, plan.kinematics, plan.arm_limits, plan.q_start, plan.limits)
    # it starts where the arm stopped, not at the start: the only violation the check may find
    assert [v for v in check.violations if "is not the start configuration" not in v] == []
    assert np.all(check.peak_velocity_fraction <= plan.limits.velocity_fraction)
    assert check.peak_tcp_speed <= check.peak_speed <= plan.limits.max_tcp_speed  # the tool's tip too
    q, dq, _ = move(np.array([0.0, move.duration]))
    np.testing.assert_allclose(q, [q_from, plan.q_start], atol=1e-12)
    np.testing.assert_allclose(dq, 0.0, atol=1e-12)
    # a slower limit gives a longer way back
    slow = return_move(replace(plan, limits=replace(plan.limits, max_tcp_speed=0.05)), q_from)
    assert slow.duration > move.duration


# ----------------------------------------------------------- session: aborts
def test_the_controller_rejecting_the_motion_aborts_with_its_reason(plan):
    session = IdentifySession()
    session.start(plan, IdentifyGoal(), SETTINGS, T0)
    session.tick(T0, at_rest(plan, T0), None, 0, False)
    session.on_trajectory_response(False, T0, "joints do not match")
    step = session.tick(T0 + TURN, at_rest(plan, T0 + TURN), None, 0, False)
    assert step.outcome is not None and step.outcome.status == ABORTED and not step.cancel_trajectory
    assert step.outcome.message == "the controller rejected the motion: joints do not match"
    assert not session.busy


def test_the_controller_aborting_the_motion_aborts_with_its_error_string(plan):
    session = started(plan)
    assert follow(session, plan, T0, T0 + 1.0)[1] is None
    session.on_trajectory_result(False, "PATH_TOLERANCE_VIOLATED at panda_joint2")
    _, step = follow(session, plan, T0 + 1.0, T0 + 1.1)
    assert step.outcome.status == ABORTED and not step.cancel_trajectory
    assert step.outcome.message == "the controller aborted the motion: PATH_TOLERANCE_VIOLATED at panda_joint2"
    assert step.outcome.motion_time == pytest.approx(1.0 + TURN, abs=TURN)


@pytest.mark.parametrize("what", ["lag", "controller error", "saturated", "stale", "paused"])
def test_unsafe_motion_stops_the_robot_and_says_why(plan, what):
    session = started(plan)
    assert follow(session, plan, T0, T0 + 0.5)[1] is None  # on its reference: runs
    now = T0 + 0.5 + TURN
    q, _, _ = plan.trajectory(np.array([now - T0]))
    reading, saturated, paused = JointReading(q[0], now), 0, False
    if what == "lag":
        reading = JointReading(q[0] + np.r_[0, 0, 0.15, 0, 0, 0, 0], now)
    elif what == "controller error":
        session.on_trajectory_feedback([0.0, 0.12, 0.0, 0.0, 0.0, 0.0, 0.0], now)
    elif what == "saturated":
        saturated = 3
    elif what == "stale":
        reading = JointReading(q[0], now - 0.6)
    else:
        paused = True
    step = session.tick(now, reading, None, saturated, paused)
    assert step.cancel_trajectory and step.outcome is not None and step.outcome.status == ABORTED
    if what == "lag":  # the smallest error over the latency window: at most the offset, above the threshold
        lag = float(re.search(r"lags its reference by ([0-9.]+) rad", step.outcome.message).group(1))
        assert SETTINGS.identify_max_tracking_error < lag <= 0.15
    says = {"lag": "lags its reference by", "controller error": "lags its reference by 0.120 rad",
            "saturated": "wrench saturated (3 samples", "stale": "joint states went stale",
            "paused": "estimator was paused"}[what]
    assert says in step.outcome.message and "the robot was stopped" in step.outcome.message


def test_a_latency_below_the_tolerance_is_no_tracking_error(plan):
    """The measured joints trail the reference by 50 ms (joint-state latency): no abort."""
    session = started(plan)
    for k in range(1, int(plan.duration / TURN)):
        now = T0 + k * TURN
        q, _, _ = plan.trajectory(np.array([max(0.0, now - T0 - 0.05)]))
        step = session.tick(now, JointReading(q[0], now), None, 0, False)
        assert step.outcome is None and not step.cancel_trajectory
    assert session.busy


def test_cancelling_stops_the_robot(plan):
    session = started(plan)
    follow(session, plan, T0, T0 + 0.3)
    session.cancel()
    step = session.tick(T0 + 0.31, at_rest(plan, T0 + 0.31), None, 0, False)
    assert step.cancel_trajectory and step.outcome.status == CANCELED and "stopped" in step.outcome.message
    assert not session.busy


def test_a_motion_that_ends_unconverged_says_why(plan, estimates):
    early, _ = estimates
    session = started(plan)
    assert follow(session, plan, T0, T0 + plan.duration, estimate=early)[1] is None
    session.on_trajectory_result(True)
    end = T0 + plan.duration
    now, step = follow(session, plan, end, end + 2 * SETTLE_S, estimate=early)
    assert now == pytest.approx(end + SETTLE_S, abs=1.5 * TURN)
    assert step.outcome.status == ABORTED and not step.outcome.converged and not step.cancel_trajectory
    assert step.outcome.message == f"the motion ended without convergence: {early.reason}"
    assert step.outcome.estimate is early and step.outcome.motion_time == pytest.approx(plan.duration)


def test_a_controller_that_never_confirms_the_stop(plan, estimates):
    _, converged = estimates
    session = started(plan)
    now, step = follow(session, plan, T0, T0 + 1.0, estimate=converged)
    assert step.cancel_trajectory and step.outcome is None
    _, step = follow(session, plan, now, now + 2 * STOP_TIMEOUT_S)
    assert step.outcome.status == ABORTED and "did not confirm" in step.outcome.message


def test_feedback_is_rate_limited_and_says_the_phase(plan, estimates):
    early, _ = estimates
    session = started(plan)
    feedback = []
    for k in range(1, 101):
        now = T0 + k * TURN
        q, _, _ = plan.trajectory(np.array([now - T0]))
        step = session.tick(now, JointReading(q[0], now), early, 0, False)
        if step.feedback is not None:
            feedback.append((now, step.feedback))
    assert len(feedback) == pytest.approx(1.0 / FEEDBACK_PERIOD_S, abs=1)
    now, last = feedback[-1]
    assert last.phase == "moving" and last.estimate is early
    assert last.progress == pytest.approx((now - T0) / plan.duration, abs=0.01)
    assert last.tracking_error < 1e-6


def test_the_result_reports_the_estimate_handed_over(plan, estimates):
    """``~/apply`` sent one estimate; the estimates that come while it answers do not replace it in the result."""
    early, converged = estimates
    session = started(plan, IdentifyGoal(apply=True))
    now, step = follow(session, plan, T0, T0 + plan.duration, estimate=converged)
    assert step is not None and step.cancel_trajectory
    session.on_trajectory_result(False, "canceled")
    held, _, _ = plan.trajectory(np.array([now - T0]))  # the arm stopped where it was
    for _ in range(int(STOP_TIMEOUT_S / TURN)):  # held still, then the way back
        now += TURN
        step = session.tick(now, JointReading(held[0], now), converged, 0, False)
        assert step.outcome is None
        if step.send is not None or step.apply:
            break
    if step.send is not None:  # stopped away from the start: the way back first
        session.on_trajectory_response(True, now)
        session.on_trajectory_result(True)
        now += TURN
        step = session.tick(now, at_rest(plan, now), converged, 0, False)
    assert step.apply
    session.on_applied(True, "sent", converged)
    step = session.tick(now + TURN, at_rest(plan, now + TURN), early, 0, False)  # a newer estimate
    assert step.outcome is not None and step.outcome.applied and step.outcome.estimate is converged


# ------------------------------------------------------ session: end to end
def test_converged_then_stopped_returned_and_handed_over(plan, run, items, make):
    """A real stream on the simulated motion: converged -> cancel -> back to the start -> ~/apply's answer."""
    sup = supervisor(make, apply_target="none")
    session = IdentifySession()
    session.start(plan, IdentifyGoal(apply=True), sup.settings, T0 - 2 * TURN)
    log: list[str] = []
    reading = at_rest(plan, T0 - TURN)
    held = None  # (q, since): the controller holds the arm after a cancel
    back = None  # (move, since): the controller follows the motion back
    outcome = None
    now = T0 - TURN
    for now, batch in turns(items, T0 - TURN, T0 + plan.duration + 10.0):
        if held is None and back is None:
            sup.tick(now, batch)
            rows = [m for kind, m, _ in batch if kind == "joint_states"]
            if rows:
                reading = JointReading(np.asarray(rows[-1].position, dtype=float), now)
        elif back is not None:
            move, since = back
            reading = JointReading(move(np.array([min(now - since, move.duration)]))[0][0], now)
            if now - since >= move.duration:
                session.on_trajectory_result(True)
        else:
            reading = JointReading(held[0], now)
        step = session.tick(now, reading, sup.last_output, 0, sup.paused)
        if step.reset:
            log.append("reset")
            sup.reset()
        if step.cancel_trajectory:
            log.append("cancel")
            held = (reading.positions.copy(), now)
            session.on_trajectory_result(False, "canceled")
        if step.send is not None:
            if step.reset:
                log.append("send motion")
                session.on_trajectory_response(True, now)
            else:
                log.append("send way back")
                assert held is not None and now - held[1] >= STOP_SETTLE_S
                names, t, q, dq, _ = step.send
                assert names == plan.joint_names
                np.testing.assert_allclose(q[0], held[0], atol=1e-12)
                np.testing.assert_allclose(q[-1], plan.q_start, atol=1e-12)
                np.testing.assert_allclose(dq[[0, -1]], 0.0, atol=1e-12)
                back, held = (return_move(plan, held[0]), now), None
                session.on_trajectory_response(True, now)
        if step.apply:
            log.append("apply")
            decision = sup.apply()
            session.on_applied(decision.success, decision.message, decision.estimate)
        if step.outcome is not None:
            outcome = step.outcome
            break
    assert log == ["reset", "send motion", "cancel", "send way back", "apply"]
    assert outcome is not None and outcome.status == SUCCEEDED and outcome.converged and not outcome.applied
    assert outcome.message.startswith("converged after ") and ", back at the start but not applied: refused: " \
        in outcome.message, outcome.message
    assert 0.0 < outcome.motion_time < plan.duration  # stopped before the end of the motion
    truth = get_payload("claw_hammer").params.mass
    assert outcome.estimate.estimate.params.mass == pytest.approx(truth, rel=0.02)
    np.testing.assert_allclose(reading.positions, plan.q_start, atol=1e-9)
    assert outcome.summary_yaml == plan.summary_yaml and outcome.planned_duration == plan.duration
    assert not session.busy
