"""Bundled data (UCI Adult) and synthetic generators with declared bounds."""

from skdp.datasets._adult import load_adult
from skdp.datasets._synthetic import (
    make_private_classification,
    make_private_regression,
    split_columns,
)

__all__ = [
    "load_adult",
    "make_private_classification",
    "make_private_regression",
    "split_columns",
]
