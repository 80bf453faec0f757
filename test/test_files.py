"""Atomic writes: the reader sees the old file or the new one, never a torn one."""

from __future__ import annotations

import os

import pytest

from payload_estimator.files import atomic_path, check_writable_dir, write_text_atomic


def test_write_replaces_whole_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "payload.urdf.xml"
    write_text_atomic(target, "old\n")
    write_text_atomic(target, "<inertial/>\n")
    assert target.read_text() == "<inertial/>\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["payload.urdf.xml"]
    assert oct(target.stat().st_mode & 0o777) == oct(0o644)


def test_a_writer_that_fails_halfway_leaves_the_old_file(tmp_path):
    target = tmp_path / "fragment.xml"
    write_text_atomic(target, "complete\n")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half a fil")
        raise RuntimeError("killed")
    assert target.read_text() == "complete\n"
    assert [p.name for p in tmp_path.iterdir()] == ["fragment.xml"]


def test_output_directories_are_checked_before_the_work(tmp_path):
    assert check_writable_dir(tmp_path / "a" / "b").is_dir()
    a_file = tmp_path / "file"
    a_file.write_text("x")
    with pytest.raises(NotADirectoryError):
        check_writable_dir(a_file)
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(PermissionError):
            check_writable_dir(locked)
