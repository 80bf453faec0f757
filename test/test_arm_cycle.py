"""A work cycle on the MuJoCo arm: payload changes and contacts in the physics engine,
through the whole robot pipeline (filters, kinematics, the tracker).

``sim.arm_cycle.arm_work_cycle``: the Panda picks and places the claw hammer, the 68 g ruler,
the drill and the hammer in turn; a push on the claw hammer, a bump on the empty gripper, the
drill set down while still held. MuJoCo changes the payload body's inertia and applies the
contacts as external forces; the F/T sensor reads the engine's own internal force, with Table II
moderate noise, offsets and drift.
"""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.core.regressor import samples_regressor
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.tracking import CHANGE, CONTACT, PayloadTracker
from payload_estimator.pipeline.kinematics import SensorKinematics
from payload_estimator.pipeline.playback import play
from payload_estimator.robots import ROBOT_NAMES, get_robot
from payload_estimator.settings import Settings
from payload_estimator.sim.arm_cycle import STATION_ARC_M, arm_work_cycle
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.run_settings import recording_from_run, stream_for_run
from payload_estimator.sim.trajectories import PickAndPlace, flange_kinematics


@pytest.fixture(scope="module")
def cycle():
    return arm_work_cycle("panda", seed=0)


def _longest_level_stretch_s(robot: str, tilt_rad: float = 0.3) -> float:
    """s, the longest time in two of ``robot``'s work cycles its flange stays within ``tilt_rad`` of pointing down."""
    spec, trajectory = get_robot(robot), arm_work_cycle(robot).trajectory
    t = np.arange(0.0, 2.0 * trajectory.cycle_duration, 0.01)
    R, _ = flange_kinematics(robot).frame_pose(trajectory(t)[0], spec.flange_frame, spec.base_frame)
    level = np.arccos(np.clip(-R[:, 2, 2], -1.0, 1.0)) < tilt_rad
    edges = np.flatnonzero(np.diff(np.concatenate([[0], level.astype(int), [0]])))
    return float(np.max(edges[1::2] - edges[::2])) * 0.01


@pytest.mark.parametrize("robot", ROBOT_NAMES)
def test_every_arm_carries_its_parts_alike(robot):
    """Every built-in arm's work cycle carries its parts as far and tilts its wrist as often as the Panda's.

    The cycle turns the base less on a longer arm (the flange at most STATION_ARC_M along its arc from home
    to the pick and the place): at the 0.6 rad of the shorter arms the UR10e carried them 52 cm each way under
    the TCP speed cap, a 24 s cycle whose wrist stayed level for 9.9 s, nearly the F/T offsets' whole window,
    so the offsets it kept drifted unseen (the hammer's mass 11 % low through the whole pipeline)."""
    spec, trajectory = get_robot(robot), arm_work_cycle(robot).trajectory
    assert trajectory.cycle_duration <= 1.15 * arm_work_cycle("panda").trajectory.cycle_duration
    assert _longest_level_stretch_s(robot) <= min(1.15 * _longest_level_stretch_s("panda"),
                                                   0.7 * Settings().offset_window_s)
    _, p = flange_kinematics(robot).frame_pose(trajectory.waypoints, spec.flange_frame, spec.base_frame)
    radius = np.hypot(p[0, 0], p[0, 1])
    for station in (p[2], p[-2]):  # above the pick, above the place
        turn = np.arctan2(station[1], station[0]) - np.arctan2(p[0, 1], p[0, 0])
        assert radius * abs(np.angle(np.exp(1j * turn))) <= STATION_ARC_M + 1e-9
    if radius * 0.6 <= STATION_ARC_M:  # the shorter arms' cycles are what they always were
        plain = PickAndPlace(spec, dwell=1.0, carry_tilt=0.6)
        np.testing.assert_array_equal(trajectory.waypoints, plain.waypoints)
        assert trajectory.base_swing == 0.6


@pytest.fixture(scope="module")
def run(cycle):
    return simulate(robot="panda", payload=cycle.first, trajectory=cycle.trajectory, duration=cycle.duration,
                    noise="moderate", seed=0, schedule=cycle.schedule, imu=False)


def test_the_engine_holds_what_the_schedule_says(run, cycle):
    """Outside the contacts MuJoCo's F/T reading is the rigid-body wrench of the payload held at
    that instant (to round-off); inside a contact it differs by the contact force."""
    kin = SensorKinematics(run.urdf, run.sensor_frame, run.joint_names)
    m = kin.compute(run.true_q, run.true_dq, run.true_ddq)
    s = SensorSamples(run.joint_t, m.lin_acc_in_sensor, m.ang_vel_in_sensor, m.ang_acc_in_sensor,
                      m.gravity_in_sensor, run.true_wrench_in_sensor)
    predicted = np.einsum("nij,nj->ni", samples_regressor(s), run.phi_at(run.joint_t))
    error = np.abs(predicted - run.true_wrench_in_sensor)
    touched = run.in_contact(run.joint_t)
    # three contacts, and the table under each grasp and release but the third part's set-down (7 transfers)
    assert len(run.truth_change_t) == 2 * 4 and len(run.contact_spans) == 3 + 7
    assert len(cycle.schedule.contacts) == 10 and len(cycle.contacts) == 3
    assert error[~touched].max() < 1e-6
    # every contact sample carries its force: the contacts' forces, each at its strength then (a table's fades)
    t = run.joint_t
    force = np.zeros((len(t), 3))
    for c in cycle.schedule.contacts:
        on = c.active(t)
        force[on] += c.strength(t[on])[:, None] * np.asarray(c.force_in_world)[None, :]
    f_error = np.linalg.norm(predicted[:, :3] - run.true_wrench_in_sensor[:, :3], axis=1)
    np.testing.assert_allclose(f_error[touched], np.linalg.norm(force[touched], axis=1), atol=1e-3)
    assert run.phi_at(0.0)[0, 0] == 0.0 and run.final_payload_params.mass == 0.0  # empty at both ends


@pytest.mark.slow
def test_the_pipeline_follows_the_payload_through_the_cycle(run, cycle):
    """Every grasp and release flagged within 0.5 s; the push and the bump held out as contacts;
    the set-down flagged (as a change); mass within 2 % 1.5 s after each grasp of a payload of
    300 g or more, and within 15 g for the 68 g ruler."""
    stream = stream_for_run(run, estimator="wls")
    tracker = stream.estimator
    assert isinstance(tracker, PayloadTracker)
    history = []
    play(stream, recording_from_run(run), on_estimate=lambda o: history.append((o.t, o.estimate.mass)))
    t, mass = np.array(history).T
    changes = [e for e in tracker.events if e.kind == CHANGE]
    contacts = [e for e in tracker.events if e.kind == CONTACT]
    # each grasp and release is flagged within 0.5 s of the end of its transfer (the table's support going)
    for begin, end in zip(cycle.transfer_starts, cycle.transfer_ends):
        hit = [e for e in changes if begin - 0.05 <= e.t_start <= end + 0.5]
        assert hit and hit[0].t_decided - end <= 0.5, (begin, end, changes)
    push, bump, set_down = cycle.contacts
    for c in (push, bump):
        assert any(c.t_start - 0.05 <= e.t_start <= c.t_end for e in contacts), (c, contacts)
        assert not any(c.t_start - 0.05 <= e.t_start <= c.t_end + 0.3 for e in changes)
    assert any(set_down.t_start - 0.05 <= e.t_start <= set_down.t_end for e in changes)
    false = [e for e in changes if not any(b - 0.5 < e.t_start < f + 0.5
                                           for b, f in zip(cycle.transfer_starts, cycle.transfer_ends))
             and not (set_down.t_start - 0.05 <= e.t_start <= set_down.t_end)]
    assert not false
    for switch in cycle.transfer_ends:  # from the end of each transfer: the new payload alone
        truth = run.phi_at(switch + 0.01)[0, 0]
        if truth == 0.0:
            continue
        m = mass[np.searchsorted(t, switch + 1.5)]
        assert abs(m - truth) <= max(0.02 * truth, 0.015), (switch, m, truth)
