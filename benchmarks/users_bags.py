"""A user's bag, replayed as a user would: no shape configured, only the robot's own topics.

For every built-in robot, MuJoCo simulates the arm holding a payload along Nadeau et al.'s wrist
excitation (moderate noise, the F/T offset drifting as the simulator's default); the bag a user would
record is written anew by rosbags' ``Writer`` with the robot's joint states and wrench only (no
``/robot_description``, no ground truth, no IMU, no shape). ``payload-estimator replay BAG --robot R`` then
runs with the preset's default ``payload_shape`` (a 10 cm box at the flange) and the default estimator,
PMD, and again with ``--estimator wls`` (no shape at all) and with the payload's own shape.

Columns: the mass error (%), the COM error (mm), the model fit and whether the estimate was handed over
(``ok``: a URDF fragment written). A box that cannot hold the payload must leave mass and COM as least
squares finds them, say so (poor) and hand nothing over.

Run:  python benchmarks/users_bags.py [--robots panda xarm7 ...] [--payloads claw_hammer drill vise]
      [--duration 10] [--seed 3]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import tempfile
import time
from pathlib import Path

import figures
import numpy as np

from payload_estimator.cli import main as cli
from payload_estimator.core.shapes import format_shape_spec
from payload_estimator.robots import ROBOT_NAMES
from payload_estimator.sim.payloads import get_payload

KEPT_TYPES = ("sensor_msgs/msg/JointState", "geometry_msgs/msg/WrenchStamped")


def users_bag(source: Path, target: Path) -> Path:
    """``source``'s joint states and wrench only, in a rosbag2 written anew by rosbags' Writer."""
    from rosbags.highlevel import AnyReader
    from rosbags.rosbag2 import Writer
    from rosbags.typesys import Stores, get_typestore

    typestore = get_typestore(Stores.ROS2_JAZZY)
    with AnyReader([source]) as reader, Writer(target, version=9) as writer:
        connections = [c for c in reader.connections if c.msgtype in KEPT_TYPES]
        out = {c.id: writer.add_connection(c.topic, c.msgtype, typestore=typestore) for c in connections}
        for connection, stamp, raw in reader.messages(connections=connections):
            writer.write(out[connection.id], stamp, raw)
    return target


def replay(bag: Path, out: Path, *args: str) -> dict | None:
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(io.StringIO()):
        rc = cli(["replay", str(bag), "--json", "--no-plot", "--out", str(out), *args])
    return json.loads(stdout.getvalue()) if rc == 0 else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robots", nargs="+", default=list(ROBOT_NAMES), choices=list(ROBOT_NAMES))
    ap.add_argument("--payloads", nargs="+", default=["claw_hammer", "drill", "vise"])
    ap.add_argument("--duration", type=float, default=10.0, help="seconds of motion per bag (default 10)")
    ap.add_argument("--seed", type=int, default=3)
    figures.add_option(ap)
    args = ap.parse_args()
    key: dict[str, float] = {}
    t0 = time.perf_counter()
    print(f"\nA user's bag (joint states and wrench only, {args.duration:g} s, Nadeau et al.'s excitation, moderate "
          f"noise, seed {args.seed}), replayed with --robot only: mass error % / COM error mm, model fit, handed "
          "over.\n")
    print("| robot | payload | PMD, the preset's box (no shape set) | WLS (no shape) | PMD, the payload's shape |")
    print("|---|---|---|---|---|")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        for robot in args.robots:
            for name in args.payloads:
                sim = Path(tmp) / f"{robot}_{name}_sim"
                with contextlib.redirect_stdout(io.StringIO()):
                    cli(["simulate", "--bag", str(sim), "--robot", robot, "--payload", name,
                         "--duration", str(args.duration), "--seed", str(args.seed)])
                bag = users_bag(sim, Path(tmp) / f"{robot}_{name}")
                truth = get_payload(name).params
                cells = []
                for setup, extra in (("preset box", ()), ("wls", ("--estimator", "wls")),
                                     ("own shape", ("--shape", format_shape_spec(get_payload(name).envelope)))):
                    s = replay(bag, Path(tmp) / "out", "--robot", robot, *extra)
                    if s is None:
                        cells.append("failed")
                        continue
                    est = s["estimate"]
                    mass = 100.0 * abs(est["mass"] - truth.mass) / truth.mass
                    com_err = None if None in est["com"] else np.linalg.norm(np.array(est["com"]) - truth.com)
                    com = "n/a" if com_err is None else f"{1e3 * com_err:.1f}"
                    if not extra:
                        worst = max(worst, mass)
                    ok = "handed over" if s["status"].startswith("ok") else "refused"
                    cells.append(f"{mass:.2f} / {com}, {est['model_fit']['fit']}, {ok}")
                    key[figures.name("users_bags", robot, name, setup, "mass_pct")] = mass
                    if com_err is not None:
                        key[figures.name("users_bags", robot, name, setup, "com_mm")] = 1e3 * com_err
                print(f"| {robot} | {name} | " + " | ".join(cells) + " |", flush=True)
    print(f"\nWorst mass error with the preset's box: {worst:.2f} % ({time.perf_counter() - t0:.0f} s)")
    figures.write(args.figures, key)


if __name__ == "__main__":
    main()
