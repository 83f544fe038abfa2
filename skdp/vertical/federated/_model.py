"""The released model on disk: ``PATH.npz`` (arrays) and ``PATH.json`` (the rest).

No pickle: the npz holds plain float64 arrays, the JSON the estimator's
parameters, the declared domain, the privacy spent and the feature names.
:func:`load_model` checks the whole file against the schema below before it
builds a fitted :class:`~skdp.vertical.VerticalFMRegressor` or
:class:`~skdp.vertical.VerticalFMClassifier`; every way a file can be damaged
or edited raises :class:`ModelFileError` naming the file and the field.

**Schema** (format ``skdp.vertical.model/1``). Non-finite numbers are written as
the strings ``"inf"``/``"nan"`` (JSON has no such numbers); only ``epsilon`` (and
what follows from it) may be ``"inf"``.

================  ========  ==================================================
field             where     what
================  ========  ==================================================
format            json      ``"skdp.vertical.model/1"`` (the version)
estimator         json      ``"VerticalFMRegressor"`` or ``"VerticalFMClassifier"``
coef              npz       float64, finite; ``(d,)``, or ``(C, d)`` for C >= 3
                            classes; ``d = n_features_in``
intercept         json      a finite number, or C of them (C >= 3 classes)
n_features_in     json      int >= 1, equal to ``coef``'s last dimension
params            json      constructor parameters of the estimator, each
                            within the estimator's own constraints
                            (``_parameter_constraints``: allowed enumerations
                            such as ``mechanism``, ranges); ``partition`` a
                            partition of ``range(d)``, ``label_party`` one of
                            its parties
privacy_spent     json      ``{"epsilon", "delta"}``, equal to what ``params``
                            spend (top-down: epsilon, and delta for gaussian;
                            bottom-up: every budget once)
classes           json      classifier: sorted distinct labels (all int or all
                            str), as many as ``coef`` has rows (2: one row)
feature_names     json      optional: d distinct strings
parties           json      optional: distinct names, one per partition part
partition,        json      optional: equal to ``params``'s
label_party
party_privacy     npz       optional: one finite epsilon >= 0 per party, none
                            above the spent epsilon
bounds_lower,     npz       optional, together: ``(d,)``, finite, lower < upper
bounds_upper
offset_X          npz       optional: ``(d,)``, finite
data_norm,        json      optional: a positive finite number
intercept_scaling
bounds_y          json      optional: ``[lower, upper]``, finite, lower < upper
offset_y          json      optional: a finite number
privacy           json      optional record: its epsilon/delta equal
                            ``privacy_spent``
sensitivity,      json      optional records of the release (checked for type)
noise_std,
n_samples,
group_epsilon
================  ========  ==================================================

**Sizes.** The JSON file may hold at most :data:`MAX_JSON_BYTES`; every npz
member must be one of the arrays above, stored as ``save_model`` stores it
(uncompressed, so it cannot declare more bytes than the file holds), with an
``.npy`` header whose shape and dtype account for its bytes exactly. A header
that declares a huge array is refused before anything is allocated.

Why the standard library and a table, not a schema library: the checks that
matter are numeric (shapes, dtypes, finiteness), relational (shapes against
``n_features_in`` and ``classes``, the spend against the parameters) and reuse
the estimator's own constraints and skdp's partition checks; a JSON-schema or
model library would add a dependency and still need all of these written out.
"""

import io
import json
import math
import os
import zipfile
from pathlib import Path

import numpy as np

__all__ = ["ModelFileError", "load_model", "save_model"]

FORMAT = "skdp.vertical.model/1"
FORMATS = (FORMAT,)
ESTIMATORS = ("VerticalFMRegressor", "VerticalFMClassifier")
_ARRAYS = ("coef", "party_privacy", "bounds_lower", "bounds_upper", "offset_X")
#: Largest model JSON file (feature names for 10^5 features take a few MB).
MAX_JSON_BYTES = 64 * 2**20
_REQUIRED = (
    "format",
    "estimator",
    "intercept",
    "n_features_in",
    "params",
    "privacy_spent",
)
_RECORDS = {  # informational fields: their types only
    "sensitivity": (dict, type(None)),
    "noise_std": (int, float, str, type(None)),
    "n_samples": (int, type(None)),
    "group_epsilon": (dict, type(None)),
}
_FIELDS = set(_REQUIRED) | set(_ARRAYS) | set(_RECORDS)
_FIELDS |= {
    "classes",
    "feature_names",
    "parties",
    "partition",
    "label_party",
    "privacy",
    "data_norm",
    "intercept_scaling",
    "bounds_y",
    "offset_y",
}


class ModelFileError(ValueError):
    """A model file is missing, damaged, edited or not an skdp vertical model.

    Attributes
    ----------
    path : pathlib.Path
        The file (``.npz`` or ``.json``) at fault.
    field : str
        The field at fault (``"file"`` when the file as a whole cannot be read).
    """

    def __init__(self, path, field, problem):
        super().__init__(f"{path}: field '{field}' {problem.rstrip('.')}.")
        self.path = Path(path)
        self.field = field


def _paths(path):
    path = Path(path)
    if path.suffix in (".npz", ".json"):
        path = path.with_suffix("")
    return path.with_suffix(".npz"), path.with_suffix(".json")


def _jsonable(value):
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def save_model(path, model):
    """Write ``model`` (a dict) to ``PATH.npz`` + ``PATH.json``, atomically.

    ``model`` holds ``estimator`` (``"VerticalFMRegressor"`` or
    ``"VerticalFMClassifier"``), ``coef`` (shape (n_features,), or (n_classes,
    n_features) for more than two classes), ``intercept`` (a number, or one per
    class), ``params`` (the estimator's constructor parameters),
    ``n_features_in``, ``privacy_spent`` (``{"epsilon", "delta"}``), and
    optionally the other fields of the schema (see the module docstring). The
    model is checked against the schema first (:class:`ModelFileError` naming
    the field). Returns the two paths. On any error while writing, the
    temporary files are removed before the error propagates.
    """
    npz, js = _paths(path)
    arrays = {
        k: np.asarray(model[k], dtype=np.float64)
        for k in _ARRAYS
        if model.get(k) is not None
    }
    meta = {k: _jsonable(v) for k, v in model.items() if k not in arrays}
    meta["format"] = FORMAT
    _Checked(js, npz, meta, arrays)  # never write what load_model would refuse
    npz.parent.mkdir(parents=True, exist_ok=True)
    tmp_npz, tmp_js = npz.with_name(npz.name + ".tmp"), js.with_name(js.name + ".tmp")
    try:
        with open(tmp_npz, "wb") as f:
            np.savez(f, **arrays)
        tmp_js.write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
        os.replace(tmp_npz, npz)
        os.replace(tmp_js, js)
    except BaseException:
        # a full disk, an interrupt: no temporary file stays behind
        for tmp in (tmp_npz, tmp_js):
            try:
                tmp.unlink()
            except FileNotFoundError:
                pass
        raise
    return npz, js


# ------------------------------------------------------------------ reading
def _reject_constant(name):
    raise ValueError(f"the JSON constant {name} is not allowed")


def _read_json(js):
    try:
        size = js.stat().st_size
        if size > MAX_JSON_BYTES:
            raise ModelFileError(
                js, "file", f"is {size} bytes, more than a model's {MAX_JSON_BYTES}"
            )
        meta = json.loads(js.read_bytes(), parse_constant=_reject_constant)
    except ModelFileError:
        raise
    except OSError as exc:
        raise ModelFileError(js, "file", f"cannot be read ({exc.strerror})") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, int digits
        raise ModelFileError(js, "file", f"is not valid JSON ({exc})") from None
    if not isinstance(meta, dict):
        raise ModelFileError(js, "file", "must hold a JSON object")
    return meta


def _read_npy(npz, name, raw):
    """One ``.npy`` member: float64, C order, its header accounting for its
    bytes exactly (checked before numpy allocates anything)."""
    fmt = np.lib.format
    stream = io.BytesIO(raw)
    try:
        version = fmt.read_magic(stream)
        reader = {(1, 0): fmt.read_array_header_1_0, (2, 0): fmt.read_array_header_2_0}
        if version not in reader:
            raise ValueError(f"unsupported .npy version {version}")
        shape, fortran, dtype = reader[version](stream)
    except ValueError as exc:
        raise ModelFileError(npz, name, f"is not a .npy array ({exc})") from None
    if dtype != np.dtype("<f8") or fortran:
        raise ModelFileError(
            npz, name, f"must be a C-ordered float64 array, got dtype {dtype}"
        )
    declared = math.prod(shape) * 8
    if declared != len(raw) - stream.tell():
        raise ModelFileError(
            npz,
            name,
            f"declares shape {shape} ({declared} bytes) but holds "
            f"{len(raw) - stream.tell()} bytes",
        )
    return np.frombuffer(raw, dtype="<f8", offset=stream.tell()).reshape(shape).copy()


def _read_npz(npz):
    try:
        size = npz.stat().st_size
        archive = zipfile.ZipFile(npz)
    except OSError as exc:
        raise ModelFileError(
            npz, "file", f"cannot be read ({exc.strerror or exc})"
        ) from None
    except zipfile.BadZipFile as exc:
        raise ModelFileError(npz, "file", f"is not an npz archive ({exc})") from None
    arrays = {}
    with archive:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            if name not in _ARRAYS or not info.filename.endswith(".npy"):
                raise ModelFileError(
                    npz, info.filename, f"is not an array of a model {list(_ARRAYS)}"
                )
            if info.compress_type != zipfile.ZIP_STORED:
                raise ModelFileError(
                    npz,
                    name,
                    "is compressed: models store their arrays uncompressed (so "
                    "that no array can declare more bytes than the file holds)",
                )
            if info.file_size > size:
                raise ModelFileError(
                    npz, name, f"declares {info.file_size} bytes in a file of {size}"
                )
            try:
                raw = archive.read(info)
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise ModelFileError(npz, name, f"cannot be read ({exc})") from None
            arrays[name] = _read_npy(npz, name, raw)
    return arrays


class _Checked:
    """A model's fields (``meta`` from the JSON, ``arrays`` from the npz),
    checked against the schema; raises :class:`ModelFileError`."""

    def __init__(self, js, npz, meta, arrays):
        self.js, self.npz, self.meta, self.arrays = js, npz, meta, arrays
        self._check()

    def fail(self, field, problem, array=False):
        raise ModelFileError(self.npz if array else self.js, field, problem)

    # -------------------------------------------------------------- values
    def number(self, field, value, low=None, high=None, allow_inf=False):
        """A finite real (``"inf"`` only if ``allow_inf``) within [low, high]."""
        if value == "inf" and allow_inf:
            return math.inf
        if isinstance(value, bool) or not isinstance(value, int | float):
            self.fail(field, f"must be a number, got {value!r:.60}")
        value = float(value)
        if not math.isfinite(value):  # pragma: no cover - JSON has no such value
            self.fail(field, "must be finite")
        if (low is not None and value < low) or (high is not None and value > high):
            self.fail(field, f"must be in [{low}, {high}], got {value!r}")
        return value

    def optional_positive(self, field):
        value = self.meta.get(field)
        if value is None:
            return None
        value = self.number(field, value)
        if value <= 0:
            self.fail(field, f"must be > 0, got {value!r}")
        return value

    def names(self, field, value, length=None):
        if (
            not isinstance(value, list)
            or not all(isinstance(v, str) for v in value)
            or len(set(value)) != len(value)
        ):
            self.fail(field, "must be a list of distinct strings")
        if length is not None and len(value) != length:
            self.fail(field, f"must have {length} entries, got {len(value)}")
        return value

    def interval(self, field, value):
        if not isinstance(value, list | tuple) or len(value) != 2:
            self.fail(field, "must be [lower, upper]")
        lo, hi = (self.number(field, v) for v in value)
        if not lo < hi:
            self.fail(field, f"must have lower < upper, got {list(value)}")
        return lo, hi

    def array(self, field, shape, low=None):
        a = self.arrays.get(field)
        if a is None:
            return None
        if a.shape != shape:
            self.fail(field, f"must have shape {shape}, got {a.shape}", array=True)
        if not np.all(np.isfinite(a)):
            self.fail(field, "must hold finite numbers only", array=True)
        if low is not None and np.any(a < low):
            self.fail(field, f"must hold numbers >= {low}", array=True)
        return a

    # -------------------------------------------------------------- schema
    def _check(self):
        meta = self.meta
        fmt = meta.get("format")
        if fmt not in FORMATS:
            self.fail(
                "format",
                f"is {fmt!r:.60}: not an skdp vertical model (this version reads "
                f"{list(FORMATS)})",
            )
        unknown = sorted(set(meta) - _FIELDS)
        if unknown:
            self.fail(unknown[0], f"is not part of the format {fmt}")
        missing = [k for k in _REQUIRED if k not in meta]
        if missing:
            self.fail(missing[0], "is missing")
        if "coef" not in self.arrays:
            self.fail("coef", "is missing", array=True)
        if meta["estimator"] not in ESTIMATORS:
            self.fail("estimator", f"must be one of {list(ESTIMATORS)}")
        self.classifier = meta["estimator"] == "VerticalFMClassifier"
        d = meta["n_features_in"]
        if isinstance(d, bool) or not isinstance(d, int) or d < 1:
            self.fail("n_features_in", f"must be an int >= 1, got {d!r:.60}")
        self.d = d
        self._coef_and_classes()
        self._params()
        self._spend()
        self._parties()
        self._domain()
        for field, kinds in _RECORDS.items():
            if field in meta and not isinstance(meta[field], kinds):
                names = ["null" if k is type(None) else k.__name__ for k in kinds]
                self.fail(field, f"must be of type {' or '.join(names)}")
        if meta.get("feature_names") is not None:
            self.names("feature_names", meta["feature_names"], self.d)

    def _coef_and_classes(self):
        meta, coef = self.meta, self.arrays["coef"]
        classes = meta.get("classes")
        if not self.classifier:
            if classes is not None:
                self.fail("classes", "is only for a classifier")
            n_rows = None
        else:
            if not isinstance(classes, list) or len(classes) < 2:
                self.fail("classes", "must list two or more class labels")
            ints = all(type(c) is int for c in classes)
            if not (ints or all(isinstance(c, str) for c in classes)):
                self.fail("classes", "must be all integers or all strings")
            if classes != sorted(set(classes)):
                # predict maps the decision to classes_ by position
                self.fail("classes", "must be sorted and distinct")
            n_rows = len(classes) if len(classes) > 2 else None
        shape = (self.d,) if n_rows is None else (n_rows, self.d)
        self.array("coef", shape)
        intercept = meta["intercept"]
        if n_rows is None:
            self.intercept = self.number("intercept", intercept)
        else:
            if not isinstance(intercept, list) or len(intercept) != n_rows:
                self.fail("intercept", f"must list {n_rows} numbers (one per class)")
            self.intercept = np.asarray(
                [self.number("intercept", v) for v in intercept], dtype=np.float64
            )
        self.coef = coef

    def _params(self):
        from skdp.vertical import VerticalFMClassifier, VerticalFMRegressor
        from skdp.vertical._partition import check_label_party, check_partition

        cls = VerticalFMClassifier if self.classifier else VerticalFMRegressor
        params = self.meta["params"]
        if not isinstance(params, dict):
            self.fail("params", "must be a JSON object")
        params = dict(params)
        for key in ("epsilon",):
            if key in params:
                params[key] = self.number(f"params.{key}", params[key], allow_inf=True)
        if params.get("bounds_y") is not None:
            params["bounds_y"] = self.interval("params.bounds_y", params["bounds_y"])
        problem = estimator_param_problem(cls, params)
        if problem is not None:
            self.fail(f"params.{problem[0]}", problem[1])
        self.params = params
        self.estimator = cls(**params)
        self.partition = None
        if params.get("partition") is not None:
            try:
                self.partition = check_partition(params["partition"], self.d)
            except (TypeError, ValueError) as exc:
                self.fail("params.partition", f"is not valid: {exc}")
        if params.get("label_party") is not None and self.partition is not None:
            try:
                check_label_party(params["label_party"], len(self.partition))
            except (TypeError, ValueError) as exc:
                self.fail("params.label_party", f"is not valid: {exc}")
        for field in ("partition", "label_party", "bounds_y", "classes"):
            top = self.meta.get(field)
            if field == "bounds_y" and top is not None:
                top = self.interval("bounds_y", top)
            if top is not None and field in params and top != params[field]:
                self.fail(field, f"differs from params.{field}")
        if self.meta.get("label_party") is not None and "label_party" not in params:
            self.fail("label_party", "needs params.label_party")
        if self.meta.get("partition") is not None and self.partition is None:
            self.fail("partition", "needs params.partition")

    def _spend(self):
        from skdp.vertical._plan import bottom_up_spend, check_public_parameters

        est = self.estimator
        try:
            budgets = check_public_parameters(
                budget=est.budget,
                mechanism=est.mechanism,
                noise_generation=est.noise_generation,
                party_epsilon=est.party_epsilon,
                pairwise_epsilon=est.pairwise_epsilon,
                n_parties=len(self.partition or np.ravel(est.party_epsilon or [])),
            )
        except (TypeError, ValueError) as exc:
            self.fail("params.budget", f"is inconsistent: {exc}")
        if budgets is None:
            expected = est._spend.epsilon, est._spend.delta
        else:
            expected = bottom_up_spend(*budgets), 0.0
        spent = self.meta.get("privacy_spent")
        if not isinstance(spent, dict) or set(spent) != {"epsilon", "delta"}:
            self.fail("privacy_spent", 'must be {"epsilon": ..., "delta": ...}')
        got = (
            self.number("privacy_spent.epsilon", spent["epsilon"], allow_inf=True),
            self.number("privacy_spent.delta", spent["delta"], 0.0, 1.0),
        )
        if not np.allclose(got, expected, rtol=1e-12, atol=0):
            self.fail(
                "privacy_spent",
                f"is {list(got)}, but the parameters spend {list(expected)}",
            )
        self.spent = got
        privacy = self.meta.get("privacy")
        if privacy is not None:
            if not isinstance(privacy, dict):
                self.fail("privacy", "must be a JSON object")
            record = (
                self.number("privacy.epsilon", privacy.get("epsilon"), allow_inf=True),
                self.number("privacy.delta", privacy.get("delta"), 0.0, 1.0),
            )
            if not np.allclose(record, got, rtol=1e-12, atol=0):
                self.fail("privacy", "differs from privacy_spent")

    def _parties(self):
        meta = self.meta
        n = None if self.partition is None else len(self.partition)
        self.parties = None
        if meta.get("parties") is not None:
            self.parties = self.names("parties", meta["parties"], n)
            n = len(self.parties)
        pp = self.arrays.get("party_privacy")
        if pp is not None:
            if pp.ndim != 1 or (n is not None and pp.shape != (n,)):
                self.fail(
                    "party_privacy", "must hold one epsilon per party", array=True
                )
            if math.isinf(self.spent[0]):
                ok = np.all(np.isinf(pp) | (np.isfinite(pp) & (pp >= 0)))
            else:
                ok = np.all(np.isfinite(pp) & (pp >= 0))
                ok = ok and np.all(pp <= self.spent[0] * (1 + 1e-9))
            if not ok:
                self.fail(
                    "party_privacy",
                    "must hold epsilons in [0, privacy_spent.epsilon]",
                    array=True,
                )

    def _domain(self):
        d = (self.d,)
        lower, upper = self.array("bounds_lower", d), self.array("bounds_upper", d)
        if (lower is None) != (upper is None):
            self.fail("bounds_lower", "and bounds_upper go together", array=True)
        if lower is not None and not np.all(lower < upper):
            self.fail("bounds_lower", "must be below bounds_upper", array=True)
        self.array("offset_X", d)
        self.data_norm = self.optional_positive("data_norm")
        self.intercept_scaling = self.optional_positive("intercept_scaling")
        self.bounds_y = None
        if self.meta.get("bounds_y") is not None:
            if self.classifier:
                self.fail("bounds_y", "is only for a regressor")
            self.bounds_y = self.interval("bounds_y", self.meta["bounds_y"])
        self.offset_y = self.number("offset_y", self.meta.get("offset_y", 0.0))


def estimator_param_problem(cls, params):
    """``(name, problem)`` of the first entry of ``params`` the estimator class
    ``cls`` refuses (not one of its parameters, or outside its own
    ``_parameter_constraints``, or a gaussian mechanism without a delta in
    (0, 1)), else None."""
    valid = cls().get_params()
    for key, value in params.items():
        if key not in valid:
            return key, f"is not a parameter of {cls.__name__}"
        try:
            cls(**{key: value})._validate_params()
        except (TypeError, ValueError) as exc:
            return key, f"is refused: {str(exc).rstrip('.')}"
    try:
        cls(**params)._check_privacy_params()
    except ValueError as exc:
        return "delta", f"is refused: {str(exc).rstrip('.')}"
    return None


def load_model(path):
    """A fitted vertical estimator from a model written by the server.

    Parameters
    ----------
    path : str or Path
        ``PATH``, ``PATH.npz`` or ``PATH.json``.

    Returns
    -------
    VerticalFMRegressor or VerticalFMClassifier
        With ``coef_``, ``intercept_``, ``n_features_in_`` (and
        ``feature_names_in_``, ``classes_``; for more than two classes
        ``coef_`` of shape (n_classes, n_features) and ``intercept_`` of shape
        (n_classes,), predicting with the softmax), the declared domain
        (``bounds_``, ``data_norm_``), ``privacy_spent_`` and ``party_privacy_``.

    Raises
    ------
    ModelFileError
        (a ValueError) for a missing, truncated, damaged or edited file, naming
        the file and the field: see the schema in
        :mod:`skdp.vertical.federated._model`. Nothing is unpickled.

    Examples
    --------
    >>> import tempfile, numpy as np
    >>> path = tempfile.mkdtemp() + "/model"
    >>> _ = save_model(path, {"estimator": "VerticalFMRegressor",
    ...     "coef": [0.5, -1.0], "intercept": 0.25, "n_features_in": 2,
    ...     "params": {"epsilon": 1.0}, "privacy_spent": {"epsilon": 1.0,
    ...     "delta": 0.0}})
    >>> reg = load_model(path)
    >>> reg.predict(np.array([[1.0, 1.0]]))
    array([-0.25])
    """
    from skdp.accounting import PrivacyBudget

    npz, js = _paths(path)
    m = _Checked(js, npz, _read_json(js), _read_npz(npz))
    meta, arrays = m.meta, m.arrays
    est = m.estimator
    est.coef_ = m.coef
    est.intercept_ = m.intercept
    est.n_features_in_ = m.d
    if meta.get("feature_names") is not None:
        est.feature_names_in_ = np.asarray(meta["feature_names"], dtype=object)
    if m.classifier:
        est.classes_ = np.asarray(meta["classes"])
    est.bounds_ = None
    if "bounds_lower" in arrays:
        est.bounds_ = (arrays["bounds_lower"], arrays["bounds_upper"])
    est.data_norm_ = m.data_norm
    if m.bounds_y is not None:
        est.bounds_y_ = m.bounds_y
    est.offset_X_ = arrays.get("offset_X")
    est.offset_y_ = m.offset_y
    if m.intercept_scaling is not None:
        est.intercept_scaling_ = m.intercept_scaling
    est.privacy_spent_ = PrivacyBudget(*m.spent)
    if "party_privacy" in arrays:
        est.party_privacy_ = arrays["party_privacy"]
    if m.parties is not None:
        est.parties_ = list(m.parties)
        est.n_parties_ = len(est.parties_)
    if m.partition is not None:
        est.partition_ = m.partition
    if m.params.get("label_party") is not None and m.partition is not None:
        est.label_party_ = int(m.params["label_party"])
    return est
