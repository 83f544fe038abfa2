"""Checks of what a participant receives: arrays as the plan says they must be.

Every array a role stores from a peer (a party's noisy coefficients, an
evaluator's cross sums, an encryptor's columns and noise share, the dealer's
noise) goes through :func:`check_payload_array` first: dtype, exact shape,
finiteness and, where the plan implies one, a bound
(:meth:`skdp.vertical._plan.Plan.payload_bounds`, :func:`noise_tail_bound`).
"""

import numpy as np

__all__ = ["PAYLOAD_RTOL", "check_payload_array", "noise_tail_bound"]

#: Relative slack of :meth:`Plan.payload_bounds` (floating-point sums).
PAYLOAD_RTOL = 1e-9


def noise_tail_bound(mech):
    """A bound no draw of ``mech``'s noise exceeds in practice: ``60 b + 12
    sigma`` (probability ``e^-60`` for Laplace scale ``b``, below ``1e-32`` for
    a Gaussian of standard deviation ``sigma``); 0 for no noise."""
    return 60.0 * float(getattr(mech, "scale", 0.0)) + 12.0 * float(
        getattr(mech, "sigma", 0.0)
    )


def check_payload_array(value, what, *, shape, bound=None):
    """``value`` as received, checked against what the plan says it must be.

    A float64 ndarray of exactly ``shape`` (no scalar, no list, no string: a
    scalar would be broadcast), every entry finite and, with ``bound`` (an
    array of ``shape`` or a float), ``|value| <= bound`` entrywise. Raises
    ValueError starting with ``what`` (the sender and the entry); the message
    gives the position and the public bound, never the value received.
    """
    shape = tuple(int(s) for s in shape)
    if not isinstance(value, np.ndarray):
        raise ValueError(
            f"{what} must be a float64 array of shape {shape}, got a "
            f"{type(value).__name__}."
        )
    if value.dtype != np.float64:
        raise ValueError(
            f"{what} must be a float64 array of shape {shape}, got dtype {value.dtype}."
        )
    if value.shape != shape:
        raise ValueError(
            f"{what} must be a float64 array of shape {shape}, got shape {value.shape}."
        )
    finite = np.isfinite(value)
    if not finite.all():
        pos = np.unravel_index(int(np.flatnonzero(~finite.ravel())[0]), shape)
        raise ValueError(f"{what} holds a non-finite value at {tuple(map(int, pos))}.")
    if bound is not None:
        bound = np.broadcast_to(np.asarray(bound, dtype=np.float64), shape)
        over = np.abs(value) > bound
        if over.any():
            flat = int(np.flatnonzero(over.ravel())[0])
            pos = tuple(int(i) for i in np.unravel_index(flat, shape))
            raise ValueError(
                f"{what} is out of range at {pos} ({int(over.sum())} of "
                f"{value.size} entries): |value| must be at most "
                f"{float(bound.ravel()[flat]):.6g}, the bound the declared domain, "
                "n and the noise imply (Plan.payload_bounds)"
            )
    return value
