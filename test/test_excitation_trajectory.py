"""Trajectories through points and samples, braking to rest, and trajectory files."""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.excitation.trajectory import (
    MAX_CSV_STEP_S,
    JointTrajectory,
    PointTrajectory,
    SampledTrajectory,
    braking_trajectory,
    from_positions,
    read_trajectory_csv,
    sample_points,
    write_trajectory_csv,
)

NAMES = ("j1", "j2", "j3")


def _points(K: int = 6, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    t = np.cumsum(rng.uniform(0.2, 0.6, K))
    q = rng.uniform(-1.0, 1.0, (K, 3))
    dq = rng.uniform(-0.5, 0.5, (K, 3))
    ddq = rng.uniform(-2.0, 2.0, (K, 3))
    dq[[0, -1]] = 0.0
    ddq[[0, -1]] = 0.0
    return t, q, dq, ddq


def _jumps(traj: JointTrajectory, knots: np.ndarray, eps: float = 1e-7) -> np.ndarray:
    """(3,) largest jump of q, dq, ddq across the knots (values just before minus just after)."""
    before = traj(knots - eps)
    after = traj(knots + eps)
    return np.array([np.max(np.abs(b - a)) for b, a in zip(before, after)])


def _numeric_derivative_error(traj: JointTrajectory, t: np.ndarray, h: float = 1e-5) -> tuple[float, float]:
    q_p, dq_p, _ = traj(t + h)
    q_m, dq_m, _ = traj(t - h)
    _, dq, ddq = traj(t)
    return (float(np.max(np.abs((q_p - q_m) / (2 * h) - dq))),
            float(np.max(np.abs((dq_p - dq_m) / (2 * h) - ddq))))


@pytest.mark.parametrize("given", ["q", "q_dq", "q_dq_ddq"])
def test_point_trajectory_passes_through_the_points_and_is_continuous(given):
    t, q, dq, ddq = _points()
    traj = PointTrajectory(t, q, dq if given != "q" else None, ddq if given == "q_dq_ddq" else None,
                           joint_names=NAMES)
    assert isinstance(traj, JointTrajectory)
    assert traj.duration == pytest.approx(t[-1])
    q_at, dq_at, ddq_at = traj(t)
    np.testing.assert_allclose(q_at, q, atol=1e-12)
    if given != "q":
        np.testing.assert_allclose(dq_at, dq, atol=1e-12)
    if given == "q_dq_ddq":
        np.testing.assert_allclose(ddq_at, ddq, atol=1e-9)
    # continuous q, dq, ddq at every point, including the ends where the rest holds begin
    jumps = _jumps(traj, t)
    assert jumps[0] < 1e-5 and jumps[1] < 1e-4 and jumps[2] < 1e-2, jumps
    # dq and ddq are the derivatives of q and dq
    grid = np.linspace(t[0] + 1e-3, t[-1] - 1e-3, 400)
    err_dq, err_ddq = _numeric_derivative_error(traj, grid)
    assert err_dq < 1e-5 and err_ddq < 1e-3


def test_point_trajectory_holds_the_end_points_at_rest():
    t, q, dq, ddq = _points()
    traj = PointTrajectory(t, q, dq, ddq)
    qb, dqb, ddqb = traj(np.array([-1.0, 0.0, t[0] - 1e-3]))
    qa, dqa, ddqa = traj(np.array([t[-1] + 1e-3, t[-1] + 5.0]))
    np.testing.assert_array_equal(qb, np.tile(q[0], (3, 1)))
    np.testing.assert_array_equal(qa, np.tile(q[-1], (2, 1)))
    assert not np.any(dqb) and not np.any(ddqb) and not np.any(dqa) and not np.any(ddqa)


def test_quintic_segment_between_two_rest_points_is_the_minimum_jerk_blend():
    traj = PointTrajectory([0.0, 2.0], [[0.0], [1.0]], [[0.0], [0.0]], [[0.0], [0.0]])
    x = np.linspace(0.0, 1.0, 11)
    q, dq, _ = traj(2.0 * x)
    np.testing.assert_allclose(q[:, 0], 10 * x**3 - 15 * x**4 + 6 * x**5, atol=1e-12)
    assert dq[5, 0] == pytest.approx(1.875 / 2.0)  # peak speed of a minimum-jerk move: 1.875 d / T


def test_velocities_only_get_continuous_accelerations():
    t, q, dq, _ = _points(seed=3)
    traj = PointTrajectory(t, q, dq)
    assert _jumps(traj, t[1:-1])[2] < 1e-3
    assert np.max(np.abs(traj(t[[0, -1]])[2])) < 1e-9


@pytest.mark.parametrize("kwargs, message", [
    (dict(t=[0.0, 1.0, 1.0], q=np.zeros((3, 2))), "increase"),
    (dict(t=[0.0, np.nan], q=np.zeros((2, 2))), "non-finite time"),
    (dict(t=[0.0, 1.0], q=np.zeros((3, 2))), "shape"),
    (dict(t=[0.0, 1.0], q=[[0.0, 0.0], [np.inf, 0.0]]), "non-finite value at point 1"),
    (dict(t=[0.0, 1.0], q=np.zeros((2, 2)), dq=np.zeros((2, 3))), "dq must have shape"),
    (dict(t=[0.0, 1.0], q=np.zeros((2, 2)), ddq=np.zeros((2, 2))), "velocities"),
    (dict(t=[0.0, 1.0], q=np.zeros((2, 2)), joint_names=["a"]), "1 joint names for 2 joints"),
    (dict(t=[0.0, 1.0], q=np.zeros((2, 2)), joint_names=["a", "a"]), "distinct"),
])
def test_point_trajectory_refuses_bad_points(kwargs, message):
    with pytest.raises(ValueError, match=message):
        PointTrajectory(**kwargs)


def test_sampled_trajectory_is_a_rest_to_rest_spline_through_the_samples():
    t = np.arange(0.0, 2.0 + 1e-9, 0.01) + 3.0  # shifted to start at 0
    def curve(t: np.ndarray) -> np.ndarray:  # at rest, with zero acceleration, at 0 and 2 s
        return np.column_stack([(1 - np.cos(np.pi * t)) ** 2, 0.3 * np.sin(np.pi * t / 2) ** 4])

    q = curve(t - 3.0)
    traj = from_positions(t, q, ["a", "b"])
    assert isinstance(traj, SampledTrajectory) and isinstance(traj, JointTrajectory)
    assert traj.duration == pytest.approx(2.0) and traj.dt == pytest.approx(0.01)
    np.testing.assert_allclose(traj(t - 3.0)[0], q, atol=1e-12)
    _, dq, ddq = traj(np.array([0.0, 2.0]))
    assert np.max(np.abs(dq)) < 1e-9 and np.max(np.abs(ddq)) < 1e-7
    # between the samples it stays close to the smooth curve it samples
    tm = np.arange(0.005, 2.0, 0.01)
    np.testing.assert_allclose(traj(tm)[0], curve(tm), atol=1e-6)
    with pytest.raises(ValueError, match="not uniform"):
        from_positions([0.0, 0.01, 0.03], np.zeros((3, 2)), ["a", "b"])


def test_sample_points_includes_both_ends_with_a_uniform_step():
    traj = PointTrajectory([0.0, 1.0, 2.5], [[0.0], [0.5], [0.2]], [[0.0], [0.1], [0.0]], [[0.0], [0.0], [0.0]])
    t, q, dq, ddq = sample_points(traj, 0.004)
    assert t[0] == 0.0 and t[-1] == 2.5 and len(t) == 626
    np.testing.assert_allclose(np.diff(t), 0.004)
    assert q.shape == dq.shape == ddq.shape == (626, 1)
    t2, *_ = sample_points(traj, 0.3)  # 0.3 does not divide 2.5: 9 steps of 0.2777...
    assert len(t2) == 10 and np.max(np.diff(t2)) <= 0.3
    with pytest.raises(ValueError):
        sample_points(traj, 0.0)


def test_braking_stops_within_the_acceleration_limits():
    q0 = np.array([0.1, -0.4, 1.0])
    dq0 = np.array([0.8, -0.3, 0.0])
    ddq0 = np.array([-1.0, 2.0, 0.5])
    ddq_max = np.array([5.0, 5.0, 5.0])
    traj = braking_trajectory(q0, dq0, ddq0, ddq_max, dddq_max=np.full(3, 500.0))
    t = np.linspace(0.0, traj.duration, 2001)
    q, dq, ddq = traj(t)
    np.testing.assert_allclose(q[0], q0)
    np.testing.assert_allclose(dq[0], dq0)
    np.testing.assert_allclose(ddq[0], ddq0)
    assert np.all(np.abs(ddq) <= ddq_max * (1 + 1e-6))
    assert np.max(np.abs(dq[-1])) < 1e-12 and np.max(np.abs(ddq[-1])) < 1e-9
    # not needlessly slow: 5 % shorter would break a limit
    peak = np.max(np.abs(ddq) / ddq_max)
    assert peak > 0.9
    # continuous into the hold, and the hold is at the stopped pose
    qa, dqa, ddqa = traj(np.array([traj.duration + 1.0]))
    np.testing.assert_allclose(qa[0], q[-1], atol=1e-12)
    assert not np.any(dqa) and not np.any(ddqa)
    # consistent derivatives
    err_dq, err_ddq = _numeric_derivative_error(traj, t[1:-1:50], h=1e-6)
    assert err_dq < 1e-6 and err_ddq < 1e-3


def test_braking_from_rest_is_a_short_hold():
    traj = braking_trajectory(np.ones(2), np.zeros(2), np.zeros(2), np.ones(2))
    q, dq, _ = traj(np.linspace(0.0, 1.0, 5))
    assert traj.duration <= 0.011
    np.testing.assert_array_equal(q, np.ones((5, 2)))
    assert not np.any(dq)


# -------------------------------------------------------------------- files
def test_csv_round_trip(tmp_path):
    t = np.arange(0, 301) * 0.005
    q = np.column_stack([np.sin(t), np.cos(t), t**2 / 10])
    path = write_trajectory_csv(tmp_path / "traj.csv", NAMES, t, q)
    lines = path.read_text().splitlines()
    assert lines[0] == "t,j1,j2,j3" and len(lines) == 302
    names, t_read, q_read = read_trajectory_csv(path)
    assert names == NAMES
    np.testing.assert_allclose(t_read, t, atol=1e-6)
    np.testing.assert_allclose(q_read, q, atol=1e-9)
    traj = from_positions(t_read, q_read, names)
    assert traj.duration == pytest.approx(1.5)


def _write(tmp_path, text: str):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    return path


@pytest.mark.parametrize("text, message", [
    ("", "empty file"),
    ("0.0,1.0\n0.01,1.0\n", "header must be t,<joint names>"),
    ("time,a\n0,0\n0.01,0\n", "header must be t"),
    ("t,a,a\n0,0,0\n0.01,0,0\n", "distinct"),
    ("t,a\n0,0\n", "1 rows, a trajectory needs at least 2"),
    ("t,a\n0,0\n0.01,0,3\n", "row 3 has 3 fields"),
    ("t,a\n0,0\n0.01,abc\n", "row 3 has a field that is not a number"),
    ("t,a\n0,0\n0.01,nan\n", "row 3 has a value that is not finite"),
    ("t,a\n0,0\n0.01,0\n0.005,0\n", "time does not increase at row 4"),
    ("t,a\n0,0\n0.01,0\n0.03,0\n0.04,0\n", "not uniform"),
    ("t,a\n0,0\n0.02,0\n0.04,0\n", "above 0.01 s"),
])
def test_bad_files_get_a_one_line_reason(tmp_path, text, message):
    path = _write(tmp_path, text)
    with pytest.raises(ValueError, match=message) as info:
        read_trajectory_csv(path)
    assert "\n" not in str(info.value) and str(path) in str(info.value)


def test_writer_refuses_what_the_reader_would(tmp_path):
    with pytest.raises(ValueError, match="above"):
        write_trajectory_csv(tmp_path / "x.csv", ["a"], [0.0, 2 * MAX_CSV_STEP_S], [[0.0], [1.0]])
    with pytest.raises(ValueError, match="not uniform"):
        write_trajectory_csv(tmp_path / "x.csv", ["a"], [0.0, 0.001, 0.003], np.zeros((3, 1)))
    assert not (tmp_path / "x.csv").exists()
