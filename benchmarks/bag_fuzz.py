"""What ``payload-estimator replay`` makes of damaged bags: the fuzz sweep of test/test_user_bags.py, tallied.

A small recording (0.6 s of an xArm 7 holding the drill, written from scratch
with rosbags' Writer, mcap and sqlite3) is broken in each of the test's ways:
truncated storage files, flipped bytes, overwritten chunks, random bytes
instead of a storage file, a metadata.yaml that is missing, unreadable or
lies, messages that do not deserialize, and paths that are no bag at all.
Each case is replayed in-process (``--robot xarm7 --estimator ols --json``)
and classified:

* ``estimate``: exit status 0 and a finite estimate; every stderr line is the
  command's own (``payload-estimator replay: warning: ...``) or the stream's
  rate-limited input warning (``<stream>: ... [reason]``);
* ``estimate, one log line per bad message``: the same, with other lines;
* ``one-line exit 2``: exit status 2 and exactly one line, the command's error;
* ``exit 2, several lines``, ``traceback``: what must not happen.

The table compares nothing by itself: run it on two checkouts to compare, e.g.
this one and an older commit (the sweep's cases come from this checkout's test
file, the package from the other):

    python benchmarks/bag_fuzz.py
    git archive <commit> payload_estimator msg srv | tar -x -C /tmp/other
    PYTHONPATH=/tmp/other python benchmarks/bag_fuzz.py

Run:  python benchmarks/bag_fuzz.py [--cases] [--work DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import shutil
import sys
import tempfile
import traceback
from collections import Counter
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "test"))

import test_user_bags as cases  # noqa: E402  (the sweep's cases live with the test)

import payload_estimator  # noqa: E402
from payload_estimator.cli import main  # noqa: E402

PREFIX = "payload-estimator replay: "
HEALTH = re.compile(r"^\w+: .* \[\w+\]$")  # the stream's own rate-limited input warnings


def _bags(root: Path) -> dict[str, Path]:
    short = cases.simulate(robot="xarm7", payload="drill", duration=0.6, seed=9, wrench_rate_hz=250.0)
    recs = cases.recording(short)
    bags = {s: cases.write_bag(root / s, recs, s) for s in ("mcap", "sqlite3")}
    rng = np.random.default_rng(0)
    spoiled = [(t, topic, typ, rng.bytes(int(rng.integers(0, 40))) if k % 7 == 3 else msg)
               for k, (t, topic, typ, msg) in enumerate(recs)]
    bags["undecodable"] = cases.write_bag(root / "undecodable", spoiled, "mcap")
    bags["all_wrench_undecodable"] = cases.write_bag(
        root / "all_wrench_undecodable",
        [(t, topic, typ, b"\x00\x01" if topic == cases.WRENCH_TOPIC else msg) for t, topic, typ, msg in recs],
        "sqlite3")
    return bags


def _classify(rc: object, stdout: str, stderr: str) -> tuple[str, str]:
    """(category, the last line of the command's own output)."""
    lines = stderr.strip().splitlines()
    ours = [line for line in lines if not HEALTH.match(line)]
    last = ours[-1] if ours else ""
    if rc is None or "Traceback" in stderr:
        return "traceback", last
    if rc == 0:
        finite = bool(np.isfinite(json.loads(stdout)["estimate"]["mass"]))
        if not finite:
            return "non-finite estimate", last
        other = [line for line in ours if not line.startswith(PREFIX)]
        return ("estimate" if not other else "estimate, one log line per bad message"), last
    if rc == 2 and len(ours) == 1 and ours[0].startswith(PREFIX + "error: "):
        return "one-line exit 2", last
    return f"exit {rc}, several lines", last


def _group(case: str) -> str:
    if case.startswith("not_a_bag"):
        return "not a bag"
    if "undecodable" in case:
        return "messages that do not deserialize"
    if "metadata" in case or "storage_file" in case:
        return "metadata.yaml / file list"
    return "storage file damaged"


def main_() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cases", action="store_true", help="also print one row per case")
    ap.add_argument("--work", type=Path, help="keep the damaged bags here (default: a temporary directory)")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        root = args.work or Path(tmp)
        if args.work:
            shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True, exist_ok=True)
        bags = _bags(root / "base")
        rows = []
        for case, base, damage in cases.FUZZ_CASES:
            where = root / "cases" / case
            where.mkdir(parents=True)
            if base is None:
                bag = cases._not_a_bag(where, damage)
            else:
                bag = where / "bag"
                shutil.copytree(bags[base], bag)
                if damage is not None:
                    (cases.STORAGE_DAMAGE | cases.METADATA_DAMAGE)[damage](bag)
            out, err = io.StringIO(), io.StringIO()
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                try:
                    rc: object = main(["replay", str(bag), "--json", "--no-plot", "--out", str(where / "out"),
                                       "--robot", "xarm7", "--estimator", "ols"])
                except SystemExit as exc:
                    rc = exc.code
                except Exception:
                    rc = None
                    traceback.print_exc(file=err)
            category, last = _classify(rc, out.getvalue(), err.getvalue())
            rows.append((case, _group(case), category, last.replace(str(where), "<case>")))

    print(f"payload_estimator from {Path(payload_estimator.__file__).parent}")
    if args.cases:
        print(f"\n{'case':46s} {'outcome':40s} last line")
        for case, _, category, last in rows:
            print(f"{case:46s} {category:40s} {last[:110]}")
    categories = sorted({r[2] for r in rows})
    groups = sorted({r[1] for r in rows})
    tally = Counter((r[1], r[2]) for r in rows)
    width = max(len(g) for g in groups) + 2
    print(f"\n{'':{width}s}" + "".join(f"{c:>{max(len(c), 6) + 2}s}" for c in categories) + f"{'cases':>8s}")
    for g in groups:
        print(f"{g:{width}s}" + "".join(f"{tally[g, c]:>{max(len(c), 6) + 2}d}" for c in categories)
              + f"{sum(tally[g, c] for c in categories):>8d}")
    print(f"{'all':{width}s}" + "".join(f"{sum(tally[g, c] for g in groups):>{max(len(c), 6) + 2}d}"
                                        for c in categories) + f"{len(rows):>8d}")


if __name__ == "__main__":
    main_()
