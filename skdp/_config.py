"""skdp's process-wide settings (today one: reproducible noise).

The setting lives in the environment variable ``SKDP_REPRODUCIBLE_NOISE`` so that
every process started after it is set (dask workers, joblib's process pools,
``skdp-party``/``skdp-server``) sees the same choice; :func:`set_config` and
:func:`config_context` write that variable. A process started before the opt-in
keeps the default: its noise stays unpredictable (the failure is safe). Changing
the setting ends joblib's reusable worker pool, whose workers would otherwise keep
the old one; a dask cluster started under the opt-in keeps it until it is restarted.
"""

import contextlib
import os

__all__ = ["config_context", "get_config", "set_config"]

REPRODUCIBLE_NOISE_ENV = "SKDP_REPRODUCIBLE_NOISE"
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


def _reproducible_noise():
    value = os.environ.get(REPRODUCIBLE_NOISE_ENV, "").strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError(
        f"{REPRODUCIBLE_NOISE_ENV} must be one of 1/true/yes/on or 0/false/no/off "
        f"(or unset), got {os.environ[REPRODUCIBLE_NOISE_ENV]!r}."
    )


def get_config():
    """skdp's current settings, as a dict.

    Returns
    -------
    dict
        ``{"reproducible_noise": bool}``.
    """
    return {"reproducible_noise": _reproducible_noise()}


def set_config(*, reproducible_noise=None):
    """Change skdp's settings for this process and the processes it starts later.

    Parameters
    ----------
    reproducible_noise : bool or None, default=None
        ``True`` opts in to noise drawn from the estimator's ``random_state``
        (reproducible, and known to anyone who knows the seed: every such release
        warns with :class:`~skdp.exceptions.ReproducibleNoiseWarning`). ``False``
        (the default policy): every release draws its noise from fresh operating
        system entropy, whatever ``random_state`` says. ``None`` leaves it as is.
        Same as setting the environment variable ``SKDP_REPRODUCIBLE_NOISE=1``.
    """
    if reproducible_noise is None:
        return
    if not isinstance(reproducible_noise, bool):
        raise TypeError(
            "reproducible_noise must be True, False or None, got "
            f"{type(reproducible_noise).__name__}."
        )
    was_on = _reproducible_noise()
    os.environ[REPRODUCIBLE_NOISE_ENV] = "1" if reproducible_noise else "0"
    if was_on != reproducible_noise:
        _end_reused_worker_pool()


def _end_reused_worker_pool():
    """End joblib's reusable process pool, whose workers kept the old setting.

    joblib (``n_jobs`` in scikit-learn) reuses one pool of worker processes
    across calls; workers started while reproducible noise was on would go on
    seeding noise after the parent switched it off (and workers started before
    the opt-in would ignore it). The next parallel call starts fresh workers,
    which read the new setting.
    """
    try:
        from joblib.externals.loky import reusable_executor
    except ImportError:  # pragma: no cover - joblib always ships loky
        return
    executor = getattr(reusable_executor, "_executor", None)
    if executor is not None:
        executor.shutdown(wait=True, kill_workers=True)


@contextlib.contextmanager
def config_context(*, reproducible_noise=None):
    """Change skdp's settings inside a ``with`` block, then restore them.

    Parameters
    ----------
    reproducible_noise : bool or None, default=None
        See :func:`set_config`.

    Examples
    --------
    >>> import skdp
    >>> with skdp.config_context(reproducible_noise=True):
    ...     skdp.get_config()["reproducible_noise"]
    True
    """
    before = os.environ.get(REPRODUCIBLE_NOISE_ENV)
    try:
        set_config(reproducible_noise=reproducible_noise)
        yield
    finally:
        was_on = _reproducible_noise()
        if before is None:
            os.environ.pop(REPRODUCIBLE_NOISE_ENV, None)
        else:
            os.environ[REPRODUCIBLE_NOISE_ENV] = before
        if was_on != _reproducible_noise():
            _end_reused_worker_pool()
