"""Following the payload through a work cycle: detection delay, misses, false alarms, errors.

``sim.cycle.default_cycle``: an empty gripper picks paper 004's hammer (316 g), puts it down,
picks the workshop ruler (68 g), the drill (1.55 kg), and lets go; an 8 N sideways push on the
hammer for 0.6 s, a 5 N bump on the empty gripper for 0.2 s, the drill set down on a table (60-90 %
of its weight) for 2-3 s while still held. One continuous slow wrist motion (0.6 rad/s) at 100 Hz,
Table II moderate noise, constant F/T offsets (estimated). Each run is fed to a
``core.tracking.PayloadTracker`` in 0.1 s batches, as ``estimate --track`` does.

Per payload switch: detected (a change decided within 1 s), the delay from the switch to the flag,
and the mass / COM errors 1 s and 3 s after the switch (for a payload, not an empty gripper). Per
contact: flagged (held out as a contact, or ended as a change), and the largest move of the mass
estimate it caused (from just before it until 0.5 s after it). Then a steady run (the drill, no
change, no contact) for ``--hours`` of simulated time: false changes and contacts per hour.

Run:  python benchmarks/tracking.py [--seeds 5] [--hours 1] [--methods wls pmd]
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np

from payload_estimator.core.estimators import ESTIMATORS
from payload_estimator.core.shapes import Box, sample_parts
from payload_estimator.core.tracking import CHANGE, CONTACT, PayloadTracker
from payload_estimator.sim.cycle import Segment, default_cycle, simulate_cycle
from payload_estimator.sim.noise import get_noise
from payload_estimator.sim.payloads import get_payload
from payload_estimator.sim.workshop import get_tool

OFFSETS = np.array([0.5, -0.3, 0.2, 0.01, 0.02, -0.01])
BATCH = 10
def _box_around_the_cycle() -> Box:
    """PMD's shape: the box around every payload of the cycle (hammer, ruler, drill), 1 cm more."""
    envelopes = [get_payload("hammer").envelope, get_tool("ws_ruler").envelope, get_payload("drill").envelope]
    lo = np.min([e.bounds()[0] for e in envelopes], axis=0) - 0.01
    hi = np.max([e.bounds()[1] for e in envelopes], axis=0) + 0.01
    return Box(size=tuple(hi - lo), xyz=tuple(0.5 * (lo + hi)))


SHAPE = _box_around_the_cycle()


def _tracker(method: str) -> PayloadTracker:
    cls = ESTIMATORS[method]
    points = sample_parts(SHAPE) if cls.needs_points else None
    return PayloadTracker(lambda bias: cls.create(points, bias=bias), bias=True)


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


def cycle_rows(method: str, seeds: int) -> dict:
    delays, missed, false, switches, from_contacts = [], 0, 0, 0, 0
    err = {1.0: ([], []), 3.0: ([], [])}
    contact_moves, contacts_flagged, contacts = [], 0, 0
    for seed in range(seeds):
        segments, touches = default_cycle(seed)
        run = simulate_cycle(segments, touches, noise=get_noise("moderate"), ft_bias=OFFSETS,
                             rng=np.random.default_rng(1000 + seed))
        tracker = _tracker(method)
        t, mass, com = _follow(tracker, run.samples)
        changes = [e for e in tracker.events if e.kind == CHANGE]
        matched = set()
        for switch in run.t_changes:
            switches += 1
            hit = [i for i, e in enumerate(changes) if switch - 0.1 <= e.t_start <= switch + 1.0 and i not in matched]
            if not hit:
                missed += 1
                continue
            matched.add(hit[0])
            delays.append(changes[hit[0]].t_decided - switch)
            truth = run.truth_at(switch + 0.5)
            if truth.mass == 0.0:
                continue
            for after, (m_err, c_err) in err.items():
                k = min(np.searchsorted(t, switch + after), len(t) - 1)
                m_err.append(100.0 * abs(mass[k] / truth.mass - 1.0))
                c_err.append(1e3 * float(np.linalg.norm(com[k] - truth.com)))
        for i, e in enumerate(changes):
            if i in matched:
                continue
            if any(c.t_start - 0.1 <= e.t_start <= c.t_end + 0.5 for c in touches):
                from_contacts += 1  # a persistent contact ended as a change (flagged, by design)
            else:
                false += 1
        for c in touches:
            contacts += 1
            held = run.truth_at(c.t_start).mass
            flagged = any(e.t_start <= c.t_end and e.t_decided >= c.t_start for e in tracker.events
                          if e.kind in (CHANGE, CONTACT))
            contacts_flagged += int(flagged)
            if held > 0.0 and not any(c.t_start - 0.1 <= e.t_start <= c.t_end for e in changes):
                before = mass[max(np.searchsorted(t, c.t_start) - 1, 0)]
                window = (t >= c.t_start) & (t <= c.t_end + 0.5)
                contact_moves.append(100.0 * float(np.max(np.abs(mass[window] - before))) / held)
    return {
        "switches": switches, "missed": missed, "false": false, "from_contacts": from_contacts,
        "delay": (np.median(delays), np.max(delays)) if delays else (np.nan, np.nan),
        "err": {a: (np.mean(m), np.max(m), np.nanmean(c), np.nanmax(c)) for a, (m, c) in err.items()},
        "contacts": (contacts_flagged, contacts),
        "contact_move": max(contact_moves) if contact_moves else np.nan,
    }


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--hours", type=float, default=1.0, help="simulated hours of steady operation (0: skip)")
    ap.add_argument("--methods", nargs="+", default=["wls", "pmd"])
    args = ap.parse_args()
    t0 = time.perf_counter()
    print(f"\nWork cycle (sim.cycle.default_cycle), {args.seeds} seed(s), 0.6 rad/s, 100 Hz, Table II moderate "
          "noise, F/T offsets estimated and kept across changes.\n")
    print("| method | switches | missed | false changes | contacts ended as changes | delay median / worst, s "
          "| mass % 1 s (mean / worst) | COM mm 1 s | mass % 3 s | COM mm 3 s | contacts flagged "
          "| worst mass move in a contact, % |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for method in args.methods:
        r = cycle_rows(method, args.seeds)
        e1, e3 = r["err"][1.0], r["err"][3.0]
        delay = f"{r['delay'][0]:.2f} / {r['delay'][1]:.2f}"
        print(f"| {method} | {r['switches']} | {r['missed']} | {r['false']} | {r['from_contacts']} | {delay} "
              f"| {e1[0]:.2f} / {e1[1]:.2f} | {e1[2]:.1f} / {e1[3]:.1f} | {e3[0]:.2f} / {e3[1]:.2f} "
              f"| {e3[2]:.1f} / {e3[3]:.1f} | {r['contacts'][0]} of {r['contacts'][1]} | {r['contact_move']:.2f} |")
    if args.hours > 0:
        print(f"\nSteady operation: the drill held for {args.hours:g} h of simulated time (0.6 rad/s, moderate "
              "noise), no change, no contact.\n")
        print("| method | false changes per hour | contacts per hour | samples gated % | compute, s |")
        print("|---|---|---|---|---|")
        for method in args.methods[:1]:
            fc, ct, gated, secs = steady(method, args.hours)
            print(f"| {method} | {fc:.1f} | {ct:.1f} | {gated:.3f} | {secs:.0f} |")
    print(f"\n({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
