"""PMD on real-shaped objects, from MuJoCo data: does it converge, and is its mass as good as least squares'?

Hand tools built in code from solids and trimesh meshes, each of two to four materials (steel
blades and heads on plastic or wooden handles, rubber grips, an aluminium body): thin, light (a
20 g file), non-uniform (``OBJECTS``). MuJoCo simulates a Panda carrying each tool on its wrist
F/T sensor along Nadeau et al.'s excitation; the raw joint and wrench signals go through the
robot pipeline as ``replay`` runs them (the F/T offset is zero and known, so that every
estimator, Problem 1 included, sees the same unknowns), and every estimator gets the same sensor
samples. Noise: none, and Nadeau et al.'s Table II moderate and high levels on the wrench (the
joints and the IMU at their nominal noise).

Columns (errors in %, Nadeau et al.'s eqs. 10-12, mean over objects and seeds; ``consistent``: the
share of physically consistent estimates; ``mass <= WLS``: the share whose mass error is at most
WLS's plus PMD's own reported mass std):

* ``PMD, own cloud with parts``: the object's own point cloud, one unknown density per part
  (``--points`` rows ``x,y,z,part``);
* ``PMD, own cloud``: the same points as one material;
* ``PMD, bounding box``: only the box around the object;
* ``WLS``: weighted least squares on the same samples;
* ``Problem 1 verbatim``: Nadeau, Giamou and Kelly's Problem 1 (eq. 8) as the paper states it
  (unsquared norms, uniform weights, the gravity-only reduced model, ``c1`` = 300, lambda = 0.1),
  with cvxpy and Clarabel on the object's own cloud (``benchmarks/accuracy.py``); skipped without
  cvxpy.

Noise floor (``--floor``): the Cramér-Rao bound of the wrench noise alone on each tool's run, the
expected error ``sqrt(2/pi) sigma`` of any unbiased estimate (the encoders' noise only adds to it).
On the 12 s runs the light file's is 0.39 % in mass and 1.35 % in COM at moderate noise, 1.27 % in
mass and 1.90 % in COM at high noise; the mean over the eight tools 0.25 % in COM at moderate and
0.29 % in mass at high noise: a single seed's mean, which the file's draw dominates, scatters about
these.

Run:  python benchmarks/real_objects.py [--seeds 2] [--noise none moderate high] [--duration 12]
      [--objects file machinist_hammer ...] [--quick] [--floor]
      (--quick: two objects, one seed, no Problem 1; --floor: the noise floor only)
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from collections.abc import Callable

import figures
import numpy as np
import trimesh

from payload_estimator.core.estimators import ESTIMATORS
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.metrics import paper_errors
from payload_estimator.core.samples import SensorSamples
from payload_estimator.core.shapes import sample_parts
from payload_estimator.core.solids import Box, Cylinder, Mesh, Shape, Union
from payload_estimator.pipeline.playback import play
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import Part, Payload
from payload_estimator.sim.run_settings import recording_from_run, stream_for_run
from payload_estimator.sim.workshop import bounding_box

STEEL, ALUMINIUM, PLASTIC, WOOD, RUBBER = 7850.0, 2700.0, 1100.0, 700.0, 1100.0
"""Densities, kg/m³."""
_ALONG_X = (0.0, np.pi / 2, 0.0)


def _mesh(mesh: trimesh.Trimesh, xyz: tuple[float, float, float] = (0.0, 0.0, 0.0),
          rpy: tuple[float, float, float] = (0.0, 0.0, 0.0)) -> Mesh:
    return Mesh(xyz=xyz, rpy=rpy, mesh=mesh, source="built in code")


def _wedge(length: float, root: float, tip: float, width: float) -> trimesh.Trimesh:
    """A tapered prism along +z: ``root`` thick (x) at z = 0, ``tip`` at z = ``length``, ``width`` wide (y)."""
    profile = np.array([[-root / 2, 0.0], [root / 2, 0.0], [tip / 2, length], [-tip / 2, length]])
    import shapely.geometry

    mesh = trimesh.creation.extrude_polygon(shapely.geometry.Polygon(profile), width)  # profile in xy, along z
    mesh.apply_transform(trimesh.transformations.rotation_matrix(-np.pi / 2, [1, 0, 0]))  # y -> z, z -> -y
    mesh.apply_translation([0.0, width / 2, 0.0])
    return mesh


def _object(name: str, description: str, *parts: tuple[Shape, float]) -> Payload:
    made = tuple(Part(shape, density * shape.volume) for shape, density in parts)
    return Payload(name, description, made, Union(parts=tuple(p.shape for p in made)))


def _objects() -> dict[str, Payload]:
    """The benchmark's tools, each held at its handle end on the sensor face, along +z."""
    has_shapely = importlib.util.find_spec("shapely") is not None
    claw = (_mesh(_wedge(0.05, 0.012, 0.004, 0.02), xyz=(-0.01, 0.0, 0.2925), rpy=(0.0, -np.pi / 2, 0.0))
            if has_shapely else Box(size=(0.05, 0.02, 0.008), xyz=(-0.035, 0.0, 0.2925)))
    objects = (
        _object("file", "20 g needle file: plastic handle, steel blade and tang",
                (_mesh(trimesh.creation.cylinder(radius=0.0065, height=0.06, sections=24), xyz=(0.0, 0.0, 0.03)),
                 PLASTIC),
                (Box(size=(0.009, 0.002, 0.07), xyz=(0.0, 0.0, 0.095)), STEEL),
                (Box(size=(0.004, 0.002, 0.015), xyz=(0.0, 0.0, 0.0675)), STEEL)),
        _object("machinist_hammer", "133 g machinist's hammer: hardwood handle, steel head, steel wedge",
                (Cylinder(radius=0.0085, height=0.24, xyz=(0.0, 0.0, 0.12)), WOOD),
                (_mesh(trimesh.creation.cylinder(radius=0.008, height=0.06, sections=24), xyz=(0.005, 0.0, 0.248),
                       rpy=_ALONG_X), STEEL),
                (Box(size=(0.004, 0.01, 0.004), xyz=(0.0, 0.0, 0.258)), STEEL)),
        _object("claw_hammer", "claw hammer: hardwood handle, steel head, tapered steel claw (mesh)",
                (Cylinder(radius=0.014, height=0.28, xyz=(0.0, 0.0, 0.14)), WOOD),
                (Box(size=(0.06, 0.025, 0.025), xyz=(0.02, 0.0, 0.2925)), STEEL),
                (claw, STEEL)),
        _object("screwdriver", "screwdriver: plastic handle, rubber grip ring (mesh), steel shaft",
                (Cylinder(radius=0.012, height=0.10, xyz=(0.0, 0.0, 0.05)), PLASTIC),
                (_mesh(trimesh.creation.annulus(r_min=0.012, r_max=0.0155, height=0.05, sections=24),
                       xyz=(0.0, 0.0, 0.04)), RUBBER),
                (Cylinder(radius=0.003, height=0.12, xyz=(0.0, 0.0, 0.16)), STEEL)),
        _object("wrench", "combination wrench: thin steel shank and heads",
                (Box(size=(0.022, 0.005, 0.16), xyz=(0.0, 0.0, 0.08)), STEEL),
                (Box(size=(0.04, 0.006, 0.028), xyz=(0.004, 0.0, 0.174)), STEEL),
                (Box(size=(0.01, 0.006, 0.018), xyz=(0.018, 0.0, 0.197)), STEEL)),
        _object("pliers", "pliers: two plastic grips, steel jaws",
                (Box(size=(0.012, 0.018, 0.10), xyz=(-0.009, 0.0, 0.05)), PLASTIC),
                (Box(size=(0.012, 0.018, 0.10), xyz=(0.009, 0.0, 0.05)), PLASTIC),
                (Box(size=(0.028, 0.012, 0.06), xyz=(0.0, 0.0, 0.13)), STEEL)),
        _object("utility_knife", "utility knife: aluminium body, plastic slider, steel blade",
                (Box(size=(0.022, 0.016, 0.14), xyz=(0.0, 0.0, 0.07)), ALUMINIUM),
                (Box(size=(0.008, 0.006, 0.03), xyz=(0.0, 0.011, 0.10)), PLASTIC),
                (Box(size=(0.018, 0.0006, 0.035), xyz=(0.003, 0.0, 0.1575)), STEEL)),
        _object("chisel", "wood chisel: hardwood handle, steel ferrule ring (mesh) and blade",
                (Cylinder(radius=0.014, height=0.10, xyz=(0.0, 0.0, 0.05)), WOOD),
                (_mesh(trimesh.creation.annulus(r_min=0.009, r_max=0.0145, height=0.012, sections=24),
                       xyz=(0.0, 0.0, 0.106)), STEEL),
                (Box(size=(0.016, 0.005, 0.13), xyz=(0.0, 0.0, 0.177)), STEEL)),
    )
    return {o.name: o for o in objects}


OBJECTS = _objects()
QUICK_OBJECTS = ("file", "machinist_hammer")
PROBLEM1_C1 = 300.0


def recorded_samples(payload: Payload, noise: str, seed: int, duration: float) -> SensorSamples:
    """The sensor samples the robot pipeline hands the estimator for one MuJoCo run of ``payload``."""
    run = simulate(robot="panda", payload=payload, trajectory="wrist", duration=duration, noise=noise,
                   seed=seed, ft_bias=np.zeros(6), ft_drift=False)
    stream = stream_for_run(run, payload.envelope, estimator="wls", track_payload=False, estimate_bias=False)
    batches: list[SensorSamples] = []
    update = stream.estimator.update

    def keep(samples: SensorSamples) -> None:
        batches.append(samples)
        update(samples)

    stream.estimator.update = keep  # type: ignore[method-assign]
    play(stream, recording_from_run(run))
    return SensorSamples.concatenate(batches)


def noise_floor(payload: Payload, seed: int, duration: float) -> dict[str, tuple[float, float]]:
    """Noise level -> expected |error| (mass %, COM % as Nadeau et al.'s eq. 11) of an unbiased estimate.

    The Cramér-Rao bound of the wrench's Table II noise alone, on every F/T sample of the noise-free
    run (after the pipeline's settling), with the exact regressor of the simulator's state;
    ``sqrt(2/pi) sigma`` is a Gaussian's mean absolute value."""
    from payload_estimator.core.noise import get_noise
    from payload_estimator.core.regressor import regressor
    from payload_estimator.pipeline.kinematics import SensorKinematics

    run = simulate(robot="panda", payload=payload, trajectory="wrist", duration=duration, noise="none",
                   seed=seed, ft_bias=np.zeros(6), ft_drift=False, imu=False)
    kin = SensorKinematics(run.urdf, sensor_frame=run.sensor_frame)
    rows = run.joint_t > 0.3
    motion = kin.compute(run.true_q[rows], run.true_dq[rows], run.true_ddq[rows])
    Y = regressor(motion.lin_acc_in_sensor, motion.ang_vel_in_sensor, motion.ang_acc_in_sensor,
                  motion.gravity_in_sensor)
    mass, com, box = payload.mass, payload.params.com, np.asarray(payload.bbox_lengths)
    d_com = np.zeros((3, 10))  # com = h / m, linearised
    d_com[:, 1:4], d_com[:, 0] = np.eye(3) / mass, -com / mass
    k = np.sqrt(2.0 / np.pi)
    out = {}
    for level in ("moderate", "high"):
        noise = get_noise(level)
        std = np.array([noise.force] * 3 + [noise.torque] * 3)
        whitened = (Y / std[None, :, None]).reshape(-1, 10)
        cov = np.linalg.inv(whitened.T @ whitened)
        s_com = np.sqrt(np.diag(d_com @ cov @ d_com.T))
        out[level] = (100.0 * k * np.sqrt(cov[0, 0]) / mass, float(np.mean(100.0 * k * s_com / box)))
    return out


def print_floor(names: list[str], duration: float) -> None:
    """The noise floor of every tool's run (module docstring)."""
    print(f"\nNoise floor: expected |error| of an unbiased estimate (Cramér-Rao bound of the wrench noise, "
          f"{duration:g} s runs), %.\n")
    print("| object | mass g | moderate: mass | COM | high: mass | COM |\n|---|---|---|---|---|---|")
    table = []
    for k, name in enumerate(names):
        floor = noise_floor(OBJECTS[name], 300 + 10 * k, duration)
        table.append([*floor["moderate"], *floor["high"]])
        print(f"| {name} | {1e3 * OBJECTS[name].mass:.1f} | " + " | ".join(f"{x:.2f}" for x in table[-1]) + " |")
    print("| mean | | " + " | ".join(f"{x:.2f}" for x in np.mean(table, axis=0)) + " |")


def estimator(name: str, points: object) -> Callable[[SensorSamples], tuple]:
    """The estimate function of the samples of estimator ``name`` on ``points`` (None: least squares'):
    ``(params, consistent, mass_std, model_fit)``."""
    def run(samples: SensorSamples) -> tuple:
        est = ESTIMATORS[name].create(points)
        est.update(samples)
        e = est.estimate()
        return e.params, e.physically_consistent, e.mass_std, e.model_fit
    return run


def methods(payload: Payload, with_problem1: bool) -> dict[str, Callable[[SensorSamples], tuple]]:
    """Row label -> estimate function of the samples: ``(params, consistent, mass_std or nan)``."""
    parts = sample_parts(payload.envelope)
    one = parts._replace(part=np.zeros_like(parts.part), own_inertia=np.zeros_like(parts.own_inertia))
    box = sample_parts(bounding_box(payload))
    out = {
        "PMD, own cloud with parts": estimator("pmd", parts),
        "PMD, own cloud": estimator("pmd", one),
        "PMD, bounding box": estimator("pmd", box),
        "WLS": estimator("wls", None),
    }
    if with_problem1:
        from accuracy import problem1_verbatim  # benchmarks/accuracy.py, beside this script

        def problem1(samples: SensorSamples) -> tuple:
            phi, _ = problem1_verbatim(samples, parts.points_in_sensor, PROBLEM1_C1)
            params = InertialParameters(phi)
            return params, bool(np.all(np.isfinite(phi))), float("nan"), None
        out["Problem 1 verbatim"] = problem1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=2)
    ap.add_argument("--noise", nargs="+", default=["none", "moderate", "high"])
    ap.add_argument("--duration", type=float, default=12.0, help="simulated time per run, s (100 Hz samples)")
    ap.add_argument("--objects", nargs="+", default=list(OBJECTS), choices=list(OBJECTS))
    ap.add_argument("--no-problem1", action="store_true", help="skip Problem 1 verbatim (cvxpy)")
    ap.add_argument("--per-object", action="store_true", help="also print every object's row")
    ap.add_argument("--quick", action="store_true", help="CI: two objects, one seed, moderate noise, no Problem 1")
    ap.add_argument("--floor", action="store_true", help="only the noise floor (Cramér-Rao bound) of every tool's run")
    figures.add_option(ap)
    args = ap.parse_args()
    if args.floor:
        print_floor(args.objects, args.duration)
        return
    if args.quick:
        args.seeds, args.objects, args.noise, args.no_problem1 = 1, list(QUICK_OBJECTS), ["moderate"], True
    with_problem1 = not args.no_problem1 and importlib.util.find_spec("cvxpy") is not None
    t0 = time.perf_counter()
    rows: dict[tuple[str, str], list[tuple[float, float, float, bool, bool]]] = {}
    per_object: dict[tuple[str, str, str], list[tuple[float, float, float]]] = {}
    diagnoses: list[str] = []
    n_samples = []
    for noise in args.noise:
        for k, name in enumerate(args.objects):
            payload = OBJECTS[name]
            table = methods(payload, with_problem1)
            for seed in range(args.seeds):
                samples = recorded_samples(payload, noise, 300 + 10 * k + seed, args.duration)
                n_samples.append(len(samples))
                results = {label: f(samples) for label, f in table.items()}
                wls_err = abs(results["WLS"][0].mass - payload.mass)
                for label, (params, consistent, mass_std, fit) in results.items():
                    err = paper_errors(params, payload.params, payload.bbox_lengths)
                    as_good = abs(params.mass - payload.mass) <= wls_err + (mass_std if np.isfinite(mass_std) else 0.0)
                    rows.setdefault((noise, label), []).append((err.mass, err.com, err.inertia, consistent, as_good))
                    per_object.setdefault((noise, label, name), []).append((err.mass, err.com, err.inertia))
                    if fit is not None and fit.checked and not fit.good and label.startswith("PMD, own"):
                        diagnoses.append(f"{noise}, {name}, {label}: {fit.cause}")
    print(f"\nReal-shaped objects: {len(args.objects)} tools ({', '.join(args.objects)}; "
          f"{1e3 * min(OBJECTS[o].mass for o in args.objects):.0f} g to "
          f"{1e3 * max(OBJECTS[o].mass for o in args.objects):.0f} g), MuJoCo Panda, Nadeau et al.'s excitation, "
          f"{args.duration:g} s ({min(n_samples)}-{max(n_samples)} samples), {args.seeds} seed(s); errors in % "
          "(Nadeau et al.'s eqs. 10-12), mean over objects and seeds.\n")
    print("| noise | method | mass % | COM % | inertia % | consistent | mass <= WLS's (+ its std) |")
    print("|---|---|---|---|---|---|---|")

    def cell(v: float) -> str:
        return ">500" if v > 500 else f"{v:.2f}" if v < 100 else f"{v:.0f}"

    key: dict[str, float] = {}
    for (noise, label), r in rows.items():
        a = np.array([x[:3] for x in r])
        print(f"| {noise} | {label} | {cell(a[:, 0].mean())} | {cell(a[:, 1].mean())} | {cell(a[:, 2].mean())} | "
              f"{sum(x[3] for x in r)}/{len(r)} | {sum(x[4] for x in r)}/{len(r)} |")
        for k, quantity in enumerate(("mass", "com", "inertia")):
            key[figures.name("real_objects", noise, label, f"{quantity}_pct")] = a[:, k].mean()
    figures.write(args.figures, key)
    if args.per_object:
        print("\n| noise | method | object | mass % | COM % | inertia % |\n|---|---|---|---|---|---|")
        for (noise, label, name), r in per_object.items():
            a = np.array(r).mean(axis=0)
            print(f"| {noise} | {label} | {name} | {cell(a[0])} | {cell(a[1])} | {cell(a[2])} |")
    if diagnoses:
        print("\nModel fit reported poor with the object's own cloud:")
        for line in diagnoses:
            print(f"- {line}")
    if not with_problem1:
        print("\n(Problem 1 verbatim not run: --no-problem1, --quick or no cvxpy.)")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
