"""RRInfluenceEstimator's outputs pinned bit for bit (regression guard for refactors).

Each case fits with a fixed ``random_state`` and compares every returned float with
the value recorded before the module was split (stored as ``float.hex``), so a
refactor that changes even the order of a floating-point sum fails here. Values were
recorded on the project machine (OpenBLAS, one process); if a deliberate numerical
change is made, regenerate them with
``PYTHONPATH=. python tests/inspection/test_pinned_outputs.py`` and say why in the
commit message.
"""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp.inspection import LABEL, RRInfluenceEstimator
from tests.inspection._data import make_data

EPS = [0.3, 1.0, 4.0]


def _groups(X):
    return [np.arange(12), X[:, 2] == 1]


def _influence(model, perturb, n_classes=2, weighted=False, **params):
    X, y = make_data(240, seed=1, n_classes=n_classes)
    X_te, y_te = make_data(160, seed=2, n_classes=n_classes)
    if isinstance(model, Ridge):  # a real-valued target (feature RR only)
        y = X[:, 0] + X[:, 2] + np.random.default_rng(5).normal(size=len(y))
        y_te = X_te[:, 0] + X_te[:, 2]
    sw = np.random.default_rng(3).uniform(0.5, 2.0, size=len(y)) if weighted else None
    params.setdefault("attributes", {"g": 2})
    est = RRInfluenceEstimator(model, **params).fit(X, y, sample_weight=sw)
    mean, std = est.influence(
        X_te, y_te, groups=_groups(X), perturb=perturb, return_std=True
    )
    return np.concatenate([np.ravel(mean), np.ravel(std)])


def _logreg():
    return LogisticRegression(C=0.5)


CASES = {
    # label RR, first order, the three solvers (LiSSA seeded)
    "label_order1_explicit": lambda: _influence(
        _logreg(), {LABEL: EPS}, order=1, method="explicit"
    ),
    "label_order1_cg": lambda: _influence(
        _logreg(), {LABEL: EPS}, order=1, method="cg"
    ),
    "label_order1_lissa": lambda: _influence(
        _logreg(),
        {LABEL: EPS},
        order=1,
        method="lissa",
        lissa_depth=300,
        lissa_batch_size=64,
        random_state=0,
    ),
    "label_order2": lambda: _influence(_logreg(), {LABEL: EPS}, order=2),
    # feature RR on a 3-category integer column
    "feature_order1_explicit": lambda: _influence(_logreg(), {"g": EPS}, order=1),
    "feature_order1_cg": lambda: _influence(
        _logreg(), {"g": EPS}, order=1, method="cg"
    ),
    "feature_order1_lissa": lambda: _influence(
        _logreg(),
        {"g": EPS},
        order=1,
        method="lissa",
        lissa_depth=300,
        random_state=0,
    ),
    "feature_order2": lambda: _influence(_logreg(), {"g": EPS}, order=2),
    # both at once; exact, Monte Carlo and the seed's scaling expectation
    "joint_order1": lambda: _influence(_logreg(), {"g": EPS, LABEL: EPS}, order=1),
    "joint_order2": lambda: _influence(_logreg(), {"g": EPS, LABEL: EPS}, order=2),
    "joint_order1_monte_carlo": lambda: _influence(
        _logreg(),
        {"g": EPS, LABEL: EPS},
        order=1,
        expectation="monte_carlo",
        n_mc_samples=8,
        random_state=0,
    ),
    "joint_order2_monte_carlo": lambda: _influence(
        _logreg(),
        {"g": EPS, LABEL: EPS},
        order=2,
        expectation="monte_carlo",
        n_mc_samples=8,
        random_state=0,
    ),
    "joint_order1_scaling": lambda: _influence(
        _logreg(), {"g": EPS, LABEL: EPS}, order=1, expectation="scaling"
    ),
    "label_order1_forward": lambda: _influence(
        _logreg(), {LABEL: EPS}, order=1, correction="forward"
    ),
    "multiclass_joint_order1": lambda: _influence(
        _logreg(), {"g": EPS, LABEL: EPS}, n_classes=3, order=1
    ),
    "multiclass_joint_order2": lambda: _influence(
        _logreg(), {"g": EPS, LABEL: EPS}, n_classes=3, order=2
    ),
    "weighted_joint_order1": lambda: _influence(
        _logreg(), {"g": EPS, LABEL: EPS}, weighted=True, order=1
    ),
    "weighted_joint_order2": lambda: _influence(
        _logreg(), {"g": EPS, LABEL: EPS}, weighted=True, order=2
    ),
    "ridge_feature_order1": lambda: _influence(Ridge(alpha=2.0), {"g": EPS}, order=1),
    "ridge_feature_order2": lambda: _influence(Ridge(alpha=2.0), {"g": EPS}, order=2),
    "pipeline_scaler_order1": lambda: _influence(
        make_pipeline(StandardScaler(), _logreg()),
        {"g": EPS, LABEL: EPS},
        order=1,
    ),
    "pipeline_scaler_order2": lambda: _influence(
        make_pipeline(StandardScaler(), _logreg()),
        {"g": EPS, LABEL: EPS},
        order=2,
    ),
}


def _validate(refit, correction=None):
    X, y = make_data(240, seed=1)
    X_te, y_te = make_data(160, seed=2)
    est = RRInfluenceEstimator(
        _logreg(), attributes={"g": 2}, correction=correction, order=1
    ).fit(X, y)
    perturb = {LABEL: EPS} if correction else {"g": EPS, LABEL: EPS}
    mean, std = est.validate(
        X_te,
        y_te,
        groups=_groups(X),
        perturb=perturb,
        n_draws=3,
        refit=refit,
        random_state=4,
        return_std=True,
    )
    return np.concatenate([np.ravel(mean), np.ravel(std)])


def _replacement():
    X, y = make_data(240, seed=1)
    X_te, y_te = make_data(160, seed=2)
    est = RRInfluenceEstimator(_logreg(), order=1).fit(X, y)
    rows = np.arange(0, 240, 7)
    return est.replacement_influence(
        X_te, y_te, indices=rows, X_new=X[rows], y_new=1 - y[rows], per_row=True
    )


CASES["validate_exact"] = lambda: _validate("exact")
CASES["validate_estimator"] = lambda: _validate("estimator")
CASES["validate_exact_forward"] = lambda: _validate("exact", correction="forward")
CASES["replacement_per_row"] = _replacement


@pytest.mark.parametrize("case", sorted(CASES))
def test_outputs_are_bit_identical_to_pinned(case):
    got = [float(v).hex() for v in np.ravel(CASES[case]())]
    assert got == PINNED[case]


def test_every_case_is_pinned():
    assert sorted(PINNED) == sorted(CASES)


def _generate():
    lines = ["PINNED = {"]
    for case in sorted(CASES):
        values = [float(v).hex() for v in np.ravel(CASES[case]())]
        lines.append(f"    {case!r}: [")
        lines += [f"        {v!r}," for v in values]
        lines.append("    ],")
    lines.append("}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(_generate())


# generated by _generate() before the split of _influence.py
PINNED = {
    "feature_order1_cg": [
        "0x1.1730f932a8074p-12",
        "0x1.8c6ff2979c940p-13",
        "0x1.08640348839bcp-16",
        "0x1.beaff1c2b9adap-12",
        "0x1.3d22f0dfee6a1p-12",
        "0x1.a701dcd1217e6p-16",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "feature_order1_explicit": [
        "0x1.1730f932a807fp-12",
        "0x1.8c6ff2979c950p-13",
        "0x1.08640348839c6p-16",
        "0x1.beaff1c2b9af1p-12",
        "0x1.3d22f0dfee6b2p-12",
        "0x1.a701dcd1217f9p-16",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "feature_order1_lissa": [
        "0x1.1730f932a806ap-12",
        "0x1.8c6ff2979c92ep-13",
        "0x1.08640348839b1p-16",
        "0x1.beaff1c2b9ac9p-12",
        "0x1.3d22f0dfee694p-12",
        "0x1.a701dcd1217d4p-16",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "feature_order2": [
        "0x1.a19233010eb36p-12",
        "0x1.2a80b58fed11bp-12",
        "0x1.9442c93e77618p-16",
        "0x1.94910137c9742p-11",
        "0x1.2f52fc55cd6e2p-11",
        "0x1.ccdbac3f35428p-15",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "joint_order1": [
        "-0x1.d9972185bc988p-9",
        "-0x1.24486862d50ddp-9",
        "-0x1.27ea1190aa282p-13",
        "-0x1.0fb5d6c20c2adp-7",
        "-0x1.554013cb270c0p-8",
        "-0x1.67ecae3b85ec8p-12",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "joint_order1_monte_carlo": [
        "-0x1.d76384859edc8p-9",
        "-0x1.225a82ccdf0b6p-9",
        "-0x1.248eee65b5c16p-13",
        "-0x1.0c00db748d69dp-7",
        "-0x1.51b858d742612p-8",
        "-0x1.66ebb9ed7e556p-12",
        "0x1.c6a5a14b35301p-16",
        "0x1.7890e438f4600p-16",
        "0x1.46b6dceae3fe1p-19",
        "0x1.dafe2309b0753p-15",
        "0x1.5f332fba55730p-15",
        "0x1.202c19395769bp-18",
    ],
    "joint_order1_scaling": [
        "-0x1.02ff69df8d7d8p-8",
        "-0x1.8622e47330f10p-9",
        "-0x1.1c18d3d092547p-12",
        "-0x1.2729b147fcca9p-7",
        "-0x1.bc9cecf88c6b1p-8",
        "-0x1.43c451b54455ap-11",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "joint_order2": [
        "-0x1.5c342c350832dp-9",
        "-0x1.a34b9392423efp-10",
        "-0x1.8e3aa0ad4adb5p-14",
        "0x1.cc4f52b9c9e80p-13",
        "-0x1.613e24611b5a0p-11",
        "-0x1.0b2ce9ed79d92p-13",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "joint_order2_monte_carlo": [
        "-0x1.5d97275c4c84cp-9",
        "-0x1.a7e409a83dbd2p-10",
        "-0x1.977f1e313b99fp-14",
        "0x1.c9920c9268760p-12",
        "-0x1.10541f6c78068p-11",
        "-0x1.e6bf076cd1798p-14",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "label_order1_cg": [
        "-0x1.e512971e1761ap-9",
        "-0x1.328dafa3badcbp-9",
        "-0x1.4806a3119103dp-13",
        "-0x1.1dab565021f7fp-7",
        "-0x1.691242d925f26p-8",
        "-0x1.825ccc089803fp-12",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "label_order1_explicit": [
        "-0x1.e512971e17616p-9",
        "-0x1.328dafa3badc9p-9",
        "-0x1.4806a3119103bp-13",
        "-0x1.1dab565021f83p-7",
        "-0x1.691242d925f2cp-8",
        "-0x1.825ccc0898048p-12",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "label_order1_forward": [
        "-0x1.474236e53a342p-9",
        "-0x1.103fcb24fd7fep-9",
        "-0x1.c51a57e25127cp-13",
        "0x1.35a840befe9d2p-7",
        "0x1.0b321db177445p-7",
        "0x1.3d780591c188fp-10",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "label_order1_lissa": [
        "-0x1.d30cebfcb6e34p-9",
        "-0x1.2729f7436fcb0p-9",
        "-0x1.3bd6af930003ep-13",
        "-0x1.cb05fad9fa2a6p-8",
        "-0x1.22174b94f828bp-8",
        "-0x1.36690cd54e682p-12",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "label_order2": [
        "-0x1.669ee5a5f6492p-9",
        "-0x1.c94277a518da6p-10",
        "-0x1.f01d698abf455p-14",
        "-0x1.828f06de133c0p-11",
        "-0x1.5ea5de796e9d4p-10",
        "-0x1.7f7f551611207p-13",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "multiclass_joint_order1": [
        "0x1.38ed911706a73p-10",
        "0x1.0561d55f9a6b4p-10",
        "0x1.d1ffc96780123p-14",
        "-0x1.832b0145833f4p-6",
        "-0x1.12e11b0a2f698p-6",
        "-0x1.6ea4abdbacf42p-10",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "multiclass_joint_order2": [
        "0x1.89bdf1824622cp-9",
        "0x1.3921d56e10ee3p-9",
        "0x1.f5dc10a8a2e07p-13",
        "-0x1.5275a8864b3c4p-7",
        "-0x1.08e04f9f8be45p-7",
        "-0x1.ac84af6801613p-11",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "pipeline_scaler_order1": [
        "-0x1.e18a0e0c51f82p-9",
        "-0x1.29d877f280f9fp-9",
        "-0x1.2f2952cedb1b8p-13",
        "-0x1.16732ef4bde34p-7",
        "-0x1.5ddf2fc1bfdfcp-8",
        "-0x1.7165af0a05abap-12",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "pipeline_scaler_order2": [
        "-0x1.62a276e784575p-9",
        "-0x1.ac33d1c3e001bp-10",
        "-0x1.99a30d1875930p-14",
        "0x1.a5f6eb83bae80p-14",
        "-0x1.8d800c4f13960p-11",
        "-0x1.195bad840f594p-13",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "replacement_per_row": [
        "0x1.c091643ff7559p-11",
        "-0x1.c037b5c2face2p-11",
        "0x1.387a5ff918ed4p-10",
        "0x1.0914cc4c4baacp-12",
        "-0x1.219a67c6f1d54p-9",
        "-0x1.faf3708aa537ap-11",
        "0x1.9364cf5487229p-10",
        "-0x1.5dc1c7e779c4cp-13",
        "-0x1.2d8d9b17b298fp-10",
        "0x1.a45fae0109d2ap-12",
        "-0x1.833320bbd51f4p-12",
        "-0x1.730e8801d51fcp-8",
        "-0x1.d0bce2a941170p-13",
        "-0x1.e8a15811eb578p-12",
        "-0x1.f01279dafea9ap-11",
        "0x1.a6c5ba972c68ap-10",
        "-0x1.be5f7b226acc8p-13",
        "-0x1.74010b439f5e0p-10",
        "-0x1.c6817f3080046p-10",
        "0x1.ab35e602952cep-12",
        "-0x1.15b0e718295b6p-9",
        "-0x1.0e11c5dd9ea9ap-11",
        "0x1.348eb395ef8c2p-11",
        "-0x1.1338b494aecc6p-10",
        "0x1.2780928ffd640p-15",
        "-0x1.66c239f24bc77p-11",
        "0x1.86a9923a268f2p-13",
        "0x1.6e2015a47a0ffp-9",
        "-0x1.6680e9dd5a720p-10",
        "0x1.7f0feec0131c1p-11",
        "0x1.1fbf27a898ad6p-9",
        "-0x1.3ea10b137a3f0p-9",
        "-0x1.90fb52c6a206ep-9",
        "-0x1.43af3b3c9c5d2p-12",
        "-0x1.3b6a6b986c4e0p-16",
    ],
    "ridge_feature_order1": [
        "0x1.15316f4d6a5fep-9",
        "0x1.899996cb1c62bp-10",
        "0x1.067f97949786ep-13",
        "0x1.cf7747f7efd90p-6",
        "0x1.490c8503e7d4bp-6",
        "0x1.b6e57e2826472p-10",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "ridge_feature_order2": [
        "0x1.86437afcf6240p-9",
        "0x1.17f65eef5b6d5p-9",
        "0x1.7dee463ccb8f2p-13",
        "0x1.84e2e38a9f63ap-5",
        "0x1.050773e54e066p-5",
        "0x1.05dbf907d9649p-9",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "validate_estimator": [
        "-0x1.833d54159a700p-9",
        "-0x1.4657a8bb206abp-10",
        "-0x1.b9fcbbc226000p-14",
        "-0x1.f31ddcbc95aabp-9",
        "0x1.3ee69b0fb1000p-10",
        "0x1.dc5e4ef346d55p-12",
        "0x1.50dc96290df95p-10",
        "0x1.397fc19da93b0p-9",
        "0x1.79aa5ed651e28p-14",
        "0x1.0c0577517e825p-10",
        "0x1.076ab5807b7b3p-7",
        "0x1.1663cae7cac22p-11",
    ],
    "validate_exact": [
        "-0x1.833a0fecc8d55p-9",
        "-0x1.453d8ba3ec555p-10",
        "-0x1.d28b71e574aabp-14",
        "-0x1.f279fcbaed200p-9",
        "0x1.3c3426ce7fcabp-10",
        "0x1.ddb49d3521555p-12",
        "0x1.5054db084d2e7p-10",
        "0x1.397e054dd829ep-9",
        "0x1.8de0f01325e43p-14",
        "0x1.0cbb5a4c0ff04p-10",
        "0x1.075b6c698992ap-7",
        "0x1.15f6d93100bb4p-11",
    ],
    "validate_exact_forward": [
        "-0x1.329104384d355p-9",
        "-0x1.00cb4ef77b200p-9",
        "-0x1.1c225b6134000p-14",
        "0x1.24d41586d0495p-6",
        "0x1.1c82809ada5a0p-6",
        "0x1.3332341c0e455p-9",
        "0x1.65674a91d7753p-14",
        "0x1.a4821136cf3eap-12",
        "0x0.0p+0",
        "0x1.1c195b6d991d6p-12",
        "0x1.d8f4306a20919p-9",
        "0x1.c32451e80b38bp-11",
    ],
    "weighted_joint_order1": [
        "-0x1.2c74ff2d4acd6p-9",
        "-0x1.5f51c09a9a237p-10",
        "-0x1.33a24d5c59367p-14",
        "-0x1.0e76a13899ad9p-7",
        "-0x1.528837062db44p-8",
        "-0x1.624602024fe9cp-12",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
    "weighted_joint_order2": [
        "-0x1.61c2742a5af4ep-10",
        "-0x1.7724b9f223c20p-11",
        "-0x1.dfa5c7297cd50p-16",
        "0x1.9389e8335f290p-11",
        "-0x1.40be1c3dc19e0p-12",
        "-0x1.99dfbcf01ad60p-14",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
        "0x0.0p+0",
    ],
}
