"""Differentially private ensembles: :class:`PrivateRandomForestClassifier`."""

from skdp.ensemble._forest import PrivateRandomForestClassifier

__all__ = ["PrivateRandomForestClassifier"]
