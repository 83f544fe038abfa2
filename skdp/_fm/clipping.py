"""The declared domain applied to rows: the public shift, sparsity, box, norm."""

import numpy as np

from skdp._fm.domain import objective_constants
from skdp.utils import clip_to_bounds, clip_to_norm

__all__ = ["beta_bound", "clip_features", "clip_labels", "clip_to_domain"]


def beta_bound(objective, domain):
    """``max |beta(y)|`` over the declared label domain."""
    if objective == "logistic_taylor":
        return 0.5
    if objective == "multinomial_taylor":
        return 1.0  # |1/C - y_c| <= 1 - 1/C
    objective_constants(objective)  # validates the name
    if domain.y_bounds is None:
        raise ValueError('The "squared" objective needs y_bounds in the domain.')
    return 2.0 * max(abs(v) for v in domain.y_bounds)


def clip_features(X, domain):
    """A float64 copy of ``X`` clipped to the declared feature domain."""
    X = np.asarray(X, dtype=np.float64)
    if domain.x_offset is not None:
        X = X - domain.x_offset  # the public shift (a copy)
    if domain.x_scale is not None:
        X = X / domain.x_scale  # the public scale (a copy)
    k = domain.max_nonzero
    if k is not None and k < X.shape[1]:
        small = np.argpartition(np.abs(X), X.shape[1] - k, axis=1)[:, :-k]
        X = X.copy()
        np.put_along_axis(X, small, 0.0, axis=1)
    if domain.has_box:
        X = clip_to_bounds(X, domain.lower, domain.upper)
    if domain.data_norm is not None:
        X = clip_to_norm(X, domain.data_norm)
    return X


def clip_labels(y, objective, domain):
    """A float64 copy of ``y``, for ``"squared"`` shifted and clipped to
    ``y_bounds``."""
    y = np.asarray(y, dtype=np.float64)
    if objective == "squared" and domain.y_bounds is not None:
        y = np.clip(y - domain.y_offset, *domain.y_bounds)
    return y


def clip_to_domain(X, y, objective, domain):
    """Copies of ``X`` and ``y`` clipped to the declared domain (inputs untouched).

    In order: the public shift (``x_offset``, ``y_offset``) is subtracted and
    the rows divided by ``x_scale``, the
    ``max_nonzero`` largest-magnitude entries of each row are kept,
    the box is applied, rows are scaled down to ``data_norm``; labels of the
    ``"squared"`` objective are clipped to ``y_bounds``.
    """
    return clip_features(X, domain), clip_labels(y, objective, domain)
