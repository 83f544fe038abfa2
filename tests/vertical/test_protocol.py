"""What travels in the protocol: transcripts, and failures mid-protocol."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skdp._fm import objective_constants
from skdp.vertical import ProtocolError, VerticalFMClassifier, VerticalFMRegressor
from skdp.vertical._messages import SERVER
from skdp.vertical._party import PartyRole
from tests.vertical._data import BACKENDS, grid_regression


def _numeric_arrays(payload):
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
            yield from _numeric_arrays(value)
    elif isinstance(payload, list | tuple):
        for value in payload:
            yield from _numeric_arrays(value)
    elif isinstance(payload, float | int):
        yield np.array([payload], dtype=float)


def _secrets(est, X, y, parts):
    """Raw columns, label vector and exact cross-party sums of this fit."""
    kappa, beta = objective_constants(est._objective)
    beta_y = beta(np.clip(y, -1, 1))
    columns = [X[:, j] for j in range(X.shape[1])] + [y, beta_y]
    sums = []
    for k in range(len(parts)):
        for q in range(k + 1, len(parts)):
            sums.append(kappa * X[:, parts[k]].T @ X[:, parts[q]])
        if k != est.label_party_:
            sums.append(X[:, parts[k]].T @ beta_y)
            sums.append(est.linear_weight_ * X[:, parts[k]].T @ beta_y)
    return columns, np.concatenate([s.ravel() for s in sums])


def _fit_and_watch_server(monkeypatch, backend, epsilon):
    """Fit keeping payloads; also capture what the server decrypts."""
    import skdp.vertical._secure as secure

    cls = secure.BFVKeyHolder if backend == "bfv" else secure.PlaintextKeyHolder
    decrypted = []
    original = cls.decrypt_sums

    def watched(self, *args):
        out = original(self, *args)
        decrypted.append(out)
        return out

    monkeypatch.setattr(cls, "decrypt_sums", watched)
    X, y, parts = grid_regression(600)
    est = VerticalFMRegressor(
        epsilon=epsilon,
        bounds_X=(-1, 1),
        bounds_y=(-1, 1),
        linear_weight=0.5,
        partition=parts,
        secure_backend=backend,
        random_state=0,
    )
    est._keep_transcript_payloads = True
    est.fit(X, y)
    return est, X, y, parts, np.concatenate([a.ravel() for a in decrypted])


def _any_exact(values, exact_sums):
    close = np.isclose(values[:, None], exact_sums[None, :], rtol=1e-9, atol=1e-9)
    return close.any()


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_view_is_exact_without_noise(monkeypatch, backend):
    # sanity check of the check below: at epsilon=inf it must trip
    est, X, y, parts, decrypted = _fit_and_watch_server(monkeypatch, backend, np.inf)
    _, exact_sums = _secrets(est, X, y, parts)
    assert _any_exact(decrypted, exact_sums)


@pytest.mark.parametrize("backend", BACKENDS)
def test_transcript_never_carries_raw_data_or_exact_cross_sums(monkeypatch, backend):
    est, X, y, parts, decrypted = _fit_and_watch_server(monkeypatch, backend, 1.0)
    columns, exact_sums = _secrets(est, X, y, parts)
    # what the server obtains after decryption is noisy
    sizes = [len(p) for p in parts]
    n_cross = (sum(sizes) ** 2 - sum(s * s for s in sizes)) // 2 + sum(sizes[1:])
    assert decrypted.size == n_cross
    assert not _any_exact(decrypted, exact_sums)
    n = X.shape[0]
    kinds = {m.kind for m in est.transcript_}
    assert {"encrypted columns", "encrypted labels", "encrypted noise share"} <= kinds
    checked = 0
    for message in est.transcript_:
        assert message.sender != message.receiver
        for arr in _numeric_arrays(message.payload):
            checked += 1
            if isinstance(arr, bytes):
                # ciphertexts: neither the float columns nor their fixed-point
                # integers appear anywhere in the bytes
                for col in columns:
                    assert col.tobytes()[:64] not in arr
                    for bits in range(6, 22):
                        ints = np.trunc(col * 2.0**bits).astype(np.int64)
                        assert ints.tobytes()[:64] not in arr
                continue
            flat = np.asarray(arr, dtype=float).ravel()
            assert flat.size != n, f"{message.kind} carries a length-n vector"
            if message.receiver == SERVER:
                assert not _any_exact(flat, exact_sums), message.kind
    assert checked > 0


def test_transcript_sizes_and_roles():
    X, y, parts = grid_regression(600)
    est = VerticalFMRegressor(
        epsilon=1.0,
        bounds_X=(-1, 1),
        bounds_y=(-1, 1),
        linear_weight=0.5,
        partition=parts,
    ).fit(X, y)
    t = est.transcript_
    assert not any(m.payload is not None for m in t)  # payloads off by default
    sent = t.bytes_sent()
    assert set(sent) == {"server", "party 0", "party 1", "party 2"}
    assert sum(sent.values()) == t.total_bytes == sum(t.bytes_received().values())
    # nothing reaches the server but declarations and noisy / masked / encrypted data
    to_server = {m.kind for m in t if m.receiver == SERVER}
    assert to_server == {
        "declaration",
        "noisy local coefficients",
        "encrypted masked sums",
    }
    steps = [m.step for m in t]
    assert steps[:3] == ["declare"] * 3 and steps[-3:] == ["release"] * 3
    # the encrypted columns go from party to party, never to the server
    assert all(m.receiver != SERVER for m in t if m.kind.startswith("encrypted c"))


@pytest.mark.parametrize("method", ["_local", "_collect"])
def test_party_failure_aborts_without_a_model(monkeypatch, method):
    X, y, parts = grid_regression(600)
    est = VerticalFMRegressor(
        epsilon=1.0,
        bounds_X=(-1, 1),
        bounds_y=(-1, 1),
        linear_weight=0.5,
        partition=parts,
    )
    est.fit(X, y)  # a previous model must not survive a failed refit
    original = getattr(PartyRole, method)

    def broken(self, *args, **kwargs):
        if self.index == 2:
            raise ConnectionError("link down")
        return original(self, *args, **kwargs)

    monkeypatch.setattr(PartyRole, method, broken)
    step = "local" if method == "_local" else "cross"
    with pytest.raises(ProtocolError, match=f"party 2 failed during step '{step}'"):
        est.fit(X, y)
    assert not hasattr(est, "coef_")
    with pytest.raises(NotFittedError):
        check_is_fitted(est)


def test_classifier_failure_message_names_cause(monkeypatch):
    X, y, parts = grid_regression(600)
    import skdp.vertical._secure as secure

    def broken(self, U, scale):
        raise OSError("x")

    monkeypatch.setattr(secure.PlaintextParty, "encrypt_columns", broken)
    with pytest.raises(ProtocolError, match="OSError"):
        VerticalFMClassifier(data_norm=1.0, linear_weight=0.5, partition=parts).fit(
            X, y > 0
        )


def test_bottom_up_parties_send_their_budgets_first():
    X, y, parts = grid_regression(600)
    pairs = np.full((3, 3), 0.2) - 0.2 * np.eye(3)
    est = VerticalFMRegressor(
        budget="bottom-up",
        party_epsilon=[1.0, 1.0, 1.0],
        pairwise_epsilon=pairs,
        bounds_X=(-1, 1),
        bounds_y=(-1, 1),
        linear_weight=0.5,
        partition=parts,
    )
    est._keep_transcript_payloads = True
    est.fit(X, y)
    budgets = [m for m in est.transcript_ if m.kind == "declaration"]
    assert [m.sender for m in budgets] == ["party 0", "party 1", "party 2"]
    assert all(m.receiver == SERVER for m in budgets)
    np.testing.assert_allclose(budgets[1].payload["budget"], [1.0, 0.2, 0.0, 0.2])
    assert est.transcript_.messages[0].kind == "declaration"
