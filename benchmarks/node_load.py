"""CPU share of the estimator node's pipeline on a replayed bag (1 kHz joint states + 1 kHz wrench).

A simulated run is written as a rosbag2 with the robot's real topic names and
read back (``rosbags``); then, with the messages already in memory, the exact
work of the node's timers is timed: every 10 ms of recorded time the queued
messages go through ``ros_inbound.feed_many`` into the stream and
``stream.process()`` runs; at ``publish_rate_hz`` the estimate is taken and
turned into the messages the node publishes (PayloadEstimate, InertiaStamped,
MarkerArray; DiagnosticArray at 1 Hz). The share is that CPU time over the
recording's duration. What rclpy itself costs (DDS, deserialization,
executor) is not in it; the closing note of the ROS work reports the whole
node measured under ROS.

Run:  python benchmarks/node_load.py [--robot panda] [--duration 20] [--estimator pmd]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from payload_estimator.core.shapes import format_shape_spec
from payload_estimator.io.bag import read_bag
from payload_estimator.io.interfaces import ros_typestore
from payload_estimator.io.ros_factories import rosbags_factory
from payload_estimator.io.ros_inbound import feed_many
from payload_estimator.io.ros_outbound import (
    diagnostic_array_msg,
    inertia_stamped_msg,
    marker_array_msg,
    payload_estimate_msg,
)
from payload_estimator.outputs.markers import estimate_markers
from payload_estimator.pipeline.build import build_stream, builtin_description
from payload_estimator.pipeline.driver import PROCESS_PERIOD_S
from payload_estimator.settings import settings_for_robot
from payload_estimator.sim.bag_writer import write_simulated_bag
from payload_estimator.sim.mujoco_sim import simulate
from payload_estimator.sim.payloads import get_payload

PARTS = {
    "input": "decoding the messages into the stream",
    "pipeline": "filters, kinematics, payload tracking, estimator updates",
    "estimates": "the estimates",
    "messages": "the published messages",
}
"""Where the loop's CPU time goes."""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--robot", default="panda")
    ap.add_argument("--payload", default="claw_hammer")
    ap.add_argument("--duration", type=float, default=20.0)
    ap.add_argument("--estimators", nargs="+", default=["pmd", "ols", "rtls"])
    ap.add_argument("--period", type=float, default=PROCESS_PERIOD_S, help="processing turn, s")
    args = ap.parse_args()

    payload = get_payload(args.payload)
    shape = format_shape_spec(payload.envelope)
    run = simulate(robot=args.robot, payload=args.payload, duration=args.duration, seed=0)
    factory = rosbags_factory(ros_typestore())
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for method in args.estimators:
            settings = settings_for_robot(args.robot, estimator=method, payload_shape=shape)
            bag = write_simulated_bag(run, Path(tmp) / f"bag_{method}", settings=settings)
            messages = list(read_bag(bag, settings))
            stream = build_stream(settings, builtin_description(settings), live=True)  # as the node builds it
            t0 = messages[0][2]
            period = args.period
            publish_every = max(1, int(round(1 / (settings.publish_rate_hz * period))))
            diag_every = max(1, int(round(1.0 / period)))
            pending: list = []
            tick = 0
            published = 0
            parts = dict.fromkeys(PARTS, 0.0)
            clock = time.process_time
            cpu0 = time.process_time()
            for kind, msg, t in messages:
                while t >= t0 + (tick + 1) * period:
                    tick += 1
                    c0 = clock()
                    feed_many(stream, pending)
                    pending.clear()
                    c1 = clock()
                    stream.process()
                    c2 = clock()
                    parts["input"] += c1 - c0
                    parts["pipeline"] += c2 - c1
                    if tick % publish_every == 0:
                        out = stream.update_estimate()
                        c3 = clock()
                        parts["estimates"] += c3 - c2
                        if out is not None:
                            sensor = stream.config.sensor_frame
                            payload_estimate_msg(factory, out, sensor, stream.config.flange_frame or sensor)
                            inertia_stamped_msg(factory, out.estimate.params, sensor, out.t)
                            est = stream.estimator
                            markers = estimate_markers(out.estimate.params, getattr(est, "points", None),
                                                       getattr(est, "masses", None), out.estimate.physically_consistent)
                            marker_array_msg(factory, markers, sensor, out.t)
                            published += 1
                        parts["messages"] += clock() - c3
                    if tick % diag_every == 0:
                        diagnostic_array_msg(factory, stream.diagnostics(now=t), "payload_estimator", t)
                pending.append((kind, msg, t))
            cpu = time.process_time() - cpu0
            recorded = messages[-1][2] - t0
            n_msgs = len(messages)
            final = stream.update_estimate().estimate
            err_mass = abs(final.mass - payload.mass) / payload.mass * 100
            rows.append((method, n_msgs / recorded, cpu / recorded * 100, n_msgs / cpu, published, err_mass,
                         {k: v / recorded * 100 for k, v in parts.items()}))

    print(f"\nNode pipeline on a replayed {args.robot} bag ({args.duration:g} s, joint states and wrench at 1 kHz, "
          "estimates and messages at 10 Hz):\n")
    print("| estimator | input messages/s (recorded) | CPU share of one core | messages/s it could take "
          "| estimates published | mass error % | of which (% of a core): " + ", ".join(PARTS.values()) + " |")
    print("|---|---|---|---|---|---|---|")
    for method, rate, share, capacity, published, err, split in rows:
        print(f"| {method} | {rate:,.0f} | {share:.1f} % | {capacity:,.0f} | {published} | {err:.2f} | "
              + " / ".join(f"{split[k]:.1f}" for k in PARTS) + " |")


if __name__ == "__main__":
    np.set_printoptions(precision=4)
    main()
