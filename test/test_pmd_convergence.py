"""PMD weights the data by their measured noise: it converges to the truth, and its mass stays with least squares'.

Weights read from the residuals of PMD's own fit hold the misfit its prior causes, so the prior kept
that misfit however much data came (noise-free, the object's own cloud: 13-23 % inertia error where
least squares is exact). Weighted by the measured noise, the data term grows with every sample while the
prior stays, and its pull fades.
"""

from __future__ import annotations

import numpy as np
import pytest

from payload_estimator.core.estimators import ESTIMATORS, make_estimator
from payload_estimator.core.estimators.rating import shape_misfit
from payload_estimator.core.metrics import paper_errors
from payload_estimator.core.noise import get_noise
from payload_estimator.core.shapes import sample_parts, sample_points
from payload_estimator.sim.workshop import get_tool
from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist


def _motion(tool, speed=1.5, duration=10.0, noise=None, seed=0):
    samples, _ = simulate_wrist(tool.params, WristTrajectory(mean_ang_vel=speed), duration=duration, rate_hz=100.0,
                                noise=None if noise is None else get_noise(noise), rng=np.random.default_rng(seed))
    return samples


def _one_material(sampled):
    return sampled._replace(part=np.zeros_like(sampled.part), own_inertia=np.zeros_like(sampled.own_inertia))


@pytest.mark.parametrize("name", ["ws_screwdriver", "ws_precision_driver", "ws_soldering_iron"])
@pytest.mark.parametrize("parts", [True, False], ids=["parts", "one material"])
def test_noise_free_own_cloud_reaches_the_truth_in_1000_samples(name, parts):
    """Tools where residual weights stalled at 6-23 % inertia error: within 1 % after 1000 samples."""
    tool = get_tool(name)
    sampled = sample_parts(tool.envelope)
    samples = _motion(tool)
    assert len(samples) == 1000
    est = ESTIMATORS["pmd"].create(sampled if parts else _one_material(sampled))
    est.update(samples)
    e = est.estimate()
    err = paper_errors(e.params, tool.params, tool.bbox_lengths)
    assert err.inertia < 1.0 and err.com < 0.05 and err.mass < 0.05, err
    assert e.physically_consistent


def test_the_weights_are_the_measured_noise_not_the_fit():
    """Moderate noise (Table II: forces 0.1 N, torques 0.005 N·m): the force channels are weighted by
    about the inverse force noise variance, whatever the prior does to the fit. A shape that cannot hold
    the payload (half size: residuals of its fit 10 % of the wrench) leaves the force weights as they
    are, and moves the torques' only through the smaller inertia the acceleration noise multiplies
    (within a factor of two; residual weights would follow the misfit, 10 % of the wrench)."""
    tool = get_tool("ws_claw_hammer")
    samples = _motion(tool, speed=0.6, noise="moderate")
    points = sample_points(tool.envelope)
    centre = 0.5 * (points.min(axis=0) + points.max(axis=0))
    weights = []
    for cloud in (points, centre + 0.5 * (points - centre)):
        est = ESTIMATORS["pmd"].create(cloud)
        est.update(samples)
        est.estimate()
        weights.append(est._weights.copy())
    force_var = 1.0 / weights[0][:3]
    assert np.all((force_var > 0.1**2) & (force_var < 4 * 0.1**2)), force_var
    np.testing.assert_allclose(weights[1][:3], weights[0][:3], rtol=1e-3)
    np.testing.assert_allclose(weights[1][3:], weights[0][3:], rtol=1.0)


@pytest.mark.parametrize("name", ["ws_precision_driver", "ws_screwdriver", "ws_file", "ws_claw_hammer"])
def test_mass_is_within_its_std_of_least_squares_or_better(name):
    """Light and heavy tools at Table II moderate and high noise, object's own cloud with parts."""
    tool = get_tool(name)
    for noise in ("moderate", "high"):
        for seed in range(2):
            samples = _motion(tool, speed=0.6, noise=noise, seed=seed)
            est = ESTIMATORS["pmd"].create(sample_parts(tool.envelope))
            est.update(samples)
            e = est.estimate()
            ref = make_estimator("wls")
            ref.update(samples)
            wls_err = abs(ref.estimate().mass - tool.mass)
            assert abs(e.mass - tool.mass) <= wls_err + e.mass_std, (noise, seed)


def test_a_shape_that_cannot_hold_the_payload_says_which_way():
    """The claw hammer's envelope shrunk to half its size about its centre: the data put the COM
    towards the head (+z) beyond it."""
    tool = get_tool("ws_claw_hammer")
    samples = _motion(tool, speed=0.6, noise="moderate")
    points = sample_points(tool.envelope)
    centre = 0.5 * (points.min(axis=0) + points.max(axis=0))
    est = ESTIMATORS["pmd"].create(centre + 0.5 * (points - centre))
    est.update(samples)
    fit = est.estimate().model_fit
    assert fit.checked and not fit.good
    assert "further along +z than the shape can (too small towards +z, or shifted towards -z)" in fit.cause


def test_shape_misfit_names_axes_and_mass():
    m = 0.5
    ls = np.r_[m, m * np.array([0.0, 0.0, 0.15]), np.zeros(6)]
    fit = np.r_[m * 1.1, m * 1.1 * np.array([0.0, -0.004, 0.12]), np.zeros(6)]
    cov = np.eye(10) * 1e-8
    said = shape_misfit(fit, ls, cov)
    assert said.startswith("the data put the centre of mass 30 mm further along +z")
    assert "4 mm further along +y" in said and "along +x" not in said
    assert "10.0 % more mass than the data show (0.500 kg)" in said
    assert shape_misfit(ls, ls, cov) == ""


def _needle_file():
    """A 20 g needle file along +z on the sensor face: a 13 mm plastic handle, a 2 mm steel blade and tang."""
    from payload_estimator.core.shapes import Box, Cylinder, Union
    from payload_estimator.sim.payloads import Part, Payload

    shapes = ((Cylinder(radius=0.0065, height=0.06, xyz=(0.0, 0.0, 0.03)), 1100.0),
              (Box(size=(0.009, 0.002, 0.07), xyz=(0.0, 0.0, 0.095)), 7850.0),
              (Box(size=(0.004, 0.002, 0.015), xyz=(0.0, 0.0, 0.0675)), 7850.0))
    parts = tuple(Part(shape, density * shape.volume) for shape, density in shapes)
    return Payload("needle_file", "needle file", parts, Union(parts=tuple(p.shape for p in parts)))


@pytest.mark.parametrize("speed", [1.5, 0.6], ids=["brisk", "slow"])
@pytest.mark.parametrize("parts", [True, False], ids=["parts", "one material"])
def test_noise_free_thin_light_object_reaches_the_truth_in_1000_samples(parts, speed):
    """A thin, light object (20 g, 13 mm wide, its long-axis moment 1 % of the others): within 1 % after
    1000 noise-free samples, with and without its parts. The QP's free unknowns once had an absolute
    curvature that, against the tiny normalised regulariser of noise-free data, shrank every part (brisk
    motion: 1.6 % inertia error, the long axis 9 % off); and on slower motion the gravity-only model's rows,
    exact only at rest, biased the rest (1.6 % as one material) until weighted by their own misfit."""
    tool = _needle_file()
    assert tool.mass < 0.021 and tool.params.inertia_com[2, 2] < 0.01 * tool.params.inertia_com[0, 0]
    samples = _motion(tool, speed=speed)
    assert len(samples) == 1000
    sampled = sample_parts(tool.envelope)
    est = ESTIMATORS["pmd"].create(sampled if parts else _one_material(sampled))
    est.update(samples)
    e = est.estimate()
    err = paper_errors(e.params, tool.params, tool.bbox_lengths)
    assert err.inertia < 1.0 and err.com < 0.05 and err.mass < 0.05, err
    # the long-axis moment (1 % of the others) is what slow motion shows least: 3.1 % off as one material
    # (2.0 % with the prior counted point by point, VOLUME_WEIGHTED_PRIOR, which leaves the finely sampled
    # blade freer), 1.3 % on brisk motion
    assert np.max(err.inertia_entries) < 3.5, err
    assert e.physically_consistent
