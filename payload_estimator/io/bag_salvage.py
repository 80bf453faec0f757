"""Storage files that ``rosbags`` refuses, read as far as they go: a cut-off MCAP file, a damaged SQLite database.

A recording interrupted (the recorder killed, the disk full, a copy taken while it is
being written) leaves a storage file cut off. ``rosbags`` refuses both kinds whole:

* an MCAP file without its footer and summary: :class:`CutMcapReader` reads its records in
  file order instead (the MCAP format: https://mcap.dev/spec), every message whose record is
  complete, including the complete records of a chunk that is itself cut off (partially
  decompressed when it is compressed, zstd or lz4);
* an SQLite database whose pages past some point are missing or damaged ("database disk image is
  malformed"): :class:`DamagedSqlite3Reader` reads the ``messages`` table by row id, up to the
  damage, and past it where SQLite can still reach rows.

Both have the interface of ``rosbags``' storage readers that
:class:`~payload_estimator.io.bag_files.BagFiles` uses (``open``, ``close``, ``connections``,
``metadata``, ``messages``), and say where reading stopped (:attr:`CutMcapReader.stop`,
:attr:`DamagedSqlite3Reader.stop`); a file with nothing readable raises
:class:`~payload_estimator.errors.BagError` whose message is the reason, without the path. Times:
record times in ns, as rosbag2 stores them.
"""

from __future__ import annotations

import heapq
import importlib
import struct
from binascii import crc32
from collections import Counter
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

from payload_estimator.errors import BagError

__all__ = ["CutMcapReader", "DamagedSqlite3Reader", "Stop"]

MCAP_MAGIC = b"\x89MCAP0\r\n"
_OP_HEADER, _OP_FOOTER, _OP_SCHEMA, _OP_CHANNEL, _OP_MESSAGE, _OP_CHUNK, _OP_DATA_END = 1, 2, 3, 4, 5, 6, 15
_U16, _U32, _U64 = struct.Struct("<H"), struct.Struct("<I"), struct.Struct("<Q")
_MESSAGE_HEAD = struct.Struct("<HIQQ")  # channel id, sequence, log time, publish time
_CHUNK_HEAD = struct.Struct("<QQQI")  # message start time, end time, uncompressed size, crc


@dataclass(frozen=True)
class Stop:
    """Where reading a damaged storage file stopped.

    Attributes:
        messages: the messages read (of every topic).
        last_ns: record time of the last message read, ns (None: none read).
        why: what is wrong with the file, for a person (one phrase).
    """

    messages: int
    last_ns: int | None
    why: str


def _metadata(start: int | None, end: int | None, count: int) -> Any:
    from rosbags.rosbag2.metadata import ReaderMetadata

    if not count or start is None or end is None:
        return ReaderMetadata(0, 2**63 - 1, 0, 0, None, None, None, None)
    return ReaderMetadata(end + 1 - start, start, end + 1, count, None, None, None, None)


def _msgdef(encoding: str, text: str) -> Any:
    from rosbags.interfaces import MessageDefinition, MessageDefinitionFormat

    fmt = {"ros2msg": MessageDefinitionFormat.MSG, "ros2idl": MessageDefinitionFormat.IDL,
           "omgidl": MessageDefinitionFormat.IDL}.get(encoding, MessageDefinitionFormat.NONE)
    return MessageDefinition(fmt, text if fmt is not MessageDefinitionFormat.NONE else "")


def _qos(text: str) -> list[Any]:
    from rosbags.rosbag2.metadata import parse_qos

    try:
        return list(parse_qos(text)) if text else []
    except Exception:  # an unreadable QoS string: the profiles do not matter for reading
        return []


# ------------------------------------------------------------------------- MCAP


def _records(buf: bytes | memoryview) -> Iterator[tuple[int, memoryview]]:
    """(opcode, body) of the complete records in ``buf``; a record cut off ends it."""
    view = memoryview(buf)
    pos, size = 0, len(view)
    while pos + 9 <= size:
        op = view[pos]
        (n,) = _U64.unpack_from(view, pos + 1)
        if pos + 9 + n > size:
            return
        yield op, view[pos + 9: pos + 9 + n]
        pos += 9 + n


def _string(body: memoryview, pos: int) -> tuple[str, int]:
    (n,) = _U32.unpack_from(body, pos)
    if pos + 4 + n > len(body):
        raise ValueError("string past the record's end")
    return bytes(body[pos + 4: pos + 4 + n]).decode(), pos + 4 + n


def _string_map(body: memoryview, pos: int) -> dict[str, str]:
    (n,) = _U32.unpack_from(body, pos)
    end, pos, out = pos + 4 + n, pos + 4, {}
    while pos < end:
        key, pos = _string(body, pos)
        out[key], pos = _string(body, pos)
    return out


def _zstd_stream(data: bytes) -> bytes:
    """What a zstd stream, possibly cut off, holds, with the module rosbags decompresses with.

    Python 3.14's ``compression.zstd`` or its backport (rosbags 0.11.7 and later), else ``zstandard``
    (rosbags 0.11.6); both decompress a stream cut off as far as it goes."""
    for name in ("compression.zstd", "backports.zstd"):
        try:
            return bytes(importlib.import_module(name).ZstdDecompressor().decompress(data))
        except ImportError:
            continue
    return bytes(importlib.import_module("zstandard").ZstdDecompressor().decompressobj().decompress(data))


def _decompress(data: bytes, compression: str, size: int, crc: int) -> tuple[bytes, bool]:
    """(records, whole): a chunk's records as far as ``data`` (possibly cut off) holds them."""
    if compression == "":
        raw = data
    elif compression == "zstd":
        raw = _zstd_stream(data)
    elif compression == "lz4":
        raw = importlib.import_module("lz4.frame").LZ4FrameDecompressor().decompress(data)
    else:
        raise ValueError(f"unsupported chunk compression {compression!r}")
    whole = len(raw) == size and (not crc or crc32(raw) == crc)
    return raw[:size], whole


@dataclass
class _Block:
    """Records of the data section read together: a chunk (possibly cut off), or top-level messages."""

    offset: int  # of the bytes in the file
    size: int  # bytes available from there
    compression: str | None  # None: top-level records; else the chunk's ("" uncompressed)
    uncompressed: int = 0
    crc: int = 0
    start: int = 2**63 - 1
    end: int = 0
    counts: Counter[int] = field(default_factory=Counter)


class CutMcapReader:
    """An MCAP file without its footer (cut off), read record by record as far as it goes.

    Args:
        path: the ``.mcap`` file.

    Attributes:
        connections: the channels found (``rosbags`` connections, with the counts of messages read).
        metadata: first and last record time and message count of what can be read (``rosbags``' kind).
        stop: where reading stops (set by :meth:`open`).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.bio: BinaryIO | None = None
        self.connections: list[Any] = []
        self.metadata = _metadata(None, None, 0)
        self.stop = Stop(0, None, "")
        self._blocks: list[_Block] = []

    def open(self) -> None:
        """Scan the file's records (schemas, channels, message times), as far as they are complete.

        Raises:
            BagError: not an MCAP file of ROS 2 messages, or no complete message in it.
        """
        self.bio = self.path.open("rb")
        try:
            self._scan()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the file."""
        if self.bio is not None:
            self.bio.close()
            self.bio = None

    def _scan(self) -> None:
        assert self.bio is not None
        bio = self.bio
        size = self.path.stat().st_size
        head = bio.read(8 + 9)
        if len(head) < 17 or head[:8] != MCAP_MAGIC or head[8] != _OP_HEADER:
            raise BagError("not an MCAP file")
        (n,) = _U64.unpack_from(head, 9)
        body = memoryview(bio.read(n))
        if len(body) < n or _string(body, 0)[0] != "ros2":
            raise BagError("not an MCAP file of ROS 2 messages (its header is cut off or names another profile)")
        schemas: dict[int, tuple[str, str, str]] = {}
        channels: dict[int, tuple[str, int, str, dict[str, str]]] = {}
        pos = bio.tell()
        run: _Block | None = None  # top-level messages in a row
        why = "cut off: no MCAP footer (the recording was interrupted or is still being written)"
        while pos + 9 <= size:
            bio.seek(pos)
            op = bio.read(1)[0]
            (n,) = _U64.unpack(bio.read(8))
            if op == _OP_CHUNK:
                run = None
                block = self._chunk(bio, pos, n, size, schemas, channels)
                if block is None:
                    why = "a damaged chunk (its checksum does not match): the rest of the file is not read"
                    break
                if block.counts:
                    self._blocks.append(block)
                if pos + 9 + n > size:
                    break
            elif pos + 9 + n > size:
                break
            elif op in (_OP_DATA_END, _OP_FOOTER):
                break
            elif op == _OP_MESSAGE:
                if run is None:
                    run = _Block(pos, 0, None)
                    self._blocks.append(run)
                run.size = pos + 9 + n - run.offset
                _note_message(run, memoryview(bio.read(min(n, _MESSAGE_HEAD.size))))
            elif op in (_OP_SCHEMA, _OP_CHANNEL):
                run = None
                _definition(op, memoryview(bio.read(n)), schemas, channels)
            else:
                run = None
            pos += 9 + n
        self._finish(schemas, channels, why)

    def _chunk(self, bio: BinaryIO, pos: int, n: int, size: int, schemas: dict, channels: dict) -> _Block | None:
        """The block of the chunk record at ``pos`` (None: a complete chunk that fails its checksum)."""
        head = bio.read(_CHUNK_HEAD.size + 4)
        if len(head) < _CHUNK_HEAD.size + 4:
            return _Block(pos, 0, "")
        _, _, uncompressed, crc = _CHUNK_HEAD.unpack_from(head)
        (m,) = _U32.unpack_from(head, _CHUNK_HEAD.size)
        rest = bio.read(m + 8)
        if len(rest) < m + 8:
            return _Block(pos, 0, "")
        compression = rest[:m].decode(errors="replace")
        (stored,) = _U64.unpack_from(rest, m)
        offset = bio.tell()
        available = max(0, min(stored, size - offset, pos + 9 + n - offset))
        block = _Block(offset, available, compression, uncompressed, crc if available == stored else 0)
        try:
            raw, whole = _decompress(bio.read(available), compression, uncompressed, block.crc)
        except Exception:  # an unknown or damaged compression: nothing of this chunk
            return block if available < stored else None
        if available == stored and not whole:
            return None
        for op, body in _records(raw):
            if op == _OP_MESSAGE:
                _note_message(block, body)
            elif op in (_OP_SCHEMA, _OP_CHANNEL):
                _definition(op, body, schemas, channels)
        return block

    def _finish(self, schemas: dict, channels: dict, why: str) -> None:
        from rosbags.interfaces import Connection, ConnectionExtRosbag2

        counts: Counter[int] = Counter()
        for b in self._blocks:
            counts.update(b.counts)
        total = sum(counts.values())
        if not total:
            raise BagError(why.replace("cut off:", "cut off before its first complete message:", 1)
                               if why.startswith("cut off") else why)
        for cid, (topic, schema_id, encoding, meta) in sorted(channels.items()):
            name, sencoding, text = schemas.get(schema_id, ("", "", ""))
            self.connections.append(Connection(
                cid, topic, name, _msgdef(sencoding, text), "", counts[cid],
                ConnectionExtRosbag2(encoding, _qos(meta.get("offered_qos_profiles", ""))), self))
        first = min(b.start for b in self._blocks if b.counts)
        last = max(b.end for b in self._blocks if b.counts)
        self.metadata = _metadata(first, last, total)
        self.stop = Stop(total, last, why)

    def messages(self, connections: Collection[Any], start: int | None = None,
                 stop: int | None = None) -> Iterator[tuple[Any, int, bytes]]:
        """(connection, record time ns, raw CDR) of ``connections``, in record order (``rosbags``' interface)."""
        wanted = {c.id: c for c in connections}
        lo, hi = (start if start is not None else 0), (stop if stop is not None else 2**63)
        streams = [self._block_messages(b, wanted, lo, hi) for b in self._blocks
                   if any(b.counts.get(cid) for cid in wanted) and b.start < hi and lo <= b.end]
        for t, _, conn, data in heapq.merge(*streams, key=lambda item: (item[0], item[1])):
            if conn is not None:
                yield conn, t, data

    def _block_messages(self, block: _Block, wanted: dict[int, Any], lo: int,
                        hi: int) -> Iterator[tuple[int, int, Any, bytes]]:
        yield block.start, -1, None, b""  # the block is read only when the merge reaches its time
        assert self.bio is not None
        self.bio.seek(block.offset)
        data = self.bio.read(block.size)
        if block.compression:
            data, _ = _decompress(data, block.compression, block.uncompressed, 0)
        found = []
        for k, (op, body) in enumerate(_records(data)):
            if op != _OP_MESSAGE or len(body) < _MESSAGE_HEAD.size:
                continue
            cid, _, t, _ = _MESSAGE_HEAD.unpack_from(body)
            if cid in wanted and lo <= t < hi:
                found.append((t, k, wanted[cid], bytes(body[_MESSAGE_HEAD.size:])))
        found.sort(key=lambda item: (item[0], item[1]))
        yield from found


def _note_message(block: _Block, body: memoryview) -> None:
    if len(body) < _MESSAGE_HEAD.size:
        return
    cid, _, t, _ = _MESSAGE_HEAD.unpack_from(body)
    block.counts[cid] += 1
    block.start, block.end = min(block.start, t), max(block.end, t)


def _definition(op: int, body: memoryview, schemas: dict, channels: dict) -> None:
    """Record a schema or channel record (a damaged one is ignored)."""
    try:
        (key,) = _U16.unpack_from(body, 0)
        if op == _OP_SCHEMA:
            name, pos = _string(body, 2)
            encoding, pos = _string(body, pos)
            (n,) = _U32.unpack_from(body, pos)
            schemas[key] = (name, encoding, bytes(body[pos + 4: pos + 4 + n]).decode(errors="replace"))
        else:
            (schema_id,) = _U16.unpack_from(body, 2)
            topic, pos = _string(body, 4)
            encoding, pos = _string(body, pos)
            channels[key] = (topic, schema_id, encoding, _string_map(body, pos))
    except (struct.error, ValueError):  # a damaged definition: its messages are not read
        return


# ----------------------------------------------------------------------- SQLite


def _sqlite_cut(path: Path) -> str | None:
    """"cut off: ..." when the database file is shorter than its header says, else None."""
    with path.open("rb") as f:
        head = f.read(100)
    if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        return None
    page = int.from_bytes(head[16:18], "big")
    page = 65536 if page == 1 else page
    pages = int.from_bytes(head[28:32], "big")
    size = path.stat().st_size
    if pages and size < pages * page:
        return (f"cut off: {size} of the {pages * page} bytes its header announces (the recording was interrupted "
                "or the file copied before it was closed)")
    return None


class DamagedSqlite3Reader:
    """A rosbag2 SQLite database that SQLite reports damaged, read by row id as far as it goes.

    SQLite refuses a database shorter than its header says (a file cut off) unless told to read what
    is there (``PRAGMA writable_schema``, on a read-only connection: nothing is written); the
    ``messages`` table is then read in row-id order (the record order) until a damaged page stops
    the query, and resumed after the damage where SQLite can reach rows again.

    Args:
        path: the ``.db3`` file.

    Attributes:
        connections, metadata: as ``rosbags``' reader gives them, for the rows that can be read.
        stop: where reading stops (set by :meth:`open`).
    """

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self.db: Any = None
        self.connections: list[Any] = []
        self.metadata = _metadata(None, None, 0)
        self.stop = Stop(0, None, "")

    def open(self) -> None:
        """Read the topics and the row ids, topics and times of the readable messages.

        Raises:
            BagError: no topics table, or no message can be read.
        """
        import apsw

        self.db = apsw.Connection(f"file:{self.path}?immutable=1",
                                  flags=apsw.SQLITE_OPEN_READONLY | apsw.SQLITE_OPEN_URI)
        try:
            self._open()
        except BagError as exc:
            self.close()
            cut = _sqlite_cut(self.path)
            if cut is None or str(exc).startswith("cut off"):
                raise
            raise BagError(cut.replace("cut off:", "cut off before its first readable message:", 1)) from None
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        """Close the database."""
        if self.db is not None:
            self.db.close()
            self.db = None

    def _query(self, sql: str, args: tuple = ()) -> list[tuple]:
        import apsw

        try:
            return list(self.db.execute(sql, args))
        except apsw.Error as exc:
            raise BagError(f"not a readable SQLite database ({exc})") from None

    def _open(self) -> None:
        from rosbags.interfaces import Connection, ConnectionExtRosbag2

        self._query("PRAGMA writable_schema=ON")  # read a database shorter than its header says
        columns = {row[1] for row in self._query("PRAGMA table_info(topics)")}
        if not {"id", "name", "type"} <= columns or not self._query("PRAGMA table_info(messages)"):
            raise BagError("not a rosbag2 database (no topics or messages table)")
        extra = [c if c in columns else "''" for c in ("serialization_format", "offered_qos_profiles")]
        topics = self._query(f"SELECT id, name, type, {', '.join(extra)} FROM topics ORDER BY id")
        definitions: dict[str, tuple[str, str]] = {}
        if self._query("PRAGMA table_info(message_definitions)"):
            try:
                definitions = {str(t): (str(e), str(d)) for t, e, d in self._query(
                    "SELECT topic_type, encoding, encoded_message_definition FROM message_definitions")}
            except BagError:  # damaged definitions: only used to describe the types
                definitions = {}
        counts: Counter[int] = Counter()
        first: int | None = None
        last: int | None = None
        for _, cid, t in self._rows("timestamp"):
            counts[cid] += 1
            first = t if first is None else min(first, t)
            last = t if last is None else max(last, t)
        total = sum(counts.values())
        why = _sqlite_cut(self.path) or "damaged (SQLite: database disk image is malformed)"
        if not total:
            raise BagError(f"{why.split(':')[0]} before its first readable message")  # "cut off" or "damaged"
        self.connections = [
            Connection(int(cid), str(name), str(msgtype), _msgdef(*definitions.get(str(msgtype), ("", ""))), "",
                       counts[int(cid)], ConnectionExtRosbag2(str(fmt) or "cdr", _qos(str(qos))), self)
            for cid, name, msgtype, fmt, qos in topics]
        self.metadata = _metadata(first, last, total)
        self.stop = Stop(total, last, why)

    def _rows(self, columns: str, topic_ids: Collection[int] = ()) -> Iterator[tuple]:
        """(id, topic id, ``columns``...) of the readable rows of ``messages`` in row-id order."""
        import apsw

        where = f" AND topic_id IN ({', '.join(str(int(i)) for i in topic_ids)})" if topic_ids else ""
        sql = f"SELECT id, topic_id, {columns} FROM messages WHERE id > ?{where} ORDER BY id"
        after = -(2**63)
        resumed: int | None = None
        while True:
            try:
                for row in self.db.execute(sql, (after,)):
                    after = row[0]
                    if not any(v is None for v in row):  # a row on a damaged page can read as NULLs
                        yield row
                return
            except apsw.Error:  # a damaged page: find the next row SQLite can reach
                if resumed is not None and after < resumed:  # no row read since: skip the one found
                    after = resumed
                resumed = self._next_readable(after)
                if resumed is None:
                    return
                after = resumed - 1

    def _next_readable(self, after: int) -> int | None:
        """The first row id past ``after`` (and past the damage) that SQLite can read, or None."""
        import apsw

        step = 1
        while after + step < 2**62:
            try:
                found = list(self.db.execute("SELECT id FROM messages WHERE id >= ? ORDER BY id LIMIT 1",
                                             (after + step,)))
                if not found:
                    return None
                # the row must itself be readable: its data too
                list(self.db.execute("SELECT data FROM messages WHERE id = ?", (found[0][0],)))
                return int(found[0][0])
            except apsw.Error:
                step *= 2
        return None

    def messages(self, connections: Collection[Any], start: int | None = None,
                 stop: int | None = None) -> Iterator[tuple[Any, int, bytes]]:
        """(connection, record time ns, raw CDR) of ``connections``, in row-id (record) order."""
        wanted = {c.id: c for c in connections}
        if not wanted:
            return
        lo, hi = (start if start is not None else -(2**63)), (stop if stop is not None else 2**63)
        for _, cid, t, data in self._rows("timestamp, data", list(wanted)):
            if lo <= t < hi and cid in wanted:
                yield wanted[cid], int(t), bytes(data)
