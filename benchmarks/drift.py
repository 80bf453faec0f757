"""Long runs with drifting F/T offsets: does the estimate converge, and stay converged, at any length?

The default demo (a MuJoCo Panda holding the claw hammer, Nadeau et al.'s wrist sinusoids, moderate
Table II noise) is run for each duration with the simulator's F/T offset drift scaled by each factor
(0: a constant offset; 1: the default, a random linear trend of 0.1 % of the payload's weight per
second per axis plus a random walk; 10: ten times that). The drift is the simulator's own, not the
estimator's model of it. Each run goes through the whole pipeline as the node runs it (PMD, the
payload tracker), and the table gives, per run:

* when mass and COM, and when everything, first converged (s of motion);
* the errors of the final estimate (Nadeau et al.'s eqs. 10-12) and what the data identify;
* over the run's last half: the worst mass, COM and inertia errors, the share of estimates
  that count as converged, and the share whose reported ±2σ covers the mass error and every COM
  component's error (honest uncertainty: 95 %).

``--offset-window-s`` compares the offset model (0: one constant offset over the run).

Run:  python benchmarks/drift.py [--durations 10 60 180 600] [--drifts 0 1 10] [--offset-window-s 20]
"""

from __future__ import annotations

import argparse
import time

import figures
import numpy as np

from payload_estimator.core.metrics import paper_errors
from payload_estimator.pipeline.playback import play
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import recording_from_run, stream_for_run


def run_once(duration: float, drift: float, estimator: str, window: float | None, seed: int) -> dict:
    """One long run through the pipeline: convergence times, final and worst late errors."""
    payload = get_payload("claw_hammer")
    run = simulate(robot="panda", payload=payload, trajectory="wrist", duration=duration, noise="moderate",
                   seed=seed, ft_drift=drift)
    options = {} if window is None else {"offset_window_s": window}
    stream = stream_for_run(run, payload.envelope, estimator=estimator, **options)
    rows: list[tuple[float, ...]] = []
    truth = payload.params

    def on_estimate(out) -> None:
        est = out.estimate
        e = paper_errors(est.params, truth, payload.bbox_lengths)
        with np.errstate(divide="ignore", invalid="ignore"):
            z_mass = abs(est.params.mass - truth.mass) / est.mass_std
            z_com = np.max(np.abs(est.params.com - truth.com) / np.asarray(est.com_std))
        rows.append((out.t, e.mass, e.com, e.inertia, out.converged, out.mass_com_converged, z_mass, z_com))

    started = time.perf_counter()
    play(stream, recording_from_run(run), on_estimate=on_estimate)
    wall = time.perf_counter() - started
    table = np.array(rows, dtype=float)
    t, late = table[:, 0], table[:, 0] > duration / 2
    first = {k: (float(t[np.argmax(table[:, k] > 0)]) if np.any(table[:, k] > 0) else None) for k in (4, 5)}
    final = stream.last
    ident = final.estimate.identification
    return {
        "mass_com_after": first[5], "all_after": first[4], "final": table[-1, 1:4],
        "inertia_status": ident.inertia, "converged": bool(final.converged), "reason": final.reason,
        "late_worst": table[late, 1:4].max(axis=0), "late_converged": float(table[late, 4].mean()),
        "late_covered": (float(np.mean(table[late, 6] <= 2.0)), float(np.mean(table[late, 7] <= 2.0))),
        "wall": wall,
    }


def _at(value: float | None) -> str:
    return "never" if value is None else f"{value:.1f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--durations", nargs="+", type=float, default=[10.0, 60.0, 180.0, 600.0])
    ap.add_argument("--drifts", nargs="+", type=float, default=[0.0, 1.0, 10.0])
    ap.add_argument("--estimators", nargs="+", default=["pmd"])
    ap.add_argument("--offset-window-s", type=float, default=None,
                    help="the offset model's window, s (default: the settings'; 0: constant offsets)")
    ap.add_argument("--seed", type=int, default=0)
    figures.add_option(ap)
    args = ap.parse_args()
    key: dict[str, float] = {}

    from rich.console import Console
    from rich.table import Table

    window = "the settings'" if args.offset_window_s is None else f"{args.offset_window_s:g} s"
    table = Table(title=f"Long runs, drifting F/T offsets (Panda + claw hammer, moderate noise, "
                        f"offset window {window})")
    for col in ("estimator", "s", "drift", "m+c conv. at", "all conv. at", "mass %", "COM %", "inertia %",
                "inertia", "converged", "late worst m/c/I %", "late conv.", "late 2σ covers m/c", "wall s"):
        table.add_column(col, justify="right")
    for estimator in args.estimators:
        for duration in args.durations:
            for drift in args.drifts:
                r = run_once(duration, drift, estimator, args.offset_window_s, args.seed)
                m, c, i = r["final"]
                table.add_row(estimator, f"{duration:g}", f"{drift:g}x", _at(r["mass_com_after"]), _at(r["all_after"]),
                              f"{m:.2f}", f"{c:.2f}", f"{i:.1f}", r["inertia_status"],
                              "yes" if r["converged"] else r["reason"][:40],
                              "/".join(f"{v:.2f}" if k < 2 else f"{v:.1f}" for k, v in enumerate(r["late_worst"])),
                              f"{100 * r['late_converged']:.0f} %",
                              "/".join(f"{100 * v:.0f} %" for v in r["late_covered"]), f"{r['wall']:.0f}")
                at = ("drift", estimator, f"{duration:g} s", f"drift {drift:g}x")
                key |= {figures.name(*at, f"{q}_pct"): v for q, v in zip(("mass", "com", "inertia"), r["final"])}
                key |= {figures.name(*at, f"late_worst_{q}_pct"): v
                        for q, v in zip(("mass", "com", "inertia"), r["late_worst"])}
                key[figures.name(*at, "late_converged_pct")] = 100.0 * r["late_converged"]
                key[figures.name(*at, "late_mass_within_2sd_pct")] = 100.0 * r["late_covered"][0]
                key[figures.name(*at, "late_com_within_2sd_pct")] = 100.0 * r["late_covered"][1]
    Console(width=200).print(table)
    figures.write(args.figures, key)


if __name__ == "__main__":
    main()
