"""Fuzzing campaign: the properties of test/test_fuzz_stream.py and test/test_fuzz_files.py at scale.

CI runs each property on a few dozen to a few hundred fixed examples; this script runs
the same properties (their ``PROPERTIES`` tables: a hypothesis strategy and a check
function each) on many more generated cases, counting every case whose check fails
instead of stopping at the first, and prints a table: property, cases run, failures,
and each distinct failure (exception type and first line) with how often it occurred.

* stream via ROS messages: rosbags messages through ``ros_inbound.feed``/``feed_many``
* stream via arrays: ``push_joint_states``/``push_wrench``/``push_imu`` in batches
* estimators on adversarial SensorSamples: update(...), then estimate()
* estimate FILE: random, binary, truncated, BOM, semicolon, extra-column, gigantic-number
  CSV and NPZ files through ``payload_estimator.cli.main``

Cases are generated (hypothesis, no shrinking) from a fixed seed, so a run is
reproducible. ``--shrink`` then re-runs each failing property with shrinking and
prints hypothesis's minimal failing example.

Run:  python benchmarks/fuzz_campaign.py [--cases N] [--seed S] [--only SUBSTRING] [--shrink]
      (default: 2,500 cases per property, 5,000 for the files: 12,500 in total; about 10 minutes)
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
import time
import traceback
import warnings
from collections import Counter
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "test"))

import test_fuzz_files  # noqa: E402
import test_fuzz_stream  # noqa: E402

PROPERTY_TABLES = (test_fuzz_stream.PROPERTIES, test_fuzz_files.PROPERTIES)
CASES_PER_PROPERTY = {  # the stream properties cost ~100 ms a case, the others a few ms
    "estimate FILE (CLI)": 2.0,
    "estimators on adversarial SensorSamples": 1.0,
}


def describe(exc: BaseException) -> str:
    """Exception type and the first line of its message, where it was raised."""
    first = (str(exc).strip().splitlines() or [""])[0]
    first = re.sub(r"/tmp/[^ '\"]*/", "<tmp>/", first)  # temporary directories differ case by case
    if len(first) > 110:
        first = first[:107] + "..."
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" [{Path(tb[-1].filename).name}:{tb[-1].lineno}]" if tb else ""
    return f"{type(exc).__name__}: {first}{where}"


def run_property(strategy, check, cases: int, seed_value: int) -> tuple[int, int, Counter, float]:
    """Run ``check`` on ``cases`` generated cases; (cases run, failures, failure kinds, seconds)."""
    runs, failures, kinds = 0, 0, Counter()

    @seed(seed_value)
    @settings(max_examples=cases, database=None, deadline=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=False)
    @given(strategy)
    def campaign(case):
        nonlocal runs, failures
        runs += 1
        try:
            check(case)
        except Exception as exc:  # noqa: BLE001 - every failure is counted, none stops the campaign
            failures += 1
            kinds[describe(exc)] += 1

    t0 = time.perf_counter()
    campaign()
    return runs, failures, kinds, time.perf_counter() - t0


def shrink(name: str, strategy, check, cases: int, seed_value: int) -> None:
    """Re-run a property with shrinking; hypothesis prints the minimal failing example."""

    @seed(seed_value)
    @settings(max_examples=cases, database=None, deadline=None, suppress_health_check=list(HealthCheck),
              report_multiple_bugs=True, print_blob=False)
    @given(strategy)
    def minimal(case):
        check(case)

    print(f"\n=== {name}: minimal failing examples ===", flush=True)
    try:
        minimal()
    except BaseException as exc:  # noqa: BLE001 - an ExceptionGroup when several distinct bugs
        for sub in getattr(exc, "exceptions", [exc]):
            print(f"  {describe(sub)}")
            for note in getattr(sub, "__notes__", []):
                print("    " + note.replace("\n", "\n    "))
    else:
        print("  (no failure found while shrinking)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=2500, help="cases per stream property (default 2500)")
    parser.add_argument("--seed", type=int, default=20240612, help="generation seed (default 20240612)")
    parser.add_argument("--only", default="", help="run only properties whose name contains this")
    parser.add_argument("--shrink", action="store_true", help="print minimal failing examples")
    args = parser.parse_args()
    logging.getLogger("payload_estimator").setLevel(logging.CRITICAL)  # counted in health; not printed
    warnings.simplefilter("ignore")  # numpy's overflow warnings; the file property records its own

    rows = []
    for table in PROPERTY_TABLES:
        for name, (strategy, check) in table.items():
            if args.only not in name:
                continue
            cases = int(args.cases * CASES_PER_PROPERTY.get(name, 1.0))
            runs, failures, kinds, seconds = run_property(strategy, check, cases, args.seed)
            rows.append((name, runs, failures, kinds, seconds))
            print(f"{name}: {runs} cases, {failures} failures, {seconds:.0f} s", file=sys.stderr, flush=True)
            if failures and args.shrink:
                shrink(name, strategy, check, min(cases, 500), args.seed)

    width = max((len(r[0]) for r in rows), default=8)
    print(f"\n{'property':<{width}}  {'cases run':>9}  {'failures':>8}  {'time (s)':>8}")
    print(f"{'-' * width}  {'-' * 9}  {'-' * 8}  {'-' * 8}")
    for name, runs, failures, _, seconds in rows:
        print(f"{name:<{width}}  {runs:>9}  {failures:>8}  {seconds:>8.0f}")
    total_runs, total_failures = sum(r[1] for r in rows), sum(r[2] for r in rows)
    print(f"{'total':<{width}}  {total_runs:>9}  {total_failures:>8}  {sum(r[4] for r in rows):>8.0f}")
    for name, _, failures, kinds, _ in rows:
        if failures:
            print(f"\n{name}: distinct failures")
            for kind, n in kinds.most_common():
                print(f"  {n:>6}  {kind}")
    return 1 if total_failures else 0


if __name__ == "__main__":
    sys.exit(main())
