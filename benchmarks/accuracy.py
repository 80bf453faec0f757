"""Accuracy of every estimator in paper 004's simulation setting (its Table III).

Eight paper-like test objects (a PLA frame with 101 g steel and 17 g ABS
weights, 0.15-0.4 kg, 6-25 cm, off-centre COMs) are welded to the F/T sensor
of a three-joint wrist whose joints follow paper 004's sinusoids, scaled to
mean angular speeds of 1.0, 1.5 and 2.0 rad/s. Wrenches and sensor-frame
kinematics come from pinocchio's RNEA (not from our regressor); Table II
noise is added to the linear and angular accelerations and to the wrench;
each estimator sees ~150 observations (1.5 s at 100 Hz), as in the paper.
Errors use the paper's metrics, eqs. (10)-(12), averaged over objects and
repetitions.

Run:  python benchmarks/accuracy.py [--noise moderate] [--repeats 5] [--duration 1.5]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from payload_estimator.core.estimators import C1_PAPER, ESTIMATORS, make_estimator
from payload_estimator.core.metrics import paper_errors
from payload_estimator.core.shapes import sample_points
from payload_estimator.sim.noise import TABLE_II, get_noise
from payload_estimator.sim.payloads import PAPER_OBJECTS
from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

SPEEDS = (1.0, 1.5, 2.0)

# label -> (method, options): every registered estimator with its defaults (RLS without
# forgetting: the data are one batch), and PMD-paper, eq. (6) verbatim with uniform channel weights.
_VARIANTS: dict[str, dict[str, tuple[str, dict]]] = {
    "rls": {"RLS": ("rls", {"forgetting": 1.0})},
    "pmd": {"PMD-paper": ("pmd", {"reduced_with_linear_acceleration": False, "channel_std": None}),
            "PMD": ("pmd", {})},
}
METHODS: dict[str, tuple[str, dict]] = {
    label: spec for name in ESTIMATORS for label, spec in _VARIANTS.get(name, {name.upper(): (name, {})}).items()
}

PAPER_TABLE_III = {  # paper 004, moderate noise, ~150 observations: mass, COM, inertia at 1.0/1.5/2.0 rad/s
    "OLS": ((1.36, 2.88, 3.22), (34.4, 44.0, 36.1), (">500",) * 3),
    "RTLS": ((1.84, 1.77, 2.41), (97.5, 37.7, 38.2), (">500",) * 3),
    "PMD": ((1.34, 2.15, 1.91), (9.83, 15.5, 16.4), (44.1, 43.5, 43.6)),
}


def run(noise: str, repeats: int, duration: float, rate: float, c1: float) -> dict:
    level = get_noise(noise)
    results: dict[tuple[str, float], list[tuple[float, float, float, bool]]] = {}
    for speed in SPEEDS:
        for obj_index, payload in enumerate(PAPER_OBJECTS):
            points = sample_points(payload.envelope)
            for rep in range(repeats):
                rng = np.random.default_rng(1000 * obj_index + rep)
                noisy, _ = simulate_wrist(
                    payload.params, WristTrajectory(mean_ang_vel=speed), duration=duration,
                    rate_hz=rate, noise=level, rng=rng,
                )
                for label, (method, options) in METHODS.items():
                    opts = dict(options)
                    if method == "pmd":
                        opts.setdefault("c1", c1)
                    est = make_estimator(method, points, **opts)
                    est.update(noisy)
                    e = est.estimate()
                    err = paper_errors(e.params, payload.params, payload.bbox_lengths)
                    results.setdefault((label, speed), []).append(
                        (err.mass, err.com, err.inertia, e.physically_consistent)
                    )
    # The prior alone: uniform density over the envelope with the true mass.
    prior = [
        paper_errors(p.envelope.solid_inertia(p.mass), p.params, p.bbox_lengths) for p in PAPER_OBJECTS
    ]
    return {"results": results, "prior_inertia": float(np.mean([e.inertia for e in prior])),
            "prior_com": float(np.mean([e.com for e in prior]))}


def _fmt(x: float) -> str:
    return ">500" if x > 500 else f"{x:.2f}" if x < 100 else f"{x:.0f}"


def print_table(out: dict, noise: str, repeats: int, n_obs: int) -> None:
    res = out["results"]
    head = " / ".join(f"{s:.1f}" for s in SPEEDS)
    print(f"\nPaper 004 setting: {len(PAPER_OBJECTS)} objects x {repeats} repeats, {noise} noise, "
          f"{n_obs} observations. Errors in % (eqs. 10-12), mean over objects and repeats.\n")
    print(f"| method | mass % ({head} rad/s) | COM % ({head}) | inertia % ({head}) | consistent % |")
    print("|---|---|---|---|---|")
    for label in METHODS:
        cols = []
        for k in range(3):
            cols.append(" / ".join(_fmt(np.mean([r[k] for r in res[(label, s)]])) for s in SPEEDS))
        cons = np.mean([r[3] for s in SPEEDS for r in res[(label, s)]]) * 100
        print(f"| {label} | {cols[0]} | {cols[1]} | {cols[2]} | {cons:.0f} |")
    print(f"| uniform-density prior, true mass (reference) | - | {out['prior_com']:.2f} | "
          f"{out['prior_inertia']:.2f} | 100 |")
    print("\nPaper 004, Table III (moderate noise, for comparison):")
    for label, (m, c, i) in PAPER_TABLE_III.items():
        cells = (" / ".join(map(str, values)) for values in (m, c, i))
        print(f"| {label} (paper) | " + " | ".join(cells) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--noise", choices=list(TABLE_II), default="moderate")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--duration", type=float, default=1.5, help="seconds of data (default 1.5)")
    ap.add_argument("--rate", type=float, default=100.0, help="samples per second (default 100)")
    ap.add_argument("--c1", type=float, default=C1_PAPER, help=f"PMD c1 (default {C1_PAPER:g}, pmd.C1_PAPER)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    out = run(args.noise, args.repeats, args.duration, args.rate, args.c1)
    print_table(out, args.noise, args.repeats, int(round(args.duration * args.rate)))
    print(f"\n({time.perf_counter() - t0:.1f} s)")


if __name__ == "__main__":
    main()
