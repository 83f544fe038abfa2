"""Value pins: "the same model" on any machine, not the same bits.

A pinned test fits with a fixed ``random_state`` and compares what the fit released
with values recorded earlier (readable float literals in the test module). It guards
against refactors that change what a fit releases. It must pass on any CPU, BLAS,
thread count and supported NumPy/SciPy, so the comparison has a tolerance:

    max |got - pinned| <= PIN_RTOL * max |pinned|

(normwise over the whole output vector, so that entries near 0 do not demand a
relative precision no computation has).

Why ``PIN_RTOL = 1e-6``. What differs between machines, and how far it can move a
pinned output:

- Sums and solves through BLAS/LAPACK and libm differ in their last bits
  (``~1e-16`` relative) with the CPU's kernels and the thread count. Every pinned
  solve is well conditioned (the post-processed FM quadratics have condition
  numbers 5-41, the inspection Hessians are regularised; printed by each module's
  ``_generate``), so a solve moves by ``kappa * p * 1e-16 < 1e-12``.
- The FM statistics are exact sums (bit-identical everywhere), but the Laplace
  noise is drawn on a lattice of step ``2^-30`` of its scale from NumPy's
  geometric sampler, which calls libm's ``log1p``: a last-bit difference there can
  move one draw by one lattice step (seen once in 12 fits between two x86_64
  machines: a relative ``7e-10`` change of ``coef_``). One step moves the
  solution by at most ``kappa * 2^-30 ~ 4e-8`` of its scale; the tolerance leaves
  room for about 25 such steps.
- Iterative solvers stop at tolerances, so a different path can stop elsewhere:
  the inspection pins fit with Newton (converged to ``tol=1e-10``), and their
  conjugate-gradient products stop at ``rtol=1e-10`` (normwise error
  ``kappa * 1e-10 <= 1e-8``).

A real change of a release is far above ``1e-6``: multiplying the FM linear weight
by 1.01 moves the pinned coefficients by about ``1e-2`` of their scale, one more
noise draw by ``O(1)`` (both checked when this tolerance was chosen; see
``tests/README.md``).

Bit-for-bit equality is a different kind of test and stays where skdp guarantees
it within one process (``fit`` vs ``fit_chunks`` vs merged ``statistics`` vs dask,
dealer-noise vertical vs central): those compare two computations made here, not a
computation with a number recorded elsewhere.
"""

import numpy as np

PIN_RTOL = 1e-6


def assert_matches_pin(got, pinned, what="output"):
    """Assert ``got`` equals the recorded ``pinned`` values within ``PIN_RTOL``."""
    got = np.ravel(np.asarray(got, dtype=np.float64))
    pinned = np.ravel(np.asarray(pinned, dtype=np.float64))
    assert got.shape == pinned.shape, (
        f"{what}: shape {got.shape} differs from the pinned {pinned.shape}"
    )
    assert np.all(np.isfinite(got)), f"{what}: non-finite values {got}"
    scale = float(np.max(np.abs(pinned), initial=0.0)) or 1.0
    err = float(np.max(np.abs(got - pinned), initial=0.0))
    assert err <= PIN_RTOL * scale, (
        f"{what} moved by {err:.3g} (tolerance {PIN_RTOL * scale:.3g}): "
        f"got {got.tolist()}, pinned {pinned.tolist()}. A deliberate change of "
        "what the fit releases re-records the pins (run the module as a script) "
        "and says why in its commit."
    )


def format_pins(name, cases):
    """Python source of ``name = {case: [floats...]}`` with exact float literals."""
    lines = [f"{name} = {{"]
    for case, values in cases.items():
        lines.append(f"    {case!r}: [")
        lines += [f"        {float(v)!r}," for v in np.ravel(values)]
        lines.append("    ],")
    lines.append("}")
    return "\n".join(lines)
