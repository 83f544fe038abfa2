"""The functional mechanism (Zhang et al. 2012) for quadratic objectives.

The skdp-internal FM core (its names are public within skdp, not to users):
shared by :class:`~skdp.linear_model.FMLinearRegression`,
:class:`~skdp.linear_model.FMLogisticRegression` and the vertically partitioned
estimators. Modules, one job each: :mod:`skdp._fm.domain` (objectives, declared
domain), :mod:`skdp._fm.sensitivity`, :mod:`skdp._fm.clipping` (the domain
applied to rows), :mod:`skdp._fm.statistics` (mergeable sums; exact by
:mod:`skdp._fm.exact_sums`), :mod:`skdp._fm.release` (the one noisy release),
:mod:`skdp._fm.solve` (post-processing and solve), :mod:`skdp._fm.newton` (the
optional second release of the logistic gradient and Hessian, one Newton step) and
:mod:`skdp._fm.estimator` (the estimators' shared bases). Every function is
pure (no hidden state); randomness enters only through an explicit
generator, so a distributed protocol that draws noise with the same generator
reproduces the centralized release bit for bit.

The objective
-------------
Both objectives are sums of per-record quadratics in the coefficients ``w``::

    sum_i f(x_i, y_i, w) = w^T A w + b^T w + const

=====================  ===================  =======================
``objective``          ``A``                ``b``
=====================  ===================  =======================
``"squared"``          ``X^T X``            ``-2 X^T y``
``"logistic_taylor"``  ``X^T X / 8``        ``X^T (1/2 - y)``, y in {0, 1}
=====================  ===================  =======================

(the second is the order-2 Taylor expansion at 0 of the logistic loss,
``log(1 + e^z) - y z ~= log 2 + (1/2 - y) z + z^2 / 8``). The minimizer is
``w = -A^{-1} b / 2``. We write ``A = kappa X^T X`` and ``b = X^T beta(y)`` with
``kappa = 1, beta(y) = -2 y`` (squared) or ``kappa = 1/8, beta(y) = 1/2 - y``.

Intercept
---------
``fit_intercept`` appends a constant column of value ``s = intercept_scaling`` to
every row *inside* the declared domain (the intercept is then ``s * w[-1]``): the
sensitivity below accounts for every coefficient the column touches, so there is
no hidden extra spend. The entry ``A[-1, -1] = kappa s^2 n`` is the same for every
pair of neighbouring datasets (replace-one neighbours, ``n`` is public), so it has
sensitivity 0 and is released without noise. ``data_norm`` bounds the feature part
of a row only; the constant column is accounted for exactly.

What is released
----------------
The released vector is ``theta = (A[triu], c * b)``: the ``m = p (p + 1) / 2``
distinct upper-triangle entries of ``A`` in ``numpy.triu_indices(p)`` order
(row-major, diagonal included; ``p`` = number of coefficients, intercept last),
followed by the ``p`` entries of ``b`` multiplied by ``c = linear_weight``. Noise
is i.i.d. on every coordinate of ``theta``; dividing the noisy linear part by ``c``
afterwards is post-processing. ``c`` trades noise between ``A`` and ``b`` at no
privacy cost (see :func:`balanced_linear_weight`).

Typical use (what the central estimators do; the three steps)::

    domain = DataDomain(n_features=d, data_norm=1.0, y_bounds=(-1, 1))
    stats = compute_statistics(X, y, "squared", domain)  # exact; sum over blocks
    noisy = release(stats.A, stats.b, "squared", domain, epsilon=1.0, delta=0.0,
                    mechanism="laplace", linear_weight="auto", random_state=rng)
    coef, intercept = solve_release(noisy.A, noisy.b, "squared", domain,
                                    noise_std=noisy.noise_std,
                                    noise_std_b=noisy.noise_std_b, n=stats.n)

:func:`release` is, in turn, :func:`sensitivity`, :func:`make_mechanism`,
:func:`draw_noise` and :func:`add_noise`; :func:`solve_release` is
:func:`solve_noisy_quadratic` with data-free tuning. The vertical protocol
computes its noisy ``A`` and ``b`` party by party and calls the same pieces.
``linear_weight="auto"`` is :func:`balanced_linear_weight`. Draw order:
one generator, ``noise_A`` (triu order) then ``noise_b``; the intercept's diagonal
gets 0. Neighbours are replace-one (n is public). Post-processing choice (by
measurement, ``benchmarks/bench_fm.py``): PSD projection plus a ridge of
``sqrt(p)`` noise standard deviations, raised to the bias-variance optimum when
the noise swamps the signal; spectral trimming was at best equal to it.
"""

from skdp._fm.centring import centred_domain
from skdp._fm.domain import (
    OBJECTIVES,
    DataDomain,
    objective_constants,
    symmetric_from_triu,
    triu_indices,
)
from skdp._fm.release import (
    NoisyRelease,
    add_noise,
    draw_noise,
    lattice_granularity,
    make_mechanism,
    release,
    release_noise_std,
    resolve_linear_weight,
)
from skdp._fm.sensitivity import (
    Sensitivity,
    balanced_linear_weight,
    default_coef_norm,
    max_l2_in_domain,
    n_released,
    prior_eigenvalue,
    sensitivity,
)
from skdp._fm.solve import DEFAULT_RIDGE_FACTOR, solve_noisy_quadratic, solve_release
from skdp._fm.statistics import (
    FMStatistics,
    beta_bound,
    clip_to_domain,
    compute_statistics,
    fingerprint_items,
    sufficient_statistics,
)

__all__ = [
    "DEFAULT_RIDGE_FACTOR",
    "OBJECTIVES",
    "DataDomain",
    "FMStatistics",
    "NoisyRelease",
    "Sensitivity",
    "add_noise",
    "balanced_linear_weight",
    "beta_bound",
    "centred_domain",
    "clip_to_domain",
    "compute_statistics",
    "default_coef_norm",
    "draw_noise",
    "fingerprint_items",
    "lattice_granularity",
    "make_mechanism",
    "max_l2_in_domain",
    "n_released",
    "objective_constants",
    "prior_eigenvalue",
    "release",
    "release_noise_std",
    "resolve_linear_weight",
    "sensitivity",
    "solve_noisy_quadratic",
    "solve_release",
    "sufficient_statistics",
    "symmetric_from_triu",
    "triu_indices",
]
