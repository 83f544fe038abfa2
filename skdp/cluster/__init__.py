"""Differentially private clustering: :class:`PrivateKMeans`."""

from skdp.cluster._kmeans import PrivateKMeans

__all__ = ["PrivateKMeans"]
