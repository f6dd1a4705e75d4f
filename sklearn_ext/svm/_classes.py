"""``AlphaSeededSVC``: LIBSVM's C-SVC with a shared kernel store and warm starts."""

from __future__ import annotations

from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context, clone
from sklearn.utils._available_if import available_if
from sklearn.utils._param_validation import HasMethods, Interval, Options, StrOptions
from sklearn.utils.class_weight import compute_class_weight
from sklearn.utils.multiclass import (
    _ovr_decision_function,
    check_classification_targets,
)
from sklearn.utils.validation import (
    check_is_fitted,
    check_random_state,
    validate_data,
)

from sklearn_ext._fast._smo import update_gradient
from sklearn_ext.svm._kernel_store import (
    KernelStore,
    kernel_matrix,
    resolve_kernel_dtype,
)
from sklearn_ext.svm._platt import (
    MIN_PROB,
    couple_pairwise,
    sigmoid_predict,
    sigmoid_train,
)
from sklearn_ext.svm._solver import (
    PairProblem,
    pair_rows,
    repair_equality,
    solve_pair,
    warn_not_converged,
)
from sklearn_ext.svm._warm_start import (
    StoredSolution,
    data_fingerprint,
    kernel_fingerprint,
    kernel_key,
    rows_fingerprint,
    seed_fit,
    seed_from_store,
    store_in_use,
)

__all__ = ["AlphaSeededSVC"]


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
        nothing to tune) gives the store half the memory this process may use,
        so the whole matrix is kept whenever it fits. ``SVC``'s default of 200
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
        5-fold cross-validation (stratified, shuffled by ``random_state``)
        through :func:`~sklearn_ext.tree_cross_validate` with the
        ``alpha_seeding`` backend, so each fold is seeded from the previous one
        and all share one kernel store, then fits LIBSVM's Platt sigmoid of
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
        gamma = self._resolve_gamma(X)
        starts = self._starting_alphas(initial_alpha, X.shape[0], n_classes)
        shared = None
        if self.probability:
            shared, last_alphas = self._fit_platt(X, y)
            if starts is None and store_in_use(self.warm_start_store) is None:
                # The last fold's solution, held-out alphas at 0, is feasible.
                starts = last_alphas
        else:
            self.probA_ = np.empty(0)
            self.probB_ = np.empty(0)
        keys = _StoreKeys(self, X, y, gamma, store=shared)
        store = keys.kernel_store(X, gamma)
        c_by_class = self._class_C(y_enc, n_classes)
        rows = np.arange(X.shape[0], dtype=np.intp)
        problems = []
        seeds = []
        for p, (a, b) in enumerate(_pairs(n_classes)):
            idx, y_pm = pair_rows(y_enc, rows, a, b)
            C = np.where(y_pm > 0, c_by_class[a], c_by_class[b])
            if starts is None:
                alpha = np.zeros(idx.shape[0])
                G = np.full(idx.shape[0], -1.0)
            else:
                alpha = np.array(starts[p][idx], dtype=np.float64)
                repair_equality(alpha, y_pm, C)
                G = None
            problem = PairProblem(a, b, idx, y_pm, C, alpha, G)
            found = None if starts is not None else keys.seed_fit(store, problem)
            seeds.append(keys.solve(store, problem, found, None, seeded=True))
            problems.append(problem)
        self._set_model(problems, X, gamma, n_classes)
        self._set_seeds(seeds)
        return self

    def _fit_platt(self, X, y):
        """Platt's sigmoids from an internal alpha-seeded 5-fold CV.

        Sets ``probA_`` and ``probB_``; returns the warm-start store the CV
        ran with (it keeps the kernel for the final fit) and the last fold's
        alphas, one full-length array per one-vs-one pair.
        """
        # Imported here: the backend and tree_cross_validate import this module.
        from sklearn.model_selection import StratifiedKFold

        from sklearn_ext.model_selection._plan import FoldPlan
        from sklearn_ext.model_selection._validation import tree_cross_validate
        from sklearn_ext.svm._backend import AlphaSeedingBackend
        from sklearn_ext.svm._warm_start import WarmStartStore

        classes, y_enc = np.unique(y, return_inverse=True)
        counts = np.bincount(y_enc)
        if counts.min() < 2:
            raise ValueError(
                "probability=True needs at least 2 samples of each class for its "
                f"internal cross-validation; class {classes[counts.argmin()]!r} "
                f"has {counts.min()}."
            )
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        # LIBSVM uses 5 folds; stratified, every class is in every training part.
        splitter = StratifiedKFold(
            n_splits=min(5, int(counts.min())), shuffle=True, random_state=seed
        )
        tests = [test for _, test in splitter.split(np.zeros(y.shape[0]), y_enc)]
        plan = FoldPlan(tests, y.shape[0])
        store = store_in_use(self.warm_start_store)
        if store is None:
            store = WarmStartStore()
        inner = clone(self).set_params(
            probability=False, warm_start=False, warm_start_store=store
        )
        result = tree_cross_validate(
            inner,
            X,
            y,
            cv=plan,
            method=AlphaSeedingBackend(seeding="sir", random_state=seed),
            return_estimator=True,
        )
        n_classes = classes.shape[0]
        dec = np.zeros((y.shape[0], n_classes * (n_classes - 1) // 2))
        for test, model in zip(tests, result["estimator"], strict=True):
            dec[test] = model._ovo_from_kernel(model._kernel_to_support(X[test]))
        probA, probB = [], []
        for p, (a, b) in enumerate(_pairs(n_classes)):
            mask = (y_enc == a) | (y_enc == b)
            A, B = sigmoid_train(dec[mask, p], y_enc[mask] == a)
            probA.append(A)
            probB.append(B)
        self.probA_ = np.array(probA)
        self.probB_ = np.array(probB)
        return store, result["estimator"][-1]._alpha_by_pair

    def _set_seeds(self, seeds) -> None:
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

    def _kernel_store(self, X, gamma) -> KernelStore:
        return KernelStore(
            X,
            self.kernel,
            gamma,
            self.degree,
            self.coef0,
            self.cache_size,
            dtype=resolve_kernel_dtype(self.kernel_dtype, self.cache_size, X.shape[0]),
        )

    def _resolve_gamma(self, X) -> float:
        if isinstance(self.gamma, str):
            if self.gamma == "auto":
                return 1.0 / X.shape[1]
            with np.errstate(over="ignore", invalid="ignore"):
                # Huge values give var=inf; the kernel check then refuses them.
                if sp.issparse(X):
                    var = X.multiply(X).mean() - X.mean() ** 2
                else:
                    var = X.var()
            return 1.0 / (X.shape[1] * var) if var != 0 else 1.0
        return float(self.gamma)

    def _class_C(self, y_enc, n_classes) -> np.ndarray:
        return self._class_C_for(self.classes_, y_enc)

    def _class_C_for(self, classes, y_enc) -> np.ndarray:
        """``C`` of each class (``y_enc`` indexes ``classes``)."""
        n_classes = classes.shape[0]
        if self.class_weight is None:
            weights = np.ones(n_classes)
        elif isinstance(self.class_weight, dict):
            _check_class_weight(self.class_weight, type(self).__name__)
            weights = np.array(
                [self.class_weight.get(c, 1.0) for c in classes], dtype=float
            )
        else:
            weights = compute_class_weight(
                self.class_weight, classes=np.arange(n_classes), y=y_enc
            )
        return float(self.C) * np.asarray(weights, dtype=np.float64)

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

    def _set_model(self, problems, X, gamma, n_classes, rows=None) -> None:
        """Fitted attributes from solved pair problems (global rows of ``X``).

        ``rows`` maps the global rows to the training sample numbers reported in
        ``support_`` (the identity when ``None``).
        """
        n_total = X.shape[0]
        self._gamma = gamma
        self.n_iter_ = np.array([p.n_iter for p in problems], dtype=np.int64)
        self.objective_ = np.array([p.objective() for p in problems])
        check_solved(problems, type(self).__name__, self.max_iter)
        self._alpha_by_pair = []
        is_sv = np.zeros((n_classes, n_total), dtype=bool)
        for p in problems:
            full = np.zeros(n_total)
            full[p.idx] = p.alpha
            self._alpha_by_pair.append(full)
            sv = p.idx[p.alpha > 0]
            first = p.y[p.alpha > 0] > 0
            is_sv[p.first, sv[first]] = True
            is_sv[p.second, sv[~first]] = True
        support = np.concatenate(
            [np.flatnonzero(is_sv[c]) for c in range(n_classes)]
        ).astype(np.intp)
        self.n_support_ = is_sv.sum(axis=1).astype(np.int32)
        column = np.full(n_total, -1, dtype=np.intp)
        column[support] = np.arange(support.shape[0])
        dual = np.zeros((n_classes - 1, support.shape[0]))
        pair_columns, pair_coefs, rho = [], [], []
        for p in problems:
            mask = p.alpha > 0
            sv = p.idx[mask]
            coef = (p.y * p.alpha)[mask]
            cols = column[sv]
            first = p.y[mask] > 0
            dual[p.second - 1, cols[first]] = coef[first]
            dual[p.first, cols[~first]] = coef[~first]
            pair_columns.append(cols)
            pair_coefs.append(coef)
            rho.append(p.rho)
        self._pair_columns = pair_columns
        self._pair_coefs = pair_coefs
        self._rho = np.array(rho)
        self.support_ = support if rows is None else np.asarray(rows)[support]
        self._support_rows = support
        if self.kernel == "precomputed":
            self.support_vectors_ = np.empty((0, 0))
        else:
            self.support_vectors_ = X[support]
        if n_classes == 2:
            self.dual_coef_ = -dual
            self.intercept_ = np.array([self._rho[0]])
        else:
            self.dual_coef_ = dual
            self.intercept_ = -self._rho
        self.fit_status_ = 0 if all(p.converged for p in problems) else 1

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

    def _ovo_from_kernel(self, K):
        """One-vs-one decision values from the kernel ``K`` to ``support_``."""
        dec = np.empty((K.shape[0], len(self._pair_coefs)))
        for p, (cols, coef) in enumerate(
            zip(self._pair_columns, self._pair_coefs, strict=True)
        ):
            dec[:, p] = K[:, cols] @ coef - self._rho[p]
        return dec

    def _vote(self, dec):
        return _vote_labels(dec, self.classes_)

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
        for p, (a, b) in enumerate(_pairs(n_classes)):
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


def _check_class_weight(class_weight: dict, owner: str) -> None:
    """Class weights scale ``C``: each must be a positive finite number."""
    for value in class_weight.values():
        if (
            not isinstance(value, Real)
            or isinstance(value, bool)
            or not np.isfinite(value)
            or not value > 0
        ):
            raise ValueError(
                f"The 'class_weight' parameter of {owner} must map each class to "
                f"a float in the range (0, inf). Got {class_weight!r} instead."
            )


def _pairs(n_classes: int):
    return [(a, b) for a in range(n_classes) for b in range(a + 1, n_classes)]


def check_solved(problems, owner: str, max_iter: int) -> None:
    """What fitting checks of solved pair problems, with or without a model.

    A ``ConvergenceWarning`` when ``max_iter`` stopped a problem; SVC's
    ``ValueError`` (its words, sklearn/svm/_base.py) when a support vector's
    coefficient or a bias is not finite.
    """
    if not all(p.converged for p in problems):
        warn_not_converged(owner, max_iter)
    if not all(
        np.all(np.isfinite(p.alpha[p.alpha > 0])) and np.isfinite(p.rho)
        for p in problems
    ):
        raise ValueError(
            "The dual coefficients or intercepts are not finite. The input data "
            "may contain large values and need to be preprocessed."
        )


def _vote_labels(dec, classes) -> np.ndarray:
    """Labels of one-vs-one voting on decision values ``dec`` (ties: lower class)."""
    n_classes = classes.shape[0]
    votes = np.zeros((dec.shape[0], n_classes), dtype=np.int64)
    for p, (a, b) in enumerate(_pairs(n_classes)):
        wins_a = dec[:, p] > 0
        votes[wins_a, a] += 1
        votes[~wins_a, b] += 1
    return classes[np.argmax(votes, axis=1)]


class _PairDecisions:
    """The decision functions of solved pair problems, without a fitted model.

    What scoring from the kernel store reads: for each one-vs-one problem the
    global rows of its support vectors, their ``y_i * alpha_i`` and the bias,
    in the order :meth:`AlphaSeededSVC._set_model` lays them out, so the
    decision values are the model's bit for bit. A fold that no one will
    predict with keeps this instead of a fitted model (no copy of its support
    vectors).

    Parameters
    ----------
    problems : list of PairProblem
        The solved problems, one per pair of classes, in :func:`_pairs` order.
    classes : ndarray of shape (n_classes,)
        Class labels.
    """

    def __init__(self, problems, classes) -> None:
        self.classes = classes
        self.rows, self.coefs = [], []
        for p in problems:
            mask = p.alpha > 0
            self.rows.append(np.ascontiguousarray(p.idx[mask], dtype=np.intp))
            self.coefs.append(np.ascontiguousarray((p.y * p.alpha)[mask]))
        self.rho = np.array([p.rho for p in problems], dtype=np.float64)

    def decision(self, columns, test_rows) -> np.ndarray:
        """One-vs-one decision values of the global rows ``test_rows``.

        Summed column by column over the support vectors from the kernel
        store's ``columns`` (no kernel block is built; the reads release the
        GIL).
        """
        rows = np.ascontiguousarray(test_rows, dtype=np.intp)
        ones = np.ones(rows.shape[0])
        dec = np.empty((rows.shape[0], len(self.coefs)))
        for p, (sv, coef) in enumerate(zip(self.rows, self.coefs, strict=True)):
            values = np.full(rows.shape[0], -self.rho[p])
            update_gradient(columns, rows, ones, values, sv, coef)
            dec[:, p] = values
        return dec

    def predict(self, columns, test_rows) -> np.ndarray:
        """Labels of the global rows ``test_rows`` by one-vs-one voting."""
        return _vote_labels(self.decision(columns, test_rows), self.classes)


class _StoreKeys:
    """How one model's problems are named in its warm-start store, if any."""

    def __init__(self, model, X, y, gamma, store=None) -> None:
        self.model = model
        # ``store`` stands in for the model's own (probability=True's internal
        # CV hands its kernel over to the final fit that way).
        self.store = store_in_use(model.warm_start_store) if store is None else store
        self.C = float(model.C)
        self.tol = float(model.tol)
        # A callable kernel without a declared key cannot be told apart from
        # another one: its solutions only seed and its matrix is never kept.
        self.exact = kernel_key(model.kernel) is not None
        if self.store is None:
            return
        self.data = data_fingerprint(X, y)
        self.kernel = kernel_fingerprint(
            model.kernel,
            gamma,
            model.degree,
            model.coef0,
            model.class_weight,
            resolve_kernel_dtype(model.kernel_dtype, model.cache_size, X.shape[0]),
        )

    def kernel_store(self, X, gamma) -> KernelStore:
        model = self.model
        if self.store is None:
            return model._kernel_store(X, gamma)
        key = None
        if self.exact:
            key = (
                self.data,
                kernel_fingerprint(
                    model.kernel, gamma, model.degree, model.coef0, None
                ),
                str(model.cache_size),
                str(
                    resolve_kernel_dtype(
                        model.kernel_dtype, model.cache_size, X.shape[0]
                    )
                ),
            )
        return self.store.kernel_store(key, lambda: model._kernel_store(X, gamma))

    def slot(self, rows, a, b) -> tuple:
        # A fit's problem is its data (a fold of a standard CV is a fit on other
        # data, not changed data); a CV fold's is its rows of the data set.
        where = "fit:" + self.data if rows is None else rows_fingerprint(rows)
        return (self.kernel, where, int(a), int(b))

    def lookup(self, rows, a, b, n_variables):
        """``(StoredSolution, skip)`` to start from, or ``None``."""
        if self.store is None:
            return None
        found = self.store.lookup(
            self.slot(rows, a, b), self.data, self.C, tol=self.tol
        )
        if found is not None and found[0].alpha.shape != (n_variables,):
            # Only a foreign file can get here (the key hashes the rows).
            return None
        return found

    def seed_fit(self, kernel_store, problem):
        """Start a fit's ``problem`` from the store: its own solution at the
        nearest ``C`` or a CV fold's at this ``C``, whichever is lower
        (:func:`~sklearn_ext.svm._warm_start.seed_fit`); the seed, or None."""
        found = self.lookup(None, problem.first, problem.second, problem.idx.shape[0])
        if found is not None:
            self.seed(kernel_store, problem, found)
        if self.store is None:
            return found
        slot = self.slot(None, problem.first, problem.second)
        return seed_fit(
            self.store, kernel_store, problem, slot, self.data, self.C, found
        )

    def seed(self, kernel_store, problem, found) -> None:
        """Start ``problem`` from ``found``, a ``(StoredSolution, skip)`` pair."""
        solution, skip = found
        seed_from_store(
            kernel_store,
            solution,
            skip,
            problem,
            self.C,
            scale=bool(getattr(self.store, "scale", False)),
        )
        if skip:
            # Same alphas, same gradient: same bias, no iteration.
            problem.rho, problem.n_iter, problem.converged = solution.rho, 0, True

    def solve(self, kernel_store, problem, found, rows, *, seeded=False):
        """Seed ``problem`` from ``found`` (unless ``seeded``), solve, store it."""
        model = self.model
        if found is not None and not seeded:
            self.seed(kernel_store, problem, found)
        if found is None or not found[1]:
            solve_pair(
                kernel_store,
                problem,
                tol=model.tol,
                max_iter=model.max_iter,
                shrinking=model.shrinking,
            )
        if self.store is not None and problem.converged:
            self.store.put(
                self.slot(rows, problem.first, problem.second),
                self.data,
                StoredSolution.from_problem(
                    self.C, problem, tol=self.tol, trusted=self.exact
                ),
            )
        return found
