"""PMD from a depth camera's view of the held tool: the visible side alone, or completed to a whole.

The hand tools of ``benchmarks/real_objects.py`` (its objects, its simulated runs, its PMD settings),
held horizontally in front of a depth camera 0.6 m away (640 x 480 pixels, 60° across, the range
noise and grazing-angle dropouts of Nguyen et al.'s Kinect model: ``payload_estimator/sim/camera.py``),
seen from the side (the tools' flat side, their heads in profile), from above (their heads' top) and
obliquely (above, in front and toward the flange). Each view's cloud, with the part each point lies
on, is made into point masses by each of ``payload_estimator/core/cloud_completion.py``'s
completions; PMD then estimates from the same sensor samples on each.

Columns (errors in %, Nadeau et al.'s eqs. 10-12, mean over tools and seeds; ``worst``: the largest
inertia error of any tool; ``<= 10 %``: the tools whose inertia error is at most 10 %;
``mass <= WLS``: those whose mass error is at most weighted least squares' plus PMD's own reported
mass std):

* ``full cloud``: the tool's own cloud with its parts, ``real_objects.py``'s ``PMD, own cloud with parts``;
* ``visible, as given`` (``none``), ``hull``, ``extrude``, ``mirror``, ``mirror_gripper``: the completions;
* ``WLS``: weighted least squares on the same samples.

Run:  python benchmarks/partial_views.py [--seeds 1] [--noise moderate] [--views side above oblique]
      [--objects file ...] [--quick] [--camera-speed]
      (--quick: two tools, one seed, moderate noise; --camera-speed: only the ray casters' times)
"""

from __future__ import annotations

import argparse
import time

import figures
import numpy as np
from real_objects import OBJECTS, QUICK_OBJECTS, estimator, recorded_samples

from payload_estimator.core.cloud_completion import COMPLETIONS, DEFAULT_COMPLETION, WORKING_POINTS, complete_cloud
from payload_estimator.core.metrics import paper_errors
from payload_estimator.core.shapes import sample_parts
from payload_estimator.errors import ShapeError
from payload_estimator.sim.camera import DepthCamera, DepthView, look_at
from payload_estimator.sim.payloads import Payload

DISTANCE_M = 0.6
"""From the camera to the middle of the tool's bounding box."""
VIEWS = {
    "side": (0.0, -1.0, 0.0),
    "above": (0.0, 0.0, 1.0),
    "oblique": (-0.35, -0.8, 0.8),
}
"""Where each camera is, from the tool's middle, in the world (z up): the tool lies along the world's x."""
T_WORLD_SENSOR = np.array([[0.0, 0.0, 1.0, 0.5], [0.0, -1.0, 0.0, 0.0], [1.0, 0.0, 0.0, 0.4], [0.0, 0.0, 0.0, 1.0]])
"""The grasp: the sensor 0.5 m ahead and 0.4 m up, its z (the tool) along the world's x, its x (the tools'
heads) up."""
LABELS = {"none": "visible, as given"}


def capture(camera: DepthCamera, payload: Payload, view: str, seed: int) -> DepthView:
    """What the camera at ``view`` sees of ``payload`` held at :data:`T_WORLD_SENSOR`."""
    lo, hi = payload.envelope.bounds()
    middle = T_WORLD_SENSOR[:3, :3] @ (0.5 * (lo + hi)) + T_WORLD_SENSOR[:3, 3]
    direction = np.asarray(VIEWS[view]) / np.linalg.norm(VIEWS[view])
    up = (1.0, 0.0, 0.0) if view == "above" else (0.0, 0.0, 1.0)
    return camera.capture(T_WORLD_SENSOR, look_at(middle + DISTANCE_M * direction, middle, up), seed=seed)


def shapes_of(payload: Payload, views: list[str], seed: int) -> dict[tuple[str, str], object]:
    """(view, label) -> the point masses PMD gets; a completion that fails is the error's text."""
    camera = DepthCamera(payload.envelope)
    out: dict[tuple[str, str], object] = {("all", "full cloud"): sample_parts(payload.envelope)}
    for view in views:
        seen = capture(camera, payload, view, seed)
        for completion in COMPLETIONS:
            try:
                out[(view, LABELS.get(completion, completion))] = complete_cloud(
                    seen.points_in_sensor, seen.viewpoint_in_sensor, completion, seen.part,
                    working_points=WORKING_POINTS)  # as the node and replay complete a camera's cloud
            except ShapeError as exc:
                out[(view, LABELS.get(completion, completion))] = str(exc)
    return out


def run(args: argparse.Namespace) -> tuple[dict, dict]:
    """Rows (noise, view, label) -> per run (mass %, COM %, inertia %, as good as WLS, tool); failures."""
    rows: dict[tuple[str, str, str], list[tuple]] = {}
    failures: dict[tuple[str, str, str], list[str]] = {}
    for noise in args.noise:
        for k, name in enumerate(args.objects):
            payload = OBJECTS[name]
            for seed in range(args.seeds):
                samples = recorded_samples(payload, noise, 300 + 10 * k + seed, args.duration)
                wls = estimator("wls", None)(samples)
                wls_err = abs(wls[0].mass - payload.mass)
                rows.setdefault((noise, "all", "WLS"), []).append(_errors(payload, wls, wls_err, name))
                for (view, label), points in shapes_of(payload, args.views, 700 + 10 * k + seed).items():
                    if isinstance(points, str):
                        failures.setdefault((noise, view, label), []).append(f"{name}: {points}")
                        continue
                    result = estimator("pmd", points)(samples)
                    rows.setdefault((noise, view, label), []).append(_errors(payload, result, wls_err, name))
    return rows, failures


def _errors(payload: Payload, result: tuple, wls_err: float, name: str) -> tuple:
    params, _, mass_std, _ = result
    err = paper_errors(params, payload.params, payload.bbox_lengths)
    as_good = abs(params.mass - payload.mass) <= wls_err + (mass_std if np.isfinite(mass_std) else 0.0)
    return err.mass, err.com, err.inertia, as_good, name


def print_table(rows: dict, failures: dict, args: argparse.Namespace) -> dict[str, float]:
    """The table (module docstring); returns the key figures of the default completion."""
    print(f"\nPartial views: {len(args.objects)} tools ({', '.join(args.objects)}), MuJoCo Panda, "
          f"{args.duration:g} s runs, {args.seeds} seed(s); camera {DISTANCE_M:g} m away, 640 x 480, 60°; "
          "errors in % (Nadeau et al.'s eqs. 10-12), mean over tools and seeds.\n")
    print("| noise | view | point masses | mass % | COM % | inertia % | worst inertia % | <= 10 % | "
          "mass <= WLS's (+ its std) |")
    print("|---|---|---|---|---|---|---|---|---|")

    def cell(v: float) -> str:
        return ">500" if v > 500 else f"{v:.2f}" if v < 100 else f"{v:.0f}"

    key: dict[str, float] = {}
    for (noise, view, label), r in rows.items():
        a = np.array([x[:3] for x in r], dtype=float)
        worst = int(np.argmax(a[:, 2]))
        n_fail = len(failures.get((noise, view, label), []))
        print(f"| {noise} | {view} | {label}{f' ({n_fail} failed)' if n_fail else ''} | {cell(a[:, 0].mean())} | "
              f"{cell(a[:, 1].mean())} | {cell(a[:, 2].mean())} | {cell(a[worst, 2])} ({r[worst][4]}) | "
              f"{int(np.sum(a[:, 2] <= 10.0))}/{len(r)} | {sum(x[3] for x in r)}/{len(r)} |")
        if label == LABELS.get(DEFAULT_COMPLETION, DEFAULT_COMPLETION):
            for j, quantity in enumerate(("mass", "com", "inertia")):
                key[figures.name("partial_views", noise, view, label, f"{quantity}_pct")] = a[:, j].mean()
            key[figures.name("partial_views", noise, view, label, "worst_inertia_pct")] = a[worst, 2]
    for (noise, view, label), why in failures.items():
        if (noise, view, label) not in rows:
            print(f"| {noise} | {view} | {label} (all {len(why)} failed) | | | | | | |")
    if failures:
        print("\nCompletions that gave no point masses:")
        for (noise, view, label), why in failures.items():
            print(f"- {noise}, {view}, {label}: " + "; ".join(why[:2]) + (" ..." if len(why) > 2 else ""))
    return key


def camera_speed(names: list[str]) -> None:
    """Milliseconds per 640 x 480 image, MuJoCo's mj_multiRay (the camera) against trimesh's; per completion."""
    import trimesh

    from payload_estimator.core.solids import Box, Cylinder, Union
    print("\nRay casting, one 640 x 480 image of each tool from the side (ms; median of 5, trimesh once), and "
          f"the {DEFAULT_COMPLETION} completion of its cloud (median of 5):\n")
    print("| tool | rays cast | points | MuJoCo (camera) | MuJoCo, every pixel | trimesh (rtree), the same rays | "
          "completion |")
    print("|---|---|---|---|---|---|---|")
    for name in names:
        payload = OBJECTS[name]
        camera, every = DepthCamera(payload.envelope), DepthCamera(payload.envelope, crop=False)
        times = {}
        for label, cam in (("roi", camera), ("all", every)):
            spent = []
            for _ in range(5):
                t0 = time.perf_counter()
                seen = capture(cam, payload, "side", 0)
                spent.append(time.perf_counter() - t0)
            times[label] = 1e3 * float(np.median(spent))
        u, v = camera.pixels(seen.T_sensor_camera)
        rays = camera.intrinsics.rays(u.astype(float), v.astype(float)) @ seen.T_sensor_camera[:3, :3].T
        meshes = []
        parts = payload.envelope.parts if isinstance(payload.envelope, Union) else (payload.envelope,)
        for p in parts:
            m = (trimesh.creation.box(p.size) if isinstance(p, Box) else
                 trimesh.creation.cylinder(p.radius, p.height, sections=64) if isinstance(p, Cylinder) else
                 p.mesh.copy())
            pose = np.eye(4)
            pose[:3, :3], pose[:3, 3] = p.R_sensor_shape, p.xyz
            meshes.append(m.apply_transform(pose))
        t0 = time.perf_counter()
        caster = trimesh.ray.ray_triangle.RayMeshIntersector(trimesh.util.concatenate(meshes))
        caster.intersects_first(np.tile(seen.viewpoint_in_sensor, (len(rays), 1)), rays)
        spent_trimesh = 1e3 * (time.perf_counter() - t0)
        spent = []
        for _ in range(5):
            t0 = time.perf_counter()
            complete_cloud(seen.points_in_sensor, seen.viewpoint_in_sensor, DEFAULT_COMPLETION, seen.part,
                           working_points=WORKING_POINTS)
            spent.append(time.perf_counter() - t0)
        print(f"| {name} | {len(u)} | {len(seen.part)} | {times['roi']:.1f} | {times['all']:.1f} | "
              f"{spent_trimesh:.0f} | {1e3 * float(np.median(spent)):.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--noise", nargs="+", default=["moderate"], choices=["none", "moderate", "high"])
    ap.add_argument("--duration", type=float, default=12.0, help="simulated time per run, s (100 Hz samples)")
    ap.add_argument("--objects", nargs="+", default=list(OBJECTS), choices=list(OBJECTS))
    ap.add_argument("--views", nargs="+", default=list(VIEWS), choices=list(VIEWS))
    ap.add_argument("--quick", action="store_true", help="CI: two tools, one seed, moderate noise")
    ap.add_argument("--camera-speed", action="store_true", help="only the ray casters' times (MuJoCo, trimesh)")
    figures.add_option(ap)
    args = ap.parse_args()
    if args.camera_speed:
        camera_speed(args.objects)
        return
    if args.quick:
        args.seeds, args.objects, args.noise = 1, list(QUICK_OBJECTS), ["moderate"]
    t0 = time.perf_counter()
    rows, failures = run(args)
    figures.write(args.figures, print_table(rows, failures, args))
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
