"""Small binary tuning tasks: a few hundred rows, weak and strong signal.

The binary TUNING family of ``_task_families.py`` had only large tasks (and
subsamples of them, all weak-signal at a few hundred rows), so no constant
chosen on it could see a small task with a strong signal, the kind that
breaks the OP ridge rule on held-out data (issue 34;
``reference_results/full/ridge_signal.md``). These three public data sets
fill that gap on the TUNING side; none is in the evaluation family, and they
were added before any constant was read off them. Complete cases only; every
range is declared from the data set's documentation, never from the data.
"""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _real_tasks import _Columns, _onehot, _rdata, _yes  # noqa: E402


def biopsy_malignant():
    """MASS biopsy (Wisconsin breast cancer, Wolberg 1990): malignant?"""
    df = _rdata("MASS", "biopsy").dropna()
    cols = _Columns()
    for c in [f"V{i}" for i in range(1, 10)]:
        cols.numeric(df[c], 1, 10)
    sources = {
        "V1-V9": "doc: nine cytology scores, each on a 1-10 scale",
        "rows": "complete cases (V6, bare nuclei, is missing in 16)",
        "y": "class == malignant",
    }
    y = _yes(df["class"], "malignant").astype(int)
    return cols.task("biopsy malignant", "binary", y, sources=sources)


def titanic_survived():
    """carData TitanicSurvival: did the passenger survive?"""
    df = _rdata("carData", "TitanicSurvival").dropna()
    cols = _Columns()
    cols.coded(_yes(df["sex"], "female"))
    cols.numeric(df["age"], 0, 80)
    cols.coded(_onehot(df["passengerClass"], ["1st", "2nd"]))
    sources = {
        "sex": "doc: factor female/male",
        "age": "declared [0, 80] years (doc: age in years, fractions for infants)",
        "passengerClass": "doc: factor 1st/2nd/3rd (3rd the reference)",
        "rows": "complete cases (age is missing for 263)",
        "y": "survived == yes",
    }
    y = _yes(df["survived"]).astype(int)
    return cols.task("Titanic survived", "binary", y, sources=sources)


def birthwt_low():
    """MASS birthwt (Hosmer & Lemeshow 1989): birth weight below 2.5 kg?"""
    df = _rdata("MASS", "birthwt")
    cols = _Columns()
    cols.numeric(df["age"], 12, 50)
    cols.numeric(df["lwt"], 80, 300)
    cols.coded(_onehot(df["race"].astype(int).astype(str), ["2", "3"]))
    cols.coded(np.asarray(df["smoke"], float))
    cols.numeric(df["ptl"], 0, 5)
    cols.coded(np.asarray(df["ht"], float))
    cols.coded(np.asarray(df["ui"], float))
    cols.numeric(df["ftv"], 0, 10)
    sources = {
        "age": "declared [12, 50] years (doc: mother's age in years)",
        "lwt": "declared [80, 300] pounds (doc: weight at last menstrual period)",
        "race": "doc: 1 white, 2 black, 3 other (1 the reference)",
        "smoke, ht, ui": "doc: 0/1 indicators",
        "ptl": "declared [0, 5] (doc: number of previous premature labours)",
        "ftv": "declared [0, 10] (doc: physician visits in the first trimester)",
        "y": "low (bwt < 2.5 kg)",
    }
    y = np.asarray(df["low"], int)
    return cols.task("birthwt low", "binary", y, sources=sources)


SMALL_TUNING_BINARY = (biopsy_malignant, titanic_survived, birthwt_low)
