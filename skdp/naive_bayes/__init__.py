"""Differentially private naive Bayes: :class:`PrivateGaussianNB`."""

from skdp.naive_bayes._gaussian_nb import PrivateGaussianNB

__all__ = ["PrivateGaussianNB"]
