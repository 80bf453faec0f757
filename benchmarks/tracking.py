"""Following the payload through a work cycle: detection delay, misses, false alarms, errors.

Two kinds of cycle, each fed to a ``core.tracking.PayloadTracker`` and scored by
``outputs.cycle_report.score_cycle`` (its docstring has the matching rules):

* **Sensor level** (``sim.cycle.default_cycle``): an empty gripper picks Nadeau et al.'s hammer
  (316 g), puts it down, picks the workshop ruler (68 g), the drill (1.55 kg), and lets go; an 8 N
  sideways push on the hammer for 0.6 s, a 5 N bump on the empty gripper for 0.2 s, the drill set
  down on a table (60-90 % of its weight) for 2-3 s while still held. One continuous slow wrist
  motion (0.6 rad/s) at 100 Hz, Table II moderate noise, constant F/T offsets; 0.1 s batches, as
  ``estimate --track`` feeds them.
* **On the MuJoCo arm** (``sim.arm_cycle.arm_work_cycle``, what ``demo --scenario cycle`` runs): the
  arm picks and places the claw hammer (845 g), the ruler (68 g), the drill and the hammer in
  turn, in ordinary pick-and-place motion (the wrist tilted 0.6 rad while carrying and while
  approaching the next part; the pick and the place at most 22 cm of arc from home, so a long arm
  such as the UR10e works as briskly as a short one); a push, a bump, the drill set down while held. The payload changes
  and the contacts happen in the physics engine; the whole robot pipeline runs (1 kHz joint
  states and wrench, filters, kinematics, 100 Hz estimator), with the F/T sensor's offsets
  drifting. Each cycle is run again without its contacts: how much further from the truth the
  mass estimate is with the contact than without it is what the contact did (its *extra error*;
  the contact's samples are lost either way, and that alone may move the estimate either way).

Per payload switch: detected (a change within 1 s), the delay from the switch to the flag, and the
mass and COM errors 1, 1.5 and 3 s after it (payloads of 300 g and more in %; the 68 g ruler in g).
Per contact: flagged (held out, or ended as a change), the worst mass error while it lasts (and
0.5 s after), and on the arm its extra error. Then a steady run (the drill, no change, no contact)
for ``--hours`` of simulated time: false changes and contacts per hour.

With ``--real-arm`` (and ``--irregular-stamps``) the arm runs are also made from a real arm's joint torques
(``demo --real-arm``: what a calibrated model leaves of them, correlated with the pose and the speed, 1.5-4 N·m
on the shoulder and elbow, at 100 Hz every 2-30 ms with the second option).

Last, ``--arm-hours`` of one payload on each MuJoCo arm (``--arm-robots``), exactly as a user runs
``payload-estimator demo --duration 3600 --json`` (the default estimator, the tracker on), once with the
F/T sensor (its offsets drifting) and once from the joint torques: there the arm is unlike its URDF
(links' masses +-15 %, COMs +-1 cm), its friction is not the calibration's law, and it is calibrated
unloaded on another motion first, so the residuals carry correlated model error for the whole run.
Per run: false changes and contacts (there are none to find), samples held out, whether the final
estimate converged, and its mass and COM errors.

Run:  python benchmarks/tracking.py [--seeds 5] [--arm-seeds 3] [--hours 1] [--methods wls pmd rls]
                                    [--robots panda xarm7 ur5e ur10e] [--arm-hours 1]
                                    [--arm-robots panda fr3 xarm7 xarm6] [--jobs 2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace

import figures
import numpy as np

from payload_estimator.core.estimators import ESTIMATORS, make_estimator
from payload_estimator.core.noise import get_noise
from payload_estimator.core.shapes import Box, sample_parts
from payload_estimator.core.tracking import PayloadTracker
from payload_estimator.outputs.cycle_report import CycleScore, score_cycle
from payload_estimator.pipeline.playback import play
from payload_estimator.settings import Settings
from payload_estimator.sim.arm_cycle import arm_work_cycle, box_around
from payload_estimator.sim.cycle import CYCLE_TRAJECTORY, Segment, default_cycle, simulate_cycle, transfer_cycle
from payload_estimator.sim.mujoco_sim import WorkSchedule
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.run_settings import recording_from_run, stream_for_run

OFFSETS = np.array([0.5, -0.3, 0.2, 0.01, 0.02, -0.01])
BATCH = 10
HEAVY_KG = 0.3
"""Payloads from this mass on are scored in %; lighter ones (the 68 g ruler) in g."""


SHAPE = box_around(("hammer", "ws_ruler", "drill"))
"""PMD's shape at sensor level: the box around every payload of the cycle, 1 cm more."""
TRANSFER_SHAPE = box_around(("drill", "claw_hammer", "hammer"))
"""... and of the cycle of transfers."""


def _tracker(method: str, shape: Box = SHAPE) -> PayloadTracker:
    cls = ESTIMATORS[method]
    points = sample_parts(shape) if cls.needs_points else None
    window = Settings().offset_window_s  # as the node runs them
    return PayloadTracker(lambda bias: make_estimator(method, points, bias=bias, offset_window_s=window), bias=True)


def _follow(tracker: PayloadTracker, samples) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t, mass, com (n, 3)) after each batch."""
    t, mass, com = [], [], []
    for k in range(0, len(samples), BATCH):
        tracker.update(samples.select(slice(k, k + BATCH)))
        est = tracker.estimate()
        t.append(float(samples.t[min(k + BATCH, len(samples)) - 1]))
        mass.append(est.params.mass)
        com.append(est.params.com if est.params.mass > 1e-3 else np.full(3, np.nan))
    return np.array(t), np.array(mass), np.array(com)


def sensor_scores(method: str, seeds: int) -> list[CycleScore]:
    scores = []
    for seed in range(seeds):
        segments, touches = default_cycle(seed)
        run = simulate_cycle(segments, touches, noise=get_noise("moderate"), ft_bias=OFFSETS,
                             rng=np.random.default_rng(1000 + seed))
        tracker = _tracker(method)
        t, mass, com = _follow(tracker, run.samples)
        scores.append(score_cycle(run.t_changes, [seg.name for seg in segments[1:]],
                                  [seg.payload.phi for seg in segments[1:]],
                                  [(c.name, c.t_start, c.t_end) for c in touches], tracker.events, t, mass, com,
                                  mass_before=segments[0].payload.mass))
    return scores


def transfer_scores(method: str, seeds: int, speed: float) -> list[CycleScore]:
    """Scores of sensor-level cycles whose grasps and releases take 0 to 1 s (sim.cycle.transfer_cycle)."""
    scores = []
    for seed in range(seeds):
        segments, contacts, starts, ends = transfer_cycle(seed)
        run = simulate_cycle(segments, contacts, trajectory=replace(CYCLE_TRAJECTORY, mean_ang_vel=speed),
                             noise=get_noise("moderate"), ft_bias=OFFSETS, rng=np.random.default_rng(2000 + seed))
        tracker = _tracker(method, TRANSFER_SHAPE)
        t, mass, com = _follow(tracker, run.samples)
        scores.append(score_cycle(ends, [seg.name for seg in segments[1:]], [seg.payload.phi for seg in segments[1:]],
                                  [], tracker.events, t, mass, com, mass_before=0.0, transfer_start_t=starts))
    return scores


def _arm_history(run, method: str, shape: Box):
    stream = stream_for_run(run, shape, estimator=method)
    tracker = stream.estimator
    rows: list = []
    play(stream, recording_from_run(run), on_estimate=lambda o: rows.append((o.t, o.estimate.mass, o.estimate.com)))
    t = np.array([r[0] for r in rows])
    return tracker, t, np.array([r[1] for r in rows]), np.array([r[2] for r in rows])


def arm_scores(method: str, robot: str, seeds: int) -> tuple[list[CycleScore], list[float]]:
    """Scores of the MuJoCo cycles, and the extra mass error of each contact on a held payload that
    no change answered: from the contact's start to 0.5 s after its end, the largest excess of the
    mass estimate's error over that of the same cycle without contacts (relative to the mass; 0 when
    the contact made it no worse)."""
    scores, disturbances = [], []
    for seed in range(seeds):
        cycle = arm_work_cycle(robot, seed=seed)
        run = cycle.simulate(noise="moderate", seed=seed, imu=False)
        tracker, t, mass, com = _arm_history(run, method, cycle.envelope)
        contacts = [(c.name, c.t_start, c.t_end) for c in cycle.contacts]
        score = score_cycle(cycle.transfer_ends, [name for _, name in cycle.held], cycle.phi_after(), contacts,
                            tracker.events, t, mass, com, mass_before=cycle.first.mass,
                            transfer_start_t=cycle.transfer_starts)
        scores.append(score)
        calm = replace(cycle, schedule=WorkSchedule(cycle.schedule.changes, ()))
        _, t2, mass2, _ = _arm_history(calm.simulate(noise="moderate", seed=seed, imu=False), method, cycle.envelope)
        for c in score.contacts:
            held = run.phi_at(c.t_start)[0, 0]
            if c.outcome != "contact" or held <= 0.0:
                continue
            window = (t >= c.t_start) & (t <= c.t_end + 0.5)
            other = np.interp(t[window], t2, mass2)
            excess = np.abs(mass[window] - held) - np.abs(other - held)
            disturbances.append(max(float(np.max(excess)), 0.0) / held)
    return scores, disturbances


def _cells(scores: list[CycleScore]) -> list[str]:
    switches = [s for sc in scores for s in sc.switches]
    delays = np.concatenate([sc.delays for sc in scores])
    heavy = [s for s in switches if s.mass >= HEAVY_KG]
    light = [s for s in switches if 0.0 < s.mass < HEAVY_KG]

    def pct(after: float) -> str:
        e = np.abs([100.0 * s.mass_error[after] for s in heavy])
        return f"{e.mean():.2f} / {e.max():.2f}" if e.size else "-"

    def com_mm(after: float) -> str:
        e = np.array([s.com_error_mm[after] for s in heavy])
        return f"{np.nanmean(e):.1f} / {np.nanmax(e):.1f}" if e.size else "-"

    light_g = np.abs([1e3 * s.mass_error[1.5] * s.mass for s in light])
    contacts = [c for sc in scores for c in sc.contacts]
    errors = [c.mass_error for c in contacts if np.isfinite(c.mass_error)]
    return [
        str(len(switches)), str(sum(sc.missed for sc in scores)), str(sum(len(sc.false_changes) for sc in scores)),
        str(sum(sc.changes_from_contacts for sc in scores)),
        f"{np.median(delays):.2f} / {delays.max():.2f}" if delays.size else "-",
        pct(1.0), pct(1.5), com_mm(3.0), f"{light_g.max():.1f}" if light_g.size else "-",
        f"{sum(c.outcome != 'missed' for c in contacts)} of {len(contacts)}",
        str(sum(len(sc.false_contacts) for sc in scores)),
        f"{100 * max(errors):.2f}" if errors else "-",
    ]


def _figures(scores: list[CycleScore], *at: object) -> dict[str, float]:
    """The key figures of a table's row (benchmarks/figures.py): missed and false events, errors after a change."""
    switches = [s for sc in scores for s in sc.switches]
    heavy = [s for s in switches if s.mass >= HEAVY_KG]
    out = {
        figures.name("tracking", *at, "missed_count"): sum(sc.missed for sc in scores),
        figures.name("tracking", *at, "false_changes_count"): sum(len(sc.false_changes) for sc in scores),
        figures.name("tracking", *at, "contacts_as_changes_count"): sum(sc.changes_from_contacts for sc in scores),
        figures.name("tracking", *at, "false_contacts_count"): sum(len(sc.false_contacts) for sc in scores),
    }
    if heavy:
        out[figures.name("tracking", *at, "mass_1_5_s_pct")] = np.mean([abs(100.0 * s.mass_error[1.5]) for s in heavy])
        out[figures.name("tracking", *at, "com_3_s_mm")] = np.nanmean([s.com_error_mm[3.0] for s in heavy])
    return out


HEADER = ("| method | switches | missed | false changes | contacts ended as changes | delay median / worst, s "
          f"| mass % 1 s (mean / worst, >= {HEAVY_KG:g} kg) | mass % 1.5 s | COM mm 3 s | ruler g 1.5 s (worst) "
          "| contacts flagged | false contacts | worst mass error in a contact, % |")


def steady(method: str, hours: float) -> tuple[float, float, float, float]:
    """False changes and contacts per hour, share of samples gated, seconds of compute."""
    drill = get_payload("drill")
    total_s = 3600.0 * hours
    tracker = _tracker(method)
    t0 = time.perf_counter()
    chunk_s, done = 600.0, 0.0
    rng = np.random.default_rng(7)
    n = 0
    while done < total_s - 1e-9:
        length = min(chunk_s, total_s - done)
        run = simulate_cycle((Segment(drill.params, length, "drill"),), noise=get_noise("moderate"),
                             ft_bias=OFFSETS, rng=rng)
        samples = run.samples
        # the next chunk continues the clock (the motion restarts; the payload and offsets stay)
        samples = replace(samples, t=samples.t + done)
        for k in range(0, len(samples), BATCH):
            tracker.update(samples.select(slice(k, k + BATCH)))
        n += len(samples)
        done += length
    c = tracker.counts
    return c.changes / hours, c.contacts / hours, 100.0 * c.gated_samples / n, time.perf_counter() - t0


def steady_arm(robot: str, source: str, hours: float, seed: int = 0) -> dict:
    """``payload-estimator demo`` for ``hours`` on ``robot`` from ``source`` (ft_sensor or joint_torques):
    its JSON summary."""
    with tempfile.TemporaryDirectory(prefix="payload_estimator_steady_") as out:  # the demo's files: not kept
        wrench, *real = source.split("+")  # joint_torques+real_arm[+irregular_stamps]: a real arm's torques
        command = [sys.executable, "-m", "payload_estimator.cli", "demo", "--robot", robot, "--wrench-source", wrench,
                   "--duration", f"{3600.0 * hours:g}", "--seed", str(seed), "--no-plot", "--json", "--track",
                   "--out", out, *(f"--{flag.replace('_', '-')}" for flag in real)]
        done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout)


def _steady_arm_row(robot: str, source: str, summary: dict) -> str:
    if "error" in summary:
        return f"| {robot} | {source} | failed: {summary['error']} |"
    counts, errors = summary["tracking"], summary["errors_percent"]
    com_mm = 1e3 * float(np.linalg.norm(np.subtract(summary["estimate"]["com"], summary["truth"]["com"])))
    converged = "yes" if summary["converged"] else ("mass and COM" if summary.get("mass_com_converged_after_s")
                                                    is not None else "no")
    return (f"| {robot} | {source} | {counts['changes']} | {counts['contacts']} | {counts['held_out_samples']} "
            f"| {converged} | {errors['mass']:.2f} | {com_mm:.1f} | {summary['wall_time_s']:.0f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5, help="sensor-level cycles per method")
    ap.add_argument("--transfer-seeds", type=int, default=3, help="sensor-level cycles with load transfers (0: skip)")
    ap.add_argument("--arm-seeds", type=int, default=3, help="MuJoCo arm cycles per method and robot (0: skip)")
    ap.add_argument("--robots", nargs="+", default=["panda", "xarm7"])
    ap.add_argument("--hours", type=float, default=1.0, help="simulated hours of steady operation (0: skip)")
    ap.add_argument("--methods", nargs="+", default=["wls", "pmd", "rls"])
    ap.add_argument("--arm-hours", type=float, default=1.0,
                    help="simulated hours of one payload on each MuJoCo arm, F/T and joint torques (0: skip)")
    ap.add_argument("--arm-robots", nargs="+", default=["panda", "fr3", "xarm7", "xarm6"])
    ap.add_argument("--jobs", type=int, default=2, help="demo runs at once (--arm-hours)")
    ap.add_argument("--real-arm", action="store_true",
                    help="--arm-hours also from the joint torques of a real arm (demo --real-arm: what a calibrated "
                         "model leaves, 1.5-4 N·m on the shoulder and elbow)")
    ap.add_argument("--irregular-stamps", action="store_true",
                    help="... and of a real arm at 100 Hz with irregular stamps (demo --irregular-stamps)")
    figures.add_option(ap)
    args = ap.parse_args()
    key: dict[str, float] = {}
    t0 = time.perf_counter()
    sep = "|" + "---|" * (HEADER.count("|") - 1)
    if args.seeds > 0:
        print(f"\nSensor-level work cycle (sim.cycle.default_cycle), {args.seeds} seed(s), 0.6 rad/s, 100 Hz, "
              "Table II moderate noise, constant F/T offsets, estimated and kept across changes.\n")
        print(HEADER)
        print(sep)
        for method in args.methods:
            scores = sensor_scores(method, args.seeds)
            print("| " + " | ".join([method, *_cells(scores)]) + " |")
            key |= _figures(scores, "sensor_level", method)
    if args.transfer_seeds > 0:
        print(f"\nLoads that take time (sim.cycle.transfer_cycle), {args.transfer_seeds} seed(s): the drill, the "
              "claw hammer and the hammer picked and placed, by a step, a gripper closing or a lift-off from a "
              "table (and set down on it), each transfer 0 to 1 s; the delay runs from the transfer's end. Slow "
              "wrist motion (0.15 rad/s, rotations of about 0.1 Hz) and ordinary (0.6 rad/s), Table II moderate "
              "noise, constant F/T offsets.\n")
        print(HEADER.replace("| method |", "| method | rad/s |"))
        print(sep + "---|")
        for method in args.methods:
            for speed in (0.15, 0.6):
                scores = transfer_scores(method, args.transfer_seeds, speed)
                print("| " + " | ".join([method, f"{speed:g}", *_cells(scores)]) + " |")
                key |= _figures(scores, "transfers", method, f"{speed:g} rad/s")
    if args.arm_seeds > 0:
        print(f"\nWork cycle on the MuJoCo arm (sim.arm_cycle.arm_work_cycle), {args.arm_seeds} seed(s) per robot, "
              "1 kHz joint states and wrench through the robot pipeline, Table II moderate noise, F/T offsets "
              "drifting.\n")
        print(HEADER.replace("| method |", "| robot | method |") + " extra mass error from a contact, worst % |")
        print(sep + "---|---|")
        for robot in args.robots:
            for method in args.methods:
                scores, disturbances = arm_scores(method, robot, args.arm_seeds)
                worst = f"{100 * max(disturbances):.2f}" if disturbances else "-"
                print("| " + " | ".join([robot, method, *_cells(scores), worst]) + " |")
                key |= _figures(scores, "arm", robot, method)
    if args.hours > 0:
        print(f"\nSteady operation: the drill held for {args.hours:g} h of simulated time (0.6 rad/s, moderate "
              "noise), no change, no contact.\n")
        print("| method | false changes per hour | contacts per hour | samples gated % | compute, s |")
        print("|---|---|---|---|---|")
        for method in args.methods[:1]:
            fc, ct, gated, secs = steady(method, args.hours)
            print(f"| {method} | {fc:.1f} | {ct:.1f} | {gated:.3f} | {secs:.0f} |")
            key[figures.name("tracking", "steady", method, "false_changes_per_hour_count")] = fc
            key[figures.name("tracking", "steady", method, "false_contacts_per_hour_count")] = ct
    if args.arm_hours > 0:
        print(f"\nOne payload (the claw hammer, 845 g) held for {args.arm_hours:g} h on each MuJoCo arm: "
              "`payload-estimator demo --duration ... --json` (PMD, the tracker on), 1 kHz joint states, F/T offsets "
              "drifting; joint torques: the arm unlike its URDF, friction unlike the calibration's law, calibrated "
              "unloaded first. Nothing changes and nothing touches it.\n")
        print("| robot | wrench from | false changes | false contacts | samples held out | converged at the end "
              "| mass error % | COM error mm | wall time, s |")
        print("|---|---|---|---|---|---|---|---|---|")
        sources = ("ft_sensor", "joint_torques", *(("joint_torques+real_arm",) if args.real_arm else ()),
                   *(("joint_torques+real_arm+irregular_stamps",) if args.irregular_stamps else ()))
        cases = [(robot, source) for robot in args.arm_robots for source in sources]
        with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
            summaries = list(pool.map(lambda case: steady_arm(*case, args.arm_hours), cases))
        for (robot, source), summary in zip(cases, summaries):
            print(_steady_arm_row(robot, source, summary))
            if "error" not in summary:
                at = ("tracking", "steady_arm", robot, source)
                counts, truth = summary["tracking"], summary["truth"]["com"]
                key[figures.name(*at, "false_changes_count")] = counts["changes"]
                key[figures.name(*at, "false_contacts_count")] = counts["contacts"]
                key[figures.name(*at, "mass_pct")] = summary["errors_percent"]["mass"]
                key[figures.name(*at, "com_mm")] = 1e3 * np.linalg.norm(np.subtract(summary["estimate"]["com"], truth))
    figures.write(args.figures, key)
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
