"""What every statistic of :mod:`skdp.tools` shares: the records, the axes,
the bounds, and the spend recorded before any draw."""

import math
import numbers

import numpy as np

from skdp.accounting import PrivacyBudget, record_spend
from skdp.utils import check_bounds, check_epsilon
from skdp.utils.privacy_warnings import warn_privacy_leak

__all__ = ["DaskReduction", "Reduction", "as_data", "check_no_inf", "spend"]


def as_data(a, name="a", allow_nan=False):
    """``a`` as a float64 array with at least one dimension and row: finite,
    or with ``allow_nan`` finite or NaN (a missing value; inf still refused)."""
    from skdp.utils.dask_rows import is_dask_collection

    if is_dask_collection(a):  # never brought to this process silently
        raise TypeError(
            f"{name} is a dask collection: of skdp.tools, sum, mean, var, std, "
            "their nan* variants, count_nonzero and the histograms reduce it on "
            "the workers; compute it first for the quantiles (they need every "
            "value in one place)."
        )
    arr = np.asarray(a)
    if arr.dtype == object or not (
        np.issubdtype(arr.dtype, np.number) or arr.dtype == bool
    ):
        raise TypeError(f"{name} must hold numbers, got dtype {arr.dtype}.")
    arr = np.atleast_1d(arr.astype(np.float64))
    if arr.shape[0] == 0 or arr.size == 0:
        raise ValueError(f"{name} must not be empty.")
    if allow_nan:
        check_no_inf(arr, name)
    elif not np.all(np.isfinite(arr)):
        raise ValueError(
            f"{name} must be finite (no NaN or inf): drop or impute missing values "
            "first (or use the nan* functions); how many are missing is itself data."
        )
    return arr


def check_no_inf(arr, name="a"):
    """Refuse ``inf``/``-inf`` in float ``arr`` (NaN, a missing value, passes)."""
    if np.any(np.isinf(arr)):
        raise ValueError(
            f"{name} must not hold inf or -inf (NaN marks a missing value; an "
            "infinite one is not missing): replace or drop them first."
        )
    return arr


def _axes(axis, ndim):
    if axis is None:
        return tuple(range(ndim))
    message = f"axis must be None, an int or a tuple of ints, got {axis!r}."
    if isinstance(axis, numbers.Integral):
        axes = (axis,)
    else:
        try:
            axes = tuple(axis)
        except TypeError:  # e.g. a float: not iterable
            raise TypeError(message) from None
    out = []
    for ax in axes:
        if isinstance(ax, bool) or not isinstance(ax, numbers.Integral):
            raise TypeError(message)
        if not -ndim <= ax < ndim:
            raise ValueError(f"axis {ax} is out of bounds for an array of {ndim} dims.")
        out.append(int(ax) % ndim)
    if len(set(out)) != len(out):
        raise ValueError(f"axis {axis!r} repeats an axis.")
    return tuple(sorted(out))


class Reduction:
    """A reduction of ``a`` over ``axis``, seen as outputs over records.

    The **records** are the slices ``a[i]`` along the first axis (the rows;
    the elements of a 1-d array): neighbouring arrays differ in one of them
    (replace-one, the shape public). Each output ``o`` reduces ``m`` elements.

    Attributes
    ----------
    values : ndarray of shape (n_outputs, m)
        The elements of each output (before clipping).
    out_shape : tuple
        Shape of the result (``keepdims`` applied).
    n_records : int
    per_record : int
        ``E``: the elements of one record, over all outputs (``a.size / n``).
    per_output : int
        ``e``: the elements one record holds in one output it touches.
    touched : int
        How many outputs one record touches (``E / e``).
    """

    def __init__(self, arr, axis=None, keepdims=False):
        axes = _axes(axis, arr.ndim)
        kept = [ax for ax in range(arr.ndim) if ax not in axes]
        moved = np.transpose(arr, kept + list(axes))
        n_outputs = math.prod(arr.shape[ax] for ax in kept)
        self.values = moved.reshape(n_outputs, -1)
        self.m = self.values.shape[1]
        self.n_records = arr.shape[0]
        self.per_record = arr.size // self.n_records
        if 0 in axes:
            self.per_output = self.m // self.n_records
            self.touched = n_outputs
        else:
            self.per_output = self.m
            self.touched = n_outputs // self.n_records
        if keepdims:
            self.out_shape = tuple(
                1 if ax in axes else arr.shape[ax] for ax in range(arr.ndim)
            )
        else:
            self.out_shape = tuple(arr.shape[ax] for ax in kept)
        self.n_outputs = n_outputs

    def bounds(self, bounds, name="bounds"):
        """``(lower, upper)`` of each output, shape ``(n_outputs,)``: declared
        (a pair of scalars, or one value per output in the result's flattened
        order, in any form of :func:`~skdp.utils.check_bounds`), or taken from
        the data with a :class:`~skdp.exceptions.PrivacyLeakWarning`."""
        if bounds is None:
            warn_privacy_leak(
                f"{name} were not declared, so they are taken from the data: the "
                "result leaks the data's range and is not differentially private. "
                f"Declare {name}=(lower, upper) to get the guarantee."
            )
            lo, hi = float(self.values.min()), float(self.values.max())
            if hi == lo:
                hi = lo + 1.0
            return np.full(self.n_outputs, lo), np.full(self.n_outputs, hi)
        return check_bounds(bounds, self.n_outputs, name=name)

    def shape_result(self, flat):
        """The outputs in the result's shape (a float for a scalar result)."""
        out = np.asarray(flat).reshape(self.out_shape)
        return out.item() if out.ndim == 0 else out


def _check_block(block):
    """One block of a dask input, checked on its worker (as :func:`as_data`)."""
    block = np.asarray(block, dtype=np.float64)
    if not np.all(np.isfinite(block)):
        raise ValueError(
            "a must be finite (no NaN or inf): drop or impute missing values "
            "first (or use the nan* functions); how many are missing is itself data."
        )
    return block


def _block_moments(block, *, lower, upper, outputs, exact):
    """Per-output sums of one block of rows, reduced on a worker.

    ``outputs == 1``: every element of the block feeds the one output;
    otherwise column ``o`` feeds output ``o``. Private: the sums of ``w`` and
    ``w^2`` in [-1, 1] units (``Moments.sums``); ``exact``: the clipped
    values' sum, mean and ``m2`` (merged by Chan's update).
    """
    from skdp._moments import Moments

    values = _check_block(block).reshape(-1, outputs)
    n = values.shape[0]
    if n == 0:
        return Moments(0)
    clipped = np.clip(values, lower, upper)
    if exact:
        return Moments(
            n,
            sums=clipped.sum(axis=0),
            mean=clipped.mean(axis=0),
            m2=clipped.var(axis=0) * n,
        )
    centre, half = (lower + upper) / 2, (upper - lower) / 2
    w = (clipped - centre) / half
    return Moments(n, sums=np.concatenate([w.sum(axis=0), np.einsum("ij,ij->j", w, w)]))


class DaskReduction:
    """The :class:`Reduction` of a dask array whose records are its rows.

    Reduced over all axes (one output) or over the rows only (one output per
    column of a 2-d array); the sums are computed per block of rows on the
    workers (:func:`skdp.utils.dask_rows.reduce_rows`) and only they come back.
    """

    def __init__(self, arr, axis=None, keepdims=False):
        from skdp.utils.dask_rows import as_row_blocks

        arr = as_row_blocks(arr, "a")
        if not (np.issubdtype(arr.dtype, np.number) or arr.dtype == bool):
            raise TypeError(f"a must hold numbers, got dtype {arr.dtype}.")
        if arr.size == 0:
            raise ValueError("a must not be empty.")
        axes = _axes(axis, arr.ndim)
        if axes == tuple(range(arr.ndim)):
            self.n_outputs = 1
        elif axes == (0,):
            self.n_outputs = arr.shape[1]
        else:
            raise ValueError(
                f"on a dask array, axis must reduce the rows (None or 0), got "
                f"{axis!r}: reduce the other axes first with dask itself."
            )
        self.arr = arr if arr.ndim == 2 else arr[:, None]
        self.n_records = arr.shape[0]
        self.per_record = arr.size // self.n_records
        self.m = arr.size // self.n_outputs
        if keepdims:
            self.out_shape = (1,) * arr.ndim
            if self.n_outputs > 1:
                self.out_shape = (1, arr.shape[1])
        else:
            self.out_shape = () if self.n_outputs == 1 else (arr.shape[1],)

    def bounds(self, bounds, name="bounds"):
        """Declared ``(lower, upper)`` per output (reading them off the data
        would leak them)."""
        if bounds is None:
            raise ValueError(
                f"skdp.tools on dask input needs declared {name}: reading the "
                "range off the data would leak it."
            )
        return check_bounds(bounds, self.n_outputs, name=name)

    def moments(self, lower, upper, exact):
        """The merged :class:`~skdp._moments.Moments`."""
        import functools

        from skdp.utils.dask_rows import reduce_rows

        reduce_block = functools.partial(
            _block_moments,
            lower=lower,
            upper=upper,
            outputs=self.n_outputs,
            exact=exact,
        )

        return reduce_rows(self.arr, reduce_block, _merge)

    shape_result = Reduction.shape_result


def _merge(*parts):
    out = parts[0]
    for part in parts[1:]:
        out = out + part
    return out


def spend(epsilon, source, mechanism=None):
    """Record the pure ``epsilon`` of one call in every active tracker."""
    budget = PrivacyBudget(float(epsilon), 0.0)
    return record_spend(budget, f"skdp.tools.{source}", mechanism=mechanism)


def checked_epsilon(epsilon):
    return check_epsilon(epsilon)
