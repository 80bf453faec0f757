"""``~/identify`` between the node's threads without ROS: :mod:`payload_estimator.supervision.identify_run`.

The run drives a real supervisor (the Panda's, built-in description) and real designed motions; what
needs ROS stands in: the controller (:class:`Controller`: records what is sent and cancelled, answers as
the test says), the action goal (records its feedback) and the clock (receive times from 100 s). A goal
that moves the arm runs in a thread of its own, as in the node, while the test ticks the run as the
processing loop does.
"""

from __future__ import annotations

import math
import threading
import time

import numpy as np
import pytest

from payload_estimator.core.shapes import format_shape_spec
from payload_estimator.io import ros_factories, ros_outbound
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.robots import get_robot
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.payloads import get_payload
from payload_estimator.supervision import identify_run
from payload_estimator.supervision.estimate_handover import ApplyDecision
from payload_estimator.supervision.identify import ABORTED, CANCELED, SUCCEEDED, Feedback, Outcome
from payload_estimator.supervision.identify_plan import IdentifyGoal, newest_joint_reading, plan_identification
from payload_estimator.supervision.identify_run import IdentifyRun, trajectory_outcome
from payload_estimator.supervision.supervisor import Supervisor

SPEC = get_robot("panda")
SETTINGS = settings_for_robot("panda")
T0 = 100.0
ACTION = SETTINGS.trajectory_action


class Controller:
    def __init__(self, server: bool = True) -> None:
        self.server = server
        self.connected: list[str] = []
        self.sent: list[tuple] = []
        self.cancelled = 0

    def connect(self, action: str) -> bool:
        self.connected.append(action)
        return self.server

    def send(self, names, t, q, dq, ddq) -> None:
        self.sent.append((names, t, q, dq, ddq))

    def cancel(self) -> None:
        self.cancelled += 1


class Goal:
    def __init__(self, cancel_requested: bool = False) -> None:
        self.is_cancel_requested = cancel_requested
        self.feedback: list[Feedback] = []

    def publish_feedback(self, feedback) -> None:
        self.feedback.append(feedback)


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


class Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, str]] = []

    def info(self, text: str) -> None:
        self.lines.append(("info", text))

    def warning(self, text: str) -> None:
        self.lines.append(("warning", text))


@pytest.fixture(scope="module")
def make():
    return ros_factories.rosbags_factory(ros_typestore())


@pytest.fixture(scope="module")
def plan():
    """The motion the run designs for the Panda at home."""
    return plan_identification(SETTINGS, IdentifyGoal(), _running(None).description or "", SPEC.flange_frame,
                               SPEC.joint_names, np.array(SPEC.q_home))


def _running(make) -> Supervisor:
    shape = format_shape_spec(get_payload("claw_hammer").envelope)
    sup = Supervisor({**SETTINGS.to_dict(), "use_builtin_description": True, "payload_shape": shape},
                     make or ros_factories.rosbags_factory(ros_typestore()))
    sup.tick(T0 - 1.0, [])
    assert sup.running
    return sup


def at_home(make, now: float, names=None):
    """``(kind, msg, receive time)`` of a joint state of the arm at home."""
    names = list(names or SPEC.joint_names)
    q = np.array(SPEC.q_home)[: len(names)]
    return ("joint_states", ros_outbound.joint_state_msg(make, now, names, q, np.zeros(len(names))), now)


def new_run(sup, controller, clock, running=lambda: True, log=None) -> IdentifyRun:
    return IdentifyRun(sup, controller, lambda feedback: feedback, lambda: ApplyDecision(False, "not applied"), running,
                       log or Log(), clock=clock)


def start(run: IdentifyRun, goal: IdentifyGoal, handle: Goal) -> tuple[threading.Thread, list[Outcome]]:
    """Execute ``goal`` in a thread of its own (as the action server does); wait until it runs."""
    outcomes: list[Outcome] = []
    thread = threading.Thread(target=lambda: outcomes.append(run.execute(goal, handle)), daemon=True)
    thread.start()
    deadline = time.monotonic() + 30.0
    while not run.session.busy and thread.is_alive() and time.monotonic() < deadline:
        time.sleep(0.01)
    assert run.session.busy, outcomes
    return thread, outcomes


@pytest.fixture
def designed(monkeypatch, plan):
    """The run designs ``plan`` at once (the design itself is tested with the dry run and in test_identify)."""
    monkeypatch.setattr(identify_run, "plan_identification", lambda *args, **kwargs: plan)


# ---------------------------------------------------------------- refusals
def test_no_goal_while_the_estimator_is_not_running(make):
    sup = Supervisor(SETTINGS.to_dict(), make)  # waits for robot_description
    controller, goal = Controller(), Goal()
    outcome = new_run(sup, controller, Clock()).execute(IdentifyGoal(), goal)
    assert outcome.status == ABORTED
    assert outcome.message.startswith("refused: the estimator is not running (waiting for robot_description")
    assert not goal.feedback and not controller.connected


def test_a_dry_run_designs_and_checks_and_moves_nothing(make, plan):
    sup, controller, clock, goal = _running(make), Controller(), Clock(), Goal()
    run = new_run(sup, controller, clock)
    run.tick(T0, [at_home(make, T0 - 0.02), at_home(make, T0 - 0.01, names=["panda_finger_joint1"])], None)
    np.testing.assert_allclose(run.reading.positions, SPEC.q_home)
    outcome = run.execute(IdentifyGoal(dry_run=True), goal)
    assert outcome.status == SUCCEEDED and outcome.message.startswith(f"dry run: a {plan.duration:.1f} s motion")
    assert "duration_s:" in outcome.summary_yaml and outcome.planned_duration == plan.duration
    [designing] = goal.feedback
    assert designing.phase == "designing" and designing.progress == 0.0 and designing.elapsed == 0.0
    assert math.isnan(designing.tracking_error) and designing.estimate is None
    assert not controller.connected and not controller.sent and not run.session.busy


def test_without_the_controllers_server_or_when_cancelled_before_moving(make, designed):
    sup, controller, clock = _running(make), Controller(server=False), Clock()
    run = new_run(sup, controller, clock)
    run.tick(T0, [at_home(make, T0)], None)
    outcome = run.execute(IdentifyGoal(), Goal())
    assert outcome.status == ABORTED and outcome.message == (
        f"refused: no FollowJointTrajectory server at {ACTION} (parameter trajectory_action)")
    assert controller.connected == [ACTION]
    # the goal let go of the arm: the next one is not refused as "another identification"
    outcome = run.execute(IdentifyGoal(), Goal(cancel_requested=True))
    assert outcome == Outcome(CANCELED, "identification cancelled before the robot moved")
    assert controller.connected == [ACTION] and not controller.sent


# ---------------------------------------------------------------- a running goal
def test_one_goal_moves_the_arm_and_a_cancel_stops_it(make, plan, designed):
    sup, controller, clock, goal = _running(make), Controller(), Clock(), Goal()
    log = Log()
    run = new_run(sup, controller, clock, log=log)
    run.tick(T0, [at_home(make, T0)], None)
    thread, outcomes = start(run, IdentifyGoal(), goal)
    assert log.lines == [("info", f"~/identify: a {plan.duration:.1f} s identification motion through {ACTION} "
                                  f"(fastest: {plan.fastest})")]

    clock.now = T0 + 0.01
    run.tick(clock.now, [at_home(make, clock.now)], None)  # the session starts: reset, send
    [(names, t, q, _, _)] = controller.sent
    assert names == plan.joint_names and np.array_equal(t, plan.t) and np.array_equal(q, plan.q)
    assert goal.feedback[-1].phase == "moving" and run.last_published is None
    run.on_trajectory_response(True)

    refused = run.execute(IdentifyGoal(), Goal())
    assert refused == Outcome(ABORTED, "refused: another identification is running")
    run.cancel(Goal())  # not the running goal's: nothing happens
    clock.now = T0 + 0.02
    run.tick(clock.now, [at_home(make, clock.now)], None)
    assert controller.cancelled == 0 and thread.is_alive()

    run.cancel(goal)
    clock.now = T0 + 0.03
    run.tick(clock.now, [at_home(make, clock.now)], None)
    thread.join(timeout=5.0)
    assert controller.cancelled == 1 and not thread.is_alive()
    [outcome] = outcomes
    assert outcome.status == CANCELED and outcome.message == "identification cancelled: the robot was stopped"
    assert run.finish(outcome, cancel_requested=True) == CANCELED
    assert run.finish(outcome, cancel_requested=False) == ABORTED
    assert log.lines[-2:] == [("info", f"~/identify: {outcome.message}"), ("warning", f"~/identify: {outcome.message}")]


def test_a_shutdown_ends_the_goal_and_the_loop_stops_the_arm(make, designed):
    sup, controller, clock, goal = _running(make), Controller(), Clock(), Goal()
    running = [True]
    run = new_run(sup, controller, clock, running=lambda: running[0])
    run.tick(T0, [at_home(make, T0)], None)
    thread, outcomes = start(run, IdentifyGoal(), goal)
    clock.now = T0 + 0.01
    run.tick(clock.now, [at_home(make, clock.now)], None)
    run.on_trajectory_response(True)
    running[0] = False
    thread.join(timeout=5.0)
    assert outcomes == [Outcome(ABORTED, "the node is shutting down")]
    assert run.session.busy  # until the loop's next turn, which cancels the trajectory
    feedback = len(goal.feedback)
    clock.now = T0 + 0.02
    run.tick(clock.now, [at_home(make, clock.now)], None)
    assert controller.cancelled == 1 and not run.session.busy
    assert len(goal.feedback) == feedback  # the goal is over: no feedback on it


# ---------------------------------------------------------------- helpers
def test_what_a_trajectory_result_says():
    assert trajectory_outcome(4, 0, "") == (True, "succeeded")
    assert trajectory_outcome(6, 0, "") == (False, "aborted")
    assert trajectory_outcome(5, 0, "") == (False, "canceled")
    assert trajectory_outcome(4, -4, "") == (False, "error code -4")
    assert trajectory_outcome(6, -5, "goal tolerance violated") == (False, "goal tolerance violated")
    assert trajectory_outcome(2, 0, "") == (False, "status 2")


def test_the_newest_reading_with_every_arm_joint(make):
    items = [at_home(make, 1.0), at_home(make, 2.0, names=["panda_finger_joint1"]),
             ("wrench", object(), 3.0)]
    reading = newest_joint_reading(items, SPEC.joint_names)
    assert reading is not None and reading.received == 1.0
    assert newest_joint_reading(items[1:], SPEC.joint_names) is None
