"""Speed of the estimation core, every figure against a baseline measured in the same run.

Table 1, batched update: samples/s of ``update()`` on one big batch (random samples, 1 kHz
stamps), the estimators as the node makes them (offsets per 10-s window) and with one offset for
the run, against the textbook normal equations on the stacked regressor (the regressor of every
row and ``Y^T Y``, ``Y^T w``: nothing checked, nothing rated). The ratio is baseline time / ours.
"of peak" is the share of this machine's matrix-product rate (a 1024 x 1024 product, one core)
that the 800 flops a sample needs (its extended feature row's 20 x 20 outer product) take at
the measured rate.

Table 2, against naive re-solves from scratch (ratio naive / ours):

* PMD solve: a warm-started re-solve after new data, versus the number of point masses, against
  building and solving Problem 1 from scratch on the stacked (6K x n) data with cvxpy, as the
  published research code does (up to 1000 points; up to 200 with --quick).
* OLS and RTLS: update + estimate per batch, versus lstsq or an SVD of the stacked data matrix.

Table 3, per sample and per estimate, the package's estimators (``make_estimator``: ols, wls,
rls, rtls, pmd with ~1000 points; with one offset for the run and with offsets per 10-s window)
next to the textbook recursive estimators, all fed one sample at a time of a simulated wrist
stream (hammer, 1 rad/s, Table II moderate noise, 100 Hz). "per sample" is the whole cost of the
``update()`` calls over the samples, regressor and every statistic the estimate's rating needs
included: ours gathers small batches and takes them in together (every 64 samples, or when
anything is read: here a read every 100 samples, as a 10 Hz estimate of a 1 kHz stream does), so
the worst single call is shown beside it. "per estimate" is one ``estimate()`` every 100 samples
(median). Ours also rate every estimate (covariance, what is identified, model fit), which the
textbook ones do not. The textbook baselines, plain numpy, one 6 x 10 regressor block per sample:

* normal-equations OLS (the baseline of the ratios): accumulate ``Y^T Y`` and ``Y^T w``, solve
  the 10 x 10 system on demand;
* RLS (Ljung): per sample ``S = Y P Y^T + I``, ``K = P Y^T S^-1``, ``theta += K (w - Y theta)``,
  ``P -= K Y P``, no forgetting, ``P0 = 1e6 I``; the estimate is ``theta`` as it stands;
* RTLS (Kubus et al. 2008): per sample the 11 x 11 augmented Gram ``[Y w]^T [Y w]`` is updated and
  its smallest eigenvector recomputed, ``theta = -v[:10] / v[10]``; the estimate is read off.

Table 4, estimate latency: a stream fed in 10-sample batches at 100 Hz (10 s, 3 s with --quick),
``estimate()`` after every batch, every call timed; median, 99th percentile, worst case and worst
/ median, for OLS and PMD (~1000 points), with the F/T offsets as unknowns (``bias=True``) and the
settings' defaults (offsets per 10-s window; PMD's solve budget per estimate,
``solve_time_budget_s`` and ``solve_iteration_budget``: the estimates that reached it kept the last
converged estimate, and are counted). Two inputs: the moving wrist above, and a degenerate one, the
robot at rest with a frozen pose and a frozen wrench (the gravity wrench plus one Table II noise
draw, repeated; 1 s with --quick), on which the offsets and the payload cannot be told apart. For
PMD the QP's iterations and statuses are printed; an ``estimate()`` that raises is counted and its
exception named, not fatal.

Table 5, a new cloud of the payload mid-run (a camera's, about 1 Hz): the node's estimator (the settings'
defaults: PMD in a payload tracker, F/T offsets per 10-s window, its solve budget) with the preset's 10 cm box,
fed the hammer's wrist stream (100 Hz, 10-sample batches, an estimate after each, as the node's 10 Hz turns);
every second a new cloud of the hammer's box (100,000 points, sampled afresh each time: a grid moved at random
within its cells) goes to ``PayloadShapes.set`` (checked, merged to ``cloud_max_points``, PMD's points replaced,
every sample kept), then ``estimate()``. Each cloud's whole cost, wall and this thread's CPU time: median, 90th
percentile, worst, worst / median; beside it, the median of the estimates between clouds, the merge alone, and
the share of one core that clouds at 1 Hz take beyond those estimates; and the baseline of the same run, table
4's PMD estimate with about 1,000 point masses on the moving wrist (its median; the ratio of the cloud's median
to it). ``--budget`` sets the budget.

Table 6, decoding a camera's ``sensor_msgs/PointCloud2`` (``io.point_cloud2.cloud_from_message``, the node's and
``replay``'s decoder): an unorganised cloud of 200,000 points (xyz, rgb, a part label; 10 % holes) and a 640 x 480
depth camera's organised cloud (xyz, rgb; 20 % holes), into float64 positions without the holes, against the
structured-array way (one numpy structured dtype over the whole buffer, the holes masked, then
``structured_to_unstructured``): both vectorised, ours one strided view per field.

Timings are medians of repeated runs on this machine (one core, no threads pinned). No figure is
asserted anywhere; a busy machine slows ours and the baselines alike, which the ratios absorb.

Run:  python benchmarks/speed.py [--quick] [--clouds-only] [--budget N]   (CI: --quick; cvxpy rows need the
      bench extra)
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
    make_estimator,
)
from payload_estimator.core.estimators.pmd import dynamism_weight, point_mass_matrix  # noqa: E402
from payload_estimator.core.noise import TABLE_II  # noqa: E402
from payload_estimator.core.payload_shapes import PayloadShapes  # noqa: E402
from payload_estimator.core.point_clouds import voxel_downsample  # noqa: E402
from payload_estimator.core.point_masses import SampledShape  # noqa: E402
from payload_estimator.core.regressor import reduced_regressor, samples_regressor  # noqa: E402
from payload_estimator.core.samples import SensorSamples  # noqa: E402
from payload_estimator.core.shapes import Box, downsample_evenly, sample_parts, sample_points  # noqa: E402
from payload_estimator.pipeline.build import build_estimator  # noqa: E402
from payload_estimator.settings import Settings  # noqa: E402
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


def flop_rate(repeats: int = 5) -> float:
    """This machine's double-precision matrix-product rate on one core, flop/s (a 1024 x 1024 product)."""
    a = np.random.default_rng(5).normal(size=(1024, 1024))
    return 2.0 * 1024**3 / median_time(lambda: a @ a, repeats)


STATISTICS_FLOPS = 2 * 20 * 20
"""Flops a sample needs in the statistics: its extended feature row's outer product (20 x 20)."""


def bench_statistics(quick: bool) -> list[tuple]:
    """Batched update throughput, ours against the textbook normal equations on the stacked regressor."""
    rng = np.random.default_rng(0)
    n = 50_000 if quick else 200_000
    big = random_samples(n, rng)

    def textbook():  # the regressor and Y^T Y, Y^T w of every row: nothing rated, nothing checked
        Y = samples_regressor(big).reshape(-1, 10)
        w = big.wrench_in_sensor.reshape(-1)
        return Y.T @ Y, Y.T @ w

    t_textbook = median_time(textbook, 3)
    peak = flop_rate()
    rows = [("textbook normal equations, batched (regressor, Y^T Y, Y^T w)", f"{n / t_textbook:,.0f} samples/s",
             "baseline", "1.00x", "")]
    points = pmd_points()
    cases = (("ols, one offset for the run", lambda: OrdinaryLeastSquares()),
             ("ols, offsets per 10-s window (the default)", lambda: OrdinaryLeastSquares(offset_window_s=10.0)),
             ("pmd (990 points), offsets per 10-s window", lambda: PointMassDiscretization(points,
                                                                                         offset_window_s=10.0)))
    for label, make in cases:
        times = []
        for _ in range(3):
            est = make()  # a fresh estimator each time, built outside the timing (PMD sets its solver up)
            t0 = time.perf_counter()
            est.update(big)
            times.append(time.perf_counter() - t0)
        t = float(np.median(times))
        rows.append((f"{label}: update, batched", f"{n / t:,.0f} samples/s", "textbook above",
                     f"{t_textbook / t:.2f}x", f"{100.0 * STATISTICS_FLOPS * n / t / peak:.1f} %"))
    rows.append(("(this machine's matrix product, one core)", f"{peak / 1e9:.1f} Gflop/s", "", "", ""))
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
        rows.append((f"OLS update(10) + estimate, {held_n} samples held", f"{t_ours * 1e3:.3f} ms",
                     f"{t_naive * 1e3:.3f} ms (lstsq on stacked rows)", f"{t_naive / t_ours:.1f}x", ""))
    return rows


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
    # one grid of ~5,000 (--quick) or ~50,000 points, thinned to each size
    source = sample_points(box, density=1e7 if quick else 1e8, max_points=10**6)
    for n in sizes:
        points = downsample_evenly(source, n)
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
            solve_times.append(getattr(getattr(est, "_qp", None), "last_solve_seconds", float("nan")))
        t_solve = float(np.median(solve_times))
        t_total = float(np.median(total_times))
        try:
            t_naive = (naive_pmd_cvxpy(noisy.select(slice(0, 150)), points, 300.0, 1.0)
                       if n <= (200 if quick else 1000) else None)
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


# ---------------------------------------------------------------- textbook recursive estimators
class NormalEquationsOLS:
    """Textbook incremental OLS: accumulate ``Y^T Y`` and ``Y^T w``, solve 10 x 10 on demand."""

    def __init__(self) -> None:
        self.G = np.zeros((10, 10))
        self.r = np.zeros(10)

    def update(self, Y: np.ndarray, w: np.ndarray) -> None:
        self.G += Y.T @ Y
        self.r += Y.T @ w

    def estimate(self) -> np.ndarray:
        return np.linalg.solve(self.G, self.r)


class TextbookRLS:
    """Textbook recursive least squares (Ljung), a 6-row block per sample, no forgetting."""

    def __init__(self, initial_covariance: float = 1e6) -> None:
        self.theta = np.zeros(10)
        self.P = np.eye(10) * initial_covariance

    def update(self, Y: np.ndarray, w: np.ndarray) -> None:
        PYt = self.P @ Y.T  # 10 x 6
        K = np.linalg.solve(Y @ PYt + np.eye(6), PYt.T).T  # P Y^T (Y P Y^T + I)^-1
        self.theta = self.theta + K @ (w - Y @ self.theta)
        self.P = self.P - K @ PYt.T

    def estimate(self) -> np.ndarray:
        return self.theta.copy()


class TextbookRTLS:
    """Textbook recursive TLS (Kubus et al. 2008): the 11 x 11 augmented Gram updated per sample
    and its smallest eigenvector (smallest right singular vector of ``[A b]``) recomputed each step."""

    def __init__(self) -> None:
        self.C = np.zeros((11, 11))
        self.theta = np.zeros(10)

    def update(self, Y: np.ndarray, w: np.ndarray) -> None:
        Z = np.column_stack([Y, w])
        self.C += Z.T @ Z
        v = np.linalg.eigh(self.C)[1][:, 0]
        if v[10] != 0.0:
            self.theta = -v[:10] / v[10]

    def estimate(self) -> np.ndarray:
        return self.theta.copy()


TEXTBOOK = {
    "textbook OLS (normal equations)": (NormalEquationsOLS, "10 x 10 solve"),
    "textbook RLS (Ljung)": (TextbookRLS, "reads theta"),
    "textbook RTLS (Kubus 2008)": (TextbookRTLS, "reads theta (eigh per sample)"),
}
PACKAGE_ESTIMATORS = ("ols", "wls", "rls", "rtls", "pmd")
N_POINTS = 1000


def pmd_points() -> np.ndarray:
    """~1000 point masses in the hammer's 25 cm box (``sample_points``)."""
    box = Box(size=(0.25, 0.05, 0.04), xyz=(0.06, 0.0, 0.02))
    return sample_points(box, density=1e7, max_points=N_POINTS)


def wrist_stream(duration: float) -> SensorSamples:
    """The hammer on the wrist at 1 rad/s, Table II moderate noise, 100 Hz."""
    noisy, _ = simulate_wrist(PAYLOADS["hammer"].params, WristTrajectory(1.0), duration=duration,
                              noise=TABLE_II["moderate"], rng=np.random.default_rng(3))
    return noisy


def frozen_at_rest(duration: float, rate: float = 100.0) -> SensorSamples:
    """Robot at rest: constant pose, zero motion, a constant wrench (gravity + one Table II noise draw)."""
    rng = np.random.default_rng(4)
    n = int(round(duration * rate))
    g = np.array([0.3, -0.2, -1.0])
    g *= 9.81 / np.linalg.norm(g)
    noise = TABLE_II["moderate"]
    wrench = reduced_regressor(g)[0] @ PAYLOADS["hammer"].params.phi + rng.normal(
        0.0, [noise.force] * 3 + [noise.torque] * 3)
    zeros = np.zeros((n, 3))
    return SensorSamples(np.arange(n) / rate, zeros, zeros, zeros, np.tile(g, (n, 1)), np.tile(wrench, (n, 1)))


def _us(x: float) -> str:
    return f"{x * 1e6:,.1f} µs" if x < 1e-3 else f"{x * 1e3:,.2f} ms"


def bench_per_sample(quick: bool) -> list[tuple]:
    """Per-sample update and per-estimate cost, ours and textbook, one sample at a time.

    Ours gathers small batches and takes them in together (every 64 samples, or when anything is
    read): the per-sample figure is the whole cost of the updates, what is taken in at each read
    included (a read every 100 samples, as a 10 Hz estimate of a 1 kHz stream does), over the
    samples; the worst single ``update()`` call is shown beside it."""
    stream = wrist_stream(5.0 if quick else 10.0)
    singles = [stream.select(slice(i, i + 1)) for i in range(len(stream))]
    points = pmd_points()

    def run(update, estimate, read):
        t_update, worst, t_estimate = 0.0, 0.0, []
        for i, one in enumerate(singles):
            t0 = time.perf_counter()
            update(one)
            if i % 100 == 99:
                read()
            dt = time.perf_counter() - t0
            t_update += dt
            worst = max(worst, dt)
            if i % 100 == 99:
                t0 = time.perf_counter()
                estimate()
                t_estimate.append(time.perf_counter() - t0)
        return t_update / len(singles), worst, float(np.median(t_estimate))

    base = NormalEquationsOLS()
    t_base, worst_base, est_base = run(lambda one: base.update(samples_regressor(one)[0], one.wrench_in_sensor[0]),
                                       base.estimate, lambda: None)
    rows = []
    for name in PACKAGE_ESTIMATORS:
        for window in (0.0, 10.0):
            est = make_estimator(name, points if name == "pmd" else None, offset_window_s=window)
            t, worst, t_est = run(est.update, est.estimate, lambda est=est: est.samples_used)
            label = (f"{name} (ours{f', {len(points)} points' if name == 'pmd' else ''}"
                     f"{', offsets per 10-s window' if window else ''})")
            rows.append((label, _us(t), f"{t / t_base:.2f}x", _us(worst), _us(t_est),
                         "estimate + covariance, identification, model fit"))
    rows.append(("textbook OLS (normal equations): the baseline", _us(t_base), "1.00x", _us(worst_base),
                 _us(est_base), "10 x 10 solve"))
    for label, (cls, what) in TEXTBOOK.items():
        if cls is NormalEquationsOLS:
            continue
        other = cls()
        t, worst, t_est = run(lambda one, other=other: other.update(samples_regressor(one)[0], one.wrench_in_sensor[0]),
                              other.estimate, lambda: None)
        rows.append((label, _us(t), f"{t / t_base:.2f}x", _us(worst), _us(t_est), what))
    return rows


def _latency_run(method: str, points: np.ndarray, stream: SensorSamples) -> dict:
    """Every estimate()'s time; the estimator as the node makes it (the settings' defaults)."""
    defaults = Settings()
    budget = ({"iteration_budget": defaults.solve_iteration_budget, "time_budget_s": defaults.solve_time_budget_s}
              if method == "pmd" else {})
    est = make_estimator(method, points if method == "pmd" else None, bias=True,
                         offset_window_s=defaults.offset_window_s, **budget)
    times: list[float] = []
    iterations: list[int] = []
    statuses: dict[str, int] = {}
    errors: dict[str, int] = {}
    for k in range(0, len(stream) - 9, 10):
        est.update(stream.select(slice(k, k + 10)))
        t0 = time.perf_counter()
        try:
            est.estimate()
        except Exception as exc:  # noqa: BLE001 - a benchmark counts failures, it does not stop on them
            times.append(time.perf_counter() - t0)
            errors[type(exc).__name__] = errors.get(type(exc).__name__, 0) + 1
            continue
        times.append(time.perf_counter() - t0)
        if hasattr(est, "last_solve_iterations"):
            iterations.append(int(est.last_solve_iterations))
            status = str(getattr(est, "last_solve_status", "?"))
            statuses[status] = statuses.get(status, 0) + 1
    return {"times": np.array(times), "iterations": iterations, "statuses": statuses, "errors": errors,
            "budget_reached": int(getattr(est, "budget_reached", 0))}


def bench_latency(quick: bool) -> list[tuple]:
    """estimate() wall time on a 100 Hz stream fed in 10-sample batches, every call recorded."""
    points = pmd_points()
    inputs = {
        "moving wrist": wrist_stream(3.0 if quick else 10.0),
        "at rest, frozen pose and wrench": frozen_at_rest(1.0 if quick else 10.0),
    }
    rows = []
    for input_name, stream in inputs.items():
        for method in ("ols", "pmd"):
            out = _latency_run(method, points, stream)
            t = out["times"] * 1e3
            its = out["iterations"]
            it_text = f"{int(np.median(its))} / {max(its)}" if its else "-"
            status = ", ".join(f"{k} {v}" for k, v in sorted(out["statuses"].items())) or "-"
            errors = ", ".join(f"{k} {v}" for k, v in sorted(out["errors"].items())) or "0"
            label = f"{method} ({len(points)} points)" if method == "pmd" else method
            budget = str(out["budget_reached"]) if method == "pmd" else "-"
            rows.append((label, input_name, str(len(t)), f"{np.median(t):.2f}", f"{np.percentile(t, 99):.2f}",
                         f"{t.max():.2f}", f"{t.max() / np.median(t):.1f}", it_text, budget, status, errors))
    return rows


def _cloud_message(points: np.ndarray, height: int, width: int, **fields: np.ndarray):
    """A PointCloud2-like message (rosbags' and rclpy's attributes) of ``points`` and per-point ``fields``."""
    from types import SimpleNamespace

    from payload_estimator.io.point_cloud2 import point_cloud2_layout

    layout = point_cloud2_layout(points, **fields)
    return SimpleNamespace(
        header=SimpleNamespace(frame_id="camera_depth_optical_frame", stamp=SimpleNamespace(sec=1, nanosec=0)),
        height=height, width=width, point_step=layout.point_step, row_step=layout.point_step * width,
        fields=[SimpleNamespace(name=f.name, offset=f.offset, datatype=f.datatype, count=f.count)
                for f in layout.fields],
        is_bigendian=False, is_dense=False, data=np.frombuffer(layout.data, dtype=np.uint8))


def _structured_decode(msg) -> np.ndarray:
    """The structured-array way: one dtype over the whole buffer, holes masked, then to an (N, 3) float64 array."""
    from numpy.lib import recfunctions

    from payload_estimator.io.point_cloud2 import DATATYPES

    dtype = np.dtype({"names": [f.name for f in msg.fields], "formats": [DATATYPES[f.datatype] for f in msg.fields],
                      "offsets": [f.offset for f in msg.fields], "itemsize": msg.point_step})
    table = np.frombuffer(msg.data, dtype=dtype, count=msg.height * msg.width)
    keep = np.isfinite(table["x"]) & np.isfinite(table["y"]) & np.isfinite(table["z"])
    return recfunctions.structured_to_unstructured(table[keep][["x", "y", "z"]], dtype=np.float64)


def bench_point_cloud2(quick: bool) -> list[tuple]:
    """cloud_from_message on a camera's clouds, against the structured-array way."""
    from payload_estimator.io.point_cloud2 import cloud_from_message

    rng = np.random.default_rng(3)
    repeats = 10 if quick else 40
    rows = []
    for label, (height, width), holes, labelled in (("200,000 points, xyz rgb label, 10 % holes", (1, 200_000),
                                                     0.1, True),
                                                    ("640 x 480 organised, xyz rgb, 20 % holes", (480, 640), 0.2,
                                                     False)):
        n = height * width
        points = rng.uniform(-0.3, 0.3, (n, 3)) + [0.0, 0.0, 0.6]
        points[rng.random(n) < holes] = np.nan
        fields = {"rgb": rng.integers(0, 2**24, n).astype(np.uint32).view(np.float32)}
        if labelled:
            fields["label"] = rng.integers(0, 3, n).astype(np.uint32)
        msg = _cloud_message(points, height, width, **fields)
        cloud = cloud_from_message(msg)
        assert np.array_equal(cloud.points, _structured_decode(msg))  # the same positions, both ways
        ours = median_time(lambda: cloud_from_message(msg), repeats)
        base = median_time(lambda: _structured_decode(msg), repeats)
        rows.append((label, f"{ours * 1e3:.2f} ms", f"{base * 1e3:.2f} ms", f"{base / ours:.1f}",
                     f"{len(cloud):,} kept, {cloud.non_finite:,} dropped"))
    return rows
CLOUD_POINTS = 100_000


def hammer_clouds(count: int) -> list[SampledShape]:
    """``count`` clouds of the hammer's box, about 100,000 points each, every one sampled afresh (Table 5)."""
    box = Box(size=(0.25, 0.05, 0.04), xyz=(0.06, 0.0, 0.02))
    grid = sample_parts(box, density=CLOUD_POINTS / box.volume, max_points=2 * CLOUD_POINTS)
    cell = np.cbrt(grid.volume)[:, None]
    rng = np.random.default_rng(6)
    zeros = np.zeros((len(grid.volume), 6))
    return [SampledShape(grid.points_in_sensor + rng.uniform(-0.5, 0.5, grid.points_in_sensor.shape) * cell,
                         grid.part, grid.volume, zeros) for _ in range(count)]


def bench_clouds(quick: bool, budget: int) -> list[tuple]:
    """A new cloud every second into the node's estimator: its cost and the estimates' between (Table 5)."""
    stream = wrist_stream(20.0 if quick else 45.0)
    clouds = hammer_clouds(10 if quick else 30)
    tracker = build_estimator(Settings(), Box(size=(0.1, 0.1, 0.1), xyz=(0.0, 0.0, 0.05)), live=True)
    shapes = PayloadShapes(tracker, budget)
    k = 0
    wall, cpu, between, between_cpu, merge, point_masses = [], [], [], [], [], []

    def turn(timed: bool) -> None:
        nonlocal k
        tracker.update(stream.select(slice(k, k + 10)))
        k += 10
        t0, c0 = time.perf_counter(), time.thread_time()
        tracker.estimate()
        if timed:
            between.append(time.perf_counter() - t0)
            between_cpu.append(time.thread_time() - c0)

    for _ in range(100):  # 10 s of data before the first cloud
        turn(False)
    for cloud in clouds:
        for _ in range(10):
            turn(True)
        t0, c0 = time.perf_counter(), time.thread_time()
        update = shapes.set(cloud, float(stream.t[k - 1]))
        tracker.estimate()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
        point_masses.append(update.point_masses)
        c0 = time.thread_time()
        voxel_downsample(cloud, budget)
        merge.append(time.thread_time() - c0)
    w, c = np.array(wall) * 1e3, np.array(cpu) * 1e3
    share = 100.0 * (np.median(c) - 1e3 * np.median(between_cpu)) / 1e3  # ms of CPU per 1000 ms
    # the baseline of the same run: table 4's PMD estimate with ~1000 point masses on the moving wrist
    reference = 1e3 * float(np.median(_latency_run("pmd", pmd_points(), wrist_stream(3.0))["times"]))
    return [(f"{len(clouds)} clouds of {len(clouds[0].volume):,} points -> {min(point_masses)}-{max(point_masses)} "
             f"point masses", f"{np.median(w):.2f}", f"{np.percentile(w, 90):.2f}", f"{w.max():.2f}",
             f"{w.max() / np.median(w):.1f}", f"{np.median(c):.2f}", f"{1e3 * np.median(between):.2f}",
             f"{1e3 * np.median(merge):.2f}", f"{share:.1f} %", f"{reference:.2f} ms: {np.median(w) / reference:.2f}x")]


def print_table(header: tuple[str, ...], rows: list[tuple]) -> None:
    print("\n| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for r in rows:
        print("| " + " | ".join(r) + " |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="smaller sizes and shorter streams (for CI smoke runs)")
    ap.add_argument("--clouds-only", action="store_true", help="only table 5 (a new cloud mid-run)")
    ap.add_argument("--budget", type=int, default=Settings().cloud_max_points,
                    help="table 5's budget of point masses (default: the setting cloud_max_points)")
    args = ap.parse_args()
    t0 = time.perf_counter()
    if not args.clouds_only:
        tables(args.quick)
    print(f"\nA new cloud every second (table 5; budget {args.budget} point masses), times in ms: set + estimate(), "
          "wall (median, p90, worst, worst / median) and CPU (median); the median estimate() between clouds; the "
          "merge alone (CPU); the share of one core clouds at 1 Hz take beyond the estimates the node makes anyway:")
    print_table(("clouds", "median", "p90", "worst", "worst / median", "CPU median", "estimate between", "merge",
                 "of a core at 1 Hz", "baseline: table 4's PMD estimate (990 points), its median: ratio"),
                bench_clouds(args.quick, args.budget))
    print(f"\n({time.perf_counter() - t0:.1f} s)")


def tables(quick: bool) -> None:
    """Tables 1 to 4 and 6."""
    args = argparse.Namespace(quick=quick)
    print("Batched update (random samples, 1 kHz stamps) against the textbook normal equations of the same run; "
          "ratio: baseline time / ours (above 1: faster than the baseline); share of the machine's matrix-product "
          f"rate for the {STATISTICS_FLOPS} flops a sample needs:")
    print_table(("what", "ours", "baseline", "ratio", "of peak"), bench_statistics(args.quick))
    print("\nAgainst naive re-solves from scratch (ratio: naive / ours):")
    print_table(("what", "ours", "naive baseline", "ratio"), bench_pmd(args.quick) + bench_rtls(args.quick))
    print("\nPer sample, one sample at a time (hammer, 1 rad/s, Table II moderate, 100 Hz; no F/T offsets): the "
          "update's cost per sample, regressor and every statistic the rating needs included, and its ratio to the "
          "textbook normal equations' (below 2: within twice); the worst single call; an estimate() every 100 "
          "samples:")
    print_table(("estimator", "per sample", "ratio to textbook OLS", "worst update() call",
                 "per estimate (median)", "estimate() does"), bench_per_sample(args.quick))
    print("\nestimate() latency, 10-sample batches at 100 Hz, estimate() after each, F/T offsets estimated "
          "(bias=True), offsets per 10-s window (the default); times in ms; worst / median; PMD's budget per "
          "estimate: the estimates whose solve stopped at it (they keep the last converged estimate):")
    print_table(("estimator", "input", "estimates", "median", "p99", "worst", "worst / median",
                 "QP iterations median / max", "budget reached", "QP status", "raised"), bench_latency(args.quick))
    print("\nDecoding a camera's PointCloud2 into float64 positions without its holes (cloud_from_message), against "
          "the structured-array way (ratio: baseline / ours; median times):")
    print_table(("cloud", "ours", "structured array", "ratio", "points"), bench_point_cloud2(args.quick))


if __name__ == "__main__":
    main()
