"""Privacy loss distribution (PLD) composition with Google's dp_accounting.

Imported only when a tracker uses ``accountant="pld"``: dp_accounting is the
optional extra ``skdp[accounting]``.
"""

import functools
import math
from collections import Counter

from skdp.accounting._events import GaussianEvent

__all__ = ["check_dp_accounting", "pld_epsilon"]

# dp_accounting's default: losses rounded (pessimistically) to multiples of 1e-4
VALUE_DISCRETIZATION = 1e-4


def check_dp_accounting():
    """Import dp_accounting or say how to install it."""
    try:
        import dp_accounting  # noqa: F401
    except ImportError as exc:  # pragma: no cover - the test env has it
        from skdp.utils.extras import install_hint

        raise ImportError(
            'accountant="pld" needs Google\'s dp-accounting package: '
            f"{install_hint('accounting')}."
        ) from exc


@functools.lru_cache(maxsize=256)
def _base_pld(event, interval):
    return event._pld(interval)


def pld_epsilon(events, delta, interval=VALUE_DISCRETIZATION):
    """Smallest epsilon of the composition of ``events`` at ``delta`` (upper bound).

    Parameters
    ----------
    events : iterable of PrivacyEvent
    delta : float in (0, 1)
    interval : float
        Discretization of the privacy loss; dp_accounting rounds pessimistically,
        so the result is an upper bound on the exact epsilon.

    Returns
    -------
    float

    Notes
    -----
    Gaussian releases are merged exactly first: composing Gaussian mechanisms
    with noise multipliers s_i is one Gaussian mechanism with multiplier
    ``(sum_i s_i^-2)^(-1/2)`` (the shifts add as orthogonal vectors), which is how
    dp_accounting's ``PLDAccountant`` composes repeated Gaussian events too. Equal
    events of other kinds are self-composed (one FFT convolution power), then the
    distinct ones are convolved.
    """
    counts = Counter()
    inverse_square = 0.0
    for event in events:
        if event.is_non_private:
            return math.inf
        if event.is_trivial:
            continue
        if isinstance(event, GaussianEvent):
            inverse_square += event.noise_multiplier**-2
        else:
            counts[event] += 1
    plds = []
    if inverse_square > 0:
        plds.append(_base_pld(GaussianEvent(inverse_square**-0.5), interval))
    for event, count in counts.items():
        base = _base_pld(event, interval)
        plds.append(base if count == 1 else base.self_compose(count))
    if not plds:
        return 0.0
    total = plds[0]
    for pld in plds[1:]:
        total = total.compose(pld)
    return max(float(total.get_epsilon_for_delta(delta)), 0.0)
