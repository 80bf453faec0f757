"""``payload-estimator simulate --out FILE``: write a simulated run for other tools.

The run (measured joint states, wrench and IMU, and the ground truth) is saved
as a single ``.npz`` (``SimulatedRun.load`` reads it back); ``--bag DIR``
writes it as a rosbag2 instead, with the topic names of the robot's
configuration, which ``ros2 bag play`` and ``payload-estimator replay`` accept.
"""

from __future__ import annotations

import argparse

from payload_estimator.commands import CommandError

__all__ = ["add_parser", "run"]


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    from payload_estimator.robots import ROBOT_NAMES
    from payload_estimator.sim.payloads import PAYLOADS

    p = sub.add_parser("simulate", help="write a simulated run (NPZ, or a rosbag2 with --bag)",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    target = p.add_mutually_exclusive_group(required=True)
    target.add_argument("--out", help="NPZ file to write")
    target.add_argument("--bag", help="rosbag2 directory to write")
    p.add_argument("--storage", choices=("mcap", "sqlite3"), default="mcap", help="rosbag2 storage (default mcap)")
    p.add_argument("--robot", choices=ROBOT_NAMES, default="panda")
    p.add_argument("--payload", choices=sorted(PAYLOADS), default="claw_hammer")
    p.add_argument("--trajectory", choices=("paper004", "thesis", "pickplace"), default="paper004")
    p.add_argument("--duration", type=float, default=10.0)
    p.add_argument("--noise", choices=("none", "low", "moderate", "high"), default="moderate")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--wrench-rate", type=float, default=None, help="F/T rate, Hz (default 1000)")
    p.add_argument("--no-imu", action="store_true")
    return p


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from payload_estimator.sim.mujoco_sim import simulate

    if not args.duration > 0:
        raise CommandError("--duration must be positive")
    if args.bag and Path(args.bag).exists():
        raise CommandError(f"{args.bag} exists; rosbag2 does not overwrite, choose another --bag")
    sim = simulate(robot=args.robot, payload=args.payload, trajectory=args.trajectory,
                   duration=args.duration, noise=args.noise, seed=args.seed,
                   wrench_rate_hz=args.wrench_rate, imu=not args.no_imu)
    if args.out:
        path = Path(args.out)
        if path.suffix != ".npz":
            path = path.with_suffix(".npz")
        sim.save(path)
        print(f"wrote {path}: {args.robot} + {args.payload}, {args.duration:g} s, "
              f"{len(sim.joint_t)} joint states, {len(sim.wrench_t)} wrenches, {len(sim.imu_t)} IMU samples")
        return 0
    try:
        from payload_estimator.sim.bag import write_simulated_bag
    except ModuleNotFoundError as exc:  # pragma: no cover - needs the sim extra
        raise CommandError(f"writing bags needs rosbags ({exc})") from None
    try:
        path = write_simulated_bag(sim, args.bag, storage=args.storage)
    except FileExistsError as exc:
        raise CommandError(str(exc)) from None
    print(f"wrote rosbag2 {path} ({args.storage})")
    return 0
