"""UCI Adult, bundled with the package (CC BY 4.0; see data/ADULT_LICENSE.txt)."""

import csv
import functools
import gzip
from importlib import resources

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_adult"]

FEATURE_NAMES = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country",
]  # fmt: skip
NUMERIC_FEATURES = [
    "age", "fnlwgt", "education-num", "capital-gain", "capital-loss", "hours-per-week",
]  # fmt: skip
CATEGORICAL_FEATURES = [f for f in FEATURE_NAMES if f not in NUMERIC_FEATURES]
TARGET_NAME = "income"
_FILES = {"train": "adult.data.gz", "test": "adult.test.gz"}
_SPLITS = ("train", "test", "all")


@functools.cache  # the raw rows are never modified, so they can be shared
def _read_split(filename):
    path = resources.files("skdp.datasets") / "data" / filename
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="ascii") as text:
        rows = [
            tuple(cell.strip() for cell in row)
            for row in csv.reader(text)
            if len(row) == len(FEATURE_NAMES) + 1  # skips blank and comment lines
        ]
    return tuple(rows)


def load_adult(*, split="train", drop_missing=False, as_frame=False, return_X_y=False):
    """Load the UCI Adult census-income data bundled with skdp (no download).

    Parameters
    ----------
    split : {"train", "test", "all"}, default="train"
        The original train (32,561 rows) or test (16,281 rows) file, or both
        concatenated (train first).
    drop_missing : bool, default=False
        Drop rows with a missing value (``?`` in the raw files): 30,162 train and
        15,060 test rows remain.
    as_frame : bool, default=False
        Return pandas objects (needs pandas): numeric columns as int64, categorical
        columns as ``category`` dtype, missing values as NaN. Otherwise numpy: ``data``
        is an object array whose numeric columns hold ints and categorical columns
        hold str, with missing values as None.
    return_X_y : bool, default=False
        Return ``(data, target)`` instead of a Bunch.

    Returns
    -------
    Bunch with ``data``, ``target`` (1 for ">50K", 0 otherwise), ``feature_names``,
    ``numeric_features``, ``categorical_features``, ``target_names``, ``frame``
    (pandas only) and ``DESCR``; or ``(data, target)``.

    Notes
    -----
    The test file's labels carry a trailing period (">50K."), removed here. Licence:
    CC BY 4.0, Becker & Kohavi (1996), UCI Machine Learning Repository; the notice
    ships in ``skdp/datasets/data/ADULT_LICENSE.txt``.

    Examples
    --------
    >>> from skdp.datasets import load_adult
    >>> X, y = load_adult(drop_missing=True, return_X_y=True)
    >>> X.shape, int(y.sum())
    ((30162, 14), 7508)
    """
    if split not in _SPLITS:
        raise ValueError(f"split must be one of {_SPLITS}, got {split!r}.")
    names = ["train", "test"] if split == "all" else [split]
    rows = [row for name in names for row in _read_split(_FILES[name])]
    if drop_missing:
        rows = [row for row in rows if "?" not in row]
    numeric_idx = [FEATURE_NAMES.index(f) for f in NUMERIC_FEATURES]
    data = np.empty((len(rows), len(FEATURE_NAMES)), dtype=object)
    for i, row in enumerate(rows):
        for j, cell in enumerate(row[:-1]):
            if j in numeric_idx:
                data[i, j] = int(cell)
            else:
                data[i, j] = None if cell == "?" else cell
    target = np.array([row[-1].rstrip(".") == ">50K" for row in rows], dtype=np.int64)

    frame = None
    if as_frame:
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("as_frame=True needs pandas: pip install pandas") from exc
        frame = pd.DataFrame(data, columns=FEATURE_NAMES)
        for col in FEATURE_NAMES:
            dtype = "int64" if col in NUMERIC_FEATURES else "category"
            frame[col] = frame[col].astype(dtype)
        frame[TARGET_NAME] = target
        data, target = frame[FEATURE_NAMES], frame[TARGET_NAME]

    if return_X_y:
        return data, target
    return Bunch(
        data=data,
        target=target,
        frame=frame,
        feature_names=list(FEATURE_NAMES),
        numeric_features=list(NUMERIC_FEATURES),
        categorical_features=list(CATEGORICAL_FEATURES),
        target_names=["<=50K", ">50K"],
        DESCR=load_adult.__doc__,
    )
