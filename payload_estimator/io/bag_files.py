"""The storage files of a rosbag2 recording, opened without ROS through ``rosbags``.

A bag as users have it: the storage files themselves are the truth, not
``metadata.yaml``. Each storage file (``.mcap``, ``.db3``) is opened on its
own and the messages of all files are merged in record order, so that

* a bag split by ``ros2 bag record --max-bag-duration/--max-bag-size`` is read
  whole, whatever order its files are listed in;
* a ``metadata.yaml`` that is missing (a recording still being written or
  killed), unreadable, or that lists files which are not there, or topics,
  QoS profiles or counts the files do not hold, changes nothing but a note;
* a storage file cut off (an MCAP file without its footer: the recording was
  interrupted) or damaged (an SQLite database "malformed" past some page) is
  read as far as it goes (:mod:`~payload_estimator.io.bag_salvage`), with a
  note saying where it stops (messages read, time into the recording);
* a storage file that cannot be read at all is left out with a note, and the
  bag is refused only when no file can be read; reading that fails in the
  middle of a file (a damaged chunk) ends that file with a note;
* only the wanted topics are ever deserialized, with ROS 2 Jazzy's types: other
  topics, their custom message types and whatever definitions the bag carries
  for them (unparseable, or with hashes ``rosbags`` does not reproduce) are
  never touched. A message that does not deserialize is skipped and counted.

Notes and problems are one line each (:attr:`BagFiles.notes`, and the
:attr:`~payload_estimator.io.bag.BagReading.notes` of a reading).
Compressed bags (``--compression-mode file`` or ``message``) are read through
``rosbags``' own directory reader, which decompresses them.

:class:`BagFiles` opens them and yields the raw messages of chosen topics in record order;
what a bag holds (its inputs, description, ground truth, joint states) is read through it by
:mod:`~payload_estimator.io.bag`. Times: record times in ns, as rosbag2 stores them.
"""

from __future__ import annotations

import heapq
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePath
from typing import Any

from payload_estimator.errors import BagError

__all__ = ["BagFiles", "STORAGE_SUFFIXES", "jazzy_typestore", "name_list"]

STORAGE_SUFFIXES = {".mcap": "mcap", ".db3": "sqlite3"}
"""Storage file name suffix -> storage plugin."""
MCAP_CUT = "cut off: no MCAP footer (the recording was interrupted or is still being written)"


def _one_line(text: object, limit: int = 240) -> str:
    line = " ".join(str(text).split())
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _reason(exc: BaseException, file: str) -> str:
    """Why a storage file cannot be read, for a person: one line."""
    text = _one_line(exc.args[0] if exc.args and isinstance(exc.args[0], str) else exc) or type(exc).__name__
    if file.endswith(".mcap"):
        truncated = isinstance(exc, OSError) and not isinstance(exc, PermissionError)  # seek before the start
        if truncated or "end magic" in text or "footer" in text.lower():
            return MCAP_CUT
        if "magic is invalid" in text:
            return "not an MCAP file"
        if "seems to be empty" in text:
            return "empty file"
    if file.endswith(".db3") and ("malformed" in text or "not a database" in text or "missing tables" in text):
        return f"not a readable SQLite database, cut off or damaged ({text.split(': ')[-1]})"
    return f"{text} ({type(exc).__name__})" if type(exc).__name__ not in text else text


def _load_metadata(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """(rosbag2_bagfile_information, problem): the metadata when usable, else why not (one line)."""
    meta = path / "metadata.yaml"
    if not meta.is_file():
        return None, "no metadata.yaml"
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's, when PyYAML has it: 20x faster
    try:
        doc = yaml.load(meta.read_bytes().decode("utf-8"), Loader=loader)  # a safe loader
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        return None, f"metadata.yaml unreadable ({_one_line(getattr(exc, 'problem', None) or exc, 80)})"
    info = doc.get("rosbag2_bagfile_information") if isinstance(doc, dict) else None
    if not isinstance(info, dict):
        return None, "metadata.yaml has no rosbag2_bagfile_information"
    return info, None


def _custom_data(info: dict[str, Any] | None) -> dict[str, str]:
    data = (info or {}).get("custom_data") or {}
    return {str(k): str(v) for k, v in data.items()} if isinstance(data, dict) else {}


def name_list(names: list[str], shown: int = 3) -> str:
    """``names`` for a message: the first ``shown`` of them, and how many more."""
    return ", ".join(names[:shown]) + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _natural_key(p: Path) -> tuple[Any, ...]:
    """rec_2.mcap before rec_10.mcap."""
    return tuple(int(s) if s.isdigit() else s for s in re.split(r"(\d+)", p.name))


def _listed_files(path: Path, info: dict[str, Any]) -> list[Path] | None:
    names = info.get("relative_file_paths")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        return None
    return [path / PurePath(n).name for n in names]


def _storage_reader(file: Path, storage: str | None = None):
    """An unopened ``rosbags`` reader of one storage file (by suffix, else by ``storage``)."""
    from rosbags.rosbag2.storage_mcap import McapReader
    from rosbags.rosbag2.storage_sqlite3 import Sqlite3Reader

    kind = STORAGE_SUFFIXES.get(file.suffix, storage)
    if kind == "mcap":
        return McapReader(file)
    if kind == "sqlite3":
        return Sqlite3Reader(file)
    return None


def _salvage(file: Path, kind: str | None, reason: str) -> tuple[Any | None, str]:
    """Open a storage file ``rosbags`` refused with a reader of what it holds, when it is cut off or damaged.

    Returns:
        (reader, reason): the open reader (:mod:`~payload_estimator.io.bag_salvage`), or None and why not.
    """
    from payload_estimator.io.bag_salvage import CutMcapReader, DamagedSqlite3Reader

    if kind == "mcap" and reason == MCAP_CUT:
        reader: Any = CutMcapReader(file)
    elif kind == "sqlite3" and reason.startswith("not a readable SQLite database, cut off or damaged"):
        reader = DamagedSqlite3Reader(file)
    else:
        return None, reason
    try:
        reader.open()
    except BagError as exc:  # nothing readable in it: why (one line)
        return None, str(exc)
    except Exception as exc:  # anything else the damage makes the salvaging reader meet: unreadable
        return None, f"{reason} ({_one_line(exc, 120)})"
    return reader, reason


class BagFiles:
    """The open storage files of a bag (a context manager; see the module docstring).

    Args:
        path: the bag directory, or one ``.mcap`` or ``.db3`` file.

    Attributes:
        notes: what was odd about the bag and was worked around, one line each.
        readers: the open ``rosbags`` readers, one per storage file read.
        names: their file names.
        custom_data: the metadata's ``custom_data`` (empty when absent).

    Raises:
        BagError: missing, or no storage file can be read (one line).
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.notes: list[str] = []
        self.readers: list[Any] = []
        self.names: list[str] = []
        self.custom_data: dict[str, str] = {}
        if not self.path.exists():
            raise BagError(f"{self.path}: no such file or directory")
        if not (self.path.is_file() or self.path.is_dir()):
            raise BagError(f"{self.path}: not a readable rosbag2: neither a file nor a directory (a device, a pipe?)")
        try:
            self._open()
        except BaseException:
            self.close()
            raise

    def _open(self) -> None:
        path = self.path
        if path.is_file():
            if path.suffix not in STORAGE_SUFFIXES:
                raise BagError(f"{path}: not a readable rosbag2: a file that is neither .mcap nor .db3 "
                               "(a bag is a directory with metadata.yaml, or one such file)")
            candidates: list[tuple[Path, str | None]] = [(path, None)]
        else:
            info, problem = _load_metadata(path)
            self.custom_data = _custom_data(info)
            compression = str((info or {}).get("compression_mode") or "").lower()
            if info is not None and compression not in ("", "none"):
                self._open_compressed(info)
                return
            candidates = self._candidates(info, problem)
        failures: list[tuple[str, str]] = []
        salvaged: list[tuple[str, Any]] = []
        for file, storage_id in candidates:
            reader = _storage_reader(file, storage_id)
            if reader is None:
                failures.append((file.name, "unknown storage (not .mcap or .db3)"))
                continue
            try:
                reader.open()
            except Exception as exc:  # rosbags raises many kinds on damaged files: all mean "unreadable"
                reason = _reason(exc, file.name)
                reader, reason = _salvage(file, STORAGE_SUFFIXES.get(file.suffix, storage_id), reason)
                if reader is None:
                    failures.append((file.name, reason))
                    continue
                salvaged.append((file.name, reader.stop))
            self.readers.append(reader)
            self.names.append(file.name)
        if not self.readers:
            name, reason = failures[0] if failures else (path.name, "no storage file")
            where = path if path.is_file() else path / name
            more = f" (and {len(failures) - 1} more unreadable file(s))" if len(failures) > 1 else ""
            raise BagError(f"{where}: not a readable rosbag2: {reason}{more}")
        self.notes.extend(f"{name}: left out, {reason}" for name, reason in failures)
        t0 = self.time_span()[0]
        for file_name, stop in salvaged:
            when = f", up to {max(0.0, stop.last_ns * 1e-9 - t0):.3f} s into the recording" if stop.last_ns else ""
            self.notes.append(f"{file_name}: {stop.why}: read as far as it goes, {stop.messages} message(s){when}")

    def _candidates(self, info: dict[str, Any] | None, problem: str | None) -> list[tuple[Path, str | None]]:
        """The storage files to open (with the storage metadata.yaml names), and notes on what it gets wrong."""
        path = self.path
        found = sorted((p for p in path.iterdir() if p.suffix in STORAGE_SUFFIXES and p.is_file()),
                       key=_natural_key)
        listed = _listed_files(path, info) if info is not None else None
        if listed is None:
            problem = problem or "metadata.yaml lists no files"
            if not found:
                raise BagError(f"{path}: not a readable rosbag2: {problem}, and no .mcap or .db3 file")
            self.notes.append(f"{problem}: reading the {len(found)} storage file(s) found "
                              "(a recording cut off or still being written?)")
            return [(p, None) for p in found]
        storage = (info or {}).get("storage_identifier")
        storage = storage if isinstance(storage, str) else None
        present = [p for p in listed if p.is_file()]
        if missing := [p.name for p in listed if not p.is_file()]:
            self.notes.append(f"metadata.yaml lists {len(missing)} file(s) that are not there: {name_list(missing)}")
        if extra := [p for p in found if p not in present]:
            self.notes.append(f"{len(extra)} storage file(s) not in metadata.yaml also read: "
                              f"{name_list([p.name for p in extra])}")
        if not present and not extra:
            raise BagError(f"{path}: not a readable rosbag2: none of the files metadata.yaml lists is there "
                           f"({name_list(missing)})")
        return [(p, storage) for p in present] + [(p, None) for p in extra]

    def _open_compressed(self, info: dict[str, Any]) -> None:
        from rosbags.rosbag2.reader import DirectoryReader  # decompresses (zstd) what it reads

        reader = DirectoryReader(self.path)
        try:
            reader.open()
        except Exception as exc:
            raise BagError(f"{self.path}: not a readable compressed rosbag2 "
                           f"({_reason(exc, '')})") from None
        self.readers.append(reader)
        self.names.append(self.path.name)

    def close(self) -> None:
        """Close every storage file (a damaged one as far as it goes)."""
        for reader in self.readers:
            try:
                reader.close()
            except Exception:  # closing a damaged file: nothing left to do
                pass
        self.readers = []

    def __enter__(self) -> BagFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ contents

    def connections(self) -> list[Any]:
        """Every storage file's ``rosbags`` connections (topic, message type, count)."""
        return [c for r in self.readers for c in r.connections]

    def topics(self) -> dict[str, tuple[str, int]]:
        """Topic -> (message type, or ``"?"`` for several; message count) over every storage file."""
        types: dict[str, set[str]] = {}
        counts: Counter[str] = Counter()
        for c in self.connections():
            types.setdefault(c.topic, set()).add(c.msgtype)
            counts[c.topic] += int(c.msgcount)
        return {t: (next(iter(ts)) if len(ts) == 1 else "?", counts[t]) for t, ts in types.items()}

    def time_span(self) -> tuple[float, float]:
        """(first, last) record time of a message in any storage file, s since the epoch (0, 0 without)."""
        spans = [(r.metadata.start_time, r.metadata.end_time) for r in self.readers
                 if r.metadata.message_count and r.metadata.start_time <= r.metadata.end_time]
        if not spans:
            return 0.0, 0.0
        return min(s for s, _ in spans) * 1e-9, max(e for _, e in spans) * 1e-9

    def messages(self, wanted: Iterable[tuple[str, str]], notes: list[str]) -> Iterator[tuple[Any, int, bytes]]:
        """(connection, record time ns, raw CDR) of the (topic, type) pairs ``wanted``, in record order.

        A reader is asked only for its own wanted connections and never with an empty selection
        (which ``rosbags`` reads as "everything"); a file that fails in the middle ends with a note.
        """
        wanted = set(wanted)
        t0_ns = int(self.time_span()[0] * 1e9)
        streams = []
        for reader, name in zip(self.readers, self.names):
            conns = [c for c in reader.connections if (c.topic, c.msgtype) in wanted]
            if conns:
                streams.append(_guarded(reader, conns, name, t0_ns, notes))
        return heapq.merge(*streams, key=lambda item: item[1])


def _guarded(reader: Any, conns: list[Any], name: str, t0_ns: int,
             notes: list[str]) -> Iterator[tuple[Any, int, bytes]]:
    """``reader.messages(conns)``; an error in the middle of the file ends it with a note."""
    last: int | None = None
    n = 0
    try:
        for item in reader.messages(conns):
            last = item[1]
            n += 1
            yield item
    except Exception as exc:  # a truncated chunk, a damaged page: the rest of this file is lost
        where = (f"after {n} message(s), {(last - t0_ns) * 1e-9:.3f} s into the recording" if last is not None
                 else "before its first message")
        notes.append(f"{name}: reading stopped {where}: {_reason(exc, name)}")


def jazzy_typestore() -> Any:
    """ROS 2 Jazzy's types: what the wanted topics are deserialized with (they are the same in every ROS 2)."""
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_JAZZY)
