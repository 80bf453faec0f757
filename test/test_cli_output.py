"""What the commands print when their output is a file or another program, and where they write."""

from __future__ import annotations

import io
from pathlib import Path

from payload_estimator.commands.common import PIPED_WIDTH, default_out_dir, make_console


def test_piped_output_is_not_wrapped_at_80_columns():
    """A URDF line or a table row is one line in a file, not cut at rich's 80 columns."""
    console = make_console()
    assert not console.is_terminal  # pytest captures the output
    assert console.width == PIPED_WIDTH
    line = '  <inertia ixx="0.00291847" ixy="-5.61025e-07" ixz="-0.000219198" iyy="0.00348778" iyz="-1.50392e-05"/>'
    console.file = io.StringIO()
    console.print(line, markup=False, highlight=False)
    assert console.file.getvalue() == line + "\n"


def test_the_tests_never_write_into_the_users_cache():
    assert not default_out_dir("demo").is_relative_to(Path.home() / ".cache")
