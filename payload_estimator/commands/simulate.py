r"""``payload-estimator simulate --out FILE``: write a simulated run for other tools.

The run (measured joint states, wrench and IMU, and the ground truth) is saved
as a single ``.npz`` file (numpy.load reads it); ``--bag DIR``
writes it as a rosbag2 instead, with the topic names of the robot's
configuration, which ``ros2 bag play`` and ``payload-estimator replay`` accept.

``--scenario cycle``: the work cycle of ``demo --scenario cycle`` (four payloads picked and
placed, contacts); the truth of each payload is recorded at its change (the NPZ's
``truth_change_t``/``truth_phis``, the bag's ``/payload_estimator/ground_truth`` at each change),
and ``--payload``, ``--trajectory`` and ``--duration`` do not apply.

For the joint-torque path (no wrist sensor), ``--efforts`` makes the joint efforts a real robot's:
friction, effort noise, and an arm unlike its URDF (``--arm-seed`` picks which one); ``--payload
none`` is the unloaded arm. A calibration bag (the unloaded arm on the motion that ``excite --for
calibration`` designs: every joint at least as fast as in the other motion) and an estimation bag of
the same arm:

    payload-estimator excite --for calibration --robot xarm7 \
        --out cal_motion.csv
    payload-estimator simulate --bag cal --robot xarm7 --payload none \
        --efforts --trajectory cal_motion.csv
    payload-estimator simulate --bag est --robot xarm7 --efforts \
        --trajectory thesis --seed 2
    payload-estimator calibrate cal --out cal.yaml
    payload-estimator replay est --set wrench_source=joint_torques \
        --set arm_calibration=cal.yaml
"""

from __future__ import annotations

import argparse

from payload_estimator.commands import CommandError
from payload_estimator.commands.common import (
    SIM_RATE_HZ,
    add_effort_arguments,
    add_robot_arguments,
    add_trajectory_arguments,
    check_out_file,
    effort_model,
    ft_drift,
    joint_stamps,
    nonnegative_int,
    resolve_trajectory,
    robot_from_args,
    wrench_rate,
)

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """Add the ``simulate`` command and its options to ``sub``; return its parser."""
    from payload_estimator.sim.payloads import PAYLOADS

    p = sub.add_parser("simulate", help="write a simulated run (NPZ, or a rosbag2 with --bag)",
                       description=__doc__)
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", metavar="FILE", help="NPZ file to write (its directory must exist)")
    target.add_argument("--bag", metavar="DIR", help="rosbag2 directory to write (must not exist yet)")
    p.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap", help="rosbag2 storage (default mcap)")
    add_robot_arguments(p)
    # "none": sim.mujoco_sim.NO_PAYLOAD (not imported here: MuJoCo loads with the run, not with --help)
    p.add_argument("--payload", choices=[*sorted(PAYLOADS), "none"], default="claw_hammer", metavar="NAME",
                   help=f"what the arm holds, from the catalogue: {', '.join(sorted(PAYLOADS))} (default "
                        "claw_hammer); none: nothing (a calibration run)")
    add_trajectory_arguments(p)
    p.add_argument("--noise", choices=("none", "low", "moderate", "high"), default="moderate",
                   help="sensor noise (F/T force and torque, IMU accelerations), a level of Nadeau et al.'s "
                        "Table II (default moderate)")
    p.add_argument("--seed", type=nonnegative_int, default=0, help="seed of every random draw, >= 0 (default 0)")
    p.add_argument("--wrench-rate", type=wrench_rate, default=None,
                   help=f"F/T rate, Hz, a divisor of the {SIM_RATE_HZ:g} Hz joint-state rate (default {SIM_RATE_HZ:g})")
    p.add_argument("--ft-drift", type=ft_drift, default=1.0, metavar="FACTOR",
                   help="how many times the simulator's default F/T offset drift (0.1 %% of the payload's weight per "
                        "second per axis, plus a random walk): 0 for a constant offset, 10 for a sensor warming "
                        "up fast (default 1)")
    p.add_argument("--no-imu", action="store_true", help="record no IMU on the sensor (default: one is recorded)")
    p.add_argument("--scenario", choices=("single", "cycle"), default="single",
                   help="single: one payload throughout (default); cycle: picks and places of four payloads "
                        "with contacts")
    add_effort_arguments(p)
    return p


def run(args: argparse.Namespace) -> int:
    """Run ``simulate`` with the parsed ``args``; return the exit status."""
    from pathlib import Path

    from payload_estimator.sim.mujoco_sim import simulate

    # the outputs are checked before the work: a bad --out or --bag fails at once, not after the run
    if args.out:
        path = check_out_file(args.out)
        path = check_out_file(path if path.suffix == ".npz" else path.with_suffix(".npz"))
    else:
        from payload_estimator.sim.bag_writer import write_simulated_bag

        if Path(args.bag).exists():
            raise CommandError(f"--bag {args.bag}: exists; rosbag2 does not overwrite, choose another --bag")
        check_out_file(args.bag, option="--bag")
    arm = robot_from_args(args)  # a built-in robot's name, or the spec of an arm from its URDF
    try:
        efforts, mismatch = effort_model(arm, args)
    except ValueError as exc:
        raise CommandError(f"--efforts: {exc}") from None
    if args.scenario == "cycle":
        if efforts is not None or args.irregular_stamps:
            raise CommandError("--efforts and --irregular-stamps apply to --scenario single (the work cycle has "
                               "no effort model)")
        from dataclasses import replace

        from payload_estimator.sim.arm_cycle import arm_work_cycle

        sim = arm_work_cycle(arm, seed=args.seed).simulate(
            noise=args.noise, seed=args.seed, rate_hz=SIM_RATE_HZ, wrench_rate_hz=args.wrench_rate,
            imu=not args.no_imu, ft_drift=args.ft_drift)
        sim = replace(sim, payload_name="work cycle")
        args.payload, args.duration = "a work cycle", sim.duration
    else:
        _, trajectory, args.duration, _ = resolve_trajectory(arm, args.trajectory, args.duration,
                                                                 seed=args.seed)
        sim = simulate(robot=arm, payload=args.payload, trajectory=trajectory,
                       duration=args.duration, noise=args.noise, seed=args.seed,
                       wrench_rate_hz=args.wrench_rate, imu=not args.no_imu, efforts=efforts,
                       arm_mismatch=mismatch, ft_drift=args.ft_drift, **joint_stamps(args))
    if args.out:
        sim.save(path)
        print(f"wrote {path}: {args.robot} + {args.payload}, {args.duration:g} s, "
              f"{len(sim.joint_t)} joint states, {len(sim.wrench_t)} wrenches, {len(sim.imu_t)} IMU samples")
        return 0
    try:
        path = write_simulated_bag(sim, args.bag, storage=args.storage, settings=_bag_settings(arm))
    except FileExistsError as exc:
        raise CommandError(str(exc)) from None
    what = f", efforts {sim.effort_model} (arm seed {args.arm_seed})" if efforts is not None else ""
    print(f"wrote rosbag2 {path} ({args.storage}): {args.robot} + {args.payload}, {args.duration:g} s{what}")
    return 0


def _bag_settings(arm):  # -> Settings | None
    """Return the topics and wrench source a bag is written with.

    A built-in robot's preset (None), or, for an arm from its URDF, the defaults of an arm known from
    its description."""
    if isinstance(arm, str):
        return None
    from payload_estimator.settings import settings_for_robot

    return settings_for_robot("", flange_frame=arm.flange_frame)
