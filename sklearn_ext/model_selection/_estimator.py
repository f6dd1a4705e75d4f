"""``TreeCVEstimator``: share training prefixes between the folds of a search."""

from __future__ import annotations

import copy
import numbers
import pickle
import warnings

import joblib
import numpy as np
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.utils import get_tags
from sklearn.utils._metadata_requests import (
    MetadataRouter,
    MethodMapping,
    _routing_enabled,
    process_routing,
)
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import check_is_fitted, validate_data

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
        if hasattr(self, "estimator_"):
            return hasattr(self.estimator_, attr)
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

    Parameters
    ----------
    estimator : estimator object
        A learner with ``partial_fit``. Its ``partial_fit`` must be deterministic
        (e.g. a fixed ``random_state``) for prefixes to be shared; otherwise each
        fit trains from scratch, with a warning.
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
        The fitted learner.
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
    """

    def __init__(self, estimator, *, batch_size=1024, classes=None, cache="memory"):
        self.estimator = estimator
        self.batch_size = batch_size
        self.classes = classes
        self.cache = cache

    def _check_params(self) -> PrefixCache | None:
        if not callable(getattr(self.estimator, "partial_fit", None)):
            raise TypeError(
                "The 'estimator' parameter of TreeCVEstimator must have a "
                f"partial_fit method. Got {type(self.estimator).__name__} instead; "
                "use it directly, without TreeCVEstimator."
            )
        if (
            not isinstance(self.batch_size, numbers.Integral)
            or isinstance(self.batch_size, bool)
            or self.batch_size < 1
        ):
            raise ValueError(
                "The 'batch_size' parameter of TreeCVEstimator must be an int in "
                f"the range [1, inf). Got {self.batch_size!r} instead."
            )
        return resolve_cache(self.cache, "TreeCVEstimator")

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
        cache = self._check_params()
        if y is None:
            X = validate_data(self, X, accept_sparse="csr", reset=True)
        else:
            X, y = validate_data(
                self, X, y, accept_sparse="csr", multi_output=True, reset=True
            )
        if _routing_enabled():
            fit_params = process_routing(
                self, "fit", **fit_params
            ).estimator.partial_fit
        n_samples = X.shape[0]
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

        row_batches = batches(n_samples, self.batch_size)

        def feed(model, j):
            rows = row_batches[j]
            params = _batch_params(fit_params, rows, n_samples)
            if j == 0 and classes is not None:
                params["classes"] = classes
            model.partial_fit(X[rows], None if y is None else y[rows], **params)
            return model

        if cache is None:
            model = clone(self.estimator)
            for j in range(len(row_batches)):
                model = feed(model, j)
            first = 0
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
                cache, keys, lambda: clone(self.estimator), feed
            )
        fed = n_samples - (
            row_batches[first].start if first < len(row_batches) else n_samples
        )
        self.estimator_ = model
        self.n_samples_fed_ = fed
        self.n_samples_reused_ = n_samples - fed
        return self

    def get_metadata_routing(self):
        """Route ``fit`` parameters to the learner's ``partial_fit``.

        Returns
        -------
        routing : MetadataRouter
        """
        return MetadataRouter(owner=self).add(
            estimator=self.estimator,
            method_mapping=MethodMapping().add(caller="fit", callee="partial_fit"),
        )

    # -- delegation -------------------------------------------------------------------
    def _delegate(self, method: str, X, *args, **kwargs):
        check_is_fitted(self)
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
    def score(self, X, y=None, **params):
        """The fitted learner's ``score``."""
        return self._delegate("score", X, y, **params)

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
        tags.input_tags.allow_nan = False  # Rows are validated finite for hashing.
        return tags


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


def _batch_params(fit_params, rows: slice, n_samples: int) -> dict:
    return {
        key: value[rows] if _is_sample_aligned(value, n_samples) else value
        for key, value in fit_params.items()
    }
