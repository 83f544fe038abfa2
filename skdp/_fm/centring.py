"""Which description of a declared domain a fit works in: as declared, or centred."""

import dataclasses

import numpy as np

from skdp._fm.domain import DataDomain
from skdp._fm.sensitivity import release_cost

__all__ = ["centred_domain"]


def _box_scaling(lower, upper):
    scaling = float(np.max(np.maximum(np.abs(lower), np.abs(upper))))
    return scaling if scaling > 0 else 1.0


def centred_domain(
    domain, objective, mechanism="laplace", linear_weight="auto", scale=None
):
    """The domain a fit works in: ``domain`` centred where that is free and helps.

    Parameters
    ----------
    domain : DataDomain
        The declared domain (unshifted), in the user's units.
    objective : {"squared", "logistic_taylor", "multinomial_taylor"}
    mechanism, linear_weight
        Only used to cost a box declared with a norm (or ``max_nonzero``).
    scale : bool or None
        Whether a centred box is also mapped to ``[-1, 1]`` (``x_scale``, the
        half-widths). None: when the box is declared alone (a norm bound is
        in the user's units and would not survive the scale).

    Returns
    -------
    DataDomain
        ``domain`` itself without an intercept (or if already shifted).
        Otherwise labels of the ``"squared"`` objective are shifted by the
        midpoint of ``y_bounds``, and a declared box by its midpoints; a box
        declared alone becomes the centred box mapped to ``[-1, 1]`` (each
        feature divided by its half-width, ``x_scale``; ``intercept_scaling``
        1), so that the fit is the one on the columns mapped by hand. A norm
        ball or ``max_nonzero`` is centred at 0 and does not survive the shift:
        of the declared description and the centred box alone (both valid
        descriptions of the data) the one with the smaller
        :func:`~skdp._fm.sensitivity.release_cost` is kept. The choice uses
        only the declaration and the parameters, never the data.

    Notes
    -----
    Shifting rows by a constant and labels by a constant is a
    reparametrization of a model with an intercept (see :class:`DataDomain`,
    Notes): public and data-independent, so it costs no privacy, and the
    sensitivities are those of the returned (shifted) domain, valid because
    every consumer clips the shifted rows to it
    (:func:`~skdp._fm.statistics.clip_to_domain`).
    """
    if not domain.fit_intercept or domain.is_shifted:
        return domain
    y_bounds, y_offset = domain.y_bounds, 0.0
    if objective == "squared" and y_bounds is not None:
        y_offset = 0.5 * (y_bounds[0] + y_bounds[1])
        y_bounds = (y_bounds[0] - y_offset, y_bounds[1] - y_offset)
    declared = dataclasses.replace(domain, y_bounds=y_bounds, y_offset=y_offset)
    if not domain.has_box:
        return declared
    lower, upper = domain.lower, domain.upper
    mid = 0.5 * (lower + upper)
    if scale is None:
        scale = domain.data_norm is None and domain.max_nonzero is None
    half = 0.5 * (upper - lower)
    x_scale = None
    if scale and np.all(half > 0) and np.any(half != 1):
        # the box mapped to [-1, 1]: (x - mid) / half
        x_scale = half
        lower, upper = -np.ones_like(half), np.ones_like(half)
    else:
        lower, upper = lower - mid, upper - mid
    centred = DataDomain(
        n_features=domain.n_features,
        lower=lower,
        upper=upper,
        y_bounds=y_bounds,
        fit_intercept=True,
        intercept_scaling=_box_scaling(lower, upper),
        x_offset=mid if np.any(mid != 0) else None,
        y_offset=y_offset,
        x_scale=x_scale,
        user_box=(domain.lower, domain.upper),
    )
    if domain.data_norm is None and domain.max_nonzero is None:
        return centred
    costs = [
        release_cost(objective, dom, mechanism, linear_weight)
        for dom in (declared, centred)
    ]
    return centred if costs[1] < costs[0] else declared
