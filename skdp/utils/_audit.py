"""Empirical privacy audit: a statistical lower bound on a mechanism's epsilon.

A mechanism M is (eps, delta)-DP only if, for every pair of neighbouring inputs
D, D' and every event S, P[M(D) in S] <= e^eps P[M(D') in S] + delta. Running M many
times on a worst-case pair and estimating both probabilities with Clopper-Pearson
intervals gives, for each event, a bound that holds with the stated confidence:

    eps >= log((p_lower(D, S) - delta) / p_upper(D', S)).

The audit can only *refute* a claim (an audited lower bound above the claimed
epsilon is a bug, up to the confidence level), never prove one.
"""

import numpy as np
from scipy import stats

from skdp.utils._random import noise_generator

__all__ = ["AuditResult", "audit_mechanism", "empirical_epsilon"]


class AuditResult(dict):
    """Result of an audit: ``epsilon_lower_bound``, ``event``, ``counts``...

    A dict with attribute access.
    """

    __getattr__ = dict.__getitem__


def _clopper_pearson(k, n, alpha):
    lower = stats.beta.ppf(alpha, k, n - k + 1) if k > 0 else 0.0
    upper = stats.beta.ppf(1 - alpha, k + 1, n - k) if k < n else 1.0
    return float(np.nan_to_num(lower)), float(upper)


def _events(train_a, train_b, n_thresholds):
    """Candidate events chosen on held-out samples: tails and, if discrete, atoms."""
    pooled = np.concatenate([train_a, train_b])
    values = np.unique(pooled)
    events = []
    if values.size <= 64:
        events += [("==", v) for v in values]
    qs = np.quantile(pooled, np.linspace(0.0, 1.0, n_thresholds + 2)[1:-1])
    for t in np.unique(qs):
        events += [(">", t), ("<=", t)]
    return events


def _indicator(samples, event):
    op, t = event
    if op == "==":
        return samples == t
    if op == ">":
        return samples > t
    return samples <= t


def empirical_epsilon(
    samples_a,
    samples_b,
    *,
    delta=0.0,
    confidence=0.95,
    n_thresholds=20,
    random_state=0,
):
    """Lower-bound epsilon from 1-D output samples on two neighbouring inputs.

    Half of each sample chooses candidate events (tails at quantiles of the pooled
    sample, and atoms for discrete outputs); the other half estimates their
    probabilities, so event selection does not bias the bound. Bonferroni correction
    over events and both directions keeps the overall confidence.

    Parameters
    ----------
    samples_a, samples_b : array-like of shape (n,)
        Scalar outputs (or a scalar statistic of the outputs) of the mechanism on
        the two neighbouring inputs.
    delta : float
        The claimed delta, subtracted as in the definition.
    confidence : float
        Probability that the returned bound is below the true epsilon of the events.

    Returns
    -------
    AuditResult
        ``epsilon_lower_bound`` (0 if nothing could be shown), ``event``,
        ``direction``, ``n_events``.
    """
    rng = noise_generator(random_state)
    a = rng.permutation(np.asarray(samples_a, dtype=np.float64).ravel())
    b = rng.permutation(np.asarray(samples_b, dtype=np.float64).ravel())
    half_a, half_b = a.size // 2, b.size // 2
    events = _events(a[:half_a], b[:half_b], n_thresholds)
    test_a, test_b = a[half_a:], b[half_b:]
    alpha = (1 - confidence) / (2 * len(events))  # Bonferroni, two-sided search
    best = AuditResult(
        epsilon_lower_bound=0.0, event=None, direction=None, n_events=len(events)
    )
    for event in events:
        ka = int(_indicator(test_a, event).sum())
        kb = int(_indicator(test_b, event).sum())
        for direction, (k1, n1, k2, n2) in (
            ("a/b", (ka, test_a.size, kb, test_b.size)),
            ("b/a", (kb, test_b.size, ka, test_a.size)),
        ):
            p1_low, _ = _clopper_pearson(k1, n1, alpha)
            _, p2_high = _clopper_pearson(k2, n2, alpha)
            if p1_low - delta <= 0:
                continue
            eps = float(np.log((p1_low - delta) / p2_high))
            if eps > best["epsilon_lower_bound"]:
                best.update(epsilon_lower_bound=eps, event=event, direction=direction)
    return best


def audit_mechanism(
    mechanism,
    input_a,
    input_b,
    *,
    n_samples=100_000,
    statistic=None,
    delta=0.0,
    confidence=0.95,
    random_state=0,
):
    """Run ``mechanism`` on two neighbouring inputs and lower-bound its epsilon.

    Parameters
    ----------
    mechanism : callable ``(input, n_samples, rng) -> ndarray``
        Draws ``n_samples`` independent outputs on ``input`` (first axis = draws).
        Vectorized mechanisms do this in one call.
    input_a, input_b : any
        A worst-case pair of neighbouring inputs.
    statistic : callable or None
        Maps the outputs (first axis = draws) to one scalar per draw. Default: the
        outputs themselves, which must then be one scalar per draw. Any statistic is
        post-processing, so the bound still applies to the mechanism.
    delta, confidence : float
        See :func:`empirical_epsilon`.

    Returns
    -------
    AuditResult
    """
    rng = noise_generator(random_state)
    outputs = []
    for inp in (input_a, input_b):
        out = np.asarray(mechanism(inp, n_samples, rng))
        out = statistic(out) if statistic is not None else out
        outputs.append(np.asarray(out, dtype=np.float64).reshape(n_samples))
    return empirical_epsilon(
        outputs[0], outputs[1], delta=delta, confidence=confidence, random_state=rng
    )
