"""benchmarks/short_shake.py: the arms of its joint-torque figures are calibrated as users are told to (no ROS).

The script is loaded from its file (benchmarks are not a package); its ``calibrate_arm`` is wrapped to see what
each calibration was given (the real fit still runs). Short motions only: what is checked is the recording and
the options, not the accuracy of a 4 s calibration.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from payload_estimator.excitation import ArmLimits, flange_kinematics
from payload_estimator.excitation.calibration import calibration_limits, design_calibration_motion
from payload_estimator.robots import get_robot
from payload_estimator.sim.trajectories import make_trajectory

SCRIPT = Path(__file__).resolve().parents[1] / "benchmarks" / "short_shake.py"
CALIBRATION_S = 4.0
SHAKE = ["--robots", "panda", "--payloads", "ws_club_hammer", "--durations", "0.5", "--modes", "joint_torques",
         "--seeds", "1", "--calibration-s", str(CALIBRATION_S)]
IDENTIFY = ["--identify-only", "--identify-robots", "panda", "--identify-s", "2", "--identify-seeds", "1",
            "--identify-motions", "ft", "--calibration-s", str(CALIBRATION_S)]


@pytest.fixture
def script(monkeypatch):
    """The benchmark's module, and the list of (recording, options) its calibrations were fitted to."""
    spec = importlib.util.spec_from_file_location("short_shake_benchmark", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    calls: list = []
    fit = module.calibrate_arm

    def calibrate_arm(kinematics, recording, **options):
        calls.append((recording, options))
        return fit(kinematics, recording, **options)

    monkeypatch.setattr(module, "calibrate_arm", calibrate_arm)
    return module, calls


def _distance(recording, trajectory) -> float:
    """RMS distance (rad) of the recorded joint positions from ``trajectory``'s at the same times."""
    inside = recording.t <= trajectory.duration
    q, _, _ = trajectory(recording.t[inside])
    return float(np.sqrt(np.mean((recording.q[inside] - q) ** 2)))


@pytest.mark.parametrize("argv, thesis", [(SHAKE, False), (SHAKE + ["--calibration-motion", "thesis"], True),
                                          (IDENTIFY, False), (IDENTIFY + ["--identify-calibration", "thesis"], True)])
def test_the_arm_is_calibrated_on_the_designed_calibration_motion_unless_asked(script, capsys, argv, thesis):
    module, calls = script
    module.main(argv)
    out = capsys.readouterr().out
    assert "| panda |" in out
    assert len(calls) == 1
    recording, options = calls[0]
    spec = get_robot("panda")
    designed = design_calibration_motion(flange_kinematics("panda"), ArmLimits.from_robot(spec),
                                         np.asarray(spec.q_home, dtype=float),
                                         calibration_limits(duration=CALIBRATION_S), seed=0).trajectory
    lambert = make_trajectory("thesis", spec, duration=CALIBRATION_S, seed=1000)
    near, far = (lambert, designed) if thesis else (designed, lambert)
    assert _distance(recording, near) < 0.01 < 0.1 < _distance(recording, far)
    assert options["load_friction"] is False and options["effort_scale"] is False and "loaded" not in options


def test_every_condition_calibrates_scales_with_the_known_payload_and_the_load_friction(script, capsys):
    """A UR arm (motor currents), its scales off: the calibration gets the known payload's recording."""
    module, calls = script
    module.main(["--every-condition", "--robots", "ur5e", "--payloads", "ws_file", "--durations", "0.5",
                 "--modes", "joint_torques", "--seeds", "1", "--calibration-s", str(CALIBRATION_S)])
    out = capsys.readouterr().out
    assert "±15 %" in out and "0.65 kg offset_box" in out and "mu 0.05; its term fitted" in out
    assert "| ur5e | 0.5 s | joint torques, calibrated |" in out
    (recording, options), = calls
    assert options["effort_scale"] is True and options["load_friction"] is True
    loaded = options["loaded"]
    assert options["loaded_torques"].shape == loaded.q.shape
    assert np.abs(options["loaded_torques"]).max() > 0.5  # 0.65 kg at the flange loads the joints
    assert np.allclose(loaded.q, recording.q, atol=0.05)  # the same motion, holding the payload


@pytest.mark.parametrize("argv, words", [
    (["--known-payload", "offset_box"], "--known-payload fixes the effort scales"),
    (["--payloads", "anvil"], "unknown payload 'anvil'"),
    (["--robots", "kuka"], "unknown robot(s) kuka"),
    (["--load-friction", "1.5"], "must be in [0, 1)"),
])
def test_bad_options_are_one_line_and_exit_2(script, capsys, argv, words):
    module, calls = script
    with pytest.raises(SystemExit) as exc:
        module.main(argv)
    assert exc.value.code == 2 and not calls
    err = capsys.readouterr().err
    assert words in err and err.strip().splitlines()[-1].count(words) == 1
