"""Bundled data (UCI Adult) and synthetic generators with declared bounds."""

from skdp.datasets._adult import load_adult
from skdp.datasets._census import load_census
from skdp.datasets._synthetic import (
    make_private_classification,
    make_private_regression,
    split_columns,
)

__all__ = [
    "load_adult",
    "load_census",
    "make_private_classification",
    "make_private_regression",
    "split_columns",
]
