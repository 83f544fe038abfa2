"""RRInfluenceEstimator's outputs pinned (regression guard for refactors).

Each case fits with a fixed ``random_state`` and compares every returned float with
a recorded value within ``tests._pins.PIN_RTOL`` of the output's scale (the argument
is in ``tests/_pins.py``). The logistic models fit with Newton's method to
``tol=1e-10`` so that the fitted model, and hence the influence, does not depend on
where an iterative solver happened to stop on a given machine (L-BFGS at
scikit-learn's default ``tol=1e-4`` stops ~1e-3 away from the optimum, and where
exactly depends on the last bits of the arithmetic). If a deliberate numerical
change is made, regenerate the values with
``PYTHONPATH=. python tests/inspection/test_pinned_outputs.py`` and say why in the
commit message.
"""

import numpy as np
import pytest
from sklearn.linear_model import LogisticRegression, Ridge
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp.inspection import LABEL, RRInfluenceEstimator
from tests._pins import assert_matches_pin, format_pins
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
    return LogisticRegression(C=0.5, solver="newton-cholesky", tol=1e-10)


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
def test_outputs_match_pinned(case):
    assert_matches_pin(CASES[case](), PINNED[case], what=case)


def test_every_case_is_pinned():
    assert sorted(PINNED) == sorted(CASES)


if __name__ == "__main__":
    print(format_pins("PINNED", {case: CASES[case]() for case in sorted(CASES)}))


# recorded 2026-12-01 with the Newton-fitted models (see the module docstring)
PINNED = {
    "feature_order1_cg": [
        0.0002662575745090758,
        0.0001890360333444404,
        1.5758912270643722e-05,
        0.0004259941889876691,
        0.00030244492335096336,
        2.521319840172987e-05,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "feature_order1_explicit": [
        0.0002662575745090765,
        0.00018903603334444093,
        1.5758912270643766e-05,
        0.0004259941889876702,
        0.0003024449233509643,
        2.5213198401729938e-05,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "feature_order1_lissa": [
        0.00026625757450907486,
        0.00018903603334443974,
        1.575891227064367e-05,
        0.0004259941889876674,
        0.00030244492335096233,
        2.5213198401729765e-05,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "feature_order2": [
        0.0003982268245238365,
        0.0002846744255188623,
        2.4095826341578943e-05,
        0.0007716492172807567,
        0.0005785449272647802,
        5.493856632993128e-05,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "joint_order1": [
        -0.0036132076665484833,
        -0.0022299411225173444,
        -0.00014110294844099137,
        -0.008291940558134963,
        -0.0052070663763583705,
        -0.0003432507835326786,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "joint_order1_monte_carlo": [
        -0.0035964106817863153,
        -0.0022152218502772634,
        -0.0001395026803784204,
        -0.008178813129694425,
        -0.005153199853806838,
        -0.00034229355411352207,
        2.7099072479485175e-05,
        2.244508161504564e-05,
        2.434211287129188e-06,
        5.6623544945240174e-05,
        4.186629617352159e-05,
        4.2941012961280084e-06,
    ],
    "joint_order1_scaling": [
        -0.0039519914131487125,
        -0.0029765037412764653,
        -0.00027093599514126424,
        -0.009007655681134135,
        -0.006784255842718111,
        -0.0006175363002404642,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "joint_order2": [
        -0.002656584164091674,
        -0.0015994843312097321,
        -9.494519573415541e-05,
        0.00021949284331727013,
        -0.0006737570623723032,
        -0.00012739917968942043,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "joint_order2_monte_carlo": [
        -0.0026671634243184213,
        -0.0016170149702750263,
        -9.715474950335349e-05,
        0.0004363732375924755,
        -0.0005194255916622119,
        -0.00011604933908264823,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "label_order1_cg": [
        -0.00370081038192173,
        -0.0023388173011972845,
        -0.00015641495024462565,
        -0.008717934747122636,
        -0.005509511299709339,
        -0.0003684639819344087,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "label_order1_explicit": [
        -0.0037008103819217274,
        -0.0023388173011972824,
        -0.0001564149502446255,
        -0.008717934747122635,
        -0.005509511299709335,
        -0.00036846398193440843,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "label_order1_forward": [
        -0.0024967853556863125,
        -0.002077096507961662,
        -0.00021605630088321765,
        0.00944998895121145,
        0.008154167651023822,
        0.0012110474967673272,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "label_order1_lissa": [
        -0.003563312346541825,
        -0.0022519220672241862,
        -0.00015060358836892917,
        -0.007004140609134802,
        -0.004426437332938024,
        -0.0002960303803285626,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "label_order2": [
        -0.0027360587437664846,
        -0.0017443070913193328,
        -0.00011828300755119565,
        -0.0007373022054859291,
        -0.0013376156844859821,
        -0.00018286580662370443,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "multiclass_joint_order1": [
        0.001193725567413627,
        0.0009970938189253545,
        0.00011110285924257266,
        -0.023630858651869518,
        -0.016777302175567953,
        -0.0013986329931135921,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "multiclass_joint_order2": [
        0.0030040128050362403,
        0.002389008811427902,
        0.00023930531940009333,
        -0.01032896736851482,
        -0.008083380583322409,
        -0.0008173337964774621,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "pipeline_scaler_order1": [
        -0.0036738531256560315,
        -0.002272381441263866,
        -0.00014455862990528321,
        -0.008497617653235964,
        -0.005338620338225377,
        -0.0003522846242543989,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "pipeline_scaler_order2": [
        -0.0027056474827918293,
        -0.0016334625989888277,
        -9.766505208423044e-05,
        0.00010060418343419732,
        -0.0007581714401164513,
        -0.0001341620046818035,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "replacement_per_row": [
        0.0008555754393238532,
        -0.0008549072594184841,
        0.0011920090749078251,
        0.0002528011726042568,
        -0.002209496658463457,
        -0.0009669321747015347,
        0.0015388251823975157,
        -0.00016677711323693524,
        -0.0011503339682926847,
        0.00040089964758240363,
        -0.0003692624266224511,
        -0.00566187687396388,
        -0.00022160426788616662,
        -0.00046599411974460503,
        -0.000946182578825884,
        0.0016127486358395054,
        -0.0002128472197925195,
        -0.0014190829396760487,
        -0.001733802211826641,
        0.00040741972057226154,
        -0.0021186143968956704,
        -0.000515116549406817,
        0.0005885265880038051,
        -0.0010498867243047463,
        3.522661165601313e-05,
        -0.0006842779096356057,
        0.0001862823427181424,
        0.00279331459234406,
        -0.0013675825824930664,
        0.0007306332336438248,
        0.0021953330909362605,
        -0.0024309469243258422,
        -0.003059247831863967,
        -0.00030868959204977977,
        -1.88002410159171e-05,
    ],
    "ridge_feature_order1": [
        0.002114815556258476,
        0.001501464680384488,
        0.00012516899427600668,
        0.02828771618055509,
        0.02008355130931009,
        0.0016742571115513608,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "ridge_feature_order2": [
        0.0029774749404903036,
        0.002135943497413398,
        0.00018211877786584286,
        0.047471470276815045,
        0.03186390529521148,
        0.00199782767224369,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "validate_estimator": [
        -0.002954305914843617,
        -0.0012406935525048162,
        -0.00011123383187376194,
        -0.003803073750603995,
        0.0012062217882877757,
        0.00045557607697155333,
        0.0012830026387946611,
        0.0023917562935945554,
        9.486157343733726e-05,
        0.0010251306900235736,
        0.008037021989861096,
        0.0005301752192473001,
    ],
    "validate_exact": [
        -0.0029543060725820323,
        -0.0012406937106804368,
        -0.00011123292630702923,
        -0.003803073979619579,
        0.0012062214547804058,
        0.00045557548846753004,
        0.0012830027281555112,
        0.0023917561983782384,
        9.48616656966552e-05,
        0.001025130640314813,
        0.008037021575614513,
        0.0005301747352181461,
    ],
    "validate_exact_forward": [
        -0.0023389165549557354,
        -0.001959184064763845,
        -6.774287425526104e-05,
        0.017872830411609846,
        0.017365098562541648,
        0.0023437203031853038,
        8.521163024748327e-05,
        0.00040102775112755326,
        0.0,
        0.0002709379685710116,
        0.003608351621609118,
        0.0008604848380905515,
    ],
    "weighted_joint_order1": [
        -0.0022923051352771212,
        -0.0013401769453154908,
        -7.334565947806921e-05,
        -0.008253887864346596,
        -0.005165589746123637,
        -0.00033786150756426667,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
    "weighted_joint_order2": [
        -0.0013494857217579068,
        -0.0007155293699439463,
        -2.8589223040535097e-05,
        0.0007696889864879618,
        -0.00030588399737480586,
        -9.772157113907299e-05,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
        0.0,
    ],
}
