"""Incremental privacy loss distribution (PLD) composition on dp_accounting's PLDs.

Imported only when a tracker uses ``accountant="pld"``: dp_accounting is the
optional extra ``skdp[accounting]``. dp_accounting builds each release's PLD
(pessimistically discretized: losses rounded up to multiples of 1e-4); this
module composes them one release at a time, so that checking a release against
a cap costs the same whatever the number of earlier releases.

How (each step keeps the result an upper bound, i.e. "pessimistic"):

- Gaussian releases are merged exactly: Gaussian mechanisms with noise
  multipliers s_i compose into one with ``(sum_i s_i^-2)^(-1/2)`` (the shifts add
  as orthogonal vectors), as dp_accounting's ``PLDAccountant`` does. Alone, they
  are evaluated in closed form (Balle & Wang 2018), with no discretization.
- Every other release is convolved into one running distribution: a few
  additions for randomized response and (epsilon, delta) releases (2-3 atoms),
  an FFT for Laplace. After each convolution the running distribution is
  trimmed: tails of mass ``TAIL_MASS`` as dp_accounting does (the lower tail
  rounded up onto the first kept loss, the upper tail to +inf), losses below
  ``LOWER_LOSS`` rounded up onto it, and, under a cap, losses above
  ``cap + UPPER_MARGIN`` sent to +inf. Rounding losses up, to +inf included, is
  dp_accounting's own pessimistic truncation, so the result stays an upper
  bound; and the window bounds the array, hence the cost, whatever the number
  of releases.
- The smallest epsilon for the target delta is the same computation as
  dp_accounting's ``get_epsilon_for_delta``, vectorized. A cap ``(c, delta)``
  is checked with the equivalent ``delta(c) <= delta``, which reads only the
  losses above ``c``.

Why the window costs (almost) nothing: any PLD has ``E[exp(-L)] <= 1``, so
``P(L < -x) <= exp(-x)``: rounding the losses below ``LOWER_LOSS = -50`` up moves
at most ``2e-22`` of mass per release. Under a cap ``c``, a release is accepted
only if ``delta(c) <= delta``; mass at losses ``> c + m`` counts in ``delta(c)``
with weight at least ``1 - exp(-m)`` already, so sending it to +inf raises
``delta(c)`` by at most ``exp(-m) / (1 - exp(-m)) * delta`` (``4.5e-5 * delta``
for ``m = 10``).
"""

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from skdp.accounting._events import GaussianEvent

__all__ = ["PLDState", "check_dp_accounting", "gaussian_epsilon", "pld_epsilon"]

VALUE_DISCRETIZATION = 1e-4  # dp_accounting's default loss grid
LOWER_LOSS = -50.0  # losses below are rounded up to it (see the module docstring)
UPPER_MARGIN = 10.0  # under a cap c, losses above c + UPPER_MARGIN go to +inf
TAIL_MASS = 1e-15  # mass trimmed per composition (dp_accounting's default)
_SPARSE_ATOMS = 64  # convolve by shifted additions up to this many atoms


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


# ------------------------------------------------------------------ the PMFs
@dataclass(frozen=True)
class _Pmf:
    """A discretized PLD: ``probs[i]`` at loss ``(lower + i) * interval``."""

    lower: int
    probs: np.ndarray
    infinity: float


def _from_dp_accounting(pmf):
    # dp_accounting exposes no public accessor for a PMF's arrays: this is the
    # one place that reads them (tests compare with its own compose()).
    dense = pmf.to_dense_pmf()
    probs = np.asarray(dense._probs, dtype=np.float64)
    nonzero = np.flatnonzero(probs)
    if nonzero.size == 0:
        return _Pmf(0, np.ones(1), float(dense._infinity_mass))  # all at +inf
    first, last = nonzero[0], nonzero[-1]
    return _Pmf(
        int(dense._lower_loss) + int(first),
        probs[first : last + 1].copy(),
        float(dense._infinity_mass),
    )


@functools.lru_cache(maxsize=256)
def _event_pmfs(event, interval):
    """``(remove, add)`` PMFs of one event; ``add`` is None when symmetric."""
    pld = event._pld(interval)
    remove = _from_dp_accounting(pld._pmf_remove)
    add = None if pld._symmetric else _from_dp_accounting(pld._pmf_add)
    return remove, add


@functools.lru_cache(maxsize=64)
def _gaussian_pmf(noise_multiplier, interval):
    return _event_pmfs(GaussianEvent(noise_multiplier), interval)[0]


def _convolve(a, b):
    if np.count_nonzero(b) > _SPARSE_ATOMS:
        if np.count_nonzero(a) <= _SPARSE_ATOMS:
            a, b = b, a
        else:
            from scipy import signal

            return np.maximum(signal.fftconvolve(a, b), 0.0)  # FFT round-off
    out = np.zeros(a.size + b.size - 1)
    for shift in np.flatnonzero(b):
        out[shift : shift + a.size] += b[shift] * a
    return out


def _prefix_length(probs, mass):
    """Length of the longest prefix of ``probs`` whose sum is at most ``mass``."""
    size = 4096  # tails are short: look at growing chunks, not the whole array
    while True:
        total = np.cumsum(probs[:size])
        if total[-1] > mass or size >= probs.size:
            return int(np.searchsorted(total, mass, side="right"))
        size *= 4


def _compose(a, b, tail_mass, low=None, high=None):
    """Composition of two PMFs, trimmed pessimistically to ``[low, high]``."""
    probs = _convolve(a.probs, b.probs)
    lower = a.lower + b.lower
    infinity = a.infinity + b.infinity - a.infinity * b.infinity
    # tails of mass tail_mass / 2 each, as dp_accounting's compose
    left = min(_prefix_length(probs, tail_mass / 2), probs.size - 1)
    right = min(_prefix_length(probs[::-1], tail_mass / 2), probs.size - left - 1)
    # the grid window
    if low is not None:
        left = max(left, min(low - lower, probs.size - right - 1))
    if high is not None:
        right = max(right, min(probs.size - (high - lower) - 1, probs.size - left - 1))
    kept = probs[left : probs.size - right].copy()
    kept[0] += probs[:left].sum()  # rounded up onto the first kept loss
    infinity += probs[probs.size - right :].sum()  # rounded up to +inf
    return _Pmf(lower + left, kept, min(infinity, 1.0))


def _epsilon_for_delta(pmf, delta, interval):
    """dp_accounting's ``_get_epsilon_for_delta``, vectorized (same arithmetic).

    It walks the losses from the largest down, accumulating the mass above and
    its ``exp(-loss)``-weighted mass, until the epsilon those give is at least
    the loss: done here on growing chunks from the top, since the answer lies in
    the upper tail.
    """
    if pmf.infinity > delta:
        return math.inf
    n = pmf.probs.size
    probs = pmf.probs[::-1]  # descending losses
    upper, lower, done = pmf.infinity, 0.0, 0
    size = 4096
    while done < n:
        stop = min(n, done + size)
        losses = (pmf.lower + n - 1 - np.arange(done, stop)) * interval
        chunk = probs[done:stop]
        upper_after = upper + np.cumsum(chunk)
        lower_after = lower + np.cumsum(chunk * np.exp(-losses))
        upper_before = np.concatenate(([upper], upper_after[:-1]))
        lower_before = np.concatenate(([lower], lower_after[:-1]))
        with np.errstate(divide="ignore", invalid="ignore"):
            stops = (
                (upper_before > delta)
                & (lower_before > 0)
                & (np.log((upper_before - delta) / lower_before) >= losses)
            )
        huge = (upper_after >= delta) & (lower_after == 0)  # exp(-loss) underflowed
        first_stop = int(np.argmax(stops)) if stops.any() else chunk.size
        first_huge = int(np.argmax(huge)) if huge.any() else chunk.size
        if first_huge < first_stop:
            return max(0.0, float(losses[first_huge]))
        if first_stop < chunk.size:
            upper, lower = upper_before[first_stop], lower_before[first_stop]
            break
        upper, lower, done = upper_after[-1], lower_after[-1], stop
        size *= 4
    if upper <= lower + delta:
        return 0.0
    return math.log((upper - delta) / lower)


def _delta_for_epsilon(pmf, epsilon, interval):
    """``inf + sum_{loss > eps} p (1 - e^(eps - loss))``: dp_accounting's formula.

    Touches only the losses above ``epsilon``: few, under a cap.
    """
    n = pmf.probs.size
    first = min(max(math.floor(epsilon / interval) - pmf.lower + 1, 0), n)
    losses = (pmf.lower + np.arange(first, n)) * interval
    above = losses > epsilon  # guards the rounding of floor() at the boundary
    return pmf.infinity + float(
        np.dot(-np.expm1(epsilon - losses[above]), pmf.probs[first:][above])
    )


def gaussian_epsilon(noise_multiplier, delta):
    """Smallest epsilon of the Gaussian mechanism (sigma / sensitivity) at delta.

    Exact (Balle & Wang 2018, Theorem 8): the root in epsilon of
    ``Phi(1/2s - eps s) - e^eps Phi(-1/2s - eps s) = delta``, nudged up until the
    condition holds in floating point, so it never understates the truth.
    """
    from scipy import optimize

    from skdp._gaussian_calibration import gaussian_delta

    def excess(eps):
        return gaussian_delta(noise_multiplier, eps) - delta

    if excess(0.0) <= 0:
        return 0.0
    high = 1.0
    while excess(high) > 0:
        high *= 2.0
        if high > 1e12:
            return math.inf
    eps = optimize.brentq(excess, 0.0, high, xtol=1e-13, rtol=1e-13)
    while excess(eps) > 0:
        eps = math.nextafter(eps, math.inf) * (1 + 1e-12)
    return eps


# ------------------------------------------------------------------ the state
@dataclass(frozen=True)
class PLDState:
    """The PLD composition of the releases of one tracker (or one row cell).

    Immutable: :meth:`add` returns the state with one more release, so a release
    refused by the cap leaves the recorded state as it was.

    Parameters
    ----------
    upper_loss : float or None
        The cap's epsilon plus ``UPPER_MARGIN`` (None without a cap).
    tail_mass : float
        Mass trimmed per composition.
    """

    upper_loss: float | None = None
    tail_mass: float = TAIL_MASS
    interval: float = VALUE_DISCRETIZATION
    inverse_square: float = 0.0  # sum of s^-2 over Gaussian events
    remove: _Pmf | None = None  # every other event, composed
    add: _Pmf | None = None  # its "add" side, when some event is asymmetric
    non_private: bool = False

    def add_events(self, events):
        """The state after one more release made of ``events``."""
        state = self
        for event in events:
            if event.is_non_private:
                return replace(state, non_private=True)
            if event.is_trivial:
                continue
            if isinstance(event, GaussianEvent) and state.remove is None:
                # Gaussians alone merge exactly (and are evaluated in closed form)
                inverse_square = state.inverse_square + event.noise_multiplier**-2
                state = replace(state, inverse_square=inverse_square)
                continue
            if state.inverse_square > 0:
                # the first other release: the merged Gaussian joins the PMF
                merged = _gaussian_pmf(state.inverse_square**-0.5, state.interval)
                state = replace(state, remove=merged, inverse_square=0.0)
            remove, add = _event_pmfs(event, state.interval)
            if add is None and state.add is None:  # symmetric so far
                state = replace(state, remove=state._compose(state.remove, remove))
                continue
            running_add = state.remove if state.add is None else state.add
            state = replace(
                state,
                remove=state._compose(state.remove, remove),
                add=state._compose(running_add, remove if add is None else add),
            )
        return state

    def _compose(self, running, pmf):
        if running is None:
            return pmf
        low = math.ceil(LOWER_LOSS / self.interval)
        high = (
            None
            if self.upper_loss is None
            else math.floor(self.upper_loss / self.interval)
        )
        return _compose(running, pmf, self.tail_mass, low, high)

    def delta(self, epsilon):
        """delta of the composition at ``epsilon`` (an upper bound)."""
        if self.non_private:
            return 1.0
        if self.remove is None:
            if self.inverse_square == 0:
                return 0.0
            from skdp._gaussian_calibration import gaussian_delta

            return gaussian_delta(self.inverse_square**-0.5, epsilon)
        return max(_delta_for_epsilon(s, epsilon, self.interval) for s in self._sides)

    def epsilon(self, delta):
        """Smallest epsilon of the composition at ``delta`` (an upper bound)."""
        if self.non_private:
            return math.inf
        if self.remove is None:
            if self.inverse_square == 0:
                return 0.0
            return gaussian_epsilon(self.inverse_square**-0.5, delta)
        return max(_epsilon_for_delta(s, delta, self.interval) for s in self._sides)

    @property
    def _sides(self):
        return [self.remove] if self.add is None else [self.remove, self.add]


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
    """
    return PLDState(interval=interval).add_events(list(events)).epsilon(delta)
