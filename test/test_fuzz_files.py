"""Property-based fuzzing of ``payload-estimator estimate FILE`` (through ``payload_estimator.cli.main``).

The files are a real sample table (the simulated wrist of Nadeau et al. with the hammer,
written by ``io.samples_file.write_samples``) spoilt at random: random bytes, text
and binary garbage, UTF-16, truncated CSV and NPZ files, empty and header-only files,
semicolon and tab separators, gigantic, tiny and non-finite numbers, duplicate
columns, NPZ arrays of the wrong dtype, shape or length; and transformed in ways the
format accepts: a UTF-8 BOM, extra columns anywhere, reordered columns, CRLF line
endings, extra NPZ arrays.

Invariants:

* ``main`` never raises and prints no warning: exit status 0, or 2 with exactly one
  line on stderr (``payload-estimator estimate: error: ...``), never a traceback;
* exit 0 prints one JSON object whose numbers are finite;
* a file in an accepted variant gives exactly the estimate of the plain file.

CI runs the property on a fixed set of examples (derandomised);
``benchmarks/fuzz_campaign.py`` runs it (:data:`PROPERTIES`) at scale.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
import tempfile
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from payload_estimator.cli import main
from payload_estimator.core.noise import TABLE_II
from payload_estimator.io.samples_file import COLUMNS, write_samples
from payload_estimator.sim.payloads import PAYLOADS
from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

CI = settings(
    max_examples=300,
    derandomize=True,
    database=None,
    deadline=None,
    print_blob=False,
    suppress_health_check=list(HealthCheck),
)
"""CI's profile: a fixed set of examples (derandomised), no database, no deadline."""

SHAPE = "box:0.25,0.05,0.04@0.06,0,0.02"  # the hammer's envelope
PREFIX = "payload-estimator estimate: error: "

ACCEPTED = ("bom", "extra_columns", "reordered", "crlf", "extra_arrays")
"""Variants of a good file that must give the very same estimate."""
SPOILERS = (
    "random_bytes", "random_text", "binary_inside", "utf16", "truncated_csv", "truncated_npz", "empty",
    "whitespace", "header_only", "semicolon", "tab", "gigantic", "duplicate_column", "npz_dtype",
    "npz_shape", "npz_length", "npz_missing", "not_npz",
)
HUGE_CELLS = ("1e308", "-1e308", "1.7976931348623157e308", "1e400", "-1e400", "9" * 400, "1e-400", "5e-324",
              "1e200", "-1e160", "1e30", "nan", "inf", "-Infinity", "NaN", "", " ", "0x10", "1,5", "1e", "--1")


@functools.cache
def good_files() -> tuple[bytes, bytes]:
    """(CSV bytes, NPZ bytes) of a clean 60-sample table, written by the package's own writer."""
    samples, _ = simulate_wrist(PAYLOADS["hammer"].params, WristTrajectory(1.0), duration=0.6,
                                noise=TABLE_II["moderate"], rng=np.random.default_rng(0))
    with tempfile.TemporaryDirectory() as d:
        write_samples(Path(d) / "s.csv", samples)
        write_samples(Path(d) / "s.npz", samples)
        return (Path(d) / "s.csv").read_bytes(), (Path(d) / "s.npz").read_bytes()


def csv_table() -> list[list[str]]:
    text = good_files()[0].decode()
    return [line.split(",") for line in text.splitlines()]


def npz_arrays() -> dict[str, np.ndarray]:
    with np.load(io.BytesIO(good_files()[1])) as npz:
        return {k: npz[k] for k in npz.files}


def npz_bytes(arrays: dict[str, Any]) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, **arrays)
    return buf.getvalue()


@dataclass(frozen=True)
class FileCase:
    """A file to estimate from: its suffix, content, the variant and the options."""

    suffix: str
    content: bytes
    variant: str
    method: str
    bias: bool

    def __repr__(self) -> str:
        head = self.content[:160]
        more = f"... ({len(self.content)} bytes)" if len(self.content) > 160 else ""
        return f"FileCase({self.variant!r}, {self.suffix!r}, {self.method}, bias={self.bias}, {head!r}{more})"


def _join(rows: list[list[str]], sep: str = ",", newline: str = "\n") -> bytes:
    return (newline.join(sep.join(r) for r in rows) + newline).encode()


@st.composite
def accepted_content(draw, suffix: str) -> tuple[bytes, str]:
    """A good file in one or more of the accepted variants."""
    if suffix == ".npz":
        arrays = npz_arrays()
        extra = draw(st.lists(st.sampled_from(["note", "id", "T", "f_x", "time"]), min_size=1, max_size=3,
                              unique=True))
        for name in extra:
            arrays[name] = draw(st.sampled_from([np.arange(3), np.zeros((2, 2)), np.array(["a", "b"]),
                                                 np.arange(len(arrays["t"])) * 1.0]))
        return npz_bytes(arrays), "extra_arrays"
    rows = csv_table()
    variants = draw(st.lists(st.sampled_from(("bom", "extra_columns", "reordered", "crlf")), min_size=1,
                             max_size=4, unique=True))
    if "reordered" in variants:
        order = draw(st.permutations(range(len(COLUMNS))))
        rows = [[r[i] for i in order] for r in rows]
    if "extra_columns" in variants:
        for _ in range(draw(st.integers(1, 3))):
            at = draw(st.integers(0, len(rows[0])))
            name = draw(st.sampled_from(["note", "id", "f_x", "T", "time", "", "t_ros"]))
            value = draw(st.sampled_from(["0", "text", "", "nan", "1e400", "x;y"]))
            rows = [r[:at] + [name if i == 0 else value] + r[at:] for i, r in enumerate(rows)]
    content = _join(rows, newline="\r\n" if "crlf" in variants else "\n")
    if "bom" in variants:
        content = b"\xef\xbb\xbf" + content
    return content, "+".join(sorted(variants))


@st.composite
def spoilt_content(draw, suffix: str) -> tuple[bytes, str]:
    how = draw(st.sampled_from(SPOILERS))
    csv_bytes, npz = good_files()
    rows = csv_table()
    if how == "random_bytes":
        return draw(st.binary(max_size=3000)), how
    if how == "random_text":
        return draw(st.text(max_size=500)).encode("utf-8", "surrogatepass"), how
    if how == "binary_inside":
        base = npz if suffix == ".npz" else csv_bytes
        at = draw(st.integers(0, len(base)))
        junk = draw(st.one_of(st.sampled_from([b"\x00", b"\xff\xfe", b"\x80", b"\xc3(", b"\x00\x00\x00"]),
                              st.binary(min_size=1, max_size=20)))
        return base[:at] + junk + base[at:], how
    if how == "utf16":
        return csv_bytes.decode().encode(draw(st.sampled_from(["utf-16", "utf-16-le", "utf-32"]))), how
    if how in ("truncated_csv", "truncated_npz"):
        base = npz if (how == "truncated_npz") else csv_bytes
        return base[: draw(st.integers(0, len(base) - 1))], how
    if how == "empty":
        return b"", how
    if how == "whitespace":
        return draw(st.sampled_from([b"\n", b"\n\n  \n", b"\t", b"\r\n", b" "])), how
    if how == "header_only":
        return _join(rows[:1]), how
    if how == "semicolon":
        return _join(rows, sep=";"), how
    if how == "tab":
        return _join(rows, sep="\t"), how
    if how == "gigantic":
        rows = [list(r) for r in rows]
        for _ in range(draw(st.integers(1, 8))):
            i = draw(st.integers(1, len(rows) - 1))
            j = draw(st.integers(0, len(COLUMNS) - 1))
            rows[i][j] = draw(st.sampled_from(HUGE_CELLS))
        if draw(st.booleans()):  # a whole column
            j = draw(st.integers(0, len(COLUMNS) - 1))
            cell = draw(st.sampled_from(HUGE_CELLS))
            for r in rows[1:]:
                r[j] = cell
        return _join(rows), how
    if how == "duplicate_column":
        j = draw(st.integers(0, len(COLUMNS) - 1))
        rows = [r + [r[j] if i == 0 else "nan"] for i, r in enumerate(rows)]
        return _join(rows), how
    arrays: dict[str, Any] = npz_arrays()
    name = draw(st.sampled_from(COLUMNS))
    if how == "npz_dtype":
        n = len(arrays[name])
        arrays[name] = draw(st.sampled_from([
            np.array(["x"] * n), arrays[name].astype(complex) + 1j, arrays[name].astype(np.float32),
            arrays[name].astype(np.int64), np.ones(n, dtype=bool), np.array([b"1"] * n),
            np.array([np.datetime64("2024-01-01")] * n), arrays[name].astype(np.float16),
        ]))
    elif how == "npz_shape":
        a = arrays[name]
        arrays[name] = draw(st.sampled_from([a.reshape(-1, 1), np.stack([a, a], axis=1), np.float64(a[0]),
                                             a[None, None, :], np.zeros((0,))]))
    elif how == "npz_length":
        arrays[name] = arrays[name][: draw(st.integers(0, len(arrays[name]) - 1))]
    elif how == "npz_missing":
        del arrays[name]
    elif how == "not_npz":  # an .npy, a zip of something else
        if draw(st.booleans()):
            buf = io.BytesIO()
            np.save(buf, np.zeros((3, 19)))
            return buf.getvalue(), how
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w") as z:
            z.writestr("t.npy", b"not an array")
        return buf.getvalue(), how
    return npz_bytes(arrays), how


@st.composite
def file_cases(draw) -> FileCase:
    suffix = draw(st.sampled_from([".csv", ".npz", ".txt"]))
    accepted = suffix != ".txt" and draw(st.integers(0, 3)) == 0
    content, variant = draw(accepted_content(suffix) if accepted else spoilt_content(suffix))
    method = draw(st.sampled_from(["ols", "wls", "rtls", "pmd"]))
    return FileCase(suffix, content, variant, method, draw(st.booleans()))


def run_cli(path: Path, method: str, bias: bool) -> tuple[int, str, str, list[str]]:
    """(exit status, stdout, stderr, warnings) of ``payload-estimator estimate PATH --json``."""
    argv = ["estimate", str(path), "--method", method, "--json"]
    if method == "pmd":
        argv += ["--shape", SHAPE, "--max-points", "30"]
    if bias:
        argv.append("--bias")
    out, err = io.StringIO(), io.StringIO()
    with warnings.catch_warnings(record=True) as caught, contextlib.redirect_stdout(out), \
            contextlib.redirect_stderr(err):
        warnings.simplefilter("always")
        code = main(argv)
    return code, out.getvalue(), err.getvalue(), [f"{w.category.__name__}: {w.message}" for w in caught]


@functools.cache
def reference_output(suffix: str, method: str, bias: bool) -> dict:
    csv_bytes, npz = good_files()
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"good{suffix}"
        path.write_bytes(npz if suffix == ".npz" else csv_bytes)
        code, out, err, _ = run_cli(path, method, bias)
    assert code == 0, err
    return json.loads(out)


def _all_finite(x: Any) -> bool:
    if isinstance(x, (list, tuple)):
        return all(_all_finite(v) for v in x)
    if isinstance(x, float):
        return math.isfinite(x)
    return True


def check_file_case(case: FileCase) -> None:
    """The CLI's answer to one file: exit 0 with finite JSON, or 2 with one clear line; nothing else."""
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"samples{case.suffix}"
        path.write_bytes(case.content)
        code, out, err, caught = run_cli(path, case.method, case.bias)
    assert not caught, f"warnings printed: {caught}"
    assert "Traceback" not in err, err
    assert code in (0, 2), f"exit status {code}"
    if code == 2:
        lines = err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(PREFIX), f"stderr is not one error line: {err!r}"
        assert not out, f"stdout on error: {out!r}"
        assert case.variant not in ACCEPTED and "+" not in case.variant, f"accepted variant refused: {err.strip()}"
        return
    assert not err, f"stderr on success: {err!r}"
    result = json.loads(out)
    for key in ("mass", "com", "inertia_com", "phi", "residual_rms", "bias", "phi_std"):
        assert _all_finite(result[key]), f"{key} not finite: {result[key]}"
    # a number, or null where the data do not determine it (and then said so)
    assert (result["mass"] is None) == (result["identification"]["mass"] == "not identified")
    assert result["mass"] is None or math.isfinite(result["mass"])
    if case.variant in ACCEPTED or "+" in case.variant:
        reference = reference_output(".npz" if case.suffix == ".npz" else ".csv", case.method, case.bias)
        assert result == reference, f"{case.variant}: a different estimate from the same data"


@CI
@given(file_cases())
@pytest.mark.slow
def test_estimate_command_on_fuzzed_files(case):
    check_file_case(case)


def test_accepted_variants_give_the_same_estimate():
    """A BOM, extra columns anywhere, reordered columns and CRLF at once: the very same estimate."""
    rows = csv_table()
    order = list(reversed(range(len(COLUMNS))))
    rows = [[("note" if i == 0 else "x")] + [r[k] for k in order] + [("id" if i == 0 else "7")]
            for i, r in enumerate(rows)]
    check_file_case(FileCase(".csv", b"\xef\xbb\xbf" + _join(rows, newline="\r\n"), "bom+crlf+extra_columns+reordered",
                             "pmd", True))


# ------------------------------------------- what the fuzzing found, pinned


def _cli_error(tmp_path: Path, name: str, content: bytes, method: str = "ols") -> str:
    path = tmp_path / name
    path.write_bytes(content)
    code, out, err, caught = run_cli(path, method, False)
    assert code == 2 and not out and not caught, (code, out, err, caught)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(PREFIX) and str(path) in lines[0], err
    return lines[0]


def test_binary_and_foreign_files_are_one_clear_line(tmp_path):
    """A binary file raised UnicodeDecodeError (a traceback); a cell beyond csv's field limit, csv.Error."""
    assert "not UTF-8 text" in _cli_error(tmp_path, "b.csv", b"\x89PNG\r\n\x1a\n\x00\xff\xfe")
    assert "not UTF-8 text" in _cli_error(tmp_path, "u.csv", good_files()[0].decode().encode("utf-16"))
    huge_cell = good_files()[0][:300] + b"9" * 200_000 + good_files()[0][300:]
    assert "field larger than field limit" in _cli_error(tmp_path, "h.csv", huge_cell)  # csv.Error
    assert "separated by semicolons" in _cli_error(tmp_path, "s.csv", good_files()[0].replace(b",", b";"))
    assert "separated by tabs" in _cli_error(tmp_path, "t.csv", good_files()[0].replace(b",", b"\t"))


def test_malformed_tables_are_one_clear_line(tmp_path):
    rows = csv_table()
    long_row = [list(r) for r in rows]
    long_row[5] = long_row[5][:3] + ["1", "5"] + long_row[5][4:]  # a decimal comma splits a cell
    assert "line 6 has 20 values, expected 19" in _cli_error(tmp_path, "l.csv", _join(long_row))
    twice = [r + [r[0]] for r in rows]
    assert "t given more than once" in _cli_error(tmp_path, "d.csv", _join(twice))
    arrays = npz_arrays()
    arrays["fx"] = arrays["fx"] + 1j  # numpy casts complex to real with a warning, silently dropping a part
    assert "complex128 values" in _cli_error(tmp_path, "c.npz", npz_bytes(arrays))
    buf = io.BytesIO()
    np.save(buf, np.zeros((3, 19)))
    assert "one array (.npy)" in _cli_error(tmp_path, "a.npz", buf.getvalue())  # left the file open


def test_gigantic_numbers_are_skipped_and_counted(tmp_path, capsys):
    """1e300 in a wrench overflowed the statistics (RuntimeWarnings, then a LinAlgError traceback)."""
    rows = [list(r) for r in csv_table()]
    rows[3][COLUMNS.index("fz")] = "1e300"
    rows[8][COLUMNS.index("wx")] = "-1e200"
    rows[9][COLUMNS.index("t")] = "1e400"  # inf
    path = tmp_path / "g.csv"
    path.write_bytes(_join(rows))
    code, out, err, caught = run_cli(path, "pmd", True)
    assert code == 0 and not err and not caught, (err, caught)
    result = json.loads(out)
    assert result["skipped_rows"] == 3 and result["samples_used"] == len(rows) - 1 - 3
    reference = reference_output(".csv", "pmd", True)
    assert result["mass"] == pytest.approx(reference["mass"], rel=0.05)


PROPERTIES = {"estimate FILE (CLI)": (file_cases(), check_file_case)}
"""Property name -> (strategy, check): what benchmarks/fuzz_campaign.py runs at scale."""
