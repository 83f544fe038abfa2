"""Differentially private decision trees: :class:`PrivateDecisionTreeClassifier`."""

from skdp.tree._classes import PrivateDecisionTreeClassifier

__all__ = ["PrivateDecisionTreeClassifier"]
