"""The work-cycle generator: one continuous wrist motion, payloads switched at segment boundaries,
contacts added to the wrench by the documented convention, and the ground truth over time."""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.noise import get_noise
from payload_estimator.core.samples import STANDARD_GRAVITY
from payload_estimator.sim.cycle import Contact, Segment, default_cycle, plot_cycle, simulate_cycle
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.workshop import get_tool
from payload_estimator.sim.wrist import WristTrajectory, sensor_rotations, simulate_wrist

pytest.importorskip("pinocchio")

TRAJ = WristTrajectory(mean_ang_vel=0.6)
RATE = 50.0
EMPTY = InertialParameters.zero()
CUBE = get_payload("cube").params
DRILL = get_payload("drill").params
SEGMENTS = (Segment(EMPTY, 1.5, "empty"), Segment(CUBE, 2.0, "cube"), Segment(EMPTY, 1.0, "empty"),
            Segment(DRILL, 2.5, "drill"))
CONTACTS = (
    Contact(2.0, 0.6, [8.0, 0.0, 0.0], [0.02, 0.0, 0.05], "push"),
    Contact(3.9, 0.2, [0.0, 3.0, -4.0], [0.0, 0.0, 0.12], "bump"),
    Contact(5.0, 1.5, [0.0, 0.0, 10.0], [0.015, 0.0, 0.24], "set down"),
)


@pytest.fixture(scope="module")
def plain():
    return simulate_cycle(SEGMENTS, trajectory=TRAJ, rate_hz=RATE)


@pytest.fixture(scope="module")
def touched():
    return simulate_cycle(SEGMENTS, CONTACTS, trajectory=TRAJ, rate_hz=RATE)


def test_time_runs_on_without_gaps(plain):
    t = plain.exact.t
    assert len(t) == round(7.0 * RATE) and t[0] == 0.0
    np.testing.assert_allclose(np.diff(t), 1.0 / RATE, rtol=0, atol=1e-12)
    assert plain.samples is plain.exact  # neither noise nor offset
    # The motion is continuous across switches: no jump larger than anywhere else.
    w = plain.exact.ang_vel_in_sensor
    steps = np.linalg.norm(np.diff(w, axis=0), axis=1)
    at_switch = np.searchsorted(t, plain.t_changes) - 1
    assert steps[at_switch].max() <= 1.01 * steps.max()


def test_truth_switches_at_the_segment_boundaries(plain):
    np.testing.assert_allclose(plain.t_changes, [1.5, 3.5, 4.5])
    masses = [s.payload.mass for s in SEGMENTS]
    np.testing.assert_array_equal(plain.mass_at(plain.t_changes), masses[1:])  # the switch is instantaneous
    np.testing.assert_array_equal(plain.mass_at(plain.t_changes - 1e-3), masses[:-1])
    assert plain.truth_at(0.0) is EMPTY and plain.truth_at(2.0) is CUBE and plain.truth_at(6.9) is DRILL
    assert plain.truth_at(-1.0) is EMPTY and plain.truth_at(99.0) is DRILL  # clipped
    np.testing.assert_allclose(plain.com_at(np.array([2.0, 5.0]))[1], DRILL.com)
    assert np.isnan(plain.com_at(np.array([0.0]))).all()
    np.testing.assert_array_equal(plain.phi_at(np.array([2.0]))[0], CUBE.phi)


def test_each_segment_is_simulate_wrist_of_its_payload_on_the_one_trajectory(plain):
    t = plain.exact.t
    index = plain.segment_index(t)
    for i, seg in enumerate(SEGMENTS):
        rows = index == i
        assert rows.sum() == round(seg.duration * RATE)
        # The trajectory's time scale is fitted to the call's window: the cycle's window is [0, total).
        _, ref = simulate_wrist(seg.payload, TRAJ, duration=7.0, rate_hz=RATE, t_start=0.0)
        for name in ("t", "lin_acc_in_sensor", "ang_vel_in_sensor", "ang_acc_in_sensor", "gravity_in_sensor",
                     "wrench_in_sensor"):
            np.testing.assert_allclose(getattr(plain.exact, name)[rows], getattr(ref, name)[rows], rtol=0,
                                       atol=1e-9, err_msg=f"{seg.name}: {name}")


def test_a_downward_push_on_a_payload_at_rest_reads_like_extra_weight():
    m, F = CUBE.mass, 2.0
    still = WristTrajectory(mean_ang_vel=0.0)
    at_com = Contact(0.0, 1.0, [0.0, 0.0, -F], CUBE.com, "push down")
    run = simulate_cycle([Segment(CUBE, 1.0)], [at_com], trajectory=still, rate_hz=RATE)
    assert np.abs(run.exact.ang_vel_in_sensor).max() == 0.0 and np.abs(run.exact.lin_acc_in_sensor).max() == 0.0
    heavier = CUBE.scaled((m + F / STANDARD_GRAVITY) / m)  # the same body, F/g heavier
    _, ref = simulate_wrist(heavier, still, duration=1.0, rate_hz=RATE)
    np.testing.assert_allclose(run.exact.wrench_in_sensor, ref.wrench_in_sensor, rtol=0, atol=1e-9)
    # Anywhere else, the torque is the weight's plus p x (F along g).
    p = np.array([0.05, -0.02, 0.1])
    run = simulate_cycle([Segment(CUBE, 1.0)], [Contact(0.0, 1.0, [0.0, 0.0, -F], p)], trajectory=still,
                         rate_hz=RATE)
    g = run.exact.gravity_in_sensor
    f = (m + F / STANDARD_GRAVITY) * g
    tau = np.cross(CUBE.first_moment, g) + np.cross(p, F / STANDARD_GRAVITY * g)
    np.testing.assert_allclose(run.exact.wrench_in_sensor, np.hstack([f, tau]), rtol=0, atol=1e-9)


def test_a_contact_adds_exactly_its_wrench(plain, touched):
    t = touched.exact.t
    R = sensor_rotations(TRAJ, duration=7.0, rate_hz=RATE)
    np.testing.assert_allclose(np.einsum("nji,j->ni", R, [0, 0, -STANDARD_GRAVITY]), touched.exact.gravity_in_sensor,
                               rtol=0, atol=1e-12)
    expected = np.zeros((len(t), 6))
    for c in CONTACTS:
        on = (t >= c.t_start - 1e-9) & (t < c.t_start + c.duration - 1e-9)
        assert on.sum() == round(c.duration * RATE)
        f = np.einsum("nji,j->ni", R[on], c.force_in_world)
        expected[on] += np.hstack([f, np.cross(c.point_in_sensor, f)])
    diff = touched.exact.wrench_in_sensor - plain.exact.wrench_in_sensor
    np.testing.assert_allclose(diff, expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(touched.contact_wrench_in_sensor, expected, rtol=0, atol=1e-12)
    mask = touched.contact_mask(t)
    assert (np.abs(diff[~mask]) == 0.0).all() and (np.abs(diff[mask]).max(axis=1) > 0).all()
    assert touched.in_contact(2.0) and touched.in_contact(2.59) and not touched.in_contact(2.6)
    assert touched.in_contact(6.49) and not touched.in_contact(1.0)
    # The kinematics and the truth do not see the contacts.
    np.testing.assert_array_equal(touched.exact.ang_acc_in_sensor, plain.exact.ang_acc_in_sensor)
    assert touched.truth_at(5.5) is DRILL


def test_an_empty_gripper_reads_zero_wrench():
    run = simulate_cycle([Segment(EMPTY, 1.0, "empty")], trajectory=TRAJ, rate_hz=RATE)
    assert (run.exact.wrench_in_sensor == 0.0).all()
    _, alone = simulate_wrist(EMPTY, TRAJ, duration=1.0, rate_hz=RATE)
    assert (alone.wrench_in_sensor == 0.0).all()
    # Noise and offset act on the measured samples only.
    bias = np.array([1.0, -2.0, 3.0, 0.1, -0.2, 0.3])
    noise = get_noise("moderate")
    run = simulate_cycle([Segment(EMPTY, 4.0)], trajectory=TRAJ, rate_hz=RATE, noise=noise, ft_bias=bias,
                         rng=np.random.default_rng(1))
    assert (run.exact.wrench_in_sensor == 0.0).all()
    err = run.samples.wrench_in_sensor - bias
    np.testing.assert_allclose(err.std(axis=0), [noise.force] * 3 + [noise.torque] * 3, rtol=0.2)
    np.testing.assert_allclose(err.mean(axis=0), 0.0, atol=0.03)
    assert (run.samples.lin_acc_in_sensor - run.exact.lin_acc_in_sensor).std() == pytest.approx(
        noise.lin_acc, rel=0.2)


def test_segments_and_contacts_are_validated():
    with pytest.raises(ValueError):
        Segment(EMPTY, 0.0)
    with pytest.raises(ValueError):
        Contact(0.0, 1.0, [1.0, 0.0], [0.0, 0.0, 0.0])
    with pytest.raises(ValueError):
        simulate_cycle([])


def _fields(segments, contacts):
    return ([(s.name, s.duration, s.payload.phi.tolist()) for s in segments],
            [(c.name, c.t_start, c.duration, c.force_in_world.tolist(), c.point_in_sensor.tolist()) for c in contacts])


@pytest.mark.parametrize("seed", range(5))
def test_default_cycle_is_deterministic_and_realistic(seed):
    segments, contacts = default_cycle(seed)
    assert _fields(segments, contacts) == _fields(*default_cycle(seed))
    assert _fields(segments, contacts) != _fields(*default_cycle(seed + 100))
    assert 6 <= len(segments) <= 8 and 3 <= len(contacts) <= 4
    empty = [s.payload.mass == 0.0 for s in segments]
    assert empty[0] and all(a != b for a, b in zip(empty, empty[1:]))  # alternating, starting empty
    assert all(4.0 <= s.duration <= 10.0 for s in segments)
    masses = [s.payload.mass for s in segments if s.payload.mass > 0]
    assert min(masses) < 0.1 and max(masses) > 0.8 and len(set(masses)) == len(masses)
    assert get_tool("ws_ruler").mass in masses
    starts = np.concatenate([[0.0], np.cumsum([s.duration for s in segments])])

    def holder(c):  # the one segment a contact lies in
        i = int(np.searchsorted(starts, c.t_start, side="right")) - 1
        assert starts[i] <= c.t_start and c.t_start + c.duration <= starts[i + 1], c.name
        return segments[i]

    push, bump, table = contacts
    assert push.duration == 0.6 and np.linalg.norm(push.force_in_world) == pytest.approx(8.0)
    assert push.force_in_world[2] == 0.0 and holder(push).payload.mass > 0
    assert bump.duration <= 0.3 and holder(bump).payload.mass == 0.0
    held = holder(table).payload.mass
    assert 2.0 <= table.duration <= 3.0 and held > 0.8
    assert table.force_in_world[:2].tolist() == [0.0, 0.0]
    assert 0.5 * held * STANDARD_GRAVITY < table.force_in_world[2] < held * STANDARD_GRAVITY


def test_the_default_cycle_runs_and_plots(tmp_path):
    pytest.importorskip("matplotlib")
    run = simulate_cycle(*default_cycle(0), rate_hz=RATE, noise=get_noise("moderate"), rng=np.random.default_rng(0))
    t = run.samples.t
    assert len(run.t_changes) == len(run.segments) - 1 and 40.0 < run.duration < 60.0
    # While the drill stands on the table the sensor feels the share of its weight the table does not carry.
    table = run.contacts[2]
    on = run.contact_mask(t) & (run.mass_at(t) > 0.8)
    g = run.exact.gravity_in_sensor[on]
    apparent = np.einsum("ij,ij->i", run.exact.wrench_in_sensor[on, :3], g) / STANDARD_GRAVITY**2
    lift = table.force_in_world[2] / STANDARD_GRAVITY
    assert abs(np.median(apparent) - (DRILL.mass - lift)) < 0.05
    png = plot_cycle(run, tmp_path / "cycle.png", estimates=(t, run.mass_at(t)))
    assert png.stat().st_size > 1000
