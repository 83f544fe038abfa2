"""
Private linear regression: error against epsilon
================================================

:class:`~skdp.linear_model.FMLinearRegression` adds noise once to the coefficients
of the squared loss, calibrated to the declared domain (here rows of L2 norm at most
1 and labels in [-1, 1]). The test error approaches the non-private one as epsilon
grows; the Gaussian variant, (epsilon, delta)-DP, needs less noise in 20 dimensions
than the pure-epsilon Laplace variant.
"""

import matplotlib.pyplot as plt
import numpy as np

from skdp.datasets import make_private_regression
from skdp.linear_model import FMLinearRegression

X, y, coef = make_private_regression(25000, 20, random_state=0)
X_train, y_train, X_test, y_test = X[:20000], y[:20000], X[20000:], y[20000:]
domain = {"data_norm": 1.0, "bounds_y": (-1, 1), "fit_intercept": False}


def test_mse(**params):
    # median over a few noise draws: one draw is a single sample of the noise
    errors = []
    for seed in range(5):
        reg = FMLinearRegression(**domain, **params, random_state=seed)
        residuals = reg.fit(X_train, y_train).predict(X_test) - y_test
        errors.append(np.mean(residuals**2))
    return float(np.median(errors))


epsilons = [0.1, 0.3, 1.0, 3.0, 10.0]
laplace = [test_mse(epsilon=e) for e in epsilons]
gaussian = [test_mse(epsilon=e, delta=1e-5, mechanism="gaussian") for e in epsilons]
exact = test_mse(epsilon=np.inf)

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(epsilons, laplace, "o-", label="Laplace (epsilon-DP)")
ax.plot(epsilons, gaussian, "s-", label="Gaussian (delta = 1e-5)")
ax.axhline(exact, color="k", ls="--", label="non-private (epsilon = inf)")
ax.axhline(np.var(y_test), color="grey", ls=":", label="predict the mean")
ax.set(xscale="log", yscale="log", xlabel="epsilon", ylabel="test MSE (median of 5)")
ax.legend(loc="lower left")
fig.tight_layout()

for e, lap, gau in zip(epsilons, laplace, gaussian):
    print(f"epsilon={e:<5} Laplace {lap:.4f}  Gaussian {gau:.4f}  (exact {exact:.4f})")
