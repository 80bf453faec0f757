"""How well an estimate is determined, and whether its model fits the data.

* :func:`identify`: which of the mass, the COM axes and the inertia the data determine
  (:class:`~payload_estimator.core.results.Identification`), from the data's information alone;
  :func:`inertia_identifiable` for the inertia.
* :func:`model_fit`: whether a rigid payload explains the data
  (:class:`~payload_estimator.core.results.ModelFit`): residuals that persist longer than noise,
  or a constrained estimate far from the unconstrained fit.
"""

from __future__ import annotations

import numpy as np

from payload_estimator.core.estimators.linear_algebra import eigh, pinv_psd, scaled_eigh
from payload_estimator.core.inertia import InertialParameters
from payload_estimator.core.regressor import N_PARAMS
from payload_estimator.core.results import (
    FROM_PRIOR,
    IDENTIFIED,
    NOT_IDENTIFIED,
    Estimate,
    Identification,
    ModelFit,
)
from payload_estimator.core.samples import STANDARD_GRAVITY
from payload_estimator.core.statistics import WRENCH_COLUMN, RegressorStatistics

__all__ = [
    "identify",
    "model_fit",
    "inertia_identifiable",
    "shape_misfit",
    "anchor_to_data",
    "anchored_covariance",
    "mass_com_sigmas",
    "ANCHOR_SIGMAS",
    "data_covariance",
    "DataCovariance",
    "IDENTIFIABLE_REL_STD",
    "IDENTIFIED_MASS_REL_STD",
    "IDENTIFIED_COM_STD",
    "PERSISTENCE_LIMIT",
    "RESIDUAL_SHARE_LIMIT",
    "EXCESS_LIMIT",
    "MIN_FIT_BLOCKS",
    "NO_PAYLOAD_SIGMAS",
    "NO_PAYLOAD_FORCE_STD_N",
    "NO_PAYLOAD_MASS_STD_KG",
    "no_payload",
    "no_payload_text",
]

IDENTIFIABLE_REL_STD = 0.25
"""Inertia counts as identified when each principal-moment std is below this fraction."""
IDENTIFIED_MASS_REL_STD = 0.1
"""Mass counts as identified when its std (from the data alone) is below this fraction of it."""
IDENTIFIED_COM_STD = 0.01
"""A COM component counts as identified when its std (from the data alone) is below this, m."""
PERSISTENCE_LIMIT = 3.0
"""Model fit is poor when residuals stay correlated this many times longer than the noise does
(:class:`~payload_estimator.core.results.ModelFit`; chosen with ``benchmarks/model_fit.py``)..."""
RESIDUAL_SHARE_LIMIT = 0.05
"""...and the residual is at least this share of the measured force or torque (RMS): a persistent
residual smaller than that (the filters' last bit of lag; an F/T offset drifting by 1e-3 of the
payload's weight per second, the simulator's default, reaches 2-3 % in 20 s) is not a sign of a wrong
model."""
EXCESS_LIMIT = 4.0
"""Model fit is poor when a constrained estimate's mass or a COM component is this many standard deviations
from the unconstrained fit's (:func:`mass_com_sigmas`, each in the data's own covariance). Four: with a
shape that holds the payload, the four quantities' errors are the unconstrained fit's own noise, beyond 4
standard deviations in about 0.03 % of runs (0.5 % with a covariance 25 % short), where a shape that cannot
hold the payload (one too small, shifted or turned by a few centimetres; the preset's 10 cm box around a long
tool) puts them tens to thousands of standard deviations off (``benchmarks/model_fit.py``)."""
NO_PAYLOAD_SIGMAS = 3.0
"""An estimate whose mass is within this many standard deviations of zero (the unconstrained fit's
too, for an estimator that bounds the mass, PMD) is no payload, an empty gripper ..."""
NO_PAYLOAD_FORCE_STD_N = 0.1
"""... when that standard deviation's weight is below this, N: the force noise of one sample of a
collaborative robot's wrist sensor (Nadeau et al.'s Table II, moderate: 0.1 N, the Robotiq FT-300). A
mass known that well, and zero within it, weighs less than the sensor can tell in one sample: no payload
(:data:`NO_PAYLOAD_MASS_STD_KG`, about 10 g). The relative criterion (:data:`IDENTIFIED_MASS_REL_STD`)
can never call a zero mass identified; this absolute one does."""
NO_PAYLOAD_MASS_STD_KG = NO_PAYLOAD_FORCE_STD_N / STANDARD_GRAVITY
"""kg: :data:`NO_PAYLOAD_FORCE_STD_N` over standard gravity (0.0102 kg)."""
ANCHOR_SIGMAS = 3.0
"""A constrained estimate's mass and COM (PMD's, inside its shape) are kept within this many standard
deviations of the unconstrained fit's, each in the data's own covariance: a shape that cannot hold the
payload never moves them further from what the data show (:func:`anchor_to_data`)."""
SYSTEMATIC_MASS_REL = 0.002
"""Relative std of the mass, added (in quadrature) to the unconstrained fit's own when a constrained estimate
is compared with it (:func:`mass_com_sigmas`) ...."""
SYSTEMATIC_COM_M = 0.0005
"""... and of each COM component, m: what the fit's covariance leaves out over a run's first seconds, before
its batch means can see it (filter lag, kinematics, an F/T offset's drift). On a simulated 8 s run of the 3 kg
vise the data alone gave the COM a std of 0.01 mm where the fit was 0.18 mm off, and a right shape's estimate,
0.05 mm from the fit, read as 14 std off; differences this small are no sign of a wrong shape, whose misfit is
millimetres to decimetres."""
MIN_FIT_BLOCKS = 8
"""Long blocks needed before the model fit is judged (4 s of data)."""
_INERTIA_SCALE_FLOOR_M = 0.02
"""Radius (m) of gyration below which inertia uncertainty is judged against ``m r²``."""


DataCovariance = tuple[np.ndarray, np.ndarray, np.ndarray]
"""What :func:`data_covariance` returns; an estimate computes it once for :func:`identify` and
:func:`model_fit`."""


def data_covariance(information: np.ndarray) -> DataCovariance:
    """The marginal covariance of ``phi`` from the data alone.

    Args:
        information: (p, p) the data's information of ``[phi; beta]`` (the offsets, if any, are
            marginalised out through the Schur complement).

    Returns:
        ``(cov (10, 10), null (10, k), d (10,))``: the covariance over what the data see, a basis
        (in the Jacobi-scaled coordinates) of what they do not, and the scaling.
    """
    H = information
    if H.shape[0] > N_PARAMS:
        Hpp, Hpb, Hbb = H[:N_PARAMS, :N_PARAMS], H[:N_PARAMS, N_PARAMS:], H[N_PARAMS:, N_PARAMS:]
        H = Hpp - Hpb @ pinv_psd(Hbb) @ Hpb.T
    d, lam, V, seen = scaled_eigh(H)
    cov = (V[:, seen] / lam[seen]) @ V[:, seen].T / np.outer(d, d)
    return cov, V[:, ~seen], d


def no_payload(masses: list[float], mass_std: float) -> bool:
    """Tell whether the data say there is no payload (an empty gripper): the one place of that criterion.

    Args:
        masses: kg, the estimate's mass, and for an estimator that bounds it (PMD, at zero) the
            unconstrained fit's of the same data too: each must be zero within
            :data:`NO_PAYLOAD_SIGMAS` standard deviations.
        mass_std: kg, the mass's standard deviation; at most :data:`NO_PAYLOAD_MASS_STD_KG`.
    """
    if not (np.isfinite(mass_std) and 0.0 <= mass_std <= NO_PAYLOAD_MASS_STD_KG):
        return False
    return all(np.isfinite(m) and abs(m) <= NO_PAYLOAD_SIGMAS * mass_std for m in masses)


def no_payload_text(estimate: Estimate) -> str:
    """The figures behind an estimate read as no payload: its mass and standard deviation in grams."""
    return (f"mass {1e3 * estimate.mass:+.1f} ± {1e3 * estimate.mass_std:.1f} g, zero within "
            f"{NO_PAYLOAD_SIGMAS:g} std")


def identify(
    information: np.ndarray, params: InertialParameters, has_prior: bool, data: DataCovariance | None = None,
    unconstrained: np.ndarray | None = None,
) -> Identification:
    """Which quantities the data determine (:class:`~payload_estimator.core.results.Identification`).

    From the data's information alone (never the prior's): a quantity ``q(phi)`` is
    identified when its gradient has no component the data do not see and its standard
    deviation ``sqrt(grad^T C grad)`` is within bounds: the mass within
    :data:`IDENTIFIED_MASS_REL_STD` of itself, each COM axis within :data:`IDENTIFIED_COM_STD`,
    the inertia as :func:`inertia_identifiable`. A payload held still shows ``m g`` and
    ``m c x g``: the COM along gravity and the inertia are not seen. What is not identified
    comes from the prior when the estimator has one (``has_prior``), else from nothing.

    A mass zero within its uncertainty, that uncertainty within :data:`NO_PAYLOAD_MASS_STD_KG`
    (:func:`no_payload`; ``unconstrained``, the least-squares fit of an estimator that bounds the mass,
    zero within it too), is no payload: :meth:`Identification.no_payload`.
    """
    otherwise = FROM_PRIOR if has_prior else NOT_IDENTIFIED
    if not np.all(np.isfinite(information)) or not np.isfinite(params.mass):
        return Identification(otherwise, (otherwise, otherwise, otherwise), otherwise)
    data = data_covariance(information) if data is None else data

    def std(grad: np.ndarray) -> float:
        return _data_std(grad, data)

    grad_m = np.zeros(N_PARAMS)
    grad_m[0] = 1.0
    mass_std = std(grad_m)
    masses = [params.mass] + ([float(unconstrained[0])] if unconstrained is not None else [])
    if no_payload(masses, mass_std):
        return Identification.no_payload()
    if params.mass <= 0.0:
        return Identification(otherwise, (otherwise, otherwise, otherwise), otherwise)
    m, c = params.mass, params.com
    mass = IDENTIFIED if mass_std < IDENTIFIED_MASS_REL_STD * m else otherwise
    com = []
    for i in range(3):
        g = np.zeros(N_PARAMS)
        g[0], g[1 + i] = -c[i] / m, 1.0 / m
        com.append(IDENTIFIED if std(g) < IDENTIFIED_COM_STD else otherwise)
    inertia = IDENTIFIED if inertia_identifiable(information, params) else otherwise
    return Identification(mass, (com[0], com[1], com[2]), inertia)


def model_fit(
    stats: RegressorStatistics | None,
    theta: np.ndarray,
    with_bias: bool,
    channel_weights: np.ndarray | None,
    information: np.ndarray,
    unconstrained: np.ndarray | None = None,
    data: DataCovariance | None = None,
    empty: bool = False,
) -> ModelFit:
    """Test whether the model explains the data (:class:`~payload_estimator.core.results.ModelFit`).

    * Persistence (every estimator; at the unconstrained fit when one is given): residuals of a right
      model are the sensors' noise,
      correlated over the filters' memory only; a wrong one leaves a residual that follows
      the motion. The ratio of the residuals' correlation factors over long and short blocks
      (:meth:`RegressorStatistics.correlation_factors`), median over the channels, is about
      1 for noise and grows with the block length for model error; poor above
      :data:`PERSISTENCE_LIMIT`.
    * Excess (``unconstrained``, the least-squares fit ``x_ls`` of the same data term, given:
      estimators whose constraints or prior can keep them from it, PMD; ``data``, its covariance):
      how many of its standard deviations ``theta``'s mass or a COM component is from ``x_ls``'s, the
      largest of the four (:func:`mass_com_sigmas`); about 1 when the constraints hold the truth (a
      shape that contains the payload), poor above :data:`EXCESS_LIMIT`.

    Judged only after :data:`MIN_FIT_BLOCKS` long blocks (4 s of data).

    An empty gripper (``empty``, :func:`no_payload`) is not judged by persistence: what it measures
    is the sensor's offsets and their drift, all of it (the share of the wrench is 100 % whatever
    its size), which no payload model is to explain; its uncertainty carries them. The excess still
    counts (a bounded mass held far from what the data show).
    """
    if stats is None or not np.all(np.isfinite(theta)):
        return ModelFit()
    # the residuals of the model's best fit: of a rigid payload, whatever the shape says (a shape that
    # cannot hold it leaves a misfit that follows the motion too, which the excess names)
    fitted = theta if unconstrained is None or not np.all(np.isfinite(unconstrained)) else unconstrained
    tau_short, tau_slow = stats.correlation_factors(fitted, with_bias, channel_weights)
    n_slow = stats.n_blocks(1)
    if n_slow < MIN_FIT_BLOCKS or not (np.all(np.isfinite(tau_short)) and np.all(np.isfinite(tau_slow))):
        return ModelFit()
    persistence = float(np.median(tau_slow / np.maximum(tau_short, 1.0)))
    rss = np.clip(stats.channel_residuals(fitted, with_bias), 0.0, None)
    signal = stats.gram[:, WRENCH_COLUMN, WRENCH_COLUMN]  # (6,) sum of squared measurements
    share = max(float(np.sqrt(rss[:3].sum() / max(signal[:3].sum(), 1e-300))),
                float(np.sqrt(rss[3:].sum() / max(signal[3:].sum(), 1e-300))))
    excess = float("nan")
    data = data_covariance(information) if data is None else data
    if unconstrained is not None:
        excess = _largest(mass_com_sigmas(theta, unconstrained, data))
    causes = []
    if persistence > PERSISTENCE_LIMIT and share > RESIDUAL_SHARE_LIMIT and not empty:
        causes.append(
            f"the residuals ({100 * share:.0f} % of the wrench) follow the motion ({persistence:.1f}x longer "
            "than noise): the payload may be "
            "touching something or loose, the sensor frame, the wrench sign or the gravity direction may be "
            "wrong, or the F/T offset drifts fast (re-zero the sensor and reset)"
        )
    shape_holds = not (np.isfinite(excess) and excess > EXCESS_LIMIT)
    if not shape_holds:
        direction = shape_misfit(theta, unconstrained, data[0]) if unconstrained is not None else ""
        causes.append(
            f"the shape cannot hold the payload the data show: "
            f"{direction or 'it is too small, misplaced or turned'}; the mass and centre of mass given are the "
            "data's, the inertia is unknown; set the payload's shape (--shape, payload_shape) as it sits in "
            "the sensor frame"
        )
    return ModelFit(True, not causes, persistence, excess, "; ".join(causes), shape_holds)


def mass_com_sigmas(theta: np.ndarray, unconstrained: np.ndarray, data: DataCovariance) -> np.ndarray:
    """(4,) how far the mass and the COM's x, y, z of ``theta`` are from the unconstrained fit's, in its stds.

    Each on its own (the marginal standard deviation of the unconstrained fit, from ``data``, the data's
    covariance (:func:`data_covariance`); the COM's to first order in the mass and first moment), with a
    systematic error (:data:`SYSTEMATIC_MASS_REL`, :data:`SYSTEMATIC_COM_M`) added in quadrature. Unlike a
    joint chi-square, a combination the data see far better than each quantity (a short, little varied
    motion) does not make a small bias look like a wrong shape. NaN for a quantity the data do not see (the
    COM along gravity of a payload held still: the fit's is anything there), for the COM's where either mass
    is not positive (no COM to compare), and for all where the estimates are not finite."""
    out = np.full(4, np.nan)
    if not (np.all(np.isfinite(unconstrained[:4])) and np.all(np.isfinite(theta[:4]))):
        return out
    m_ls, m = float(unconstrained[0]), float(theta[0])
    grad = np.zeros(N_PARAMS)
    grad[0] = 1.0
    out[0] = _sigmas(abs(m - m_ls), np.hypot(_data_std(grad, data), SYSTEMATIC_MASS_REL * abs(m_ls)))
    if m_ls > 0.0 and m > 0.0:
        c_ls = unconstrained[1:4] / m_ls
        for k, delta in enumerate(np.abs(theta[1:4] / m - c_ls)):
            grad = np.zeros(N_PARAMS)  # d c_k / d phi at the unconstrained fit
            grad[0], grad[1 + k] = -c_ls[k] / m_ls, 1.0 / m_ls
            out[1 + k] = _sigmas(float(delta), np.hypot(_data_std(grad, data), SYSTEMATIC_COM_M))
    return out


def _data_std(grad: np.ndarray, data: DataCovariance) -> float:
    """The data's standard deviation of a quantity of gradient ``grad`` (10,); inf where they do not see it."""
    cov, null, d = data
    scaled = grad / d  # the gradient in the Jacobi-scaled coordinates of the eigenvectors
    if null.shape[1] and np.linalg.norm(null.T @ scaled) > 1e-6 * np.linalg.norm(scaled):
        return float("inf")
    return float(np.sqrt(max(grad @ cov[:N_PARAMS, :N_PARAMS] @ grad, 0.0)))


def _sigmas(delta: float, std: float) -> float:
    """``delta / std``, a difference in standard deviations (0 and inf where the std is 0; NaN where inf)."""
    if not np.isfinite(std):
        return float("nan")
    return delta / std if std > 0.0 else (np.inf if delta > 0.0 else 0.0)


def _largest(sigmas: np.ndarray) -> float:
    """The largest of :func:`mass_com_sigmas`' figures (NaN when none is known)."""
    known = sigmas[~np.isnan(sigmas)]
    return float(known.max()) if known.size else float("nan")


def anchor_to_data(theta: np.ndarray, unconstrained: np.ndarray, data: DataCovariance) -> np.ndarray | None:
    """Return ``theta`` with its mass and first moment moved onto the data's, when they stray; else None.

    ``theta`` is a constrained estimate (PMD's point masses inside the payload's shape), ``unconstrained``
    the least-squares fit of the same data and ``data`` their covariance (:func:`data_covariance`). When its
    mass or a COM component is more than :data:`ANCHOR_SIGMAS` standard deviations from the unconstrained
    fit's (:func:`mass_com_sigmas`: a shape too small, shifted or turned, such as the 10 cm box a preset
    assumes around a 30 cm hammer), the estimate takes the data's mass and first moment in every direction
    the data see, keeps its own where they see nothing, and keeps its inertia about its centre of mass
    (scaled to the new mass): still physically consistent, and never a mass or COM the data contradict. The
    F/T offsets, if any, become the unconstrained fit's (they go with the mass and first moment). None when
    no move is needed, or the data's mass is not clearly positive (within :data:`ANCHOR_SIGMAS` standard
    deviations of zero: an empty gripper, whose estimate sits at its bound, and whose first moment would
    place no mass)."""
    cov = data[0]
    if not (np.all(np.isfinite(theta)) and np.all(np.isfinite(unconstrained)) and np.all(np.isfinite(cov))):
        return None
    if not _largest(mass_com_sigmas(theta, unconstrained, data)) > ANCHOR_SIGMAS:
        return None
    block = cov[:4, :4]
    seen = block @ pinv_psd(block)  # the projector onto what the data see of mass and first moment
    moved = theta[:4] - seen @ (theta - unconstrained)[:4]
    mass = float(moved[0])
    if not (np.isfinite(mass) and mass > ANCHOR_SIGMAS * np.sqrt(max(float(block[0, 0]), 0.0))):
        return None  # no payload the data could place (an empty gripper: the bound holds its estimate)
    params = InertialParameters(theta[:N_PARAMS])
    inertia = params.inertia_com * (mass / params.mass) if params.mass > 0.0 else np.zeros((3, 3))
    out = np.array(theta, dtype=float)
    out[:N_PARAMS] = InertialParameters.from_mass_com_inertia(mass, moved[1:4] / mass, inertia).phi
    out[N_PARAMS:] = unconstrained[N_PARAMS:]
    return out


def anchored_covariance(covariance: np.ndarray | None, data: DataCovariance) -> np.ndarray:
    """The covariance of an estimate :func:`anchor_to_data` moved.

    Its mass and first moment at least as uncertain as the data's (``data``, the unconstrained fit's
    covariance), whose they are now; the rest as ``covariance`` (the estimator's own; None: unknown, zero).
    Raised by the positive part of the difference, so the whole stays positive semi-definite."""
    p = data[0].shape[0] if covariance is None else covariance.shape[0]
    out = np.zeros((p, p)) if covariance is None else np.array(covariance, dtype=float)
    lam, V = eigh(0.5 * (data[0][:4, :4] + data[0][:4, :4].T) - out[:4, :4])
    out[:4, :4] += (V * np.clip(lam, 0.0, None)) @ V.T
    return 0.5 * (out + out.T)


def shape_misfit(theta: np.ndarray, unconstrained: np.ndarray, covariance: np.ndarray) -> str:
    """Say which way a shape fails to hold the payload: where the data put the mass that it cannot.

    ``theta`` is the constrained estimate (PMD's, inside the shape), ``unconstrained`` the
    least-squares fit of the same data and ``covariance`` the data's covariance of the unknowns
    (phi first). The centre of mass each implies is compared axis by axis; the differences more
    than three standard deviations (of the least-squares COM) and 1 mm are named, largest first:
    a COM the data put beyond the shape along ``+x`` means the shape is too short towards ``+x``
    or shifted towards ``-x``. A mass the shape's fit moves by more than three standard deviations
    is named too. Empty when nothing stands out (the misfit is in directions the data see only
    together).
    """
    m_ls, m_fit = float(unconstrained[0]), float(theta[0])
    if not (m_ls > 0.0 and m_fit > 0.0 and np.all(np.isfinite(unconstrained[:4])) and np.all(np.isfinite(theta[:4]))):
        return ""
    c_ls, c_fit = unconstrained[1:4] / m_ls, theta[1:4] / m_fit
    # the COM's std from the first moment's and the mass's (first order)
    J = np.zeros((3, 4))
    J[:, 0] = -c_ls / m_ls
    J[:, 1:] = np.eye(3) / m_ls
    std = np.sqrt(np.clip(np.diag(J @ covariance[:4, :4] @ J.T), 0.0, None))
    delta = c_ls - c_fit
    beyond = [(abs(float(d)), axis, float(d)) for axis, (d, s) in enumerate(zip(delta, std))
              if abs(d) > 3.0 * s and abs(d) > 1e-3]
    said = []
    for _, axis, d in sorted(beyond, reverse=True):
        name = "xyz"[axis]
        sign, other = ("+", "-") if d > 0 else ("-", "+")
        said.append(f"the data put the centre of mass {1e3 * abs(d):.0f} mm further along {sign}{name} than the "
                    f"shape can (too small towards {sign}{name}, or shifted towards {other}{name})")
    mass_std = float(np.sqrt(max(covariance[0, 0], 0.0)))
    if abs(m_fit - m_ls) > 3.0 * mass_std and abs(m_fit - m_ls) > 1e-3 * m_ls:
        more = "less" if m_fit < m_ls else "more"
        said.append(f"held in the shape, the payload would take {100 * abs(m_fit - m_ls) / m_ls:.1f} % {more} mass "
                    f"than the data show ({m_ls:.3f} kg)")
    return "; ".join(said)


def inertia_identifiable(
    information: np.ndarray, params: InertialParameters, rel_std: float = IDENTIFIABLE_REL_STD
) -> bool:
    """Whether the data determine the inertia tensor.

    ``information`` is the (whitened) Fisher information of the unknowns
    (phi first). The marginal covariance of the six inertia entries is the
    inverse of the Schur complement of the other unknowns; the inertia counts
    as identified when the standard deviation of each diagonal entry is below
    ``rel_std`` times the mean principal moment about the COM (floored at
    ``m (2 cm)²`` so that point-like payloads, and estimates whose inertia is
    not positive definite, are not judged against their own scale).
    """
    if not np.all(np.isfinite(information)) or params.mass <= 0.0:
        return False
    # The marginal covariance of the inertia entries is their block of the inverse
    # information (= the inverse of the Schur complement of the other unknowns).
    d = np.sqrt(np.clip(np.diag(information), 0.0, None))
    if np.any(d[4:N_PARAMS] == 0.0):
        return False
    d[d == 0.0] = 1.0
    lam, V = eigh(information / np.outer(d, d))
    if lam[0] <= max(lam[-1], 0.0) * 1e-12:
        return False
    cov = (V / lam) @ V.T / np.outer(d, d)
    std_diag = np.sqrt(np.clip(np.diag(cov)[[4, 7, 9]], 0.0, None))  # Jxx, Jyy, Jzz
    moments = params.principal_moments()
    own = float(np.mean(moments)) if moments[0] > 0.0 else 0.0  # a non-physical tensor sets no scale
    scale = max(own, params.mass * _INERTIA_SCALE_FLOOR_M**2)
    return bool(np.all(std_diag < rel_std * scale))
