"""Honest estimates: uncertainty that matches the error, a model that knows when it is wrong, what is and
is not identified, and nothing unsafe handed over.

The data come from pinocchio's RNEA on Nadeau et al.'s wrist (not from our regressor), with Table II noise
in the wrench and in the measured accelerations (errors in variables).
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy.signal import butter, lfilter
from scipy.spatial.transform import Rotation

from payload_estimator.cli import main
from payload_estimator.core.convergence import ConvergenceCriteria, ConvergenceMonitor
from payload_estimator.core.estimators import METHODS, InsufficientData, PointMassDiscretization, make_estimator
from payload_estimator.core.noise import TABLE_II
from payload_estimator.core.results import FROM_PRIOR, IDENTIFIED, NOT_IDENTIFIED
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.shapes import sample_points
from payload_estimator.io.samples_file import write_samples
from payload_estimator.outputs.handover import check_handover
from payload_estimator.settings import Settings
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

PAYLOAD = get_payload("claw_hammer")
SEEDS = 40


def _with_wrench(s: SensorSamples, wrench: np.ndarray) -> SensorSamples:
    return SensorSamples(s.t, s.lin_acc_in_sensor, s.ang_vel_in_sensor, s.ang_acc_in_sensor, s.gravity_in_sensor,
                         wrench)


@pytest.fixture(scope="module")
def runs():
    """40 noise draws of 5 s of slow motion (mean |w| 1 rad/s) at 100 Hz, Table II moderate noise."""
    return [simulate_wrist(PAYLOAD.params, WristTrajectory(mean_ang_vel=1.0), duration=5.0, rate_hz=100.0,
                           noise=TABLE_II["moderate"], rng=np.random.default_rng(seed))[0] for seed in range(SEEDS)]


def _coverage(estimates, truth) -> tuple[np.ndarray, np.ndarray]:
    """Shares of |error| <= 1 and 2 reported std, for mass and each COM axis."""
    z = np.array([np.r_[e.mass - truth.mass, e.com - truth.com] / np.r_[e.mass_std, e.com_std] for e in estimates])
    return np.mean(np.abs(z) <= 1.0, axis=0), np.mean(np.abs(z) <= 2.0, axis=0)


@pytest.mark.parametrize("method", METHODS)
def test_reported_uncertainty_covers_the_error(runs, method):
    """Over 40 noise seeds, each estimator's ±1σ and ±2σ intervals of mass and COM hold the truth at least
    about as often as they claim: ±2σ at least 85 % (Gaussian: 95 %), ±1σ at least 45 % (68 %): not
    overconfident (40 draws put a binomial std of 7 % on each share); and not uselessly wide: the mean
    reported std at most 2.5 times the spread of the estimates."""
    points = sample_points(PAYLOAD.envelope)
    estimates = []
    for data in runs:
        est = make_estimator(method, points, **({"forgetting": 1.0} if method == "rls" else {}))
        est.update(data)
        estimates.append(est.estimate())
    one, two = _coverage(estimates, PAYLOAD.params)
    assert np.all(two >= 0.85), f"±2σ coverage {np.round(two, 2)}"
    assert np.all(one >= 0.45), f"±1σ coverage {np.round(one, 2)}"
    reported = np.mean([np.r_[e.mass_std, e.com_std] for e in estimates], axis=0)
    spread = np.std([np.r_[e.mass, e.com] for e in estimates], axis=0)
    assert np.all(reported <= 2.5 * spread), f"reported {reported} vs spread {spread}"


def test_filtered_samples_are_not_counted_as_independent(runs):
    """A 10 Hz low-pass on the wrench noise (the pipeline's filter) makes neighbouring samples repeat each
    other: the reported std must grow with it (about sqrt(4.8) here), and still cover the error."""
    b, a = butter(4, 10.0 / 50.0)
    rng = np.random.default_rng(5)
    _, exact = simulate_wrist(PAYLOAD.params, WristTrajectory(mean_ang_vel=1.0), duration=5.0, rate_hz=100.0)
    std = np.array([0.3, 0.3, 0.3, 0.015, 0.015, 0.015])
    estimates, white_std = [], []
    for _ in range(SEEDS):
        noise = lfilter(b, a, rng.normal(0.0, 1.0, (len(exact) + 200, 6)), axis=0)[200:]
        noise *= std / noise.std(axis=0)
        est = make_estimator("ols", kinematic_noise=None)
        est.update(_with_wrench(exact, exact.wrench_in_sensor + noise))
        estimates.append(est.estimate())
        white = make_estimator("ols", kinematic_noise=None)
        white.update(_with_wrench(exact, exact.wrench_in_sensor + rng.normal(0.0, 1.0, (len(exact), 6)) * std))
        white_std.append(white.estimate().mass_std)
    one, two = _coverage(estimates, PAYLOAD.params)
    assert np.all(two >= 0.85) and np.all(one >= 0.45), (one, two)
    assert np.mean([e.mass_std for e in estimates]) > 1.7 * np.mean(white_std)


def test_errors_in_variables_are_compensated(runs):
    """Table II noise in the angular acceleration attenuates least squares' inertia (towards zero); measuring
    that noise from the signals and compensating removes the bias, which the mean over 40 draws shows."""
    truth = PAYLOAD.params.phi[[4, 7, 9]]
    plain, compensated, stds = [], [], []
    for data in runs:
        a = make_estimator("ols", kinematic_noise=None)
        a.update(data)
        plain.append(a.estimate().phi[[4, 7, 9]])
        b = make_estimator("ols")
        b.update(data)
        e = b.estimate()
        compensated.append(e.phi[[4, 7, 9]])
        stds.append(e.phi_std[[4, 7, 9]])
    se = np.mean(stds, axis=0) / np.sqrt(SEEDS)  # standard error of the mean over the draws
    assert np.any(np.abs(np.mean(plain, axis=0) - truth) > 4 * se)  # biased
    assert np.all(np.abs(np.mean(compensated, axis=0) - truth) < 3 * se)  # not


def test_a_static_pose_identifies_mass_and_two_com_components_only():
    """Held still with gravity along the sensor's z axis: m g and m c x g show the mass and COM x, y only."""
    truth = PAYLOAD.params
    n = 400
    g = np.tile([0.0, 0.0, -9.81], (n, 1))
    wrench = np.c_[truth.mass * g, np.cross(truth.mass * truth.com, g)]
    wrench += np.random.default_rng(0).normal(0.0, 1.0, (n, 6)) * [0.1, 0.1, 0.1, 0.005, 0.005, 0.005]
    data = SensorSamples.at_rest(np.arange(n) * 0.01, g, wrench)
    ols = make_estimator("ols")
    ols.update(data)
    e = ols.estimate()
    assert e.identification.mass == IDENTIFIED
    assert e.identification.com == (IDENTIFIED, IDENTIFIED, NOT_IDENTIFIED)
    assert e.identification.inertia == NOT_IDENTIFIED
    out = e.to_dict()
    assert out["com"][2] is None and out["inertia_com"] is None  # said, not printed as 0
    assert out["com"][0] == pytest.approx(truth.com[0], abs=0.003)
    refusal = check_handover(e, inertia=False)
    assert not refusal and "COM z" in refusal.status
    pmd = make_estimator("pmd", sample_points(PAYLOAD.envelope))
    pmd.update(data)
    p = pmd.estimate()
    assert p.identification.com[2] == FROM_PRIOR and p.identification.inertia == FROM_PRIOR
    assert not check_handover(p, inertia=False)  # the prior may fill the inertia, never the COM


def test_fewer_equations_than_unknowns_is_an_error_not_an_estimate(tmp_path, capsys):
    one = SensorSamples.at_rest(np.zeros(1), [[0.0, 0.0, -9.81]], [[0.0, 0.0, -9.81, 0.0, 0.0, 0.0]])
    est = make_estimator("ols")
    est.update(one)
    with pytest.raises(InsufficientData, match="6 equations for 10 unknowns"):
        est.estimate()
    path = tmp_path / "one.csv"
    write_samples(path, one)
    assert main(["estimate", str(path), "--method", "ols"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "too few samples" in err[0]


def test_a_wrong_frame_is_reported_and_nothing_is_handed_over(runs, tmp_path, capsys):
    """The wrench in a frame turned 90° about z from the kinematics': least squares fits something, but its
    residual follows the motion: model fit poor, the cause named, no URDF, not converged."""
    data = simulate_wrist(PAYLOAD.params, WristTrajectory(mean_ang_vel=1.0), duration=10.0, rate_hz=100.0,
                          noise=TABLE_II["moderate"], rng=np.random.default_rng(1))[0]
    R = Rotation.from_euler("z", 90, degrees=True).as_matrix()
    turned = _with_wrench(data, np.c_[data.wrench_in_sensor[:, :3] @ R.T, data.wrench_in_sensor[:, 3:] @ R.T])
    for samples, good in ((data, True), (turned, False)):
        est = make_estimator("wls")
        est.update(samples)
        e = est.estimate()
        assert e.model_fit.checked and e.model_fit.good is good, e.model_fit
        monitor = ConvergenceMonitor(ConvergenceCriteria(inertia=False))
        for t in np.arange(0.0, 2.0, 0.1):
            monitor.update(t, e)
        assert monitor.converged is good, monitor.reason
    assert "wrong" in e.model_fit.cause and "frame" in e.model_fit.cause
    path = tmp_path / "turned.csv"
    write_samples(path, turned)
    assert main(["estimate", str(path), "--method", "wls", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model_fit"]["fit"] == "poor" and out["status"].startswith("refused: ") and out["forced"] is False
    assert main(["estimate", str(path), "--method", "wls"]) == 0
    text = capsys.readouterr().out
    assert "<inertial>" not in text and "does not fit" in text
    assert main(["estimate", str(path), "--method", "wls", "--force", "--json"]) == 0
    forced = json.loads(capsys.readouterr().out)
    assert forced["status"].startswith("forced: ") and forced["forced"] is True
    assert main(["estimate", str(path), "--method", "wls", "--force"]) == 0
    assert "<!-- FORCED: " in capsys.readouterr().out


def test_a_shape_too_small_is_reported(runs):
    """PMD's shape must hold the payload: half the claw hammer's envelope cannot, and the estimate says so
    (the constrained fit is far from the unconstrained one, in the data's own uncertainty)."""
    data = simulate_wrist(PAYLOAD.params, WristTrajectory(mean_ang_vel=1.0), duration=10.0, rate_hz=100.0,
                          noise=TABLE_II["moderate"], rng=np.random.default_rng(2))[0]
    points = sample_points(PAYLOAD.envelope)
    centre = 0.5 * (points.min(axis=0) + points.max(axis=0))
    for pts, good in ((points, True), (centre + 0.5 * (points - centre), False)):
        est = PointMassDiscretization(pts)
        est.update(data)
        fit = est.estimate().model_fit
        assert fit.checked and fit.good is good, fit
    assert "shape" in fit.cause


def test_converged_waits_for_every_quantity_handed_over(runs):
    """An estimate whose inertia the data do not determine never counts as converged when the inertia is
    handed over (a URDF, SetLoad); it may when only mass and COM are (SetTcpLoad)."""
    est = make_estimator("ols")
    est.update(runs[0])
    e = est.estimate()
    assert e.identification.mass_and_com and e.identification.inertia == NOT_IDENTIFIED
    with_inertia = ConvergenceMonitor(ConvergenceCriteria(com_std=0.02))  # 5 s of slow motion: COM z to ~1 cm
    without = ConvergenceMonitor(ConvergenceCriteria(com_std=0.02, inertia=False))
    for t in np.arange(0.0, 2.0, 0.1):
        with_inertia.update(t, e)
        without.update(t, e)
    assert without.converged and not with_inertia.converged
    assert "not identified from the data: inertia" in with_inertia.reason


def test_one_c1_default_everywhere(capsys):
    from payload_estimator.commands.demo import add_parser as demo_parser
    from payload_estimator.commands.estimate import add_parser as estimate_parser

    defaults = {Settings().c1, PointMassDiscretization.__init__.__kwdefaults__["c1"]}
    import argparse

    for add in (demo_parser, estimate_parser):
        sub = argparse.ArgumentParser().add_subparsers()
        parser = add(sub)
        # not given, --c1 leaves the settings' own default in place, and the help says which it is
        assert parser.get_default("c1") is None
        help_text = " ".join(parser.format_help().split())
        defaults.add(float(help_text.split("tanh(3 dynamism / c1), > 0 (default ")[1].split(")")[0]))
    assert defaults == {1.0}
