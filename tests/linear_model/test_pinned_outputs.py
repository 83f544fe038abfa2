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
last bits only).
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
        0.16231289599864324,
        -0.01395355583029401,
        -0.047214663234555074,
        -0.24837860293235287,
        -0.14208227355648606,
        -0.017636878955873205,
    ],
    ("linear", "box", "gaussian"): [
        -0.13947324659232807,
        0.15339074295983807,
        0.05909998047648837,
        -0.28993839362553286,
        -0.1670292928704171,
        -0.045890472609661996,
    ],
    ("linear", "norm", "laplace"): [
        0.26412727989240303,
        0.11664089962251276,
        -0.10252317804924724,
        -0.5423425028545243,
        -0.22672436814390823,
        -0.012815413599396398,
    ],
    ("linear", "norm", "gaussian"): [
        -0.0791498948486759,
        0.5446285686888717,
        0.059228161225202025,
        -0.4310336537958811,
        -0.35510160967969406,
        -0.02012042963239598,
    ],
    ("linear", "max_nonzero", "laplace"): [
        0.22542988926614885,
        0.1558070596933933,
        -0.10827042764177472,
        -0.5872005713314359,
        -0.23774221015004662,
        -0.008096566000464132,
    ],
    ("linear", "max_nonzero", "gaussian"): [
        -0.1321453225236187,
        0.4040904166402003,
        0.07469809207601757,
        -0.4191005161044176,
        -0.31365109259650453,
        -0.023604222861203315,
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
