"""The white-noise level of a measured signal, from the signal alone.

Errors-in-variables corrections need the noise of the accelerations that build
the regressor. A data sheet gives it for a sensor; for signals derived from
other ones (an IMU's differentiated gyro, accelerations from joint encoders) it
is easier to measure: the fourth difference ``x[j-2] - 4 x[j-1] + 6 x[j] - 4 x[j+1] + x[j+2]``
of a smooth signal sampled fast is nearly zero (a 1 Hz motion sampled at 100 Hz
keeps ``(2 pi / 100)^4 = 2e-5`` of its amplitude), and of white noise of std ``s``
it has std ``s sqrt(70)``. The median of its magnitude is robust to what is left
of the motion and to occasional spikes: ``s = median|d4x| / (0.6745 sqrt(70))``.

The median is kept over a fixed log-spaced histogram (log-interpolated within a
bin), so the monitor takes any number of samples in constant memory and batches
of any size (including one: the last four samples of the previous batch are
remembered). Noise that is not white (a low-pass before sampling) has much
smaller high differences and reads as lower: such signals carry
correspondingly less bias.
"""

from __future__ import annotations

import numpy as np

__all__ = ["SignalNoise"]

_EDGES = np.logspace(-9, 6, 601)
"""Histogram bin edges of |fourth difference| (SI units): 40 bins per decade, 1e-9 to 1e6."""
_GAUSS_MAD = 0.6744897501960817
"""Median of |N(0, 1)|."""
_STENCIL = np.array([1.0, -4.0, 6.0, -4.0, 1.0])
"""Fourth difference; the sum of its squares is 70."""


def _bins(magnitudes: np.ndarray) -> np.ndarray:
    """The bin of each magnitude among :data:`_EDGES` (``searchsorted``'s, from the logarithm: no search)."""
    with np.errstate(divide="ignore"):
        position = np.ceil((np.log10(magnitudes) + 9.0) * 40.0)
    index = np.clip(np.nan_to_num(position, neginf=0.0), 0, len(_EDGES)).astype(np.intp)
    # the logarithm's rounding may put a value next to an edge one bin off: searchsorted's rule there
    low = index > 0
    index[low & (magnitudes <= _EDGES[np.maximum(index - 1, 0)])] -= 1
    high = index < len(_EDGES)
    index[high & (magnitudes > _EDGES[np.minimum(index, len(_EDGES) - 1)])] += 1
    return index


class SignalNoise:
    """Streaming robust estimate of the per-axis white-noise std of a (N, d) signal."""

    _CHUNK = 64
    """Rows gathered before they are differenced: one row at a time would cost a numpy call each."""

    def __init__(self) -> None:
        self._counts = np.zeros(len(_EDGES) + 1, dtype=np.int64)
        self._tail: np.ndarray | None = None
        self._pending: list[np.ndarray] = []
        self._n_pending = 0
        self._n = 0
        self._std: tuple[int, float] | None = None
        """The last :meth:`std` and the count of differences it was read at."""

    def reset(self) -> None:
        """Forget every row taken."""
        self._counts[:] = 0
        self._tail = None
        self._pending = []
        self._n_pending = 0
        self._n = 0
        self._std = None

    SETTLED = 100_000
    """Differences after which the estimate no longer moves (relative std of the variance 1 %):
    a monitor of a constant noise (an encoder's) may stop taking rows then."""
    THIN = 4
    """Beyond :data:`SETTLED` differences, one in this many is counted: the median still follows a noise
    that changes (a sensor warming up), a fourth as fast, and a long run's monitor costs a quarter
    (at 1 kHz it was half of a batched update's time)."""

    @property
    def settled(self) -> bool:
        """Whether :data:`SETTLED` differences are in: the estimate no longer moves."""
        return self.n_differences >= self.SETTLED

    @property
    def n_differences(self) -> int:
        """Fourth differences counted so far, over every axis."""
        self._flush()
        return self._n

    def update(self, x: np.ndarray) -> None:
        """Take the next rows of the signal, in time order."""
        x = np.asarray(x, dtype=float)
        if x.ndim == 1:
            x = x[:, None]
        if len(x) == 0:
            return
        self._pending.append(x)
        self._n_pending += len(x)
        if self._n_pending >= self._CHUNK:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        x = self._pending[0] if len(self._pending) == 1 else np.concatenate(self._pending)
        self._pending, self._n_pending = [], 0
        chain = x if self._tail is None else np.concatenate([self._tail, x])
        k = len(_STENCIL)
        if len(chain) >= k:
            d4 = sum(c * chain[i:len(chain) - k + 1 + i] for i, c in enumerate(_STENCIL))
            full = max(-(-(self.SETTLED - self._n) // max(d4.shape[1], 1)), 0)  # rows until settled
            if full < len(d4):
                d4 = np.concatenate([d4[:full], d4[full :: self.THIN]])
            mags = np.abs(d4[np.isfinite(d4)])
            self._counts += np.bincount(_bins(mags), minlength=len(self._counts))
            self._n += int(mags.size)
        self._tail = chain[-(k - 1):].copy()

    def std(self) -> float:
        """Noise std per axis (the signal's units), NaN before the first 30 differences."""
        n = self.n_differences  # flushes what is pending
        if n < 30:
            return float("nan")
        if self._std is not None and self._std[0] == n:
            return self._std[1]
        self._std = (n, self._median_std(n))
        return self._std[1]

    def _median_std(self, n: int) -> float:
        """The std that the median of ``n`` counted differences gives."""
        cum = np.cumsum(self._counts)
        k = int(np.searchsorted(cum, 0.5 * n))
        if k == 0:
            return 0.0
        lo = _EDGES[k - 1]
        hi = _EDGES[min(k, len(_EDGES) - 1)]
        below = cum[k] - self._counts[k]  # counts below bin k
        fraction = (0.5 * n - below) / max(self._counts[k], 1)  # log-linear within the bin
        median = lo * (hi / lo) ** float(np.clip(fraction, 0.0, 1.0))
        return float(median / (_GAUSS_MAD * np.sqrt(70.0)))

    def relative_variance(self) -> float:
        """Variance of the estimated variance ``std()²`` relative to its square.

        ``10 / n`` for ``n`` differences, measured for white Gaussian noise: the median's
        efficiency and the overlap of neighbouring differences."""
        n = self.n_differences
        return 10.0 / n if n else float("inf")
