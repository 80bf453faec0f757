"""``payload-estimator estimate``: the documented sample format, JSON output and bad input."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from payload_estimator.cli import main
from payload_estimator.core.noise import TABLE_II
from payload_estimator.io.samples_file import COLUMNS, read_samples, write_samples
from payload_estimator.sim.payloads import PAYLOADS
from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

HAMMER = PAYLOADS["hammer"]
SHAPE = "box:0.25,0.05,0.04@0.06,0,0.02"  # the hammer's envelope


@pytest.fixture(scope="module")
def samples():
    noisy, _ = simulate_wrist(HAMMER.params, WristTrajectory(1.0), duration=1.5,
                              noise=TABLE_II["moderate"], rng=np.random.default_rng(0))
    return noisy


def _run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("suffix", [".csv", ".npz"])
def test_estimate_json_for_every_method(tmp_path, capsys, samples, suffix):
    path = tmp_path / f"s{suffix}"
    write_samples(path, samples)
    for method in ("ols", "wls", "rls", "rtls", "pmd", "pmd-divide"):
        out = _run_json(capsys, ["estimate", str(path), "--method", method, "--shape", SHAPE, "--json"])
        for key in ("estimator", "mass", "com", "inertia_com", "phi", "physically_consistent",
                    "samples_used", "condition_number"):
            assert key in out
        assert out["estimator"] == method and out["samples_used"] == len(samples)
        assert out["mass"] == pytest.approx(HAMMER.mass, rel=0.02)
        # the inertia is a number only where the data or a prior determine it (1.5 s of motion: not always)
        if out["identification"]["inertia"] == "not identified":
            assert out["inertia_com"] is None
        else:
            assert np.asarray(out["inertia_com"]).shape == (3, 3)
        assert len(out["phi"]) == 10
    assert out["physically_consistent"] is True  # pmd-divide


def test_rtls_takes_the_sensors_noise_from_its_data_sheet(tmp_path, capsys, samples):
    path = tmp_path / "s.csv"
    write_samples(path, samples)
    measured = _run_json(capsys, ["estimate", str(path), "--method", "rtls", "--json"])
    # the simulated wrench noise (Table II moderate: 0.1 N, 0.005 N·m), stated instead of measured
    sheet = _run_json(capsys, ["estimate", str(path), "--method", "rtls", "--ft-noise", "0.1,0.005", "--json"])
    assert sheet["mass"] == pytest.approx(HAMMER.mass, rel=0.02)
    assert sheet["phi"] != measured["phi"]  # the option reaches the estimator
    # wildly overstated noise makes TLS take much of the data for noise: a different answer
    loud = _run_json(capsys, ["estimate", str(path), "--method", "rtls", "--ft-noise", "10,1", "--json"])
    assert loud["phi"] != sheet["phi"]
    for bad in ("0.1", "0.1,0", "a,b", "0.1,0.2,0.3"):
        with pytest.raises(SystemExit) as exit_:
            main(["estimate", str(path), "--method", "rtls", "--ft-noise", bad])
        assert exit_.value.code == 2
        assert "--ft-noise" in capsys.readouterr().err


def test_points_file_and_bias(tmp_path, capsys, samples):
    path = tmp_path / "s.csv"
    write_samples(path, samples)
    pts = tmp_path / "pts.csv"
    grid = np.stack(np.meshgrid(*(np.linspace(-0.05, 0.17, 6), np.linspace(-0.02, 0.02, 3),
                                  np.linspace(0.005, 0.035, 3)), indexing="ij"), -1).reshape(-1, 3)
    np.savetxt(pts, grid, delimiter=",", header="x,y,z", comments="")
    out = _run_json(capsys, ["estimate", str(path), "--points", str(pts), "--bias", "--json"])
    assert out["n_points"] == len(grid) and len(out["bias"]) == 6


def test_nan_rows_are_skipped_and_counted(tmp_path, capsys, samples):
    path = tmp_path / "s.csv"
    write_samples(path, samples)
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace(lines[3].split(",")[14], "nan", 1)
    lines[7] = ",".join(["inf"] + lines[7].split(",")[1:])
    path.write_text("\n".join(lines) + "\n")
    assert read_samples(path).skipped_rows == 2
    out = _run_json(capsys, ["estimate", str(path), "--method", "ols", "--json"])
    assert out["skipped_rows"] == 2 and out["samples_used"] == len(samples) - 2


@pytest.mark.parametrize(
    "content, message",
    [
        ("", "empty"),
        (",".join(COLUMNS) + "\n", "no samples"),
        ("t,ax,ay\n0,1,2\n", "missing column"),
        (",".join(COLUMNS) + "\n" + "\n".join(",".join(["1"] * 19) for _ in range(3)) + "\n", "does not increase"),
        (",".join(COLUMNS) + "\n" + ",".join(["x"] * 19) + "\n", "not a number"),
    ],
)
def test_bad_files_exit_2_with_one_line(tmp_path, capsys, content, message):
    path = tmp_path / "bad.csv"
    path.write_text(content)
    assert main(["estimate", str(path), "--method", "ols"]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and len(err.splitlines()) == 1 and "Traceback" not in err


def test_bad_shapes_and_missing_shape_exit_2(tmp_path, capsys, samples):
    path = tmp_path / "s.npz"
    write_samples(path, samples)
    assert main(["estimate", str(path), "--method", "pmd"]) == 2
    assert "--shape" in capsys.readouterr().err
    assert main(["estimate", str(path), "--shape", "box:0,0.1,0.1"]) == 2
    assert "box sizes" in capsys.readouterr().err
    assert main(["estimate", str(tmp_path / "none.csv")]) == 2


def test_console_script_runs_without_traceback(tmp_path, samples):
    path = tmp_path / "s.csv"
    write_samples(path, samples)
    proc = subprocess.run([sys.executable, "-m", "payload_estimator.cli", "estimate", str(path), "--shape", SHAPE],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "<inertial>" in proc.stdout and "physically consistent" in proc.stdout


def test_track_prints_a_line_per_slice_and_flags_the_change(tmp_path, capsys):
    """Two payloads one after the other (a hammer, then a drill): one JSON line per 0.5 s of data,
    the change flagged on the line whose slice holds it, the last line the drill's estimate."""
    from payload_estimator.core.samples import SensorSamples
    from payload_estimator.sim.payloads import get_payload

    hammer, drill = get_payload("claw_hammer"), get_payload("drill")
    rng = np.random.default_rng(0)
    first, _ = simulate_wrist(hammer.params, WristTrajectory(0.6), duration=6.0, noise=TABLE_II["moderate"], rng=rng)
    second, _ = simulate_wrist(drill.params, WristTrajectory(0.6), duration=6.0, noise=TABLE_II["moderate"], rng=rng,
                               t_start=6.0)
    path = tmp_path / "cycle.csv"
    write_samples(path, SensorSamples.concatenate([first, second]))
    assert main(["estimate", str(path), "--method", "wls", "--bias", "--track", "--every", "0.5", "--json"]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    track, final = lines[:-1], lines[-1]
    assert len(track) == 24 and all(set(x) == {"t", "mass", "com", "changed", "contact", "status"} for x in track)
    changed = [x["t"] for x in track if x["changed"]]
    assert len(changed) == 1 and 6.0 < changed[0] <= 6.5 + 1e-9
    assert final["mass"] == pytest.approx(drill.mass, rel=0.01)
    assert track[-1]["mass"] == pytest.approx(final["mass"])
    # readable table without --json
    assert main(["estimate", str(path), "--method", "wls", "--bias", "--track", "--every", "2"]) == 0
    out = capsys.readouterr().out
    assert "CHANGE" in out and out.count("\n") > 6
