"""Capture the base runs' spends (skdp-internal).

The one place skdp.model_selection reaches into skdp.accounting's internals:
``skdp.accounting`` has no public way to keep releases made inside a block out
of the enclosing ``track_budget`` blocks. A public
``skdp.accounting.capture_spends()`` doing what :func:`captured_spends` does
would replace this module.
"""

import contextlib

from skdp.accounting import BudgetTracker, _tracking

__all__ = ["captured_spends"]


@contextlib.contextmanager
def captured_spends():
    """Record the releases made inside in a private tracker, and nowhere else.

    The search records its own guarantee once; the base runs' spends are
    accounted by the selection theorem, not by composition. The tracker is
    returned so that the search checks each base run spent what it was given.
    Only releases made in this thread are captured (the base runs run here);
    in a worker process that adopted an outer block, the base runs' spends
    also reach that block (conservative).
    """
    tracker = BudgetTracker(limit=None, accountant="basic", delta=0.0, strict=True)
    token = _tracking._context.set((tracker,))
    try:
        yield tracker
    finally:
        _tracking._context.reset(token)
        with tracker._lock:
            tracker._closed = True
