"""``TreeCVEstimator``: share training prefixes between the folds of a search."""

from __future__ import annotations

import copy
import numbers
import pickle
import warnings

import joblib
import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    BaseEstimator,
    MetaEstimatorMixin,
    _fit_context,
    clone,
    is_classifier,
)
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils._metadata_requests import (
    MetadataRouter,
    MethodMapping,
    _routing_enabled,
    process_routing,
)
from sklearn.utils._param_validation import HasMethods, Interval, StrOptions
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import (
    _num_samples,
    check_consistent_length,
    check_is_fitted,
    validate_data,
)

from sklearn_ext.model_selection._sgd_stream import batch_kernel
from sklearn_ext.model_selection._streaming import (
    StreamingPipeline,
    streaming_pipeline,
)
from sklearn_ext.utils._prefix_cache import (
    PrefixCache,
    batches,
    prefix_keys,
    resolve_cache,
    resume_from_prefix,
)

__all__ = ["TreeCVEstimator"]


def _estimator_has(attr: str):
    def check(self) -> bool:
        if "_stream" in vars(self):
            return hasattr(self._stream, attr)
        return hasattr(self.estimator, attr)

    return check


class TreeCVEstimator(MetaEstimatorMixin, BaseEstimator):
    """Fit a ``partial_fit`` learner from the longest training prefix already seen.

    scikit-learn's searches and ``cross_validate`` fit each (candidate, fold) on a
    fresh clone and hand it ``X[train]`` only. With a :class:`TreeCVSplitter` the
    training rows of consecutive folds start with the same rows in the same order
    (the tree's shared prefixes), so this wrapper feeds the rows to
    ``estimator.partial_fit`` in batches of ``batch_size``, keys the model state
    after every batch by an order-sensitive digest of the learner's parameters
    and of all rows fed so far, and starts each fit from the longest prefix it
    finds in ``cache``. A k-fold search then costs about ``log2(k)`` passes per
    candidate instead of ``k - 1``. A miss is an ordinary fit: the digest covers
    the content of the rows, so a different fold, candidate or data set can never
    pick up a wrong state.

    Its ``fit`` is one pass of ``estimator.partial_fit`` over the rows in the
    order given, in batches of ``batch_size``: the *streaming regime* that
    TreeCV scores. :meth:`partial_fit` keeps the same batch boundaries across
    calls (rows short of a full batch wait, and a copy with them fed answers
    ``predict``), so ``partial_fit(A); partial_fit(B)`` gives the model of
    ``fit(A + B)``. That is why :class:`TreeCVSearchCV` and
    :func:`~sklearn_ext.tree_cross_validate` wrap a learner whose own ``fit``
    trains differently (e.g. ``SGDClassifier``'s epochs) in it: the fold
    models are the ``fit`` of this wrapper on the fold's training rows, and the
    refit model is the same wrapper fitted on all rows.

    Parameters
    ----------
    estimator : estimator object
        A learner with ``partial_fit``, or a scikit-learn ``Pipeline`` whose
        steps stream (see :class:`StreamingPipeline`: each batch updates every
        step in turn, then the last step learns from it; the pipeline takes
        its rows as given, DataFrames included). Its ``partial_fit`` must be
        deterministic (e.g. a fixed ``random_state``) for prefixes to be
        shared; otherwise each fit trains from scratch, with a warning.
    batch_size : int, default=1024
        Rows per ``partial_fit`` call, and the spacing of the stored states. A
        fit re-feeds at most ``batch_size - 1`` rows of a shared prefix.
    classes : array-like of shape (n_classes,), default=None
        All class labels, passed to the first ``partial_fit`` of a classifier so
        that a fold lacking a class still knows it. Defaults to ``np.unique(y)``
        of each fit; pass them explicitly when a fold may lack a class.
    cache : "memory", PrefixCache or None, default="memory"
        Where states are kept. ``"memory"`` is a bounded in-memory cache of this
        process; a :class:`PrefixCache` with a ``directory`` adds a disk tier
        shared by process-based workers; ``None`` disables sharing.

    Attributes
    ----------
    estimator_ : estimator object
        The fitted learner (after :meth:`partial_fit`, with every row seen
        fed, including those still waiting for a full batch).
    n_samples_fed_ : int
        Rows passed to ``partial_fit`` by the last ``fit``.
    n_samples_reused_ : int
        Rows of the last ``fit`` covered by a cached prefix.
    n_features_in_ : int
        Number of features seen during ``fit``.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during ``fit``, if ``X`` had string column names.

    See Also
    --------
    TreeCVSplitter : Yields training rows in the order that makes prefixes shared.
    TreeCVSearchCV : Runs each candidate's whole tree as one unit of work.

    Examples
    --------
    >>> from sklearn.datasets import load_digits
    >>> from sklearn.model_selection import GridSearchCV
    >>> from sklearn.naive_bayes import MultinomialNB
    >>> from sklearn_ext import TreeCVEstimator, TreeCVSplitter
    >>> X, y = load_digits(return_X_y=True)
    >>> search = GridSearchCV(
    ...     TreeCVEstimator(MultinomialNB(), batch_size=64),
    ...     {"estimator__alpha": [0.1, 1.0]},
    ...     cv=TreeCVSplitter(8),
    ... ).fit(X, y)
    >>> search.best_params_
    {'estimator__alpha': 0.1}

    The wrapper weighs its score like the learner does, and learns online:

    >>> import numpy as np
    >>> model = TreeCVEstimator(MultinomialNB(), batch_size=64, cache=None)
    >>> model = model.partial_fit(X[:900], y[:900], classes=np.unique(y))
    >>> model = model.partial_fit(X[900:], y[900:])
    >>> bool(model.score(X, y, sample_weight=np.ones(len(y))) > 0.8)
    True
    """

    def __init__(self, estimator, *, batch_size=1024, classes=None, cache="memory"):
        self.estimator = estimator
        self.batch_size = batch_size
        self.classes = classes
        self.cache = cache

    _parameter_constraints: dict = {
        "estimator": [HasMethods(["partial_fit"]), Pipeline],
        "batch_size": [Interval(numbers.Integral, 1, None, closed="left")],
        "classes": ["array-like", None],
        "cache": [StrOptions({"memory"}), PrefixCache, None],
    }

    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, **fit_params):
        """Fit the learner, resuming from the longest cached training prefix.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training rows, in the order they are to be fed.
        y : array-like of shape (n_samples,), default=None
            Targets; ``None`` for unsupervised learners.
        **fit_params : dict
            Passed to ``partial_fit``; arrays of length ``n_samples`` (such as
            ``sample_weight``) are cut into the same batches as ``X``. With
            metadata routing enabled, routed to ``estimator.partial_fit``.

        Returns
        -------
        self : object
            The fitted wrapper.
        """
        cache = resolve_cache(self.cache, "TreeCVEstimator")
        X, y, fit_params = self._check_rows("fit", X, y, fit_params, reset=True)
        n_samples = _num_samples(X)
        classes = None
        if is_classifier(self.estimator) and y is not None:
            classes = np.unique(y) if self.classes is None else np.asarray(self.classes)
        if cache is not None and not _is_deterministic(self.estimator):
            warnings.warn(
                f"{self.estimator!r} is not deterministic (a random_state is None), "
                "so TreeCVEstimator does not share its training prefixes: each fit "
                "trains from scratch. Set random_state to an int to share them.",
                UserWarning,
                stacklevel=2,
            )
            cache = None
        if cache is not None and not _is_array(X):
            warnings.warn(
                f"TreeCVEstimator shares training prefixes of numeric arrays only; "
                f"X is a {type(X).__name__}, so each fit trains from scratch. Pass "
                "cache=None to say so.",
                UserWarning,
                stacklevel=2,
            )
            cache = None

        row_batches = batches(n_samples, self.batch_size)

        def feed(model, j):
            rows = row_batches[j]
            params = _batch_params(fit_params, rows, n_samples)
            if j == 0 and classes is not None:
                params["classes"] = classes
            model.partial_fit(_rows(X, rows), None if y is None else y[rows], **params)
            return model

        if cache is None:
            self._set_stream(self._new_learner(X), classes, 0)
            aligned = {
                key: np.asarray(value)
                for key, value in fit_params.items()
                if _is_sample_aligned(value, n_samples)
            }
            others = {k: v for k, v in fit_params.items() if k not in aligned}
            rest = self._feed_batches((X, y, aligned), others)
            if rest is not None:  # fit feeds the last, shorter batch too
                first_call = self._n_fed_to_stream == 0
                _feed(self._stream, rest, others, classes if first_call else None)
            model, first = self._stream, 0
        else:
            aligned = {
                key: value
                for key, value in fit_params.items()
                if _is_sample_aligned(value, n_samples)
            }
            others = {k: v for k, v in fit_params.items() if k not in aligned}
            root = joblib.hash(
                (self.estimator, self.batch_size, sorted(aligned), others)
            ).encode()
            keys = prefix_keys(
                root + _class_bytes(classes),
                [X, y, *(aligned[key] for key in sorted(aligned))],
                row_batches,
            )
            model, first = resume_from_prefix(
                cache, keys, lambda: self._new_learner(X), feed
            )
        fed = n_samples - (
            row_batches[first].start if first < len(row_batches) else n_samples
        )
        self._set_stream(model, classes, n_samples)
        self.n_samples_fed_ = fed
        self.n_samples_reused_ = n_samples - fed
        return self

    def partial_fit(self, X, y=None, classes=None, **params):
        """Feed more rows to the learner, keeping ``fit``'s batch boundaries.

        Rows are fed to ``estimator.partial_fit`` in batches of ``batch_size``
        counted over all calls since the first, so a sequence of calls gives
        the model that ``fit`` gives on the rows of all calls in order. Rows
        short of a full batch wait for the next call; ``estimator_`` (and so
        ``predict`` and ``score``) is the learner with them fed.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Rows, in the order they are to be fed.
        y : array-like of shape (n_samples,), default=None
            Targets; ``None`` for unsupervised learners.
        classes : array-like of shape (n_classes,), default=None
            All class labels, needed by a classifier on the first call (unless
            the ``classes`` parameter is set).
        **params : dict
            Passed to ``estimator.partial_fit``; arrays of length ``n_samples``
            are cut with the rows. With metadata routing enabled, routed to
            ``estimator.partial_fit``.

        Returns
        -------
        self : object
            The updated wrapper.
        """
        first_call = "_stream" not in vars(self)
        if first_call:
            self._validate_params()
        X, y, params = self._check_rows("partial_fit", X, y, params, reset=first_call)
        if first_call:
            if classes is None and self.classes is not None:
                classes = np.asarray(self.classes)
            if is_classifier(self.estimator) and y is not None and classes is None:
                raise ValueError(
                    "classes must be passed on the first call to partial_fit of "
                    "TreeCVEstimator wrapping a classifier (or set its 'classes' "
                    "parameter)."
                )
            self._set_stream(self._new_learner(X), classes, 0)
            self.n_samples_fed_ = 0
            self.n_samples_reused_ = 0
        return self._stream_rows(X, y, params)

    def _stream_rows(self, X, y, params: dict, *, finite: bool = False):
        """:meth:`partial_fit` of rows already checked, on a started stream.

        ``finite``: the rows are known to be a finite numeric array (the
        tree's run checked them once).
        """
        n_samples = _num_samples(X)
        aligned = sorted(
            k for k, v in params.items() if _is_sample_aligned(v, n_samples)
        )
        others = {k: v for k, v in params.items() if k not in aligned}
        pending = self._pending
        chunk = (X, y, {k: np.asarray(params[k]) for k in aligned})
        if pending is not None:
            if sorted(pending[2]) != aligned:
                raise ValueError(
                    "The per-sample parameters of partial_fit must be the same in "
                    f"every call; got {aligned} after {sorted(pending[2])}."
                )
            need = self.batch_size - _num_samples(pending[0])
            if n_samples > need:
                # The waiting rows complete one batch; the rest is not copied.
                self._feed_batches(
                    _concat_rows(pending, _take_rows(chunk, slice(0, need))),
                    others,
                    finite,
                )
                chunk = _take_rows(chunk, slice(need, None))
            else:
                chunk = _concat_rows(pending, chunk)
        self._pending = self._feed_batches(chunk, others, finite)
        self._pending_params = others
        self._flushed = None
        self.n_samples_fed_ += n_samples
        return self

    def _feed_batches(self, chunk, others: dict, finite: bool = False):
        """Feed the full batches of ``chunk`` to the learner; the rows left over.

        The first batch ever goes through ``partial_fit`` (with the classes);
        later ones through :func:`~._sgd_stream.batch_kernel`'s kernel where it
        applies (the same model in one call), else ``partial_fit`` each.
        """
        n_rows = _num_samples(chunk[0])
        full = (n_rows // self.batch_size) * self.batch_size
        start = 0
        if full and self._n_fed_to_stream == 0:
            rows = slice(0, self.batch_size)
            self._n_fed_to_stream += _feed(
                self._stream, _take_rows(chunk, rows), others, self._stream_classes
            )
            start = self.batch_size
        if full > start:
            kernel = None
            if not (others or chunk[2]):
                unchecked = self._takes_data_as_given() and not finite
                kernel = _kernel(self._stream, chunk, unchecked)
            if kernel is not None:
                X, y, _ = _take_rows(chunk, slice(start, full))
                self._n_fed_to_stream += kernel(self._stream, X, y, self.batch_size)
                start = full
        for first in range(start, full, self.batch_size):
            rows = slice(first, first + self.batch_size)
            self._n_fed_to_stream += _feed(
                self._stream, _take_rows(chunk, rows), others, None
            )
        if full == n_rows:
            return None
        return _copy_rows(_take_rows(chunk, slice(full, None)))

    def _check_rows(self, method: str, X, y, params: dict, *, reset: bool):
        """Validated ``X`` and ``y``, and ``params`` as routed to ``partial_fit``."""
        reason = balanced_class_weight(self.estimator)
        if reason is not None:
            raise ValueError(
                f"TreeCVEstimator feeds {type(self.estimator).__name__} through "
                f"partial_fit, which cannot take {reason}. Set class_weight to a "
                "dict of weights, or cross-validate the learner's own fit "
                "(method='standard')."
            )
        if self._takes_data_as_given():
            # A pipeline takes its rows as given (column names, texts, NaN).
            X = validate_data(self, X, skip_check_array=True, reset=reset)
            if y is not None:
                y = np.asarray(y)
                check_consistent_length(X, y)
        elif y is None:
            X = validate_data(self, X, accept_sparse="csr", reset=reset)
        else:
            X, y = validate_data(
                self, X, y, accept_sparse="csr", multi_output=True, reset=reset
            )
        if _routing_enabled():
            params = process_routing(self, method, **params).estimator.partial_fit
        return X, y, params

    def _new_learner(self, X):
        """An unfitted copy of the learner; a pipeline as a streaming one.

        A pipeline's encoders with ``categories="auto"`` on the input's columns
        get the categories of ``X``, the first rows seen.
        """
        if isinstance(self.estimator, Pipeline) and not isinstance(
            self.estimator, StreamingPipeline
        ):
            return streaming_pipeline(self.estimator, X)
        return clone(self.estimator)

    def _takes_data_as_given(self) -> bool:
        """Whether the learner is a pipeline, whose steps check the rows."""
        return isinstance(self.estimator, Pipeline)

    def _set_stream(self, model, classes, n_fed: int) -> None:
        self._stream = model
        self._stream_classes = classes
        self._n_fed_to_stream = n_fed
        self._pending = None
        self._pending_params = {}
        self._flushed = None

    @property
    def estimator_(self):
        """The fitted learner, with every row seen fed."""
        if "_stream" not in vars(self):
            raise AttributeError(
                f"This {type(self).__name__} instance is not fitted yet; it has "
                "no attribute 'estimator_'."
            )
        if self._pending is None:
            return self._stream
        if self._flushed is None:
            # A copy, so that the next partial_fit continues the stream.
            flushed = copy.deepcopy(self._stream)
            first = self._n_fed_to_stream == 0
            kernel = None
            if not (first or self._pending_params or self._pending[2]):
                kernel = _kernel(flushed, self._pending, self._takes_data_as_given())
            if kernel is not None:  # the short batch as one batch of its size
                X, y, _ = self._pending
                kernel(flushed, X, y, _num_samples(X))
            else:
                _feed(
                    flushed,
                    self._pending,
                    self._pending_params,
                    self._stream_classes if first else None,
                )
            self._flushed = flushed
        return self._flushed

    def __sklearn_is_fitted__(self) -> bool:
        return "_stream" in vars(self)

    def get_metadata_routing(self):
        """Route ``fit`` and ``partial_fit`` parameters to ``partial_fit``.

        The wrapper's own ``score`` request (``set_score_request``) is part of
        the routing, so a router around it (a pipeline, a search) can send
        ``sample_weight`` to its ``score``.

        Returns
        -------
        routing : MetadataRouter
        """
        return (
            MetadataRouter(owner=self)
            .add_self_request(self)
            .add(
                estimator=self.estimator,
                method_mapping=MethodMapping()
                .add(caller="fit", callee="partial_fit")
                .add(caller="partial_fit", callee="partial_fit"),
            )
        )

    # -- delegation -------------------------------------------------------------------
    def _delegate(self, method: str, X, *args, **kwargs):
        check_is_fitted(self)
        if self._takes_data_as_given():
            X = validate_data(self, X, skip_check_array=True, reset=False)
        else:
            X = validate_data(self, X, accept_sparse="csr", reset=False)
        return getattr(self.estimator_, method)(X, *args, **kwargs)

    @available_if(_estimator_has("predict"))
    def predict(self, X):
        """Predict with the fitted learner."""
        return self._delegate("predict", X)

    @available_if(_estimator_has("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities from the fitted learner."""
        return self._delegate("predict_proba", X)

    @available_if(_estimator_has("predict_log_proba"))
    def predict_log_proba(self, X):
        """Class log-probabilities from the fitted learner."""
        return self._delegate("predict_log_proba", X)

    @available_if(_estimator_has("decision_function"))
    def decision_function(self, X):
        """Decision function of the fitted learner."""
        return self._delegate("decision_function", X)

    @available_if(_estimator_has("transform"))
    def transform(self, X):
        """Transform with the fitted learner."""
        return self._delegate("transform", X)

    @available_if(_estimator_has("transform"))
    def fit_transform(self, X, y=None, **fit_params):
        """Fit, then transform ``X`` with the fitted learner."""
        return self.fit(X, y, **fit_params).transform(X)

    @available_if(_estimator_has("score_samples"))
    def score_samples(self, X):
        """Per-sample scores of the fitted learner."""
        return self._delegate("score_samples", X)

    @available_if(_estimator_has("score"))
    def score(self, X, y=None, sample_weight=None):
        """The fitted learner's ``score``, weighted by ``sample_weight`` if given.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Test rows.
        y : array-like of shape (n_samples,), default=None
            True targets.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights passed to the learner's ``score``. Request it with
            ``set_score_request(sample_weight=True)`` when metadata routing
            is enabled.

        Returns
        -------
        score : float
        """
        if sample_weight is None:
            return self._delegate("score", X, y)
        return self._delegate("score", X, y, sample_weight=sample_weight)

    @property
    def classes_(self):
        """Class labels of the fitted classifier."""
        check_is_fitted(self)
        return self.estimator_.classes_

    @property
    def cluster_centers_(self):
        """Cluster centres of the fitted clusterer."""
        check_is_fitted(self)
        return self.estimator_.cluster_centers_

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = inner.classifier_tags
        tags.regressor_tags = inner.regressor_tags
        tags.target_tags = inner.target_tags
        tags.transformer_tags = inner.transformer_tags
        tags.input_tags = copy.copy(inner.input_tags)
        if not self._takes_data_as_given():
            tags.input_tags.allow_nan = False  # Rows are validated for hashing.
        return tags


def balanced_class_weight(estimator) -> str | None:
    """Why ``estimator`` cannot be fed through ``partial_fit``, or None.

    ``class_weight="balanced"`` (of the learner or of any step) weighs classes
    by their counts over all of ``fit``'s rows, which ``partial_fit`` never
    sees at once: scikit-learn refuses it there.
    """
    params = estimator.get_params() if hasattr(estimator, "get_params") else {}
    for name, value in params.items():
        if (name == "class_weight" or name.endswith("__class_weight")) and (
            isinstance(value, str) and value == "balanced"
        ):
            return (
                f"{name}='balanced', which weighs classes by their counts over "
                "all of fit's rows, which partial_fit never sees at once"
            )
    return None


def _is_deterministic(estimator) -> bool:
    params = estimator.get_params(deep=True)
    return all(
        value is not None
        for name, value in params.items()
        if name == "random_state" or name.endswith("__random_state")
    )


def _class_bytes(classes) -> bytes:
    return b"" if classes is None else pickle.dumps(np.asarray(classes).tolist())


def _is_sample_aligned(value, n_samples: int) -> bool:
    return (
        hasattr(value, "__len__")
        and not isinstance(value, str | bytes)
        and len(value) == n_samples
    )


def _feed(model, chunk, others: dict, classes) -> int:
    """``model.partial_fit`` on a chunk of rows; the number of rows fed."""
    X, y, aligned = chunk
    params = {**others, **aligned}
    if classes is not None:
        params["classes"] = classes
    model.partial_fit(X, y, **params)
    return _num_samples(X)


def _is_array(X) -> bool:
    return (isinstance(X, np.ndarray) and X.dtype != object) or sp.issparse(X)


def _rows(X, rows: slice):
    """Rows of an array, CSR matrix, DataFrame or list (a view where it can)."""
    if isinstance(X, np.ndarray) or sp.issparse(X):
        return X[rows]
    return _safe_indexing(X, rows)


def _concat_rows(first, second):
    X1, y1, a1 = first
    X2, y2, a2 = second
    if sp.issparse(X1):
        X = sp.vstack([X1, X2], format="csr")
    elif hasattr(X1, "iloc"):
        X = _concat_frames(X1, X2)
    elif isinstance(X1, list):
        X = X1 + X2
    else:
        X = np.concatenate([X1, X2])
    y = None if y1 is None else np.concatenate([y1, y2])
    return X, y, {k: np.concatenate([a1[k], a2[k]]) for k in a1}


def _concat_frames(first, second):
    import pandas as pd

    return pd.concat([first, second])


def _kernel(model, chunk, unchecked: bool):
    """The many-batch kernel of ``model`` for these rows, or None.

    ``unchecked``: the rows may hold NaN or infinity (a pipeline's rows, which
    its steps check); the kernel then runs only when they do not.
    """
    X, y, _ = chunk
    if not (isinstance(X, np.ndarray) and X.ndim == 2 and X.dtype.kind in "biuf"):
        return None
    if X.dtype.kind == "f" and X.dtype != np.float64:
        return None
    if not (isinstance(y, np.ndarray) and y.ndim == 1):
        return None
    if unchecked and X.dtype.kind == "f" and not np.isfinite(X).all():
        return None  # the steps' own checks decide what NaN or infinity does
    return batch_kernel(model)


def _copy_rows(chunk):
    """Rows left waiting, copied: a view would keep the caller's array alive."""
    X, y, aligned = chunk
    if isinstance(X, np.ndarray):
        X = X.copy()
    return X, None if y is None else y.copy(), aligned


def _take_rows(chunk, rows: slice):
    X, y, aligned = chunk
    return (
        _rows(X, rows),
        None if y is None else y[rows],
        {k: v[rows] for k, v in aligned.items()},
    )


def _batch_params(fit_params, rows: slice, n_samples: int) -> dict:
    return {
        key: value[rows] if _is_sample_aligned(value, n_samples) else value
        for key, value in fit_params.items()
    }
