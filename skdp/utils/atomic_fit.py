"""No partial model after any failure: the one implementation."""

import functools

__all__ = ["atomic_fit"]


def atomic_fit(method=None, *, restore=False):
    """Decorate a fitting method so that a failure leaves no partial model.

    On any exception (a :class:`~skdp.exceptions.BudgetExceededError` from
    :func:`~skdp.accounting.track_budget` included) the estimator is left
    unfitted: every fitted attribute (trailing underscore) and every private
    attribute the call added is removed, so ``check_is_fitted`` raises
    NotFittedError. With ``restore=True`` (``partial_fit``) the state from before
    the call is restored instead: the model of the earlier releases stays, the
    failed call leaves no trace.
    """

    def decorate(fit):
        @functools.wraps(fit)
        def wrapper(self, *args, **kwargs):
            before = dict(vars(self))
            try:
                return fit(self, *args, **kwargs)
            except BaseException:
                if restore:
                    vars(self).clear()
                    vars(self).update(before)
                else:
                    params = self.get_params(deep=False)
                    for name in list(vars(self)):
                        fitted = name.endswith("_") or name not in before
                        if fitted and not name.startswith("__") and name not in params:
                            delattr(self, name)
                raise

        return wrapper

    return decorate if method is None else decorate(method)
