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

``--run-lengths`` (and ``--quick``, its small version for CI) measures instead how the verdict depends on
the run's length: every built-in robot holds payloads from 13 g to 3 kg along Nadeau et al.'s excitation
(the simulator's F/T drift on, ``--ft-drift``), each run simulated at its own length (3, 8, 20 and 60 s;
``--long`` adds 600 and 3600 s) and estimated with PMD and the payload's own shape exactly as
``payload-estimator replay`` reads it from a simulated bag. The first table gives, per robot and
payload, the share of those right set-ups judged poor (false alarms, which refuse the hand-over) and
the median excess; the second, per wrong set-up of the claw hammer (the ones above, and the preset's
default ``payload_shape``, a 10 cm box, around the 28 cm tool), the share detected (the goal: at
least 95 %). ``--replay`` also writes each run of ``--replay-duration`` as a rosbag2 and replays it
with ``payload-estimator replay --json``: its false alarms, and how often its verdict is the Python
path's.

Run:  python benchmarks/model_fit.py --quick
      python benchmarks/model_fit.py --run-lengths [--seeds 3] [--long] [--replay]
(``PYTHONPATH=.`` from a git worktree: the script's own directory comes first on the path, so the package
would otherwise be the one installed.)
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import json
import tempfile
import time
from pathlib import Path

import figures
import numpy as np
from scipy.spatial.transform import Rotation

from payload_estimator.core.estimators import C1_DEFAULT
from payload_estimator.core.estimators.rating import EXCESS_LIMIT
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.shapes import format_shape_spec, parse_shape_spec, sample_points
from payload_estimator.outputs.handover import check_handover
from payload_estimator.pipeline.playback import play
from payload_estimator.robots import ROBOT_NAMES
from payload_estimator.settings import Settings
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import PAYLOADS as CATALOGUE
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import recording_from_run, stream_for_run
from payload_estimator.sim.workshop import get_tool

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
    ap.add_argument("--seeds", type=int, default=None, help="seeds per case (default 3; --quick 2)")
    ap.add_argument("--robots", nargs="+", default=None, choices=ROBOT_NAMES,
                    help="default panda xarm7; --run-lengths every built-in robot; --quick panda xarm7")
    ap.add_argument("--duration", type=float, default=10.0, help="s, of the default table's runs")
    study = ap.add_argument_group("run lengths (false alarms and detection against the run's length)")
    study.add_argument("--run-lengths", action="store_true", help="this study instead of the default table")
    study.add_argument("--quick", action="store_true",
                       help="its small version for CI (panda and xarm7, 13 g and 3 kg, 3 and 8 s, 2 seeds; "
                            "wrong set-ups at 8 s; panda's 8 s runs replayed from bags): a minute or two")
    study.add_argument("--durations", type=float, nargs="+", default=None, metavar="S",
                       help="run lengths, s (default 3 8 20 60; --quick 3 8)")
    study.add_argument("--long", action="store_true", help="add 600 and 3600 s runs (slow: minutes each)")
    study.add_argument("--payloads", nargs="+", default=None, metavar="NAME",
                       help=f"catalogue or workshop payloads (default {' '.join(STUDY_PAYLOADS)}; "
                            "--quick ws_precision_driver vise)")
    study.add_argument("--detect-payload", default="claw_hammer", metavar="NAME",
                       help="the payload of the wrong set-ups (default claw_hammer, the long tool)")
    study.add_argument("--ft-drift", type=float, default=1.0, metavar="FACTOR",
                       help="the simulator's F/T drift, times its default (default 1; 0: none)")
    study.add_argument("--first-seed", type=int, default=4, help="seeds from this one (default 4)")
    study.add_argument("--replay", action="store_true",
                       help="also replay each run of --replay-duration from a rosbag2 (payload-estimator replay)")
    study.add_argument("--replay-duration", type=float, default=8.0, metavar="S")
    figures.add_option(ap)
    args = ap.parse_args()
    if args.run_lengths or args.quick:
        run_lengths(args)
        return
    args.seeds = 3 if args.seeds is None else args.seeds
    args.robots = args.robots or ["panda", "xarm7"]
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
    key: dict[str, float] = {}
    for (case, method), rows in results.items():
        poor = 100.0 * np.mean([r[0] for r in rows])
        refused = 100.0 * np.mean([r[1] for r in rows])
        label = "false alarms" if case == "right" else "detected"
        silent = 100.0 * np.mean([r[4] for r in rows])
        mass, com = np.median([r[2] for r in rows]), np.median([r[3] for r in rows])
        print(f"| {case} | {method} | {len(rows)} | {poor:.0f} % {label} | {refused:.0f} % | "
              f"{mass:.2f} | {com:.1f} | {silent:.0f} % |")
        at = ("model_fit", "table", case, method)
        key[figures.name(*at, label + " pct")] = poor
        key[figures.name(*at, "silently_wrong_pct")] = silent
        if case == "right":
            key[figures.name(*at, "mass_pct")], key[figures.name(*at, "com_mm")] = mass, com
    figures.write(args.figures, key)
    print(f"\n({time.perf_counter() - t0:.0f} s)")



STUDY_PAYLOADS = ("ws_precision_driver", "claw_hammer", "vise")
"""13 g (the lightest tool near 20 g: the catalogue has nothing lighter but a 6 g allen key), 0.85 kg, 3 kg."""
QUICK_PAYLOADS = ("ws_precision_driver", "vise")
LONG_DURATIONS = (600.0, 3600.0)
DEFAULT_BOX = Settings().payload_shape
"""The presets' default ``payload_shape`` (config/*.yaml): a 10 cm box on the sensor face."""


def _payload(name: str):
    return CATALOGUE[name] if name in CATALOGUE else get_tool(name)


def _spec(name: str) -> str:
    """The payload's own shape as ``replay`` reads it from a simulated bag."""
    return format_shape_spec(_payload(name).envelope)


def _wrong_cases(name: str) -> dict[str, tuple[object, str]]:
    """Wrong set-up -> (PMD's points or a shape spec, what is done to the recording)."""
    cases = {k: v for k, v in _cases(name).items() if k != "right"}
    cases["default box"] = (DEFAULT_BOX, "")
    return cases


def _verdict(run, shape, change: str = ""):
    """(poor, excess, persistence, refused, mass error %, silently wrong) of PMD's last estimate, or None.

    Silently wrong: handed over although the mass or a COM component is more than 3 reported standard
    deviations off."""
    if isinstance(shape, str):
        stream = stream_for_run(run, payload_shape=shape, estimator="pmd")
    else:
        stream = stream_for_run(run, shape, estimator="pmd")
    play(stream, _recording(run, change))
    last = stream.last
    if last is None:
        return None
    e = last.estimate
    fit = e.model_fit
    truth = InertialParameters(run.payload_phi)
    refused = not (last.converged and check_handover(e, inertia=True))  # replay's URDF fragment needs both
    com_err = np.abs(e.com - truth.com)
    off = abs(e.mass - truth.mass) > 3 * e.mass_std or bool(np.any(com_err > 3 * e.com_std))
    return (bool(fit.checked and not fit.good), float(fit.excess), float(fit.persistence), refused,
            100.0 * abs(e.mass - truth.mass) / truth.mass, off and not refused)


def _replay_verdict(run, spec: str, workdir: Path) -> bool | None:
    """Whether ``payload-estimator replay --json`` of the run written as a rosbag2 judges the fit poor."""
    from payload_estimator.cli import main as cli_main
    from payload_estimator.sim.bag_writer import write_simulated_bag

    bag = workdir / f"bag{len(list(workdir.iterdir()))}"
    write_simulated_bag(run, bag)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        status = cli_main(["replay", str(bag), "--json", "--no-plot", "--shape", spec, "--out", str(workdir / "out")])
    if status != 0:
        return None
    fit = (json.loads(out.getvalue()).get("estimate") or {}).get("model_fit") or {}
    return fit.get("fit") == "poor"


def _cell(rows: list, k: int = 0) -> str:
    if not rows:
        return "–"
    return f"{100.0 * np.mean([r[k] for r in rows]):.0f} % of {len(rows)}"


def run_lengths(args: argparse.Namespace) -> None:
    """The run-length study (module docstring): false alarms on right shapes, detection of wrong ones."""
    quick = args.quick
    robots = args.robots or (["panda", "xarm7"] if quick else list(ROBOT_NAMES))
    payloads = args.payloads or list(QUICK_PAYLOADS if quick else STUDY_PAYLOADS)
    durations = list(args.durations or ([3.0, 8.0] if quick else [3.0, 8.0, 20.0, 60.0]))
    if args.long:
        durations += [d for d in LONG_DURATIONS if d not in durations]
    seeds = range(args.first_seed, args.first_seed + (args.seeds or (2 if quick else 3)))
    replay = args.replay or quick
    detect = args.detect_payload
    t0 = time.perf_counter()
    right: dict[tuple[str, str, float], list] = {}
    replayed: dict[tuple[str, str], list[tuple[bool, bool]]] = {}
    wrong: dict[tuple[str, float], list] = {}
    with tempfile.TemporaryDirectory(prefix="model_fit_") as tmp:
        workdir = Path(tmp)
        for robot in robots:
            for duration in durations:
                for seed in seeds:
                    for name in dict.fromkeys([*payloads, detect]):
                        run = simulate(robot=robot, payload=_payload(name), trajectory="wrist", duration=duration,
                                       noise="moderate", seed=seed, ft_drift=args.ft_drift)
                        verdict = _verdict(run, _spec(name))
                        if name in payloads and verdict is not None:
                            right.setdefault((robot, name, duration), []).append(verdict)
                            if replay and duration == args.replay_duration and (not quick or robot == robots[0]):
                                poor = _replay_verdict(run, _spec(name), workdir)
                                if poor is not None:
                                    replayed.setdefault((robot, name), []).append((poor, poor == verdict[0]))
                        if name != detect or (quick and duration != args.replay_duration):
                            continue
                        if verdict is not None:
                            wrong.setdefault(("right (false alarms)", duration), []).append(verdict)
                        for case, (shape, change) in _wrong_cases(name).items():
                            got = _verdict(run, shape, change)
                            if got is not None:
                                wrong.setdefault((case, duration), []).append(got)
    elapsed = time.perf_counter() - t0
    heads = " | ".join(f"{d:g} s" for d in durations)
    print(f"\nModel fit against run length: Nadeau et al.'s excitation at cobot speed, moderate noise, F/T drift "
          f"x{args.ft_drift:g}, F/T offsets estimated, PMD with the payload's own shape as replay reads it from a "
          f"simulated bag; seeds {seeds.start}-{seeds.stop - 1}.\n")
    print("False alarms: right shapes judged poor (hand-over refused), and the median excess "
          f"(poor above {EXCESS_LIMIT:g}).\n")
    replay_head = f" | replay {args.replay_duration:g} s: poor, agrees" if replayed else ""
    print(f"| robot | payload | {heads}{replay_head} |")
    print("|---|---|" + "---|" * len(durations) + ("---|" if replayed else ""))
    for robot in robots:
        for name in payloads:
            cells = []
            for d in durations:
                rows = right.get((robot, name, d), [])
                cells.append(f"{_cell(rows)} ({np.median([r[1] for r in rows]):.1f})" if rows else "–")
            extra = ""
            if replayed:
                rows = replayed.get((robot, name), [])
                extra = f" | {_cell(rows)}, {_cell(rows, 1)}" if rows else " | –"
            print(f"| {robot} | {name} ({1e3 * _payload(name).params.mass:.0f} g) | {' | '.join(cells)}{extra} |")
    cells = [_cell([r for (_, _, dd), rows in right.items() if dd == d for r in rows]) for d in durations]
    all_replayed = [r for rows in replayed.values() for r in rows]
    extra = f" | {_cell(all_replayed)}, {_cell(all_replayed, 1)}" if replayed else ""
    print(f"| **all** | | {' | '.join(cells)}{extra} |")
    key: dict[str, float] = {}
    for d in durations:
        rows = [r for (_, _, dd), rr in right.items() if dd == d for r in rr]
        if rows:
            key[figures.name("model_fit", "run_lengths", f"{d:g} s", "false_alarms_pct")] = 100.0 * np.mean(
                [r[0] for r in rows])
    if all_replayed:
        key[figures.name("model_fit", "run_lengths", "replay", "false_alarms_pct")] = 100.0 * np.mean(
            [r[0] for r in all_replayed])
        key[figures.name("model_fit", "run_lengths", "replay", "agrees_pct")] = 100.0 * np.mean(
            [r[1] for r in all_replayed])
    print(f"\nDetection: wrong set-ups of the {detect} judged poor (goal: at least 95 %; a shape shifted along "
          "the axis the tool fills need not be); after the slashes the share whose hand-over was refused (not "
          "converged, a poor fit, not identified or not physically consistent: no URDF fragment) and the share "
          "silently wrong (handed over with the mass or a COM component more than 3 reported std off; contacts "
          f"are held out by the payload tracker, as in the node), over {', '.join(robots)}.\n")
    print(f"| set-up | {heads} |")
    print("|---|" + "---|" * len(durations))
    for case in dict.fromkeys(c for c, _ in wrong):
        cells = [f"{_cell(rows)} / {100.0 * np.mean([r[3] for r in rows]):.0f} % / "
                 f"{100.0 * np.mean([r[5] for r in rows]):.0f} %" if rows else "–"
                 for rows in (wrong.get((case, d), []) for d in durations)]
        print(f"| {case} | {' | '.join(cells)} |")
        for d in durations:
            rows = wrong.get((case, d), [])
            if rows:
                at = ("model_fit", "run_lengths", case, f"{d:g} s")
                poor = "false_alarms_pct" if case.startswith("right") else "detected_pct"
                key[figures.name(*at, poor)] = 100.0 * np.mean([r[0] for r in rows])
                key[figures.name(*at, "silently_wrong_pct")] = 100.0 * np.mean([r[5] for r in rows])
    figures.write(args.figures, key)
    print(f"\n({elapsed:.0f} s)")


if __name__ == "__main__":
    main()
