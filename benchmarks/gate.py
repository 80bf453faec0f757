"""CI's accuracy gate: the quick benchmarks' key figures against a committed baseline.

CI runs the accuracy benchmarks' quick modes with ``--figures FILE`` (``benchmarks/figures.py``), then this
script. Every figure of the baseline (``benchmarks/baseline.json``) must be in FILE and no worse than its
baseline value by more than its tolerance; a worse one, a missing one, or a baseline entry without a reason
fails CI. A figure better by more than its tolerance passes, with a note: update the baseline to keep the
gain. Figures the baseline does not hold yet are listed, not gated.

The baseline, one entry per figure::

    "figures": {"real_objects.moderate.pmd_own_cloud.mass_pct":
                {"value": 0.74, "tolerance": 0.04, "worse": "higher", "why": "..."}, ...}

``value`` is what the quick run gave; ``tolerance`` how far (in the figure's unit) it may move the worse way;
``worse`` is ``higher`` (errors, false alarms, missed or false events) or ``lower`` (detection, coverage,
agreement); ``why`` says where the value comes from: the change that last moved it.

A change that makes a figure worse on purpose (a trade-off) updates the baseline in the same commit and says
why::

    python benchmarks/gate.py FILE --update --why "what changed and why this figure may be worse now"

rewrites the value of every figure in FILE that moved (and adds new ones, with a tolerance and direction
from their name: :func:`default_tolerance`, :data:`WORSE_IF_LOWER`), giving each the reason; entries FILE
does not hold are kept, so one benchmark's figures can update their own entries.

Run:  python benchmarks/gate.py FIGURES [--baseline benchmarks/baseline.json] [--update --why TEXT]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping
from pathlib import Path

BASELINE = Path(__file__).resolve().parent / "baseline.json"
WORSE_IF_LOWER = ("detected_pct", "within_2sd_pct", "agrees_pct", "converged_pct")
"""Figure names ending in one of these get worse as they fall; every other figure as it rises."""
SHARE_SUFFIXES = (*WORSE_IF_LOWER, "false_alarms_pct", "silently_wrong_pct")
"""Shares of runs or estimates in %, as opposed to errors in %."""


def worse_direction(name: str) -> str:
    """``lower`` or ``higher``: which way the figure ``name`` gets worse."""
    return "lower" if name.endswith(WORSE_IF_LOWER) else "higher"


def default_tolerance(name: str, value: float) -> float:
    """The tolerance a new figure gets: how far its quick run may move without a change of the code.

    The quick modes are deterministic (fixed seeds). Other BLAS kernels moved one figure of all by 3e-6 of its
    value; other releases of the dependencies (OSQP, MuJoCo, scipy) may move them further. Errors and RMS z:
    5 % of the value, at least 0.01 (% or mm), far below the worsenings the gate is for (tens of %). Counts of
    events and shares of a few runs move by whole runs: 0 (one more false alarm is a worsening). Shares over
    many estimates (±2σ coverage, converged): 1 point, about one estimate of the smallest such pool.
    """
    if name.endswith("_count"):
        return 0.0
    if name.endswith(("within_2sd_pct", "converged_pct")):
        return 1.0
    if name.endswith(SHARE_SUFFIXES):
        return 0.0
    return round(max(0.05 * abs(value), 0.01), 4)


def load_json(path: Path) -> dict:
    with open(path) as f:
        return json.load(f)


def compare(baseline: Mapping[str, Mapping], figures: Mapping[str, float | None]) -> tuple[list[tuple], bool]:
    """Rows (figure, baseline, now, tolerance, verdict) and whether the gate passes."""
    rows, ok = [], True
    for name, entry in sorted(baseline.items()):
        value, tol, worse = float(entry["value"]), float(entry["tolerance"]), entry.get("worse", "higher")
        now = figures.get(name)
        if not str(entry.get("why", "")).strip():
            verdict, ok = "FAIL: the baseline entry gives no why", False
        elif name not in figures:
            verdict, ok = "FAIL: missing (the benchmark did not write it)", False
        elif now is None or not math.isfinite(now):
            verdict, ok = "FAIL: not a number", False
        else:
            change = (now - value) if worse == "higher" else (value - now)  # > 0: worse
            if change > tol + 1e-9 * max(1.0, abs(value)):
                verdict, ok = "FAIL: worse", False
            elif change < -tol - 1e-9 * max(1.0, abs(value)):
                verdict = "better (update the baseline to keep it)"
            else:
                verdict = "ok"
        rows.append((name, value, now, tol, verdict))
    for name in sorted(set(figures) - set(baseline)):
        rows.append((name, None, figures[name], None, "new: not in the baseline, not gated"))
    return rows, ok


def _number(v: float | None) -> str:
    return "–" if v is None else f"{v:.4g}"


def print_table(rows: list[tuple]) -> None:
    print("| figure | baseline | now | tolerance | verdict |")
    print("|---|---|---|---|---|")
    for name, value, now, tol, verdict in rows:
        print(f"| {name} | {_number(value)} | {_number(now)} | {_number(tol)} | {verdict} |")


def update(baseline: dict, figures: Mapping[str, float | None], why: str) -> list[str]:
    """Rewrite ``baseline``'s values from ``figures`` (in place); the names whose entry changed."""
    entries = baseline.setdefault("figures", {})
    changed = []
    for name, now in sorted(figures.items()):
        if now is None or not math.isfinite(now):
            continue
        entry = entries.get(name)
        if entry is None:
            entries[name] = {"value": now, "tolerance": default_tolerance(name, now), "worse": worse_direction(name),
                             "why": why}
        elif float(entry["value"]) != now:
            entry["value"], entry["why"] = now, why
        else:
            continue
        changed.append(name)
    baseline["figures"] = dict(sorted(entries.items()))
    return changed


def dumps(baseline: Mapping) -> str:
    """The baseline as JSON, one figure a line (a change of one is one line of the diff)."""
    lines = [f"  {json.dumps(name)}: {json.dumps(entry, ensure_ascii=False)}"
             for name, entry in baseline["figures"].items()]
    rest = {k: v for k, v in baseline.items() if k != "figures"}
    head = "".join(f" {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)},\n" for k, v in rest.items())
    return "{\n" + head + ' "figures": {\n' + ",\n".join(lines) + "\n }\n}\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("figures", type=Path, help="the JSON the benchmarks wrote with --figures")
    ap.add_argument("--baseline", type=Path, default=BASELINE, help=f"default {BASELINE.name} beside this script")
    ap.add_argument("--update", action="store_true", help="rewrite the baseline's values from FIGURES (needs --why)")
    ap.add_argument("--why", default="", help="with --update: why the values moved (kept in each entry changed)")
    args = ap.parse_args(argv)
    figures = load_json(args.figures)
    if args.update:
        if not args.why.strip():
            ap.error("--update needs --why: what changed, and why a figure may be worse now")
        baseline = load_json(args.baseline) if args.baseline.is_file() else {}
        changed = update(baseline, figures, args.why.strip())
        args.baseline.write_text(dumps(baseline))
        print(f"{args.baseline}: {len(changed)} of {len(baseline['figures'])} entries updated")
        return 0
    rows, ok = compare(load_json(args.baseline)["figures"], figures)
    print(f"\nAccuracy gate: {args.figures} against {args.baseline}\n")
    print_table(rows)
    failed = sum(r[4].startswith("FAIL") for r in rows)
    print(f"\n{'passed' if ok else f'FAILED: {failed} figure(s)'} ({len(rows)} rows). A worsening on purpose: "
          "update the baseline in the same commit, saying why (benchmarks/gate.py --update --why ...).")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
