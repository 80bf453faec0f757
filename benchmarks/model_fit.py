"""Does the estimate know when its model is wrong? Detection of wrong set-ups, and false alarms.

MuJoCo simulates a Panda and an xArm 7 holding each payload along Nadeau
et al.'s excitation at cobot speed (moderate noise, F/T offset and drift), and
the raw signals go through the robot pipeline as ``replay`` and the node run
them, F/T offsets estimated. Each run is estimated with a right set-up and
with the mistakes a user makes:

* ``right``: the payload's own envelope (false alarms are counted here);
* ``small``: the envelope shrunk to half its size about its centre;
* ``shift x/y/z``: the envelope moved 3 cm along one sensor axis;
* ``short box``: the README's old example shape, ``box:0.1,0.04,0.2@0,0,0.1``,
  for the 28 cm claw hammer (too short: its head sticks out);
* ``frame 90°``: the wrench reported in a frame turned 90° about z from the one
  configured (a wrong ``sensor_rpy`` or ``wrench_frame``);
* ``touching``: a steady 3 N push on the payload from the middle of the run
  (it rests against something).

Shapes matter to PMD only; the frame and the contact to every estimator.
Each row gives the share of runs whose final estimate reports the model fit
as poor (``detected``; for ``right``, a false alarm), the share whose URDF
fragment / ``~/apply`` was refused (poor fit, inconsistent or not
identified: any of those stops a hand-over), the median mass and COM errors,
and the share of runs that were *silently wrong*: handed over although the
mass or a COM component is more than 3 reported standard deviations off.
A wrong set-up that leaves mass and COM right (a shape shifted along the
axis the payload already fills) need not be detected; one that makes them
wrong must be refused.

Run:  python benchmarks/model_fit.py [--seeds 3] [--robots panda xarm7]
"""

from __future__ import annotations

import argparse
import dataclasses
import time

import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.core.estimators import C1_DEFAULT
from payload_estimator.core.shapes import parse_shape_spec, sample_points
from payload_estimator.outputs.handover import check_handover
from payload_estimator.pipeline.playback import play
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import recording_from_run, stream_for_run

PAYLOADS = ("claw_hammer", "drill")
README_BOX = "box:0.1,0.04,0.2@0,0,0.1"


def _cases(payload_name: str) -> dict[str, tuple[np.ndarray, str]]:
    """Case -> (PMD's points, what is done to the recording: '', 'frame' or 'touch')."""
    points = sample_points(get_payload(payload_name).envelope)
    centre = 0.5 * (points.min(axis=0) + points.max(axis=0))
    cases = {
        "right": (points, ""),
        "small": (centre + 0.5 * (points - centre), ""),
        "shift x": (points + [0.03, 0.0, 0.0], ""),
        "shift y": (points + [0.0, 0.03, 0.0], ""),
        "shift z": (points + [0.0, 0.0, 0.03], ""),
    }
    if payload_name == "claw_hammer":
        cases["short box"] = (sample_points(parse_shape_spec(README_BOX)), "")
    cases["frame 90°"] = (points, "frame")
    cases["touching"] = (points, "touch")
    return cases


def _recording(run, change: str):
    rec = recording_from_run(run)
    if change == "frame":
        R = Rotation.from_euler("z", 90, degrees=True).as_matrix()
        w = rec.wrench.copy()
        w[:, :3], w[:, 3:] = w[:, :3] @ R.T, w[:, 3:] @ R.T
        return dataclasses.replace(rec, wrench=w)
    if change == "touch":
        w = rec.wrench.copy()
        w[rec.wrench_t >= rec.wrench_t[0] + 0.5 * (rec.wrench_t[-1] - rec.wrench_t[0]), 0] += 3.0
        return dataclasses.replace(rec, wrench=w)
    return rec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--robots", nargs="+", default=["panda", "xarm7"])
    ap.add_argument("--duration", type=float, default=10.0)
    args = ap.parse_args()
    t0 = time.perf_counter()
    results: dict[tuple[str, str], list[tuple[bool, bool, float, float, bool]]] = {}
    for robot in args.robots:
        for name in PAYLOADS:
            for seed in range(args.seeds):
                run = simulate(robot=robot, payload=name, trajectory="wrist", duration=args.duration,
                               noise="moderate", seed=200 + seed)
                for case, (points, change) in _cases(name).items():
                    recording = _recording(run, change)
                    methods = ("pmd",) if not change and case != "right" else ("wls", "pmd")
                    for method in methods:
                        options = {"c1": C1_DEFAULT} if method == "pmd" else {}
                        stream = stream_for_run(run, points, estimator=method, track_payload=False, **options)
                        play(stream, recording)
                        last = stream.last
                        if last is None:
                            continue
                        e = last.estimate
                        fit = e.model_fit
                        refused = not check_handover(e, inertia=True)
                        truth = get_payload(name).params
                        mass_err = abs(e.mass - truth.mass)
                        com_err = np.abs(e.com - truth.com)
                        off = mass_err > 3 * e.mass_std or bool(np.any(com_err > 3 * e.com_std))
                        results.setdefault((case, method), []).append(
                            (fit.checked and not fit.good, refused, 100 * mass_err / truth.mass,
                             1e3 * float(np.linalg.norm(com_err)), off and not refused))
    print(f"\nModel fit: {', '.join(args.robots)} holding {', '.join(PAYLOADS)}, Nadeau et al.'s excitation at cobot "
          f"speed, {args.duration:g} s, moderate noise, F/T offsets estimated, {args.seeds} seed(s).\n")
    print("| set-up | estimator | runs | model fit poor | hand-over refused | mass error % | COM error mm "
          "| silently wrong |")
    print("|---|---|---|---|---|---|---|---|")
    for (case, method), rows in results.items():
        poor = 100.0 * np.mean([r[0] for r in rows])
        refused = 100.0 * np.mean([r[1] for r in rows])
        label = "false alarms" if case == "right" else "detected"
        silent = 100.0 * np.mean([r[4] for r in rows])
        print(f"| {case} | {method} | {len(rows)} | {poor:.0f} % {label} | {refused:.0f} % | "
              f"{np.median([r[2] for r in rows]):.2f} | {np.median([r[3] for r in rows]):.1f} | {silent:.0f} % |")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
