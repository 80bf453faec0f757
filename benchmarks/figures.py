"""Key accuracy figures of a benchmark's run, for CI's regression gate (``benchmarks/gate.py``).

A benchmark given ``--figures FILE`` adds its key figures to the JSON object in FILE (made when missing):
name -> value. Accuracy only: errors (% or mm), false-alarm, detection and coverage shares, counts of
missed or false events; never a time. A name is the benchmark's, then what was run, then what was measured,
and ends in its unit (``_pct``, ``_mm``, ``_count``, ``_rms``); ``gate.py --update`` reads from it which
direction is worse for a figure it has not seen (see ``gate.WORSE_IF_LOWER``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path


def add_option(parser: argparse.ArgumentParser) -> None:
    """``--figures FILE`` on a benchmark's command line."""
    parser.add_argument("--figures", metavar="FILE", default=None,
                        help="add this run's key accuracy figures to the JSON object in FILE (CI's accuracy gate, "
                             "benchmarks/gate.py)")


def name(*parts: object) -> str:
    """A figure's name: the parts lower-cased, each run of other characters than letters and digits an ``_``,
    joined by dots (``name("real_objects", "moderate", "PMD, own cloud", "mass_pct")``)."""
    return ".".join(re.sub(r"[^a-z0-9]+", "_", str(p).lower()).strip("_") for p in parts)


def write(path: str | os.PathLike | None, figures: Mapping[str, float]) -> None:
    """Add ``figures`` to the JSON object in ``path`` (nothing when ``path`` is None); a NaN is written as null."""
    if not path:
        return
    target = Path(path)
    data = json.loads(target.read_text()) if target.is_file() and target.stat().st_size else {}
    for key, value in figures.items():
        v = float(value)
        data[key] = float(f"{v:.6g}") if math.isfinite(v) else None
    fd, tmp = tempfile.mkstemp(dir=target.parent if str(target.parent) else ".", prefix=".figures_")
    with os.fdopen(fd, "w") as f:
        json.dump(dict(sorted(data.items())), f, indent=1)
        f.write("\n")
    os.replace(tmp, target)
