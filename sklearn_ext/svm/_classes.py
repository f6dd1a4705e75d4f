"""``AlphaSeededSVC``: LIBSVM's C-SVC with a shared kernel store and warm starts."""

from __future__ import annotations

import copy
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.svm import SVC
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions
from sklearn.utils.multiclass import (
    _ovr_decision_function,
    check_classification_targets,
)
from sklearn.utils.validation import check_is_fitted, validate_data

from sklearn_ext.svm._kernel_store import kernel_matrix
from sklearn_ext.svm._platt import (
    MIN_PROB,
    couple_pairwise,
    platt_scaling,
    sigmoid_predict,
)
from sklearn_ext.svm._solver import (
    FittedPairs,
    SVMParams,
    check_solved,
    decision_from_kernel,
    pairs,
    vote_labels,
)
from sklearn_ext.svm._training import FitStart, PairFit, StoreKeys, train_pairs
from sklearn_ext.svm._warm_start import store_in_use

__all__ = [
    "AlphaSeededSVC",
    "FoldModels",
    "as_alpha_seeded",
    "check_fit_input",
    "check_params",
]


class AlphaSeededSVC(ClassifierMixin, BaseEstimator):
    """C-Support Vector Classification solved by SMO, ready for alpha seeding.

    The same model as :class:`sklearn.svm.SVC` (LIBSVM's C-SVC with one-vs-one
    multiclass): SMO with LIBSVM's second-order working-set selection, the
    two-variable analytic update, shrinking, and the bias averaged over the free
    variables. Kernel values live in a store addressed by sample index, the
    full matrix when it fits in ``cache_size`` megabytes. The solver starts
    from any feasible ``alpha``: pass ``initial_alpha`` to :meth:`fit` or set
    ``warm_start=True`` to start from the previous fit. With
    :func:`sklearn_ext.svm.alpha_seeded_cv` (or ``tree_cross_validate``) the
    folds share one kernel store and each fold starts from the previous one.

    Parameters
    ----------
    C : float, default=1.0
        Regularisation parameter, strictly positive.
    kernel : {"linear", "poly", "rbf", "sigmoid", "precomputed"} or callable, \
            default="rbf"
        Kernel type. A callable is called as ``kernel(X, Y)`` and must return
        the ``(n_X, n_Y)`` kernel matrix.
    degree : int, default=3
        Degree of the polynomial kernel.
    gamma : {"scale", "auto"} or float, default="scale"
        Kernel coefficient of "rbf", "poly" and "sigmoid": ``"scale"`` uses
        ``1 / (n_features * X.var())``, ``"auto"`` uses ``1 / n_features``.
    coef0 : float, default=0.0
        Independent term of the "poly" and "sigmoid" kernels.
    shrinking : bool, default=True
        Whether to use LIBSVM's shrinking heuristic.
    tol : float, default=1e-3
        Stopping tolerance on the maximal KKT violation.
    cache_size : float or "auto", default="auto"
        Kernel store budget in megabytes: the full kernel matrix is kept when it
        fits, an LRU cache of columns otherwise. ``"auto"`` (the fast path,
        nothing to tune) gives the store half the memory this process may
        still allocate, read at each fit: the least of the machine's available
        memory, what its ``ulimit`` (``RLIMIT_AS``, ``RLIMIT_DATA``) and its
        cgroup's memory limit leave, so the whole matrix is kept whenever it
        fits. A budget the process cannot hold raises a ``MemoryError`` naming
        ``cache_size`` before the store is allocated. ``SVC``'s default of 200
        MB makes an 8,000-row problem fall back to columns; an ``SVC`` taken
        over with ``cache_size=200`` gets ``"auto"``.
    class_weight : dict or "balanced", default=None
        Sets ``C`` of class ``i`` to ``class_weight[i] * C``.
    max_iter : int, default=-1
        Cap on SMO iterations per one-vs-one problem, ``-1`` for none. A
        ``ConvergenceWarning`` is issued when it is reached.
    decision_function_shape : {"ovo", "ovr"}, default="ovr"
        Shape of :meth:`decision_function` for multiclass problems, as in
        :class:`sklearn.svm.SVC`.
    warm_start : bool, default=False
        Start the next :meth:`fit` on data of the same size from this fit's
        alphas.
    kernel_dtype : {"auto", "float64", "float32"}, default="auto"
        Precision of the stored kernel matrix. ``"float32"`` halves its memory,
        so a matrix twice as large fits in ``cache_size``; the solver still
        accumulates its gradient in float64, and the solution differs from the
        float64 one only by the rounding of the kernel values. ``"auto"`` keeps
        float64 when the full matrix fits the budget in float64, float32 when it
        fits only in float32, and float64 columns otherwise.
    warm_start_store : WarmStartStore, None or False, default=None
        A :class:`~sklearn_ext.svm.WarmStartStore` shared by fits at other
        values of ``C`` (and by the ``alpha_seeding`` CV backend, fold by fold):
        a fit starts from the stored solution at the nearest ``C``, or is
        skipped exactly when a smaller ``C`` left no alpha at its bound, and
        stores its own solution; after a CV on the same data (a search's
        refit) it may start from a fold's solution at its ``C`` instead,
        whichever is lower (``warm_start_from_fold_``). Clones share the
        store. With ``None`` a fit
        keeps no store, but :class:`~sklearn_ext.TreeCVSearchCV` and
        ``TreeCVObjective`` give their runs a store of their own (cross-C warm
        starts by default); ``False`` declines that too.
    probability : bool, default=False
        Whether to enable :meth:`predict_proba` and :meth:`predict_log_proba`,
        as in :class:`sklearn.svm.SVC`: :meth:`fit` first runs an internal
        5-fold cross-validation (stratified, shuffled by ``random_state``) run
        by the alpha-seeded CV engine (the one behind the ``alpha_seeding``
        backend), so each fold is seeded from the previous one and all share
        one kernel store, then fits LIBSVM's Platt sigmoid of
        each one-vs-one problem on its held-out decision values (Newton's
        method of Lin, Lin and Weng, 2007). The final model starts from the
        last fold's alphas. Multiclass probabilities couple the pairwise ones
        (Wu, Lin and Weng, 2004). Like ``SVC``'s, the probabilities may
        disagree with :meth:`predict`, which still votes.
    random_state : int, RandomState instance or None, default=None
        Shuffling of the internal folds of ``probability=True`` (and seed of
        their SIR replacements); ignored otherwise.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    support_ : ndarray of shape (n_SV,)
        Indices of the support vectors, grouped by class.
    support_vectors_ : {ndarray, sparse matrix} of shape (n_SV, n_features)
        Support vectors (empty for a precomputed kernel).
    n_support_ : ndarray of shape (n_classes,)
        Number of support vectors per class.
    dual_coef_ : ndarray of shape (n_classes - 1, n_SV)
        ``y_i * alpha_i`` laid out as in :class:`sklearn.svm.SVC`.
    intercept_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Constants of the decision functions.
    coef_ : {ndarray, sparse matrix} of shape (n_classes * (n_classes - 1) / 2, \
            n_features)
        Feature weights of the decision functions, with ``kernel="linear"``
        only (as in :class:`sklearn.svm.SVC`; read-only).
    n_iter_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        SMO iterations of each one-vs-one problem.
    objective_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Dual objective value of each problem.
    warm_start_C_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        The ``C`` of the stored solution each problem started from (NaN for
        none), with ``warm_start_store``.
    warm_start_skipped_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Whether the stored solution was optimal as it was (no SMO run).
    warm_start_from_fold_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Whether the problem started from a CV fold's solution at this ``C``
        (the refit of a search or a study after its CV, with their store):
        the fold's alphas, its held-out rows at 0, then SMO to ``tol``.
    probA_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Platt's ``A`` of each one-vs-one problem (``probability=True``; empty
        otherwise), as in :class:`sklearn.svm.SVC`: the pair ``(i, j)``'s
        probability of class ``i`` is ``1 / (1 + exp(A * f + B))`` with ``f``
        its decision value (positive for class ``i``).
    probB_ : ndarray of shape (n_classes * (n_classes - 1) / 2,)
        Platt's ``B`` of each one-vs-one problem.
    n_features_in_ : int
        Number of features seen during fit.

    See Also
    --------
    sklearn.svm.SVC : The LIBSVM-based reference with the same model.
    alpha_seeded_cv : k-fold cross-validation with alpha seeding.

    Examples
    --------
    >>> from sklearn.datasets import load_iris
    >>> from sklearn_ext.svm import AlphaSeededSVC
    >>> X, y = load_iris(return_X_y=True)
    >>> clf = AlphaSeededSVC(C=1.0).fit(X, y)
    >>> clf.predict(X[:3])
    array([0, 0, 0])
    >>> round(clf.score(X, y), 2)
    0.97
    >>> proba = AlphaSeededSVC(probability=True, random_state=0).fit(X, y)
    >>> proba.predict_proba(X[:1]).round(2)
    array([[0.98, 0.01, 0.01]])
    """

    _parameter_constraints: dict = {
        "C": [Interval(Real, 0.0, None, closed="neither")],
        "kernel": [
            StrOptions({"linear", "poly", "rbf", "sigmoid", "precomputed"}),
            callable,
        ],
        "degree": [Interval(Integral, 0, None, closed="left")],
        "gamma": [
            StrOptions({"scale", "auto"}),
            Interval(Real, 0.0, None, closed="neither"),
        ],
        "coef0": [Interval(Real, None, None, closed="neither")],
        "shrinking": ["boolean"],
        "tol": [Interval(Real, 0.0, None, closed="neither")],
        "cache_size": [
            StrOptions({"auto"}),
            Interval(Real, 0, None, closed="neither"),
        ],
        "class_weight": [StrOptions({"balanced"}), dict, None],
        "max_iter": [Interval(Integral, -1, None, closed="left")],
        "decision_function_shape": [StrOptions({"ovo", "ovr"})],
        "warm_start": ["boolean"],
        "kernel_dtype": [StrOptions({"auto", "float64", "float32"})],
        "warm_start_store": [
            HasMethods(["lookup", "put", "kernel_store"]),
            None,
            Options(bool, {False}),
        ],
        "probability": ["boolean"],
        "random_state": ["random_state"],
    }

    def __init__(
        self,
        *,
        C=1.0,
        kernel="rbf",
        degree=3,
        gamma="scale",
        coef0=0.0,
        shrinking=True,
        tol=1e-3,
        cache_size="auto",
        class_weight=None,
        max_iter=-1,
        decision_function_shape="ovr",
        warm_start=False,
        kernel_dtype="auto",
        warm_start_store=None,
        probability=False,
        random_state=None,
    ):
        self.C = C
        self.kernel = kernel
        self.degree = degree
        self.gamma = gamma
        self.coef0 = coef0
        self.shrinking = shrinking
        self.tol = tol
        self.cache_size = cache_size
        self.class_weight = class_weight
        self.max_iter = max_iter
        self.decision_function_shape = decision_function_shape
        self.warm_start = warm_start
        self.kernel_dtype = kernel_dtype
        self.warm_start_store = warm_start_store
        self.probability = probability
        self.random_state = random_state

    # -- fitting -----------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, initial_alpha=None):
        """Fit the SVM model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training vectors, or the ``(n_samples, n_samples)`` kernel matrix
            for ``kernel="precomputed"``.
        y : array-like of shape (n_samples,)
            Class labels.
        initial_alpha : array-like of shape (n_samples,), default=None
            Starting dual variables for a binary problem, or a list with one
            such array per one-vs-one pair. They are clipped to ``[0, C_i]``
            and the equality constraint is repaired before SMO starts.

        Returns
        -------
        self : object
            Fitted estimator.
        """
        X, y = self._check_fit_data(X, y)
        self.classes_, y_enc = np.unique(y, return_inverse=True)
        n_classes = self.classes_.shape[0]
        if n_classes < 2:
            raise ValueError(
                "The number of classes has to be greater than one; got "
                f"{n_classes} class"
            )
        params = SVMParams.of(self)
        gamma = params.resolve_gamma(X)
        starts = self._starting_alphas(initial_alpha, X.shape[0], n_classes)
        shared = None
        if self.probability:
            scaling = platt_scaling(params, X, y, random_state=self.random_state)
            self.probA_, self.probB_ = scaling.probA, scaling.probB
            # The internal CV's store keeps the kernel for this fit.
            shared = scaling.store
            if starts is None and store_in_use(self.warm_start_store) is None:
                # The last fold's solution, held-out alphas at 0, is feasible.
                starts = scaling.last_alphas
        else:
            self.probA_ = np.empty(0)
            self.probB_ = np.empty(0)
        keys = StoreKeys(params, X, y, gamma, store=shared)
        store = keys.kernel_store(X, gamma)
        fit = train_pairs(
            keys,
            store,
            y_enc,
            np.arange(X.shape[0], dtype=np.intp),
            params.class_C(self.classes_, y_enc),
            FitStart(keys, store, starts),
        )
        self._set_model(fit, X, gamma)
        return self

    def _check_fit_data(self, X, y):
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse="csr",
            dtype=np.float64,
            order="C",
            accept_large_sparse=False,
        )
        check_classification_targets(y)
        if self.kernel == "precomputed" and X.shape[0] != X.shape[1]:
            raise ValueError(
                "Precomputed matrix must be a square matrix. Input is a "
                f"{X.shape[0]}x{X.shape[1]} matrix."
            )
        if self.kernel == "precomputed" and sp.issparse(X):
            X = X.toarray()
        return X, y

    def _starting_alphas(self, initial_alpha, n_samples, n_classes):
        n_pairs = n_classes * (n_classes - 1) // 2
        if initial_alpha is None:
            previous = getattr(self, "_alpha_by_pair", None)
            if self.warm_start and previous is not None:
                if len(previous) == n_pairs and previous[0].shape[0] == n_samples:
                    return previous
            return None
        if n_pairs == 1 and np.ndim(initial_alpha) == 1:
            initial_alpha = [initial_alpha]
        starts = [np.asarray(a, dtype=np.float64) for a in initial_alpha]
        if len(starts) != n_pairs or any(a.shape != (n_samples,) for a in starts):
            raise ValueError(
                "initial_alpha must have shape (n_samples,) for a binary problem "
                "or be a list of n_classes * (n_classes - 1) / 2 such arrays; got "
                f"{len(starts)} array(s) for {n_pairs} pair(s) and "
                f"n_samples={n_samples}."
            )
        if any(not np.all(np.isfinite(a)) for a in starts):
            raise ValueError("initial_alpha must be finite.")
        return starts

    def _set_model(self, fit: PairFit, X, gamma) -> None:
        """Fitted attributes from the solved pairs of ``fit`` (global rows of ``X``)."""
        problems = fit.problems
        check_solved(problems, type(self).__name__, self.max_iter)
        n_classes = self.classes_.shape[0]
        fitted = FittedPairs(problems, X.shape[0], n_classes)
        self._gamma = gamma
        self.n_iter_ = fitted.n_iter
        self.objective_ = fitted.objective
        self._alpha_by_pair = fitted.alpha_by_pair
        self.n_support_ = fitted.n_support
        self._pair_columns = fitted.pair_columns
        self._pair_coefs = fitted.pair_coefs
        self._rho = fitted.rho
        self.support_ = fitted.support
        if self.kernel == "precomputed":
            self.support_vectors_ = np.empty((0, 0))
        else:
            self.support_vectors_ = X[fitted.support]
        if n_classes == 2:
            self.dual_coef_ = -fitted.dual_coef
            self.intercept_ = np.array([fitted.rho[0]])
        else:
            self.dual_coef_ = fitted.dual_coef
            self.intercept_ = -fitted.rho
        self.fit_status_ = 0 if fitted.converged else 1
        seeds = fit.seeds
        self.warm_start_C_ = np.array(
            [np.nan if found is None else found[0].C for found in seeds]
        )
        self.warm_start_skipped_ = np.array(
            [found is not None and found[1] for found in seeds], dtype=bool
        )
        # Only a seed from fewer rows (a CV fold's, for a refit) carries them.
        self.warm_start_from_fold_ = np.array(
            [found is not None and found[0].rows is not None for found in seeds],
            dtype=bool,
        )

    # -- prediction ----------------------------------------------------------------
    def _kernel_to_support(self, X):
        if self.kernel == "precomputed":
            if X.shape[1] != self._n_train:
                raise ValueError(
                    f"X.shape[1] = {X.shape[1]} should be equal to {self._n_train}, "
                    "the number of samples at training time"
                )
            K = X[:, self.support_]
            return K.toarray() if sp.issparse(K) else np.asarray(K)
        return kernel_matrix(
            X, self.support_vectors_, self.kernel, self._gamma, self.degree, self.coef0
        )

    def _ovo_decision(self, X):
        check_is_fitted(self)
        X = validate_data(
            self,
            X,
            accept_sparse="csr",
            dtype=np.float64,
            reset=False,
            accept_large_sparse=False,
        )
        return self._ovo_from_kernel(self._kernel_to_support(X))

    @property
    def coef_(self):
        """Weights of the features in each one-vs-one decision function.

        Only with ``kernel="linear"``, as in :class:`sklearn.svm.SVC`: shape
        ``(1, n_features)`` for two classes, ``(n_classes * (n_classes - 1) /
        2, n_features)`` otherwise (sparse when the support vectors are), so
        that ``X @ coef_.T + intercept_`` is the one-vs-one decision value
        (:meth:`decision_function` for two classes, with
        ``decision_function_shape="ovo"`` otherwise).
        """
        if self.kernel != "linear":
            raise AttributeError("coef_ is only available when using a linear kernel")
        check_is_fitted(self, "dual_coef_")
        starts = np.concatenate([[0], np.cumsum(self.n_support_)])
        coef = []
        for a, b in pairs(self.classes_.shape[0]):
            rows_a = slice(starts[a], starts[a + 1])
            rows_b = slice(starts[b], starts[b + 1])
            coef.append(
                self.support_vectors_[rows_a].T @ self.dual_coef_[b - 1, rows_a]
                + self.support_vectors_[rows_b].T @ self.dual_coef_[a, rows_b]
            )
        coef = np.vstack([np.ravel(c) for c in coef])
        coef.flags.writeable = False  # A read-only view of the model, as in SVC.
        if sp.issparse(self.support_vectors_):
            coef = sp.csr_matrix(coef)
            coef.data.flags.writeable = False
        return coef

    def _ovo_from_kernel(self, K):
        """One-vs-one decision values from the kernel ``K`` to ``support_``."""
        return decision_from_kernel(K, self._pair_columns, self._pair_coefs, self._rho)

    def _vote(self, dec):
        return vote_labels(dec, self.classes_)

    def decision_function(self, X):
        """Signed distance to the separating hyperplane(s).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples, or the ``(n_samples, n_train_samples)`` kernel for
            ``kernel="precomputed"``.

        Returns
        -------
        dec : ndarray of shape (n_samples,) or (n_samples, n_classes) or \
                (n_samples, n_classes * (n_classes - 1) / 2)
            Positive values favour ``classes_[1]`` for a binary problem; the
            multiclass shapes follow ``decision_function_shape`` as in
            :class:`sklearn.svm.SVC`.
        """
        dec = self._ovo_decision(X)
        n_classes = self.classes_.shape[0]
        if n_classes == 2:
            return -dec[:, 0]
        if self.decision_function_shape == "ovr":
            return _ovr_decision_function(dec < 0, -dec, n_classes)
        return dec

    def predict(self, X):
        """Class labels by one-vs-one voting (ties go to the lower class).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples, or their kernel with the training samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._vote(self._ovo_decision(X))

    def _check_proba(self) -> bool:
        if not self.probability:
            raise AttributeError(
                "predict_proba is not available when probability=False"
            )
        return True

    @available_if(_check_proba)
    def predict_proba(self, X):
        """Class probabilities from Platt scaling (``probability=True``).

        Each one-vs-one decision value goes through its pair's sigmoid
        (``probA_``, ``probB_``), clipped to ``[1e-7, 1 - 1e-7]`` as LIBSVM
        does; with more than two classes the pairwise probabilities are
        coupled (Wu, Lin and Weng, 2004).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples, or their kernel with the training samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probability of each class, columns in the order of ``classes_``.

        Examples
        --------
        >>> from sklearn.datasets import load_breast_cancer
        >>> from sklearn.preprocessing import scale
        >>> from sklearn_ext.svm import AlphaSeededSVC
        >>> X, y = load_breast_cancer(return_X_y=True)
        >>> clf = AlphaSeededSVC(probability=True, random_state=0).fit(scale(X), y)
        >>> clf.predict_proba(scale(X)[:2]).shape
        (2, 2)
        """
        dec = self._ovo_decision(X)
        if self.probA_.shape[0] != dec.shape[1]:
            raise AttributeError(
                "predict_proba is not available: this model was fitted with "
                "probability=False."
            )
        n_classes = self.classes_.shape[0]
        pair = np.clip(
            sigmoid_predict(dec, self.probA_, self.probB_), MIN_PROB, 1 - MIN_PROB
        )
        if n_classes == 2:
            return np.column_stack([pair[:, 0], 1.0 - pair[:, 0]])
        r = np.zeros((dec.shape[0], n_classes, n_classes))
        for p, (a, b) in enumerate(pairs(n_classes)):
            r[:, a, b] = pair[:, p]
            r[:, b, a] = 1.0 - pair[:, p]
        return couple_pairwise(r)

    @available_if(_check_proba)
    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples, or their kernel with the training samples.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        return np.log(self.predict_proba(X))

    @property
    def _n_train(self) -> int:
        return self._alpha_by_pair[0].shape[0]

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.input_tags.pairwise = self.kernel == "precomputed"
        return tags


#: SVC parameters that AlphaSeededSVC takes over as they are.
_SHARED_PARAMS = (
    "C",
    "kernel",
    "degree",
    "gamma",
    "coef0",
    "shrinking",
    "tol",
    "cache_size",
    "class_weight",
    "max_iter",
    "decision_function_shape",
)


def as_alpha_seeded(estimator) -> AlphaSeededSVC:
    """An unfitted :class:`AlphaSeededSVC` with the parameters of ``estimator``.

    ``estimator`` is an ``AlphaSeededSVC`` (cloned) or a
    :class:`sklearn.svm.SVC` without ``break_ties`` (``probability`` and
    ``random_state`` are taken over). SVC's
    default ``cache_size`` (200 MB, which makes a few thousand rows fall back to
    kernel columns) becomes ``"auto"``: the fast path needs no tuning, and the
    cache size never changes the model.
    """
    if isinstance(estimator, AlphaSeededSVC):
        return clone(estimator)
    if isinstance(estimator, SVC) and type(estimator) is SVC:
        params = estimator.get_params()
        if params["break_ties"] is True:
            raise ValueError(
                "Alpha-seeded CV reproduces SVC's decision function and votes; "
                "SVC(break_ties=True) is not supported."
            )
        shared = {name: params[name] for name in _SHARED_PARAMS}
        # SVC.probability defaults to "deprecated" in recent scikit-learn.
        shared["probability"] = params["probability"] is True
        shared["random_state"] = params["random_state"]
        if shared["cache_size"] == SVC().cache_size:
            shared["cache_size"] = "auto"
        return AlphaSeededSVC(**shared)
    raise TypeError(
        "Alpha-seeded CV needs an AlphaSeededSVC or a sklearn.svm.SVC; got "
        f"{type(estimator).__name__}."
    )


def check_params(estimator: AlphaSeededSVC) -> None:
    """What :meth:`AlphaSeededSVC.fit` checks of its parameters, for a CV run."""
    estimator._validate_params()


def check_fit_input(estimator: AlphaSeededSVC, X, y):
    """What :meth:`AlphaSeededSVC.fit` checks, for a CV run of ``estimator``.

    Its parameters, then the data: ``X`` as a float64 C-ordered array or
    CSR matrix (a precomputed kernel square and dense), ``y`` class labels.

    Returns
    -------
    X, y
        The checked data.
    """
    estimator._validate_params()
    return estimator._check_fit_data(X, y)


class FoldModels:
    """Builds the fitted :class:`AlphaSeededSVC` of a CV fold from its solved pairs.

    The CV engine's ``make_model`` (:func:`~sklearn_ext.svm._cv.run_folds`):
    a clone of ``estimator`` with the fitted attributes of the fold's pairs
    (global rows of ``X``, as a fit on the fold's rows would lay them out)
    and, with ``probability=True``, its own Platt sigmoids from an internal
    CV on the fold's training rows, as ``SVC(probability=True)`` fitted on
    them.

    Parameters
    ----------
    estimator : AlphaSeededSVC
        The unfitted model of the run.
    X, y : data
        The checked data of the run.
    """

    def __init__(self, estimator: AlphaSeededSVC, X, y) -> None:
        self.estimator = estimator
        self.X = X
        self.y = y
        self.classes = np.unique(y)

    def __call__(self, fit: PairFit, rows: np.ndarray, gamma: float) -> AlphaSeededSVC:
        X, y = self.X, self.y
        model = clone(self.estimator)
        model.classes_ = self.classes
        if model.probability:
            # A store of its own: the inner folds' kernels are not the run's.
            sub = X[np.ix_(rows, rows)] if model.kernel == "precomputed" else X[rows]
            scaling = platt_scaling(
                SVMParams.of(model).with_store(None),
                sub,
                y[rows],
                # As a clone of the fold model would: a copy of its generator.
                random_state=copy.deepcopy(model.random_state),
            )
            model.probA_, model.probB_ = scaling.probA, scaling.probB
        else:
            model.probA_ = model.probB_ = np.empty(0)
        model.n_features_in_ = X.shape[1]
        model._set_model(fit, X, gamma)
        return model
