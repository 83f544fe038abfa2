"""What travels in the protocol: transcripts, and failures mid-protocol."""

import numpy as np
import pytest
from sklearn.exceptions import NotFittedError
from sklearn.utils.validation import check_is_fitted

from skdp.vertical import ProtocolError, VerticalFMClassifier, VerticalFMRegressor
from skdp.vertical._messages import SERVER
from skdp.vertical._party import PartyRole
from tests.vertical._data import BACKENDS, grid_regression
from tests.vertical._leaks import (
    any_exact,
    assert_leaks_nothing,
    numeric_leaves,
    secrets,
)


def _secrets(est, X, y, parts):
    return secrets(X, y, parts, est._objective, est.label_party_, est.linear_weight_)


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


@pytest.mark.parametrize("backend", BACKENDS)
def test_server_view_is_exact_without_noise(monkeypatch, backend):
    # sanity check of the check below: at epsilon=inf it must trip
    est, X, y, parts, decrypted = _fit_and_watch_server(monkeypatch, backend, np.inf)
    _, exact_sums = _secrets(est, X, y, parts)
    assert any_exact(decrypted, exact_sums)


@pytest.mark.parametrize("backend", BACKENDS)
def test_transcript_never_carries_raw_data_or_exact_cross_sums(monkeypatch, backend):
    est, X, y, parts, decrypted = _fit_and_watch_server(monkeypatch, backend, 1.0)
    columns, exact_sums = _secrets(est, X, y, parts)
    # what the server obtains after decryption is noisy
    sizes = [len(p) for p in parts]
    n_cross = (sum(sizes) ** 2 - sum(s * s for s in sizes)) // 2 + sum(sizes[1:])
    assert decrypted.size == n_cross
    assert not any_exact(decrypted, exact_sums)
    n = X.shape[0]
    kinds = {m.kind for m in est.transcript_}
    assert {"encrypted columns", "encrypted labels", "encrypted noise share"} <= kinds
    checked = 0
    for message in est.transcript_:
        assert message.sender != message.receiver
        for leaf in numeric_leaves(message.payload):
            checked += 1
            assert_leaks_nothing(
                leaf, columns, exact_sums, n, message.receiver == SERVER, message.kind
            )
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

    def broken(self, U, scale, bounds=None):
        raise OSError("x")

    monkeypatch.setattr(secure.PlaintextParty, "encrypt_columns", broken)
    with pytest.raises(ProtocolError, match="OSError"):
        VerticalFMClassifier(
            data_norm=1.0, linear_weight=0.5, partition=parts, classes=[False, True]
        ).fit(X, y > 0)


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
