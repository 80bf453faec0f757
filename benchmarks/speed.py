"""Speed of the estimation core, each figure against a naive baseline measured in the same run.

* Statistics update: samples/s when fed in batches, and the cost of a
  single-sample update (what a 1 kHz loop pays), versus re-solving ordinary
  least squares on all stacked rows after every batch.
* PMD solve: time of a warm-started re-solve after new data, versus the
  number of point masses, against building and solving Problem 1 from
  scratch on the stacked (6K x n) data with cvxpy, as the published research
  code does.
* RTLS: update + estimate per batch, versus an SVD of the stacked data matrix.

Timings are medians of repeated runs on this machine (one core, no threads
pinned); ratios are baseline / ours.

Run:  python benchmarks/speed.py [--quick]
"""

from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

from payload_estimator.core.estimators import (  # noqa: E402
    OrdinaryLeastSquares,
    PointMassDiscretization,
    RecursiveTotalLeastSquares,
)
from payload_estimator.core.estimators.pmd import dynamism_weight, point_mass_matrix  # noqa: E402
from payload_estimator.core.regressor import reduced_regressor, samples_regressor  # noqa: E402
from payload_estimator.core.samples import SensorSamples  # noqa: E402
from payload_estimator.core.shapes import Box, downsample_evenly, sample_points  # noqa: E402
from payload_estimator.sim.noise import TABLE_II  # noqa: E402
from payload_estimator.sim.payloads import PAYLOADS  # noqa: E402
from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist  # noqa: E402


def median_time(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times))


def random_samples(n: int, rng: np.random.Generator) -> SensorSamples:
    g = rng.normal(size=(n, 3))
    g *= 9.81 / np.linalg.norm(g, axis=1, keepdims=True)
    return SensorSamples(np.arange(n) * 1e-3, rng.normal(size=(n, 3)), rng.normal(size=(n, 3)),
                         rng.normal(size=(n, 3)) * 5, g, rng.normal(size=(n, 6)))


def bench_statistics(quick: bool) -> list[tuple]:
    rng = np.random.default_rng(0)
    n = 50_000 if quick else 200_000
    big = random_samples(n, rng)
    t_batch = median_time(lambda: OrdinaryLeastSquares().update(big), 3)
    one = [big.select(slice(i, i + 1)) for i in range(2000)]
    est = OrdinaryLeastSquares()

    def singles():
        for s in one:
            est.update(s)

    t_single = median_time(singles, 3) / len(one)
    rows_growth = []
    for held_n in ((1000, 30_000) if not quick else (1000,)):
        # Naive: keep every row and re-solve lstsq after each 10-sample batch.
        held = big.select(slice(0, held_n))
        A = samples_regressor(held).reshape(-1, 10)
        b = held.wrench_in_sensor.reshape(-1)
        t_naive = median_time(lambda: np.linalg.lstsq(A, b, rcond=None), 10)
        ours = OrdinaryLeastSquares()
        ours.update(held)
        batch10 = big.select(slice(held_n, held_n + 10))

        def ours_step():
            ours.update(batch10)
            ours.estimate()

        t_ours = median_time(ours_step, 50)
        rows_growth.append((f"OLS update(10) + estimate, {held_n} samples held", f"{t_ours * 1e3:.3f} ms",
                            f"{t_naive * 1e3:.3f} ms (lstsq on stacked rows)", f"{t_naive / t_ours:.1f}x"))
    return [
        ("statistics update, batches", f"{n / t_batch:,.0f} samples/s", "", ""),
        ("statistics update, one sample", f"{t_single * 1e6:.1f} µs", "",
         f"{t_single * 1e3 * 100:.1f} % of a core at 1 kHz"),
    ] + rows_growth


def naive_pmd_cvxpy(samples: SensorSamples, points: np.ndarray, c1: float, lam: float) -> float:
    """Problem 1 from scratch: stacked (6K x n) matrices, cvxpy + Clarabel (the research code's recipe)."""
    import cvxpy as cp

    P = point_mass_matrix(points)
    w = dynamism_weight(samples.dynamism(), c1)
    A_full = (samples_regressor(samples) @ P).reshape(-1, len(points))
    apparent = samples.gravity_in_sensor - samples.lin_acc_in_sensor
    A_red = (reduced_regressor(apparent) @ P).reshape(-1, len(points))
    b = samples.wrench_in_sensor.reshape(-1)
    wr = np.repeat(w, 6)
    m = cp.Variable(len(points), nonneg=True)
    objective = cp.sum_squares(cp.multiply(1 - wr, A_red @ m - b)) + cp.sum_squares(
        cp.multiply(wr, A_full @ m - b)
    ) + lam * cp.sum_squares(m)
    t0 = time.perf_counter()
    cp.Problem(cp.Minimize(objective)).solve(solver=cp.CLARABEL)
    return time.perf_counter() - t0


def bench_pmd(quick: bool) -> list[tuple]:
    payload = PAYLOADS["hammer"]
    noisy, _ = simulate_wrist(payload.params, WristTrajectory(1.0), duration=3.0,
                              noise=TABLE_II["moderate"], rng=np.random.default_rng(1))
    rows = []
    sizes = (50, 200, 1000) if quick else (50, 100, 200, 1000, 10_000)
    box = Box(size=(0.25, 0.05, 0.04), xyz=(0.06, 0.0, 0.02))
    for n in sizes:
        points = downsample_evenly(sample_points(box, density=1e9, max_points=10**6), n)
        est = PointMassDiscretization(points)
        est.update(noisy.select(slice(0, 150)))
        est.estimate()  # cold: builds and factors the workspace
        new = [noisy.select(slice(150 + 5 * k, 155 + 5 * k)) for k in range(20)]
        solve_times, total_times = [], []
        for batch in new:
            est.update(batch)
            t0 = time.perf_counter()
            est.estimate()
            total_times.append(time.perf_counter() - t0)
            solve_times.append(est._qp.last_solve_seconds)
        t_solve = float(np.median(solve_times))
        t_total = float(np.median(total_times))
        try:
            t_naive = naive_pmd_cvxpy(noisy.select(slice(0, 150)), points, 300.0, 1.0) if n <= 1000 else None
        except ImportError:
            t_naive = None
        naive = f"{t_naive * 1e3:.1f} ms (cvxpy+Clarabel, stacked)" if t_naive else "not run"
        ratio = f"{t_naive / t_total:.0f}x" if t_naive else ""
        rows.append((f"PMD warm re-solve, {len(points)} points",
                     f"QP {t_solve * 1e3:.2f} ms / estimate() {t_total * 1e3:.2f} ms", naive, ratio))
    return rows


def bench_rtls(quick: bool) -> list[tuple]:
    rng = np.random.default_rng(2)
    rows = []
    for held_n in ((1000, 30_000) if not quick else (1000,)):
        held = random_samples(held_n, rng)
        batch = random_samples(10, rng)
        est = RecursiveTotalLeastSquares()
        est.update(held)

        def ours():
            est.update(batch)
            est.estimate()

        A = np.column_stack([samples_regressor(held).reshape(-1, 10), held.wrench_in_sensor.reshape(-1)])
        t_ours = median_time(ours, 50)
        t_naive = median_time(lambda: np.linalg.svd(A, full_matrices=False), 10)
        rows.append((f"RTLS update(10) + estimate, {held_n} samples held", f"{t_ours * 1e3:.3f} ms",
                     f"{t_naive * 1e3:.3f} ms (SVD of stacked [A b])", f"{t_naive / t_ours:.1f}x"))
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes (for CI smoke runs)")
    args = ap.parse_args()
    rows = bench_statistics(args.quick) + bench_pmd(args.quick) + bench_rtls(args.quick)
    print("\n| what | ours | naive baseline | ratio |")
    print("|---|---|---|---|")
    for r in rows:
        print("| " + " | ".join(r) + " |")


if __name__ == "__main__":
    main()
