"""Private matrix decompositions: :class:`PrivatePCA` (Analyze Gauss)."""

from skdp.decomposition._private_pca import PrivatePCA

__all__ = ["PrivatePCA"]
