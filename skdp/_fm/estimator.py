"""Bases shared by every FM estimator, central and vertical.

Each piece is a named mixin, as scikit-learn shares ``_RidgeClassifierMixin``:

- :class:`FMPrivacyMixin`: the privacy-parameter checks and the spend;
- :class:`FMDomainMixin`: the declared domain (inferred with a
  PrivacyLeakWarning when undeclared and allowed), its fitted attributes and
  the statistics fingerprint;
- :class:`FMRegressorMixin` / :class:`FMClassifierMixin`: labels, prediction and
  tags of the two objectives;
- :func:`~skdp.utils.atomic_fit.atomic_fit` (re-exported here): the one
  implementation of "no partial model after any failure" (a refused budget
  included), also used by the other DP estimators.
"""

import math
import numbers

import numpy as np
from scipy.special import logsumexp
from sklearn.base import ClassifierMixin, RegressorMixin
from sklearn.utils.multiclass import check_classification_targets, type_of_target
from sklearn.utils.validation import check_is_fitted

from skdp._fm.bounds_budget import epsilon_left
from skdp._fm.centring import centred_domain
from skdp._fm.domain import DataDomain
from skdp._fm.statistics import fingerprint_items
from skdp._fm.streams import child_generator
from skdp._ranges.private_bounds import private_bounds
from skdp.accounting import PrivacyBudget
from skdp.utils import check_bounds
from skdp.utils.atomic_fit import atomic_fit
from skdp.utils.privacy_warnings import warn_privacy_leak
from skdp.utils.sklearn_compat import (
    BOUNDS,
    RANDOM_STATE,
    Interval,
    Options,
    StrOptions,
    validate_data,
)

__all__ = [
    "FM_PARAMETER_CONSTRAINTS",
    "PRIVATE_BOUNDS_CONSTRAINTS",
    "FMClassifierMixin",
    "FMDomainMixin",
    "FMPrivacyMixin",
    "FMRegressorMixin",
    "MulticlassFMClassifierMixin",
    "atomic_fit",
]

FM_PARAMETER_CONSTRAINTS = {
    "epsilon": [
        Interval(numbers.Real, 0, None, closed="neither"),
        Options(numbers.Real, {np.inf}),
    ],
    "delta": [Interval(numbers.Real, 0, 1, closed="left")],
    "mechanism": [StrOptions({"laplace", "gaussian"})],
    "bounds_X": [BOUNDS, None],
    "data_norm": [Interval(numbers.Real, 0, None, closed="neither"), None],
    "max_nonzero": [Interval(numbers.Integral, 1, None, closed="left"), None],
    "fit_intercept": ["boolean"],
    "linear_weight": [
        StrOptions({"auto"}),
        Interval(numbers.Real, 0, None, closed="neither"),
    ],
    "postprocessing": [StrOptions({"ridge", "trim", "none"})],
    "random_state": RANDOM_STATE,
}


# Parameters of the estimators that can release their own ranges
# (``bounds_X="private"``; see skdp.preprocessing.private_bounds).
PRIVATE_BOUNDS_CONSTRAINTS = {
    "bounds_X": [BOUNDS, StrOptions({"private"}), None],
    "public_bounds": [dict, None],
    "bounds_budget_share": [Interval(numbers.Real, 0, 1, closed="neither")],
    "tighten_bounds": ["boolean"],
}


PUBLIC_BOUNDS_MISUSE = (
    "public_bounds is used with bounds_X='private' or tighten_bounds=True only; "
    "with declared bounds, put those ranges in bounds_X."
)


class FMPrivacyMixin:
    """Privacy parameters (``epsilon``, ``delta``, ``mechanism``) and the spend."""

    def _check_privacy_params(self):
        if self.mechanism == "gaussian" and not 0 < self.delta < 1:
            raise ValueError(
                f"delta must be in (0, 1) for mechanism='gaussian', got {self.delta!r}."
            )

    @property
    def _release_epsilon(self):
        """The epsilon of the statistics' release: all of it, or what private
        bounds leave, ``(1 - bounds_budget_share) * epsilon`` (all of it when
        no range was estimated; :func:`~skdp._fm.bounds_budget.epsilon_left`)."""
        if self._private_bounds_parts() == (False, False):
            return self.epsilon
        # set by the range release (0 when nothing was spent)
        spent = self.__dict__.get("_bounds_epsilon")
        return epsilon_left(self.epsilon, self.bounds_budget_share, spent)

    @property
    def _spend(self):
        """What one release spends: a function of the parameters only."""
        delta = self.delta if self.mechanism == "gaussian" else 0.0
        if math.isinf(self.epsilon):
            delta = 0.0
        return PrivacyBudget(self._release_epsilon, delta)


class FMDomainMixin:
    """The declared domain (``bounds_X``, ``data_norm``, ``max_nonzero``, labels).

    Subclasses set ``_objective`` and provide ``_label_bounds(y)`` (the
    regressor's ``bounds_y``) and ``_undeclared_labels()``.
    """

    _objective = None
    # Centre a declared box and the label range at their midpoints (see
    # DataDomain's Notes and skdp._fm.centring). The vertical estimators resolve
    # the declared domain only: their server centres it and each party shifts
    # its own columns (skdp.vertical._party).
    _centre_domain = False

    def _label_bounds(self, y):
        return None

    def _undeclared_labels(self):
        return []

    def _private_bounds_parts(self):
        """``(features, labels)``: which ranges the fit releases privately."""
        tighten = bool(getattr(self, "tighten_bounds", False))
        bounds_X = getattr(self, "bounds_X", None)
        bounds_y = getattr(self, "bounds_y", None)
        x_private = _is_private(bounds_X) or (tighten and bounds_X is not None)
        y_private = _is_private(bounds_y) or (tighten and bounds_y is not None)
        return x_private, y_private

    def _undeclared(self):
        """What the user still has to declare for a data-independent domain."""
        if any(self._private_bounds_parts()):
            return [
                "bounds_X and bounds_y (not 'private', and tighten_bounds=False: "
                "private bounds are released by fit(X, y) from all rows at once)"
            ]
        missing = []
        if self.bounds_X is None and self.data_norm is None:
            missing.append("bounds_X and/or data_norm")
        return missing + self._undeclared_labels()

    def _release_private_bounds(self, X, y, rng, schema=None):
        """Release the ranges marked ``"private"`` (one spend, recorded);
        ``(bounds_X, bounds_y, PrivateBounds)`` with the declared ones as given.

        ``schema``: ``{column: (lo, hi)}`` read from a DataFrame's dtypes (free).
        Columns of ``X`` in ``public_bounds`` or ``schema`` cost nothing; the
        others and a private label range share ``bounds_budget_share * epsilon``
        (:func:`skdp.preprocessing.private_bounds`), the label range half of
        it when features are released too.
        """
        x_private, y_private = self._private_bounds_parts()
        if self.public_bounds is not None and not x_private:
            raise ValueError(PUBLIC_BOUNDS_MISUSE)
        if x_private and (self.data_norm is not None or self.max_nonzero):
            raise ValueError(
                "bounds_X='private' (or tighten_bounds=True) cannot be combined "
                "with data_norm or max_nonzero (a norm bound needs a box around 0; "
                "declare the box)."
            )
        if self.bounds_X is None:
            # no box (data_norm, or inferred later): only the label's range
            X = X[:, :0]
        d = X.shape[1]
        names = getattr(self, "feature_names_in_", None)
        public, envelope = {}, {}
        if self.bounds_X is not None and not _is_private(self.bounds_X):
            lower, upper = check_bounds(
                self.bounds_X, d, name="bounds_X", feature_names=names
            )
            declared = {j: (lower[j], upper[j]) for j in range(d)}
            # tighten_bounds: the declared box is the envelope of the release
            (envelope if x_private else public).update(declared)
        if x_private:
            public.update(schema or {})
            public.update(self.public_bounds or {})  # by index or name
        columns = X
        if y_private:
            if not _is_private(self.bounds_y):
                envelope[d] = self._label_bounds(y)
            columns = np.column_stack([X, y])
        elif self._objective == "squared":
            public[d] = self._label_bounds(y)
            columns = np.column_stack([X, y])
        result = private_bounds(
            columns,
            epsilon=self.epsilon * float(self.bounds_budget_share),
            public_bounds=public,
            feature_names=None
            if names is None or self.bounds_X is None
            else list(names),
            random_state=child_generator(rng),  # the fit's stream is untouched
            source=type(self).__name__ + ".bounds",
            label_column=d if y_private else None,
            envelope=envelope,
        )
        # recorded before the ranges' draws: 0 when no range was estimated,
        # else the whole share, whatever the looseness tests said
        self._bounds_epsilon = result.epsilon
        bounds_X = (
            None if self.bounds_X is None else (result.lower[:d], result.upper[:d])
        )
        bounds_y = None
        if columns.shape[1] > d:
            bounds_y = (float(result.lower[d]), float(result.upper[d]))
        return bounds_X, bounds_y, result

    def _resolve_declared_domain(
        self, n_features, X=None, y=None, released=None, feature_names=None
    ):
        """The declared domain (given data, missing parts inferred with a
        PrivacyLeakWarning), unshifted, in the user's units. Sets no attribute.

        ``released``: ``(bounds_X, bounds_y)`` from
        :meth:`_release_private_bounds`, used in place of the parameters.
        ``feature_names``: the column names a ``bounds_X`` dict may be keyed
        by (default ``feature_names_in_``, if set)."""
        d = int(n_features)
        private = not math.isinf(self.epsilon)
        lower = upper = None
        bounds_X = self.bounds_X if released is None else released[0]
        if feature_names is None:
            feature_names = getattr(self, "feature_names_in_", None)
        if bounds_X is not None:
            lower, upper = check_bounds(
                bounds_X, d, name="bounds_X", feature_names=feature_names
            )
        data_norm = self.data_norm
        if lower is None and data_norm is None:
            if private:
                warn_privacy_leak(
                    "Neither bounds_X nor data_norm was declared, so data_norm is "
                    "taken from the data: the result leaks the largest row norm and "
                    "is not differentially private. Declare the domain from what "
                    "the features can be (documentation, units), never from the "
                    "data: bounds_X=(lower, upper) per feature (a range away from 0 "
                    "is centred for free) or data_norm=R (rows are scaled to "
                    "||x|| <= R). Undeclared, the noise is also calibrated to this "
                    "data's most extreme row, so one outlier adds noise to every "
                    "coefficient."
                )
            norms = np.sqrt(np.einsum("ij,ij->i", X, X)) if X.size else np.zeros(1)
            data_norm = float(norms.max()) or 1.0
        if data_norm is not None:
            data_norm = float(data_norm)
        if lower is not None and data_norm is not None:
            if np.any((lower > 0) | (upper < 0)):
                raise ValueError(
                    "bounds_X must contain 0 for every feature when data_norm is "
                    "also given."
                )
        if getattr(self, "max_nonzero", None) is not None and lower is not None:
            if np.any((lower > 0) | (upper < 0)):
                raise ValueError(
                    "bounds_X must contain 0 for every feature when max_nonzero is "
                    "given."
                )
        y_bounds = self._label_bounds(y) if released is None else released[1]
        if data_norm is not None:
            scaling = data_norm
        else:
            scaling = float(np.max(np.maximum(np.abs(lower), np.abs(upper))))
        return DataDomain(
            n_features=d,
            lower=lower,
            upper=upper,
            data_norm=data_norm,
            y_bounds=y_bounds,
            fit_intercept=bool(self.fit_intercept),
            intercept_scaling=scaling if scaling > 0 else 1.0,
            max_nonzero=getattr(self, "max_nonzero", None),
        )

    def _resolve_domain(
        self, n_features, X=None, y=None, released=None, feature_names=None
    ):
        """The domain the fit works in: the declared one, centred when the
        estimator centres (:func:`~skdp._fm.centring.centred_domain`)."""
        declared = self._resolve_declared_domain(
            n_features, X, y, released, feature_names
        )
        if not self._centre_domain:
            return declared
        return centred_domain(
            declared, self._objective, self.mechanism, self.linear_weight
        )

    def _declared_domain(self, n_features, step="statistics", feature_names=None):
        """The declared domain; ValueError naming what to declare if incomplete.

        ``feature_names``: the columns of the rows (a ``bounds_X`` dict may be
        keyed by name)."""
        missing = self._undeclared()
        if missing:
            raise ValueError(
                f"{type(self).__name__}.{step} needs a declared domain: declare "
                + ", ".join(missing)
                + ". Inferring it from each block of rows would leak it and make "
                "the statistics depend on how the rows were split."
            )
        return self._resolve_domain(n_features, feature_names=feature_names)

    def _set_domain_attributes(self, domain):
        """The domain in the user's units (``bounds_``, ``bounds_y_``) and the
        public shift the fit worked in (``offset_X_``, ``offset_y_``)."""
        shift = 0.0 if domain.x_offset is None else domain.x_offset
        if domain.user_box is not None:
            self.bounds_ = tuple(np.array(b, dtype=np.float64) for b in domain.user_box)
        elif domain.has_box:
            self.bounds_ = (domain.lower + shift, domain.upper + shift)
        else:
            self.bounds_ = None
        self.data_norm_ = domain.data_norm
        self.intercept_scaling_ = domain.intercept_scaling
        if domain.y_bounds is not None:
            self.bounds_y_ = tuple(v + domain.y_offset for v in domain.y_bounds)
        if self._centre_domain:
            self.offset_X_ = domain.x_offset
            self.offset_y_ = domain.y_offset
            self.scale_X_ = domain.x_scale

    def _build_domain(self, X, y):
        """The domain for a fit on ``(X, y)`` (inferring what is undeclared, with
        a warning); records it in ``bounds_``, ``data_norm_``, ..."""
        domain = self._resolve_domain(X.shape[1], X, y)
        self._set_domain_attributes(domain)
        return domain

    def _fingerprint_items(self, domain, feature_names=None):
        extra = {"feature_names": feature_names}
        extra.update(self._label_fingerprint())
        return fingerprint_items(self._objective, domain, **extra)

    def _label_fingerprint(self):
        return {}

    def _linear_predict(self, X):
        check_is_fitted(self)
        X = self._clip_to_released_box(validate_data(self, X, reset=False))
        return X @ self.coef_ + self.intercept_

    def _clip_to_released_box(self, X):
        """Rows clipped to the privately released box (``bounds_X="private"``).

        The model is fitted on the rows clipped to that box, so it is a model
        of the clipped features; extrapolating it to values beyond a released
        range (which is estimated, and may be narrower than the data) would
        multiply a coefficient fitted on a narrow range by a value outside it.
        Measured: without this clip, one bwght fit predicted 2.4 times the
        test MSE of declared ranges, with it 0.97. Declared boxes are the
        user's statement of what the features can be and are left as given.
        """
        if not self._private_bounds_parts()[0]:
            return X
        return np.clip(X, *self.bounds_)


class FMRegressorMixin(RegressorMixin):
    """The squared objective: labels bounded by ``bounds_y``; linear prediction."""

    _objective = "squared"

    def _undeclared_labels(self):
        return [] if self.bounds_y is not None else ["bounds_y"]

    def _label_bounds(self, y):
        if self.bounds_y is not None:
            lower, upper = check_bounds(self.bounds_y, 1, name="bounds_y")
            return (float(lower[0]), float(upper[0]))
        if not math.isinf(self.epsilon):
            warn_privacy_leak(
                "bounds_y was not declared, so it is taken from the data: the "
                "result leaks the label range and is not differentially "
                "private. Declare bounds_y=(lower, upper) from what the label can "
                "be (e.g. a plausible income range); it is centred for free, so a "
                "range far from 0 costs no extra noise, but a range much wider "
                "than the labels does."
            )
        return (float(np.min(y)), float(np.max(y)))

    def _prepare_y(self, y, first_call, classes=None):
        return np.asarray(y, dtype=np.float64)

    def _labels_for_statistics(self, y):
        return np.asarray(y, dtype=np.float64)

    def predict(self, X):
        """Predict ``X @ coef_ + intercept_``, clipped to the label range
        ``bounds_y_`` (declared or released).

        The model is fitted on labels clipped to that range, so a prediction
        beyond it is an extrapolation the fit never saw, and clipping it
        (post-processing, no privacy cost) can only bring it nearer to every
        label the range holds: at most the range's width from any of them. A
        noisy model far off (the released label range too wide, or a small
        ``n * epsilon``) then predicts inside the labels' range instead of
        values orders of magnitude away.
        """
        z = self._linear_predict(X)
        bounds = self.__dict__.get("bounds_y_")
        if bounds is None:
            return z
        return np.clip(z, *bounds)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


class FMClassifierMixin(ClassifierMixin):
    """The logistic Taylor objective: two classes encoded {0, 1}; sigmoid model.

    The classes are the ``classes`` parameter when declared (a fit on data with
    one class present still works), else taken from the data with a
    PrivacyLeakWarning (which labels occur is itself data).
    """

    _objective = "logistic_taylor"
    classes = None  # estimators with a ``classes`` parameter override this

    def _undeclared_labels(self):
        return [] if self.classes is not None else ["classes"]

    def _label_fingerprint(self):
        classes = None if self.classes is None else self._declared_classes()
        return {"classes": classes}

    def _declared_classes(self, classes=None):
        declared = self.classes if classes is None else classes
        found = np.unique(np.asarray(declared))
        if (
            self.classes is not None
            and classes is not None
            and not np.array_equal(found, np.unique(np.asarray(self.classes)))
        ):
            raise ValueError(
                f"classes={list(classes)!r} differs from the declared "
                f"classes={list(self.classes)!r}."
            )
        return self._check_two(found, "classes")

    def _check_two(self, found, where):
        y_type = type_of_target(found, input_name="y", raise_unknown=True)
        if found.size > 2:
            raise ValueError(
                "Only binary classification is supported. The type of the "
                f"target is {y_type} ({found.size} classes); use one-vs-rest "
                "with a split budget."
            )
        if found.size < 2:
            raise ValueError(
                f"{type(self).__name__} needs 2 classes; got 1 class "
                f"({found[0]!r}) in {where}. Declare classes=[...] to fit on data "
                "where only one of them occurs."
            )
        return found

    def _resolve_classes(self, y, classes=None):
        if self.classes is not None or classes is not None:
            return self._declared_classes(classes)
        if not math.isinf(self.epsilon):
            warn_privacy_leak(
                "classes was not declared, so the two labels are taken from the "
                "data: which labels occur leaks and the result is not "
                "differentially private. Declare classes."
            )
        return self._check_two(np.unique(y), "y")

    def _encode(self, y, classes, name="classes_"):
        if y.size:
            check_classification_targets(y)
        unknown = ~np.isin(y, classes)
        if np.any(unknown):
            raise ValueError(
                f"y contains labels not in {name} {classes.tolist()}: "
                f"{np.unique(np.asarray(y)[unknown])[:5].tolist()}."
            )
        return (y == classes[1]).astype(np.float64)

    def _prepare_y(self, y, first_call, classes=None):
        check_classification_targets(y)
        if first_call:
            self.classes_ = self._resolve_classes(y, classes)
        return self._encode(y, self.classes_)

    def _labels_for_statistics(self, y):
        return self._encode(np.asarray(y), self._declared_classes(), "classes")

    def decision_function(self, X):
        """``X @ coef_ + intercept_``: the log-odds of ``classes_[1]``."""
        return self._linear_predict(X)

    def predict_proba(self, X):
        """Probabilities of ``classes_[0]`` and ``classes_[1]`` (sigmoid)."""
        z = self.decision_function(X)
        p1 = 0.5 * (1.0 + np.tanh(0.5 * z))  # overflow-free sigmoid
        return np.column_stack([1.0 - p1, p1])

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`."""
        z = self.decision_function(X)
        return np.column_stack([-np.logaddexp(0, z), -np.logaddexp(0, -z)])

    def predict(self, X):
        """The class with the larger probability (``classes_[1]`` if z > 0)."""
        z = self.decision_function(X)
        return self.classes_[(z > 0).astype(int)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = False
        return tags


class MulticlassFMClassifierMixin(FMClassifierMixin):
    """:class:`FMClassifierMixin` for two or more classes: the multinomial
    (softmax) Taylor objective (:mod:`skdp._fm.multinomial`) above two classes,
    the labels one-hot encoded on the first ``C - 1``; ``coef_`` of shape
    (n_classes, n_features) then."""

    @property
    def _objective(self):
        """``"multinomial_taylor"`` for more than two classes (declared or fitted)."""
        if self.classes is not None:
            n = np.unique(np.asarray(self.classes)).size
        else:
            n = len(self.__dict__.get("classes_", ()))
        return "multinomial_taylor" if n > 2 else "logistic_taylor"

    def _check_two(self, found, where):
        if found.size > 2:
            type_of_target(found, input_name="y", raise_unknown=True)
            return found
        return super()._check_two(found, where)

    def _encode(self, y, classes, name="classes_"):
        if classes.size == 2:
            return super()._encode(y, classes, name)
        super()._encode(y, classes, name)  # validates the labels
        # one-hot of the first C - 1 classes (the last is the reference)
        return (np.asarray(y)[:, None] == classes[None, :-1]).astype(np.float64)

    def decision_function(self, X):
        """Scores: the log-odds of ``classes_[1]`` (two classes), else one column
        per class (softmax logits, centred across classes)."""
        return self._linear_predict(X)

    def _linear_predict(self, X):
        check_is_fitted(self)
        X = self._clip_to_released_box(validate_data(self, X, reset=False))
        if np.ndim(self.coef_) == 2:
            return X @ self.coef_.T + self.intercept_
        return X @ self.coef_ + self.intercept_

    def predict_proba(self, X):
        """Class probabilities (sigmoid for two classes, softmax for more)."""
        check_is_fitted(self)
        if len(self.classes_) == 2:
            return super().predict_proba(X)
        return np.exp(self.predict_log_proba(X))

    def predict_log_proba(self, X):
        """Log of :meth:`predict_proba`."""
        check_is_fitted(self)
        if len(self.classes_) == 2:
            return super().predict_log_proba(X)
        z = self.decision_function(X)
        return z - logsumexp(z, axis=1, keepdims=True)

    def predict(self, X):
        """The class with the largest probability."""
        check_is_fitted(self)
        if len(self.classes_) == 2:
            return super().predict(X)
        return self.classes_[np.argmax(self.decision_function(X), axis=1)]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.multi_class = True
        return tags


def _is_private(value):
    return isinstance(value, str) and value == "private"
