"""The one rule for "does not vary": a spread of values (their range, or a standard error) is no spread when it is
within ``TOLERANCE`` of the values' own size (at least 1). Floating-point sums leave noise of about 1e-16 of a
value (0.1 summed in another order); a real spread of a score is far above 1e-9 of it. The paired test, the
comparison's interval, a cell's interval, the minimum detectable difference and the ranks' simultaneous
intervals all decide it here, so they never disagree (40 documents each 0.1 better up to rounding: no interval
*and* the exact sign test, not a bootstrap p beside a dropped interval)."""

from __future__ import annotations

import numpy as np

TOLERANCE = 1e-9


def negligible(spread, size=0.0):
    """Whether ``spread`` (a range or a standard deviation; an array is decided element-wise) is rounding noise
    beside values of magnitude ``size``."""
    return np.asarray(spread) <= TOLERANCE * np.maximum(1.0, np.abs(size))


def constant(values) -> bool:
    """Whether the finite ``values`` are one value up to rounding (False when there are none)."""
    values = np.asarray(values, dtype=float)
    values = values[np.isfinite(values)]
    return bool(len(values)) and bool(negligible(np.ptp(values), np.abs(values).max()))


def same_nonzero(values, value) -> bool:
    """Whether the finite ``values`` are one value up to rounding and ``value`` (the observed one) is not 0 up to
    rounding: a resampled difference that is the same in every resample, though the runs differ."""
    return not bool(negligible(abs(value))) and constant(values)
