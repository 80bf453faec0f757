"""Files the package writes, written atomically, and the text files it reads, checked.

A killed process never leaves half a file; a text file that cannot be read is one line naming it.

A URDF fragment, a plot, a JSON summary or a configuration file is first
written to a temporary file in the same directory, flushed and fsync'ed, then
renamed over the target (``os.replace``: atomic on POSIX and Windows), and the
directory is fsync'ed so the rename itself survives a power cut. A reader (a
controller loading the URDF, a person opening the plot) sees the old file or
the new one, never a torn one. A target that exists and is no regular file (``/dev/null``, a
pipe) is refused: renaming over it would replace the device, not write to it.

:func:`read_text_file` reads a text file a user names (a URDF, a configuration, a calibration, a
trajectory): a missing file, a directory, a device, an empty or binary file is an
:class:`~payload_estimator.errors.InputError` whose one line names the file and what it should be.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from payload_estimator.errors import InputError

__all__ = ["write_text_atomic", "write_bytes_atomic", "atomic_path", "check_writable_dir", "read_text_file",
           "not_a_regular_file"]


def not_a_regular_file(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` exists and is neither a regular file nor a directory (a device, a pipe, a socket)."""
    target = Path(path).expanduser()
    return target.exists() and not target.is_file() and not target.is_dir()


def read_text_file(path: str | os.PathLike[str], what: str) -> str:
    """The UTF-8 text of the file ``path``; ``what`` says what it should be (e.g. "a URDF (XML)").

    Raises:
        InputError: one line naming the file: no such file, a directory, not a regular file, empty,
            not UTF-8 text, or unreadable.
    """
    target = Path(path).expanduser()
    if target.is_dir():
        raise InputError(f"{path}: a directory, expected {what}")
    if not target.exists():
        raise InputError(f"{path}: no such file")
    if not target.is_file():
        raise InputError(f"{path}: not a regular file (a device or a pipe), expected {what}")
    try:
        data = target.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    if not data.strip():
        raise InputError(f"{path}: empty file, expected {what}")
    try:
        return data.decode("utf-8-sig")  # a byte-order mark is no part of the text
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a text file (binary, or not UTF-8), expected {what}") from None


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
    if not_a_regular_file(target):
        raise OSError(f"{target} exists and is not a regular file (a device or a pipe): not replaced")
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
