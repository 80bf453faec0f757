"""A camera's point cloud as the payload's shape mid-run: merged to a budget, applied without losing a sample.

Voxel downsampling (``core/point_clouds.py``): the budget kept, the mass, centre of mass and (with each point
mass's own spread) inertia of the uniform-density cloud kept exactly, parts never merged. PMD's points replaced
mid-run (``replace_points``): the next estimate is a fresh PMD's with the new points on the same samples, MuJoCo
Panda data. Inside a payload tracker (``core/payload_shapes.py``, sensor-level work cycles of ``sim.cycle``):
which payload a cloud belongs to. Through the stream (``set_payload_shape``): applied, refused, ignored, counted.
"""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.core.estimators import ESTIMATORS, PointMassDiscretization
from payload_estimator.core.estimators.pmd import point_mass_matrix
from payload_estimator.core.noise import get_noise
from payload_estimator.core.payload_shapes import PayloadShapes
from payload_estimator.core.point_clouds import MIN_CLOUD_POINTS, cloud_shape, voxel_downsample, voxel_plan
from payload_estimator.core.point_masses import SampledShape
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.shapes import Box, Cylinder, Union, sample_parts
from payload_estimator.core.tracking import PayloadTracker
from payload_estimator.errors import ShapeError
from payload_estimator.pipeline.build import build_estimator, build_stream
from payload_estimator.pipeline.playback import play
from payload_estimator.settings import Settings
from payload_estimator.sim.cycle import Segment, simulate_cycle
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import recording_from_run, settings_for_run, stream_for_run

HAMMER, DRILL = get_payload("claw_hammer"), get_payload("drill")
BOX = Box(size=(0.1, 0.1, 0.1), xyz=(0.0, 0.0, 0.05))
"""The preset's default shape: a 10 cm box on the flange."""


def _cloud(shape, points=20_000) -> SampledShape:
    """A dense cloud of ``shape``'s solids, about ``points`` of them (one part each; equal volumes within a part)."""
    return sample_parts(shape, density=points / shape.volume, max_points=2 * points)


def _uniform_phi(shape: SampledShape) -> np.ndarray:
    """phi of the shape's point masses at uniform density, total mass 1."""
    return point_mass_matrix(shape.points_in_sensor, shape.own_inertia) @ (shape.volume / shape.volume.sum())


# ------------------------------------------------------------------------------------------- downsampling
@pytest.mark.parametrize("budget", [10, 100, 300, 1000])
def test_the_budget_is_kept_and_the_uniform_body_is_the_full_clouds(budget):
    cloud = _cloud(HAMMER.envelope)
    merged = voxel_downsample(cloud, budget)
    n = len(merged.volume)
    assert n <= budget and n >= 0.6 * budget  # the budget, and most of it used
    plan = voxel_plan(cloud, budget)
    assert plan.sample_counts <= 8 and plan.full_counts <= 3 and plan.point_masses == n
    assert merged.volume.sum() == pytest.approx(cloud.volume.sum(), rel=1e-12)
    full, down = _uniform_phi(cloud), _uniform_phi(merged)
    np.testing.assert_allclose(down[1:4], full[1:4], rtol=0, atol=1e-14)  # the centre of mass, exactly
    np.testing.assert_allclose(down[4:], full[4:], rtol=0, atol=1e-12 * np.abs(full[4:]).max())  # the inertia too
    bare = point_mass_matrix(merged.points_in_sensor) @ (merged.volume / merged.volume.sum())
    assert np.abs(bare[4:] - full[4:]).max() > 1e-6 * np.abs(full[4:]).max()  # without each one's spread: not


def test_points_of_two_parts_are_never_merged():
    rng = np.random.default_rng(3)
    points = rng.uniform(-0.05, 0.05, size=(30_000, 3))
    part = rng.integers(0, 2, size=len(points)) * 7  # two materials mixed in every voxel; any integer labels
    volume = rng.uniform(0.5, 2.0, size=len(points))
    merged = voxel_downsample(cloud_shape(points, part, volume), 200)
    assert len(merged.volume) <= 200 and set(np.unique(merged.part)) == {0, 1}
    for label, raw in ((0, 0), (1, 7)):
        mine, theirs = merged.part == label, part == raw
        assert merged.volume[mine].sum() == pytest.approx(volume[theirs].sum(), rel=1e-12)
        centroid = (merged.volume[mine] @ merged.points_in_sensor[mine]) / merged.volume[mine].sum()
        np.testing.assert_allclose(centroid, (volume[theirs] @ points[theirs]) / volume[theirs].sum(), atol=1e-15)
    # each label's point masses are that label's points alone: the same as merging them apart on one grid
    assert np.sum(merged.part == 0) >= 0.3 * len(merged.volume) and np.sum(merged.part == 1) >= 0.3 * len(merged.volume)


def test_downsampling_is_deterministic_and_keeps_a_small_cloud_as_it_is():
    cloud = _cloud(DRILL.envelope)
    a, b = voxel_downsample(cloud, 300), voxel_downsample(cloud, 300)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    small = _cloud(DRILL.envelope, points=100)
    assert len(small.volume) <= 300
    assert voxel_downsample(small, 300) is small


def test_a_surface_cloud_and_a_thin_blade_are_merged_within_the_budget():
    rng = np.random.default_rng(0)
    direction = rng.normal(size=(50_000, 3))
    sphere = 0.05 * direction / np.linalg.norm(direction, axis=1, keepdims=True)  # a camera's shell, 2-D
    blade = Union(parts=(Box(size=(0.2, 0.0006, 0.03), xyz=(0.1, 0, 0)), Cylinder(radius=0.01, height=0.1)))
    for cloud, budget in ((cloud_shape(sphere), 300), (_cloud(blade), 100), (_cloud(blade), 3000)):
        merged = voxel_downsample(cloud, budget)
        assert 0.6 * budget <= len(merged.volume) <= budget
        np.testing.assert_allclose(_uniform_phi(merged), _uniform_phi(cloud), atol=1e-12)


def test_a_stray_point_far_off_does_not_coarsen_the_rest():
    """A depth camera's stray point 70 m away (within the 100 m a cloud may reach): its own point mass, and the
    rest merged as finely as the budget allows, the centroid kept."""
    rng = np.random.default_rng(1)
    points = np.vstack([rng.uniform(-0.05, 0.05, (50_000, 3)), [[50.0, 40.0, -30.0]]])
    merged = voxel_downsample(cloud_shape(points), 100)
    assert 60 <= len(merged.volume) <= 100 and voxel_plan(cloud_shape(points), 100).sample_counts <= 4
    np.testing.assert_allclose(merged.volume @ merged.points_in_sensor / merged.volume.sum(), points.mean(axis=0),
                               atol=1e-12)


@pytest.mark.parametrize("points, part, volume, says", [
    (np.zeros((0, 3)), None, None, "0 point"),
    (np.array([[0.0, 0.0, 0.1]]), None, None, "1 point"),
    (np.array([[0.0, 0.0, 0.1], [0.1, 0.0, 0.1], [0.0, np.nan, 0.1], [0.0, 0.1, 0.2]]), None, None, "not finite"),
    (np.array([[0.0, 0.0, 0.1], [0.1, 0.0, 0.1], [0.0, 0.1, 0.1], [0.0, 0.0, 500.0]]), None, None, "metres"),
    (np.array([[0.0, 0.0, 0.0], [0.1, 0.0, 0.0], [0.0, 0.1, 0.0], [0.1, 0.1, 0.0]]), None, None, "one plane"),
    (np.ones((5, 2)), None, None, "(n, 3)"),
    (np.eye(3).tolist() + [[0.0, 0.0, 0.0]], [0, 1, 1], None, "part labels"),
    (np.eye(3).tolist() + [[0.0, 0.0, 0.0]], [0, 1, 1, 0.5], None, "integers"),
    (np.eye(3).tolist() + [[0.0, 0.0, 0.0]], None, [1.0, 1.0, 0.0, 1.0], "positive"),
    ("not a cloud", None, None, "(n, 3)"),
])
def test_a_cloud_that_cannot_be_used_is_one_clear_line(points, part, volume, says):
    with pytest.raises(ShapeError) as info:
        cloud_shape(points, part, volume)
    message = str(info.value)
    assert says in message and "\n" not in message
    assert MIN_CLOUD_POINTS == 4


def test_a_budget_below_the_parts_is_refused():
    with pytest.raises(ShapeError, match="parts"):
        voxel_downsample(_cloud(DRILL.envelope), 2)
    with pytest.raises(ShapeError, match="positive integer"):
        voxel_downsample(_cloud(DRILL.envelope), 0)


# --------------------------------------------------------------- new points, same statistics (MuJoCo Panda)
@pytest.fixture(scope="module")
def panda_samples() -> SensorSamples:
    """The sensor samples the pipeline hands the estimator on a MuJoCo Panda holding the claw hammer."""
    run = simulate(robot="panda", payload="claw_hammer", trajectory="wrist", duration=6.0, noise="moderate", seed=4)
    stream = stream_for_run(run, HAMMER.envelope, estimator="wls", track_payload=False, estimate_bias=False)
    batches: list[SensorSamples] = []
    update = stream.estimator.update

    def keep(samples: SensorSamples) -> None:
        batches.append(samples)
        update(samples)

    stream.estimator.update = keep  # type: ignore[method-assign]
    play(stream, recording_from_run(run))
    return SensorSamples.concatenate(batches)


@pytest.mark.parametrize("method", ["pmd", "pmd-divide"])
@pytest.mark.parametrize("bias", [False, True])
def test_new_points_re_solve_on_the_same_samples_as_a_fresh_build(panda_samples, method, bias):
    """The next estimate after ``replace_points`` is a PMD's built with the new points and fed the same samples."""
    half = len(panda_samples) // 2
    first, second = panda_samples.select(slice(0, half)), panda_samples.select(slice(half, None))
    box, cloud = sample_parts(BOX), voxel_downsample(_cloud(HAMMER.envelope), 300)
    moved = voxel_downsample(_cloud(HAMMER.envelope)._replace(
        points_in_sensor=_cloud(HAMMER.envelope).points_in_sensor + 0.002), 200)  # the next camera frame
    running = ESTIMATORS[method].create(box, bias=bias, offset_window_s=10.0)
    running.update(first)
    running.estimate()
    running.update(second)
    before = running.estimate()
    for shape in (cloud, moved):
        running.replace_points(shape)
        assert running.samples_used == len(panda_samples)
        fresh = ESTIMATORS[method].create(shape, bias=bias, offset_window_s=10.0)
        fresh.update(first)
        fresh.update(second)
        mine, theirs = running.estimate(), fresh.estimate()
        np.testing.assert_allclose(mine.params.phi, theirs.params.phi, rtol=1e-9, atol=1e-12)
        np.testing.assert_allclose(mine.covariance, theirs.covariance, rtol=1e-7, atol=1e-15)
        assert mine.model_fit.label == theirs.model_fit.label and mine.samples_used == theirs.samples_used
    # and the hammer's own cloud is the better prior for its inertia than the box was
    truth = HAMMER.params.inertia_com
    assert (np.abs(mine.params.inertia_com - truth).max() < np.abs(before.params.inertia_com - truth).max())


def test_bad_points_leave_the_estimator_as_it_was(panda_samples):
    pmd = ESTIMATORS["pmd"].create(sample_parts(BOX))
    pmd.update(panda_samples)
    before = pmd.estimate()
    bad = SampledShape(np.full((5, 3), np.nan), np.zeros(5, dtype=int), np.ones(5), np.zeros((5, 6)))
    with pytest.raises(ValueError):
        pmd.replace_points(bad)
    assert pmd.n_points == len(sample_parts(BOX).volume)
    np.testing.assert_allclose(pmd.estimate().params.phi, before.params.phi, rtol=1e-12)


# ----------------------------------------------------------------------- which payload a cloud belongs to
@pytest.fixture(scope="module")
def hammer_then_drill() -> SensorSamples:
    """6 s of the claw hammer, then 6 s of the drill (a change at t = 6 s), sensor level, moderate noise."""
    run = simulate_cycle((Segment(HAMMER.params, 6.0, "hammer"), Segment(DRILL.params, 6.0, "drill")), (),
                         noise=get_noise("moderate"), ft_bias=np.array([0.5, -0.3, 0.2, 0.01, 0.02, -0.01]),
                         rng=np.random.default_rng(0))
    return run.samples


def _feed(tracker, samples, start, until):
    """Feed the samples from ``start`` to ``until`` (s) in 0.1 s batches."""
    first, stop = np.searchsorted(samples.t, [start, until])
    for k in range(int(first), int(stop), 10):
        tracker.update(samples.select(slice(k, min(k + 10, int(stop)))))


@pytest.mark.parametrize("method", ["pmd", "pmd-divide"])
def test_a_cloud_belongs_to_the_payload_held_when_it_was_captured(hammer_then_drill, method):
    tracker = build_estimator(Settings(estimator=method), BOX)
    assert isinstance(tracker, PayloadTracker)
    shapes = PayloadShapes(tracker, 300)
    configured = tracker.estimator.n_points
    hammer, drill = _cloud(HAMMER.envelope), _cloud(DRILL.envelope)
    _feed(tracker, hammer_then_drill, 0.0, 3.0)
    update = shapes.set(hammer, 2.9)
    assert update.applied and update.point_masses <= 300 and tracker.estimator.n_points == update.point_masses
    hammer_estimate = tracker.estimate()
    assert abs(hammer_estimate.params.mass - HAMMER.mass) < 0.02 * HAMMER.mass
    # the drill is grasped at 6 s; its cloud, captured at 6.2 s, arrives before the change is decided
    _feed(tracker, hammer_then_drill, 3.0, 6.2)
    assert tracker.counts.changes == 0
    assert shapes.set(drill, 6.2).applied  # (to the hammer's estimator, which the change will discard)
    _feed(tracker, hammer_then_drill, 6.2, 9.0)
    assert tracker.counts.changes == 1 and tracker.state.change_t <= 6.2
    shapes.follow()
    drill_points = len(voxel_downsample(drill, 300).volume)
    assert tracker.estimator.n_points == drill_points
    assert shapes.diagnostics()["shape_source"] == "cloud at t = 6.200 s"
    # a cloud of the hammer captured before the change, delivered late: refused, the drill's kept
    late = shapes.set(hammer, 5.5)
    assert not late.applied and "before the payload change" in late.reason
    assert tracker.estimator.n_points == drill_points
    drill_estimate = tracker.estimate()
    assert abs(drill_estimate.params.mass - DRILL.mass) < 0.03 * DRILL.mass
    counts = shapes.diagnostics()
    assert (counts["clouds_applied"], counts["clouds_refused"], counts["clouds_ignored"]) == (2, 1, 0)
    tracker.reset()
    shapes.reset()
    assert tracker.estimator.n_points == configured and shapes.diagnostics()["shape_source"] == "configured"


def test_a_new_payload_uses_the_configured_shape_until_its_cloud_arrives(hammer_then_drill):
    tracker = build_estimator(Settings(estimator="pmd"), BOX)
    shapes = PayloadShapes(tracker, 300)
    configured = tracker.estimator.n_points
    _feed(tracker, hammer_then_drill, 0.0, 3.0)
    assert shapes.set(_cloud(HAMMER.envelope), 2.0).applied
    _feed(tracker, hammer_then_drill, 3.0, 9.0)
    assert tracker.counts.changes == 1
    shapes.follow()
    assert tracker.estimator.n_points == configured and shapes.diagnostics()["shape_source"] == "configured"
    for estimator in tracker.payload_estimators():
        assert estimator.n_points == configured


def test_an_estimator_without_point_masses_ignores_a_cloud_and_says_so(hammer_then_drill):
    tracker = build_estimator(Settings(estimator="wls"))
    shapes = PayloadShapes(tracker, 300)
    _feed(tracker, hammer_then_drill, 0.0, 2.0)
    update = shapes.set(_cloud(HAMMER.envelope), 1.0)
    assert not update.applied and "uses no point masses" in update.reason
    assert shapes.diagnostics()["clouds_ignored"] == 1 and shapes.diagnostics()["clouds_applied"] == 0


# ----------------------------------------------------------------------------------------- the stream
@pytest.fixture(scope="module")
def panda_run():
    return simulate(robot="panda", payload="claw_hammer", trajectory="wrist", duration=5.0, noise="moderate", seed=1)


@pytest.mark.parametrize("track", [True, False])
def test_the_stream_takes_a_cloud_mid_run_and_refuses_a_bad_one(panda_run, track):
    settings = settings_for_run(panda_run, estimator="pmd", track_payload=track, cloud_max_points=250)
    stream = build_stream(settings, panda_run.urdf, shape=BOX)
    play(stream, recording_from_run(panda_run))
    held = stream.estimator.samples_used
    boxed = stream.update_estimate()
    assert boxed is not None
    update = stream.set_payload_shape(_cloud(HAMMER.envelope), float(panda_run.joint_t[-1]))
    assert update.applied and update.point_masses <= 250
    after = stream.update_estimate()  # no new sample, yet a new estimate: the shape changed
    assert after is not None and after is not boxed and after.estimate.samples_used == held
    assert after.estimate.extras["points_in_sensor"].shape == (update.point_masses, 3)
    diag = stream.diagnostics()
    assert diag["shape_source"].startswith("cloud at t = ") and diag["clouds_applied"] == 1
    assert diag["shape_point_masses"] == update.point_masses and diag["shape_cloud_points"] == update.cloud_points
    # bad input: refused, said why, the shape and the estimate kept
    for bad in (np.full((10, 3), np.nan), np.zeros((0, 3)), np.array([[0.0, 0.0, 0.1]]), np.full((4, 3), 1e300)):
        refused = stream.set_payload_shape(bad, float(panda_run.joint_t[-1]))
        assert not refused.applied and refused.reason
    assert stream.update_estimate() is after
    diag = stream.diagnostics()
    assert diag["clouds_refused"] == 4 and diag["cloud_refusal"] and diag["shape_point_masses"] == update.point_masses
    assert not stream.set_payload_shape(_cloud(HAMMER.envelope), float("nan")).applied
    stream.reset()
    assert stream.diagnostics()["shape_source"] == "configured"
    estimators = stream.estimator.payload_estimators() if track else [stream.estimator]
    assert all(isinstance(e, PointMassDiscretization) and e.n_points == len(sample_parts(BOX).volume)
               for e in estimators)


def test_a_points_file_with_more_points_than_the_budget_is_merged(tmp_path):
    cloud = _cloud(HAMMER.envelope)
    path = tmp_path / "hammer.npy"
    np.save(path, np.column_stack([cloud.points_in_sensor, cloud.part]))
    estimator = build_estimator(Settings(estimator="pmd", track_payload=False, payload_shape=f"points:{path}",
                                         cloud_max_points=120))
    assert isinstance(estimator, PointMassDiscretization) and 60 <= estimator.n_points <= 120
