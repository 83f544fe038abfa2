"""Four binary tasks no benchmark had used: the forest's second held-out check.

The forest's vote rule (``skdp._trees.leaf_frequencies``) was changed after
the EVALUATION family (``_task_families.EVALUATION_BINARY``) showed it behind
diffprivlib on breast cancer, so that family no longer holds the vote out.
These four tasks were added after that change and played no part in any
choice; ``python benchmarks/bench_diffprivlib_cluster_forest.py --family
fresh`` reports the forest and the tree on them as they come.

Every numeric column gets a range declared from the data set's documentation
or from its units (never from the data's extremes); the sources say which.
Rows outside a declared range are clipped to it (``_Columns.numeric``).
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _real_tasks import _Columns, _rdata, _yes  # noqa: E402


def oj_purchase():
    """ISLR OJ (1,070 purchases): citrus hill (CH) or minute maid orange juice?"""
    df = _rdata("ISLR", "OJ")
    cols = _Columns()
    for name in ("PriceCH", "PriceMM", "SalePriceCH", "SalePriceMM"):
        cols.numeric(df[name], 1, 3)
    for name in ("DiscCH", "DiscMM"):
        cols.numeric(df[name], 0, 1)
    cols.numeric(df["LoyalCH"], 0, 1)
    cols.numeric(df["PriceDiff"], -1, 1)
    cols.numeric(df["ListPriceDiff"], -1, 1)
    cols.coded(df[["SpecialCH", "SpecialMM"]].to_numpy(float))
    cols.coded(_yes(df["Store7"], "Yes"))
    sources = {
        "prices": "declared [1, 3] dollars (doc: price charged, in dollars)",
        "discounts": "declared [0, 1] dollars (doc: discount offered)",
        "LoyalCH": "doc: customer brand loyalty for CH, a share in [0, 1]",
        "PriceDiff, ListPriceDiff": "declared [-1, 1] dollars",
        "SpecialCH, SpecialMM, Store7": "doc: indicators",
        "y": "Purchase == CH",
    }
    y = (df["Purchase"] == "CH").to_numpy(int)
    return cols.task("OJ purchase is CH", "binary", y, sources=sources)


def default_credit():
    """ISLR Default (10,000 card holders, simulated): did the customer default?"""
    df = _rdata("ISLR", "Default")
    cols = _Columns()
    cols.coded(_yes(df["student"], "Yes"))
    cols.numeric(df["balance"], 0, 3000)
    cols.numeric(df["income"], 0, 100_000)
    sources = {
        "student": "doc: Yes/No factor",
        "balance": "declared [0, 3000] dollars (doc: average balance after the "
        "monthly payment)",
        "income": "declared [0, 100000] dollars a year (doc: income)",
        "y": "default == Yes",
    }
    y = _yes(df["default"], "Yes").astype(int)
    return cols.task("Default (ISLR)", "binary", y, sources=sources)


def affairs_any():
    """AER Affairs (601 respondents, Fair 1978): any affair in the past year?"""
    df = _rdata("AER", "Affairs")
    cols = _Columns()
    cols.coded(_yes(df["gender"], "male"))
    cols.coded(_yes(df["children"]))
    cols.numeric(df["age"], 17.5, 57)
    cols.numeric(df["yearsmarried"], 0.125, 15)
    cols.numeric(df["religiousness"], 1, 5)
    cols.numeric(df["education"], 9, 20)
    cols.numeric(df["occupation"], 1, 7)
    cols.numeric(df["rating"], 1, 5)
    sources = {
        "gender, children": "doc: factors",
        "age": "doc: coded 17.5 (under 20) to 57 (57 and over)",
        "yearsmarried": "doc: coded 0.125 (3 months or less) to 15",
        "religiousness, rating": "doc: scales 1 to 5",
        "education": "doc: coded 9 (grade school) to 20 (PhD)",
        "occupation": "doc: Hollingshead classification 1 to 7",
        "y": "affairs > 0",
    }
    y = (df["affairs"] > 0).to_numpy(int)
    return cols.task("Affairs any", "binary", y, sources=sources)


def crabs_species():
    """MASS crabs (200 Leptograpsus crabs): orange (O) or blue species?"""
    df = _rdata("MASS", "crabs")
    cols = _Columns()
    for name in ("FL", "RW", "CL", "CW", "BD"):
        cols.numeric(df[name], 0, 60)
    cols.coded(_yes(df["sex"], "M"))
    sources = {
        "FL, RW, CL, CW, BD": "declared [0, 60] mm (doc: lengths in mm)",
        "sex": "doc: factor",
        "y": "sp == O",
    }
    y = (df["sp"] == "O").to_numpy(int)
    return cols.task("crabs species", "binary", y, sources=sources)


FRESH_BINARY = (oj_purchase, default_credit, affairs_any, crabs_species)
