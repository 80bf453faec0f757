"""What a budget of point masses costs a point cloud: the hand tools' dense clouds merged voxel by voxel.

The eight hand tools of ``benchmarks/real_objects.py`` (two to four materials each, 19 g to 478 g, solids and
trimesh meshes) as dense clouds of about 100,000 points (``--points``): each part filled on its own grid
(``sample_parts``), every point then moved at random within its cell (a fixed seed), so that the cloud is
irregular as a camera's is. As a segmented camera cloud gives them, the points carry no part labels (one
material) unless ``--parts``. Each cloud is merged down to each budget (``--budgets``, default 30, 100, 300,
1,000 and 3,000 point masses) by ``core/point_clouds.py``'s ``voxel_downsample``.

Table 1, the shape: the inertia of the point masses at uniform density against the full cloud's, about the
centre of mass (``|I - I_full| / |I_full|``, Frobenius, %), with each point mass carrying its points' spread
(``own_inertia``, what PMD is given) and bare (the points at their voxels' means); the centre of mass's
shift (mm); the point masses and the voxel edge; the time to merge (median of five per tool, then over the
tools; wall and this thread's CPU time, this machine).

Table 2, PMD: MuJoCo Panda samples of each tool (Nadeau et al.'s excitation through the pipeline, 12 s,
Table II moderate noise unless ``--noise``; ``real_objects.recorded_samples``) estimated by PMD with the full
cloud and with each budget's point masses: the inertia's difference from the full cloud's estimate (%, as
above), and the errors against the truth (Nadeau et al.'s eqs. 10-12, %). PMD's solves here have no time limit
of their own (OSQP's 50 ms would stop the full cloud's, and make the figures depend on the machine's load).

Run:  python benchmarks/clouds.py [--quick] [--budgets 100 300 1000 3000] [--points 100000] [--parts]
      [--objects file ...] [--noise moderate] [--no-full]
      (--quick: two tools, 30,000-point clouds, budgets 100, 300 and 1,000)
"""

from __future__ import annotations

import argparse
import time

import figures
import numpy as np
from real_objects import OBJECTS, QUICK_OBJECTS, recorded_samples

from payload_estimator.core.estimators import ESTIMATORS
from payload_estimator.core.estimators.pmd import point_mass_matrix
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.metrics import paper_errors
from payload_estimator.core.point_clouds import CLOUD_MAX_POINTS, voxel_downsample, voxel_plan
from payload_estimator.core.point_masses import SampledShape
from payload_estimator.core.shapes import sample_parts

SOLVER = {"time_limit": 600.0}
"""OSQP without the 50 ms limit of an online solve (the full cloud's takes seconds)."""


def dense_cloud(name: str, points: int, parts: bool, seed: int) -> SampledShape:
    """About ``points`` points filling the tool's solids, each moved at random within its cell (module docstring)."""
    envelope = OBJECTS[name].envelope
    grid = sample_parts(envelope, density=points / envelope.volume, max_points=2 * points)
    rng = np.random.default_rng(seed)
    cell = np.cbrt(grid.volume)[:, None]
    jittered = grid.points_in_sensor + rng.uniform(-0.5, 0.5, size=grid.points_in_sensor.shape) * cell
    labels = grid.part if parts else np.zeros_like(grid.part)
    return SampledShape(jittered, labels, grid.volume, np.zeros((len(labels), 6)))


def uniform_body(shape: SampledShape, bare: bool = False) -> InertialParameters:
    """The point masses at uniform density, 1 kg (bare: without their own inertia)."""
    own = None if bare else shape.own_inertia
    return InertialParameters(point_mass_matrix(shape.points_in_sensor, own) @ (shape.volume / shape.volume.sum()))


def inertia_difference_pct(a: InertialParameters, b: InertialParameters) -> float:
    """``|I_a - I_b| / |I_b|`` about each one's centre of mass, Frobenius, %."""
    return 100.0 * float(np.linalg.norm(a.inertia_com - b.inertia_com) / np.linalg.norm(b.inertia_com))


def shape_rows(clouds: dict[str, SampledShape], budgets: list[int],
               key: dict[str, float]) -> tuple[list[str], dict[int, dict]]:
    """Table 1's rows, and each budget's point masses per tool (for table 2); its key figures go into ``key``."""
    rows, merged = [], {}
    for budget in budgets:
        own, bare, com, masses, edges, times = [], [], [], [], [], []
        merged[budget] = {}
        for name, cloud in clouds.items():
            full = uniform_body(cloud)
            t = []
            for _ in range(5):
                t0, c0 = time.perf_counter(), time.thread_time()
                down = voxel_downsample(cloud, budget)
                t.append((time.perf_counter() - t0, time.thread_time() - c0))
            merged[budget][name] = down
            times.append(np.median(t, axis=0))
            own.append(inertia_difference_pct(uniform_body(down), full))
            bare.append(inertia_difference_pct(uniform_body(down, bare=True), full))
            com.append(1e3 * float(np.linalg.norm(uniform_body(down).com - full.com)))
            masses.append(len(down.volume))
            edges.append(1e3 * voxel_plan(cloud, budget).size_m)
        key[figures.name("clouds", f"shape_{budget}", "inertia_pct")] = float(np.max(own))
        rows.append(f"| {budget} | {min(masses)}-{max(masses)} | {min(edges):.1f}-{max(edges):.1f} | "
                    f"{np.mean(own):.1e} / {np.max(own):.1e} | {np.mean(bare):.2f} / {np.max(bare):.2f} | "
                    f"{np.max(com):.1e} | {1e3 * np.median(np.array(times)[:, 0]):.1f} / "
                    f"{1e3 * np.median(np.array(times)[:, 1]):.1f} |")
    return rows, merged


def pmd_estimate(shape: SampledShape, samples) -> InertialParameters:
    """PMD's estimate with these point masses, without a time limit (module docstring)."""
    est = ESTIMATORS["pmd"].create(shape, solver_options=SOLVER)
    est.update(samples)
    return est.estimate().params


def pmd_rows(clouds: dict[str, SampledShape], merged: dict[int, dict], noise: str, full: bool,
             key: dict[str, float]) -> list[str]:
    """Table 2's rows (module docstring); its key figures go into ``key``."""
    results: dict[str, list[tuple[float, float, float, float]]] = {}
    for k, (name, cloud) in enumerate(clouds.items()):
        payload = OBJECTS[name]
        samples = recorded_samples(payload, noise, 300 + 10 * k, 12.0)
        reference = pmd_estimate(cloud, samples) if full else None
        labels = (["full cloud"] if full else []) + [f"{b}" for b in merged]
        shapes = ([cloud] if full else []) + [merged[b][name] for b in merged]
        for label, shape in zip(labels, shapes):
            params = reference if label == "full cloud" and reference is not None else pmd_estimate(shape, samples)
            err = paper_errors(params, payload.params, payload.bbox_lengths)
            versus = inertia_difference_pct(params, reference) if reference is not None else float("nan")
            results.setdefault(label, []).append((versus, err.mass, err.com, err.inertia))
    rows = []
    for label, r in results.items():
        a = np.array(r)
        versus = "" if np.all(np.isnan(a[:, 0])) else f"{np.nanmean(a[:, 0]):.2f} / {np.nanmax(a[:, 0]):.2f}"
        rows.append(f"| {label} | {versus} | {a[:, 1].mean():.2f} | {a[:, 2].mean():.2f} | {a[:, 3].mean():.2f} |")
        budget = "full" if label == "full cloud" else label
        key[figures.name("clouds", noise, f"pmd_{budget}", "inertia_pct")] = float(a[:, 3].mean())
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--budgets", type=int, nargs="+", default=[30, 100, 300, 1000, 3000])
    ap.add_argument("--points", type=int, default=100_000, help="points of each dense cloud (about)")
    ap.add_argument("--objects", nargs="+", default=list(OBJECTS), choices=list(OBJECTS))
    ap.add_argument("--noise", default="moderate", choices=["none", "moderate", "high"])
    ap.add_argument("--parts", action="store_true", help="the clouds carry their parts' labels (one density each)")
    ap.add_argument("--no-full", action="store_true", help="skip PMD with the full clouds (seconds each)")
    ap.add_argument("--quick", action="store_true", help="CI: two tools, 30,000-point clouds, budgets 100-1000")
    figures.add_option(ap)
    args = ap.parse_args()
    if args.quick:
        args.objects, args.points, args.budgets = list(QUICK_OBJECTS), 30_000, [100, 300, 1000]
    t0 = time.perf_counter()
    clouds = {name: dense_cloud(name, args.points, args.parts, 7 + k) for k, name in enumerate(args.objects)}
    sizes = [len(c.volume) for c in clouds.values()]
    kind = "their parts labelled" if args.parts else "one material, as a segmented camera cloud"
    print(f"\nDense clouds of {len(clouds)} tools ({', '.join(clouds)}), {min(sizes):,}-{max(sizes):,} points each, "
          f"{kind}; the default budget is {CLOUD_MAX_POINTS}.\n")
    print("Table 1, the shape at uniform density against the full cloud: inertia about the COM, % (mean / max "
          "over the tools), with each point mass's own spread and bare; the COM's largest shift; the time to merge "
          "(median over the tools, wall / CPU, this machine).\n")
    print("| budget | point masses | voxel edge mm | inertia %, own spread | inertia %, bare | COM mm "
          "| merge ms, wall / CPU |")
    print("|---|---|---|---|---|---|---|")
    key: dict[str, float] = {}
    rows, merged = shape_rows(clouds, args.budgets, key)
    print("\n".join(rows))
    print(f"\nTable 2, PMD on MuJoCo Panda samples ({args.noise} noise, 12 s): its inertia against PMD's with the "
          "full cloud (%, mean / max over the tools), and the errors against the truth (Nadeau et al.'s eqs. "
          "10-12, %, mean).\n")
    print("| point masses | inertia vs full cloud's estimate % | mass % | COM % | inertia % |\n|---|---|---|---|---|")
    print("\n".join(pmd_rows(clouds, merged, args.noise, not args.no_full, key)))
    figures.write(args.figures, key)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
