"""What must never travel in the vertical protocol: one definition for the
in-process transcript check and the federated wire check."""

import numpy as np

from skdp._fm import objective_constants


def numeric_leaves(payload):
    """Every numeric array (or bytes blob) a receiver can read in a payload."""
    if payload is None:
        return
    if isinstance(payload, dict) and payload.get("simulated"):
        # the plaintext backend's stand-in for a ciphertext (ideal functionality)
        return
    if isinstance(payload, np.ndarray):
        yield payload
    elif isinstance(payload, bytes | bytearray):
        yield bytes(payload)
    elif isinstance(payload, dict):
        for value in payload.values():
            yield from numeric_leaves(value)
    elif isinstance(payload, list | tuple):
        for value in payload:
            yield from numeric_leaves(value)
    elif isinstance(payload, float | int):
        yield np.array([payload], dtype=float)


def secrets(X, y, parts, objective, label_party, linear_weight):
    """Raw columns (with the label and its beta) and the exact cross-party sums."""
    kappa, beta = objective_constants(objective)
    beta_y = beta(np.clip(y, -1, 1))
    columns = [X[:, j] for j in range(X.shape[1])] + [y, beta_y]
    sums = []
    for k in range(len(parts)):
        for q in range(k + 1, len(parts)):
            sums.append(kappa * X[:, parts[k]].T @ X[:, parts[q]])
        if k != label_party:
            sums.append(X[:, parts[k]].T @ beta_y)
            sums.append(linear_weight * X[:, parts[k]].T @ beta_y)
    return columns, np.concatenate([s.ravel() for s in sums])


def any_exact(values, exact_sums):
    close = np.isclose(values[:, None], exact_sums[None, :], rtol=1e-9, atol=1e-9)
    return close.any()


def assert_leaks_nothing(leaf, columns, exact_sums, n, to_server, what):
    """No length-n vector; no raw or fixed-point column inside a ciphertext; to
    the server, nothing equal to an exact cross-party sum."""
    if isinstance(leaf, bytes):
        for col in columns:
            assert col.tobytes()[:64] not in leaf, what
            for bits in range(6, 22):
                ints = np.trunc(col * 2.0**bits).astype(np.int64)
                assert ints.tobytes()[:64] not in leaf, what
        return
    flat = np.asarray(leaf, dtype=float).ravel()
    assert flat.size != n, f"{what} carries a length-n vector"
    if to_server:
        assert not any_exact(flat, exact_sums), what
