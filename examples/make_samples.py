"""Write ``examples/samples.csv``: a sample table for ``payload-estimator estimate``, from a simulated wrist.

``payload_estimator.sim.wrist`` moves a three-joint wrist (a tilted base, Nadeau et al.'s
45° sinusoids at a mean angular speed of 1 rad/s) holding the "hammer" configuration of
Nadeau et al.'s modular test object (0.316 kg, a 25 cm bar with two steel weights at one end);
pinocchio gives the exact sensor-frame motion and wrench, then Nadeau et al.'s Table II
"moderate" noise is added to the
accelerations and the wrench, plus a constant F/T offset (the ``--bias`` the command can
estimate). 3 s at 100 Hz: 300 rows, in the columns and units docs/own-data.md documents.

Run from the repository root, with the ``sim`` extra: ``python examples/make_samples.py``;
it prints the true parameters and the ``estimate`` command that checks them.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from payload_estimator.core.noise import TABLE_II
from payload_estimator.core.shapes import format_shape_spec
from payload_estimator.io.samples_file import write_samples
from payload_estimator.sim.payloads import PAYLOADS
from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

PAYLOAD = PAYLOADS["hammer"]
FT_OFFSET = np.array([0.4, -0.3, 0.2, 0.02, -0.01, 0.015])  # N, N·m: an unzeroed sensor
OUT = Path(__file__).resolve().parent / "samples.csv"


def main(out: Path = OUT) -> Path:
    """Write the table to ``out``; returns it."""
    noisy, _ = simulate_wrist(PAYLOAD.params, WristTrajectory(mean_ang_vel=1.0), duration=3.0, rate_hz=100.0,
                              noise=TABLE_II["moderate"], ft_bias=FT_OFFSET, rng=np.random.default_rng(2024))
    write_samples(out, noisy)
    truth = PAYLOAD.params
    print(f"wrote {out}: {len(noisy)} samples of the {PAYLOAD.name!r} object")
    print(f"truth: mass {truth.mass:.4f} kg, COM {np.round(truth.com, 4).tolist()} m (sensor frame), "
          f"F/T offset {FT_OFFSET.tolist()}")
    print(f"check: payload-estimator estimate examples/{OUT.name} --shape {format_shape_spec(PAYLOAD.envelope)} --bias")
    return out


if __name__ == "__main__":
    main()
