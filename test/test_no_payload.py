"""An empty gripper reads as no payload: the mass identified as zero by its absolute uncertainty.

After a release the payload tracker keeps the F/T offsets it found while something was held; their
error cannot be told from a mass by the first seconds after the change, so the estimate's covariance
carries their uncertainty (and their drift since). A mass zero within that uncertainty, the
uncertainty below the weight one sample of force noise shows, is no payload: no COM, no inertia, no
poor model fit because of it, for least squares (WLS) and the point-mass estimator (PMD) alike.

The work cycle is MuJoCo's (``sim.arm_cycle``): the Panda picks and places four payloads, the F/T
sensor with Table II moderate noise, an offset and its drift; it ends with the gripper empty.
"""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from rich.console import Console

from payload_estimator.cli import main
from payload_estimator.core.estimators.rating import (
    NO_PAYLOAD_MASS_STD_KG,
    NO_PAYLOAD_SIGMAS,
    identify,
    no_payload,
)
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.results import IDENTIFIED, NOT_APPLICABLE, Estimate, Identification
from payload_estimator.outputs.handover import check_handover
from payload_estimator.outputs.report import estimate_table, quality_table


def test_no_payload_is_zero_within_an_absolute_uncertainty():
    """Zero within 3 std, and the std below the weight of 0.1 N (about 10 g): nothing is held."""
    assert NO_PAYLOAD_MASS_STD_KG == pytest.approx(0.1 / 9.80665)
    assert no_payload([-0.0068], 0.0035)
    assert not no_payload([-0.0068], 0.0005)  # 14 std from zero: something (or an offset error not counted)
    assert not no_payload([0.0], 0.03)  # too uncertain to tell a 50 g tool from nothing
    assert not no_payload([0.068], 0.002)  # a 68 g ruler is a payload
    assert not no_payload([0.0, -0.04], 0.005)  # PMD at its bound, but the data say -40 g: not "empty"
    assert no_payload([0.0, -0.01], 0.005)
    assert not no_payload([float("nan")], 0.001) and not no_payload([0.0], float("nan"))


def test_identify_rates_a_zero_mass_known_to_grams_as_no_payload():
    """From the data's information alone: 1 g of mass std and -2 g of mass is no payload (the relative
    criterion could never say so); the same data about a 0.5 kg payload identify its mass as before."""
    H = np.diag([1.0 / 0.001**2] + [1e6] * 9)  # information of phi: mass std 1 g
    empty = identify(H, InertialParameters(np.r_[-0.002, np.zeros(9)]), has_prior=False)
    assert empty.empty and empty.mass == IDENTIFIED and empty.com == (NOT_APPLICABLE,) * 3
    assert empty.inertia == NOT_APPLICABLE and empty.missing() == []
    held = identify(H, InertialParameters.from_mass_com_inertia(0.5, [0.0, 0.0, 0.05], np.eye(3) * 1e-3),
                    has_prior=False)
    assert not held.empty and held.mass == IDENTIFIED
    # PMD holds the mass at zero, its unconstrained fit 20 std below: not empty, and not identified
    bounded = identify(H, InertialParameters.zero(), has_prior=True, unconstrained=np.r_[-0.02, np.zeros(9)])
    assert not bounded.empty and bounded.mass != IDENTIFIED


def _empty_estimate(mass: float = -0.0068, std: float = 0.0035) -> Estimate:
    cov = np.diag([std**2] + [1e-6] * 9)
    return Estimate("wls", InertialParameters(np.r_[mass, np.zeros(9)]), cov, None, np.zeros(6), 1.0, 300, False,
                    identification=Identification.no_payload())


def test_an_empty_gripper_prints_no_nan_and_is_never_handed_over():
    est = _empty_estimate()
    console = Console(file=io.StringIO(), width=200)
    console.print(estimate_table(est))
    console.print(quality_table(est))
    out = console.file.getvalue()
    assert "nan" not in out and "n/a (no payload)" in out and "POOR" not in out
    assert "-6.8 ± 3.5 g" in out and "-0.0068" in out and "0.0035" in out
    handover = check_handover(est, inertia=True, force=True)
    assert not handover and handover.hard and "no payload" in handover.reasons[0]
    d = est.to_dict()
    assert d["no_payload"] and d["com"] == [None] * 3 and d["inertia_com"] is None and d["mass"] == -0.0068


# ---------------------------------------------------------------- the MuJoCo work cycle


@pytest.fixture(scope="module")
def cycle_bag(tmp_path_factory):
    bag = tmp_path_factory.mktemp("cycle") / "cycle"
    assert main(["simulate", "--bag", str(bag), "--scenario", "cycle", "--robot", "panda"]) == 0
    return bag


@pytest.mark.slow
@pytest.mark.parametrize("estimator", ["wls", "pmd"])
def test_the_work_cycle_ends_with_no_payload(cycle_bag, estimator, tmp_path, capsys):
    """The replay of the cycle ends on the empty gripper: no payload, its mass zero within 3 std and
    that std within the absolute bound; no COM or inertia; the model fit not poor; no URDF fragment."""
    capsys.readouterr()
    assert main(["replay", str(cycle_bag), "--no-plot", "--out", str(tmp_path / "j"), "--json",
                 "--estimator", estimator]) == 0
    s = json.loads(capsys.readouterr().out)
    est = s["estimate"]
    assert est["no_payload"] and est["identification"]["mass"] == IDENTIFIED
    assert est["com"] == [None] * 3 and est["inertia_com"] is None
    assert est["model_fit"]["fit"] != "poor"
    assert 0.0 < est["mass_std"] <= NO_PAYLOAD_MASS_STD_KG
    assert abs(est["mass"]) <= NO_PAYLOAD_SIGMAS * est["mass_std"]
    assert s["status"] != "ok" and s["urdf_fragment"] is None
    assert main(["replay", str(cycle_bag), "--no-plot", "--out", str(tmp_path / "t"), "--estimator", estimator]) == 0
    out = capsys.readouterr().out
    assert "none: the gripper is empty" in out and "n/a (no payload)" in out
    assert "POOR" not in out and "nan" not in out and "(from shape)" not in out
    assert "no URDF fragment: no payload" in out


@pytest.fixture(scope="module")
def arm_cycle():
    from payload_estimator.sim.arm_cycle import arm_work_cycle

    cycle = arm_work_cycle("panda", seed=0)
    return cycle, cycle.simulate(noise="moderate", seed=0, imu=False)


@pytest.mark.slow
def test_the_kept_offsets_uncertainty_covers_their_error(arm_cycle):
    """WLS through the robot pipeline: after the last release, the mass (truth 0) is within 3 std
    once the kept offsets' uncertainty is in the std, and would not be without it; each held payload
    of the cycle is still identified as a payload (never "empty") 1.5 s after its grasp, and each empty
    gripper within 3 std of nothing."""
    from payload_estimator.core.tracking import CHANGE, PayloadTracker
    from payload_estimator.pipeline.playback import play
    from payload_estimator.sim.run_settings import recording_from_run, stream_for_run

    cycle, run = arm_cycle
    stream = stream_for_run(run, estimator="wls")
    tracker = stream.estimator
    assert isinstance(tracker, PayloadTracker)
    history = []
    play(stream, recording_from_run(run), on_estimate=lambda o: history.append((o.t, o.estimate)))
    t = np.array([h[0] for h in history])
    final = tracker.estimate()
    assert run.final_payload_params.mass == 0.0
    assert tracker.kept_offsets_covariance() is not None  # the last payload's estimate keeps offsets
    assert abs(final.mass) <= 3.0 * final.mass_std
    own = tracker.estimator.estimate()  # the same data, the kept offsets taken as exact
    assert own.mass == pytest.approx(final.mass)
    assert abs(own.mass) > 3.0 * own.mass_std
    assert final.identification.empty and final.mass_std <= NO_PAYLOAD_MASS_STD_KG
    # the kept force offsets are off by what their covariance allows (each axis within 3 std) from the
    # sensor's true offsets over the last payload's data (they drift: 0.1 % of the drill's weight per second)
    last_change = [e for e in tracker.events if e.kind == CHANGE][-1]
    error = tracker.offsets_in_sensor[:3] - run.true_ft_bias[run.wrench_t >= last_change.t_start, :3].mean(axis=0)
    std = np.sqrt(np.diag(tracker.kept_offsets_covariance())[:3])
    assert np.all(np.abs(error) <= 3.0 * std), (error, std)
    for switch in cycle.transfer_ends:
        truth = run.phi_at(switch + 0.01)[0, 0]
        est = history[int(np.searchsorted(t, switch + 1.5))][1]
        if truth > 0.0:
            assert not est.identification.empty, (switch, truth, est.mass)
            if truth >= 0.3:  # the 68 g ruler's 1.5 s tell it from nothing, not its mass to 10 %
                assert est.identification.mass == IDENTIFIED, (switch, truth, est.mass, est.mass_std)
                assert abs(est.mass - truth) <= 0.02 * truth, (switch, truth, est.mass, est.mass_std)
        else:  # within 3 std of nothing; "empty" when that std is small, which offsets kept since a short
            # segment long before (a load transfer taken as two changes) may not allow 1.5 s after it
            assert abs(est.mass) <= 3.0 * est.mass_std, (switch, est.mass, est.mass_std)
            assert est.identification.empty or est.mass_std > NO_PAYLOAD_MASS_STD_KG, (switch, est.mass_std)


def test_drifting_offsets_are_known_at_the_newest_sample_to_their_lag():
    """A window that removes only its mean gives the offsets of its middle: with the sensor drifting
    0.02 N/s per axis over 6 s, they lag the newest sample by 0.06 N. The estimate's offset covariance
    covers that lag, and its drift rate is the slope (what a tracker carries over after a change)."""
    from dataclasses import replace

    from payload_estimator.core.estimators import make_estimator
    from payload_estimator.core.noise import get_noise
    from payload_estimator.sim.payloads import get_payload
    from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

    rate = np.array([0.02, -0.02, 0.02, 0.0, 0.0, 0.0])
    offset0 = np.array([0.5, -0.3, 0.2, 0.01, 0.02, -0.01])
    samples, _ = simulate_wrist(get_payload("claw_hammer").params, WristTrajectory(0.6), duration=6.0,
                                noise=get_noise("moderate"), rng=np.random.default_rng(1))
    drift = offset0 + np.outer(samples.t - samples.t[0], rate)
    samples = replace(samples, wrench_in_sensor=samples.wrench_in_sensor + drift)
    estimator = make_estimator("wls", bias=True, offset_window_s=10.0)
    estimator.update(samples)
    assert estimator.estimate().bias_covariance is None  # asked for by a tracker at a change only
    est = estimator.estimate(offsets_uncertainty=True)
    assert est.bias is not None and est.bias_covariance is not None and est.bias_rate is not None
    # the slope of the residuals at the estimate: the part of the drift the mass and COM did not take up
    assert np.all(np.sign(est.bias_rate[:3]) == np.sign(rate[:3]))
    assert np.all(np.abs(est.bias_rate[:3]) >= 0.5 * np.abs(rate[:3]))
    assert np.all(np.abs(est.bias_rate[:3]) <= 1.5 * np.abs(rate[:3]))
    error = est.bias[:3] - drift[-1, :3]
    assert np.all(np.abs(error) > 0.03)  # the window's mean: the offsets of 3 s ago
    std = np.sqrt(np.diag(est.bias_covariance)[:3])
    assert np.all(np.abs(error) <= 3.0 * std), (error, std)
