"""Warnings attributed to the user's own line, wherever skdp raises them."""

import concurrent.futures
import contextlib
import functools
import os
import sys
import threading
import warnings

import joblib
import sklearn

import skdp
from skdp.exceptions import PrivacyLeakWarning

__all__ = ["external_stacklevel", "warn_privacy_leak"]

# Frames in these packages are skdp's own or those of the libraries that call into
# skdp on the user's behalf (Pipeline, GridSearchCV, joblib's parallel searches).
_INTERNAL_DIRS = tuple(
    os.path.dirname(module.__file__) + os.sep
    for module in (skdp, sklearn, joblib, concurrent.futures)
)
# ...and these standard-library wrappers (decorators, context managers, threads).
_INTERNAL_FILES = frozenset(
    module.__file__ for module in (contextlib, functools, threading)
)


def _is_internal(filename):
    return filename.startswith(_INTERNAL_DIRS) or filename in _INTERNAL_FILES


def external_stacklevel(skip=1):
    """The ``stacklevel`` at which ``warnings.warn`` names the first frame outside
    skdp, scikit-learn, joblib and the standard library's wrappers.

    Parameters
    ----------
    skip : int, default=1
        How many frames above this call the warning is issued from: 1 when the
        function calling ``external_stacklevel`` also calls ``warnings.warn``.
    """
    frame = sys._getframe(skip + 1)  # the caller of the function that warns
    level = skip + 1
    while frame is not None and _is_internal(frame.f_code.co_filename):
        frame = frame.f_back
        level += 1
    return level


def warn_privacy_leak(message):
    """Raise a :class:`~skdp.exceptions.PrivacyLeakWarning` at the user's line.

    Whether skdp is called directly, through ``fit``, a ``Pipeline`` or a
    ``GridSearchCV``, the warning names the user's line, not skdp's or
    scikit-learn's (a hard-coded ``stacklevel`` is right for one call path only).
    """
    warnings.warn(message, PrivacyLeakWarning, stacklevel=external_stacklevel())
