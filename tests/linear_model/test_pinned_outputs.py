"""Pinned outputs of the central FM estimators: same random_state, same model.

Each case fits with a fixed ``random_state`` and compares ``coef_`` and
``intercept_`` (flattened, intercept last) with values recorded earlier, within
``tests._pins.PIN_RTOL`` (the argument for that tolerance is in ``tests/_pins.py``:
it holds on any CPU, BLAS and thread count, and a real change of the release, such
as the linear weight times 1.01 or one more noise draw, breaks it by orders of
magnitude). A deliberate change of what a fit releases re-records them in its own
commit (``PYTHONPATH=. python tests/linear_model/test_pinned_outputs.py``) and
says why. The values were recorded with the float-sum statistics (commit 5e4ce76)
and re-recorded when the statistics became exact sums (Gaussian cases moved in the
last bits only), the linear cases again when ``postprocessing="eb"`` became
``FMLinearRegression``'s default (same release, another solve), and again when
``"average"`` replaced it (the same release, the mean of three solves).
"""

import numpy as np
import pytest

from skdp.datasets import make_private_classification, make_private_regression
from skdp.linear_model import FMLinearRegression, FMLogisticRegression
from tests._pins import assert_matches_pin, format_pins

DOMAINS = {
    "box": dict(bounds_X=(-1, 1)),
    "norm": dict(data_norm=1.0),
    "max_nonzero": dict(data_norm=1.0, max_nonzero=2),
}
MECHANISMS = {
    "laplace": dict(mechanism="laplace"),
    "gaussian": dict(mechanism="gaussian", delta=1e-5),
}


def _fit(kind, domain, mechanism):
    params = dict(
        epsilon=2.0, random_state=3, **DOMAINS[domain], **MECHANISMS[mechanism]
    )
    if kind == "linear":
        X, y, _ = make_private_regression(600, 5, random_state=0)
        return FMLinearRegression(bounds_y=(-1, 1), **params).fit(X, y)
    X, y, _ = make_private_classification(600, 5, random_state=0)
    return FMLogisticRegression(classes=[0, 1], **params).fit(X, y)


PINNED = {
    ("linear", "box", "laplace"): [
        0.06358543783336992,
        0.005628874540402971,
        0.017727088098876038,
        -0.15956264175415322,
        -0.06007380536392498,
        -0.01053092425675836,
    ],
    ("linear", "box", "gaussian"): [
        -0.16323745945722795,
        0.07385943908281735,
        0.051740113730071785,
        -0.1330775791381824,
        -0.14019851808958597,
        -0.046359520174720996,
    ],
    ("linear", "norm", "laplace"): [
        0.18481114073525529,
        0.20414330259549854,
        0.017579962395105602,
        -0.4326383456166029,
        -0.28407496796993376,
        -0.009153883053004458,
    ],
    ("linear", "norm", "gaussian"): [
        -0.1458649203054241,
        0.4282375339060736,
        0.08911663424824316,
        -0.5485184706197702,
        -0.2995132768348852,
        -0.02762640838626092,
    ],
    ("linear", "max_nonzero", "laplace"): [
        0.2800717625080436,
        0.13811766033482997,
        -0.16526739369476762,
        -0.7141657036510876,
        -0.3064235741290256,
        -0.009083315429635851,
    ],
    ("linear", "max_nonzero", "gaussian"): [
        -0.18988053644889794,
        0.30464131056848615,
        0.08274875350380609,
        -0.5305361639534885,
        -0.2755809179460487,
        -0.028405799847827262,
    ],
    ("logistic", "box", "laplace"): [
        0.7427899348267402,
        0.09766622705549446,
        -0.16740113628635667,
        -0.9897466772694097,
        -0.5772025557692838,
        0.01825572155694535,
    ],
    ("logistic", "box", "gaussian"): [
        -0.21899889084432556,
        1.0445566137941533,
        0.34639352252789324,
        -0.8879521682382037,
        -0.7139082448647607,
        -0.012659127801491497,
    ],
    ("logistic", "norm", "laplace"): [
        0.8191056531049187,
        0.818306685206101,
        -0.10120936631100053,
        -1.5863738905323501,
        -0.7232511864759611,
        0.061964286219688955,
    ],
    ("logistic", "norm", "gaussian"): [
        0.09163579430231941,
        2.6368480152930256,
        0.3616762485819531,
        -1.2397968605757665,
        -1.4388817666817113,
        0.07771589045314267,
    ],
    ("logistic", "max_nonzero", "laplace"): [
        0.8448919190025677,
        1.05375980000593,
        -0.20926194095218276,
        -1.6639251224654268,
        -0.7440676727900648,
        0.08014698126123448,
    ],
    ("logistic", "max_nonzero", "gaussian"): [
        0.20687038648199868,
        2.7500526162703975,
        0.2483952617069503,
        -0.9337327073838486,
        -1.5990970913360032,
        0.08082140563210567,
    ],
}

CASES = [
    (kind, domain, mechanism)
    for kind in ("linear", "logistic")
    for domain in DOMAINS
    for mechanism in MECHANISMS
]


def _output(case):
    est = _fit(*case)
    return np.append(est.coef_, est.intercept_)


@pytest.mark.parametrize("kind, domain, mechanism", CASES)
def test_pinned_fm_output(kind, domain, mechanism):
    case = (kind, domain, mechanism)
    assert_matches_pin(_output(case), PINNED[case], what=f"{case} coef_, intercept_")


def test_every_case_is_pinned():
    assert sorted(PINNED) == sorted(CASES)


if __name__ == "__main__":
    print(format_pins("PINNED", {case: _output(case) for case in CASES}))
