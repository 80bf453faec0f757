"""Files the package writes, written atomically: a killed process never leaves half a file.

A URDF fragment, a plot, a JSON summary or a configuration file is first
written to a temporary file in the same directory, flushed and fsync'ed, then
renamed over the target (``os.replace``: atomic on POSIX and Windows), and the
directory is fsync'ed so the rename itself survives a power cut. A reader (a
controller loading the URDF, a person opening the plot) sees the old file or
the new one, never a torn one.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

__all__ = ["write_text_atomic", "write_bytes_atomic", "atomic_path", "check_writable_dir"]


def check_writable_dir(directory: str | os.PathLike[str]) -> Path:
    """``directory`` created if needed; ``OSError`` with a clear message if it cannot hold files.

    Commands call it before the work, so that a bad ``--out`` fails at once, not after a run.
    """
    path = Path(directory).expanduser()
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{path} exists and is not a directory")
    path.mkdir(parents=True, exist_ok=True)
    if not os.access(path, os.W_OK | os.X_OK):
        raise PermissionError(f"{path} is not writable")
    return path


def _fsync_dir(directory: Path) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:  # some platforms cannot open a directory: the rename is still atomic
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike[str]) -> Iterator[Path]:
    """Yield a temporary path beside ``path`` to write to (by any library).

    On success it replaces ``path`` atomically; on an exception it is removed and ``path`` is
    untouched."""
    target = Path(path).expanduser()
    directory = target.parent if str(target.parent) else Path(".")
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=directory)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        with open(tmp, "rb+") as fh:
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
        _fsync_dir(directory)
    finally:
        if tmp.exists():
            tmp.unlink()


def write_bytes_atomic(path: str | os.PathLike[str], data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (module docstring); returns the path."""
    target = Path(path).expanduser()
    with atomic_path(target) as tmp:
        tmp.write_bytes(data)
    return target


def write_text_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (module docstring); returns the path."""
    return write_bytes_atomic(path, text.encode("utf-8"))
