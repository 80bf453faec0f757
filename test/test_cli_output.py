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


def test_an_empty_gripper_has_no_centre_of_mass_to_print():
    """PMD on an empty gripper (the wrench is noise only) puts the mass on its bound, 0, and the data say
    zero within grams: no payload. The table says the COM and inertia do not apply instead of printing
    m c / m = 0 / 0 as nan."""
    import numpy as np

    from payload_estimator.core.estimators import make_estimator
    from payload_estimator.core.inertia import InertialParameters
    from payload_estimator.core.noise import TABLE_II
    from payload_estimator.core.shapes import parse_shape_spec, sample_points
    from payload_estimator.outputs.report import estimate_table
    from payload_estimator.sim.wrist import WristTrajectory, simulate_wrist

    nothing = InertialParameters.zero()
    samples, _ = simulate_wrist(nothing, WristTrajectory(0.6), duration=4.0, noise=TABLE_II["moderate"],
                                rng=np.random.default_rng(2))
    estimator = make_estimator("pmd", sample_points(parse_shape_spec("box:0.1,0.1,0.1@0,0,0.05")))
    estimator.update(samples)
    estimate = estimator.estimate()
    console = make_console()
    console.file = io.StringIO()
    console.print(estimate_table(estimate))
    text = console.file.getvalue()
    assert estimate.mass == 0.0 and not np.any(np.isfinite(estimate.com))  # this seed's noise: on the bound
    assert estimate.identification.empty
    assert text.count("n/a (no payload)") == 9 and "nan" not in text
