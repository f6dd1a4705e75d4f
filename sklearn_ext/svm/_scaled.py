"""Kernel SVMs after a per-fold scaler: each fold's kernel on its own scaled rows.

``Pipeline([scaler, SVC])`` cross-validated by scikit-learn fits the scaler
on each fold's training rows, then the SVM on the rows so scaled; test rows
are scaled by that fold's scaler. A per-feature scaler is an affine map
``x' = (x - m_f) / s_f`` with a fold's own ``m_f`` and ``s_f``, so each fold
has its own kernel: for RBF, ``|x'_i - x'_j|^2 = sum_d (x_id - x_jd)^2 /
s_fd^2``, a per-feature reweighting of the squared distances (the centre
cancels); for the linear, polynomial and sigmoid kernels the centred dot
products ``sum_d (x_id - m_fd)(x_jd - m_fd) / s_fd^2``. Both are the kernel
of the rows the fold's scaler outputs, so this module fits each fold's
scaler on its training rows (in the splitter's own order, as ``cross_validate``
does), scales every row once (``O(n d)``, against ``O(n^2 d)`` for the kernel
itself) and the engine builds that fold's kernel store from them: the same
floating-point inputs as the fold's ``SVC`` gets, so the fold models are
LIBSVM's to the solver's tolerance. What the scaling forces is one kernel
per fold where an unscaled run shares one for all folds; runs at other
values of ``C`` reuse it (:meth:`WarmStartStore.kernel_store`).

Only the scalers our engines fit per fold (:mod:`sklearn_ext.utils._scalers`:
:class:`~sklearn.preprocessing.StandardScaler`,
:class:`~sklearn.preprocessing.MinMaxScaler` and
:class:`~sklearn.preprocessing.MaxAbsScaler`, exact classes), one or several
in a row, keep the alpha-seeding backend: per-feature maps under which the
previous fold's alphas stay a good seed. Any other step falls back to
standard CV, naming the step (:func:`scaling_refusal`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
from sklearn.base import clone
from sklearn.pipeline import Pipeline
from sklearn.svm import SVC
from sklearn.utils import check_array

from sklearn_ext.utils._hashing import content_digest
from sklearn_ext.utils._scalers import active_steps, scaler_refusal

__all__ = [
    "FoldScaling",
    "ScaledFold",
    "ScaledFoldModels",
    "fitted_pipeline",
    "scaling_refusal",
    "split_pipeline",
]


def _is_svm(step) -> bool:
    # Imported here: _classes imports the solver, not this module.
    from sklearn_ext.svm._classes import AlphaSeededSVC

    return isinstance(step, AlphaSeededSVC) or type(step) is SVC


def split_pipeline(estimator) -> tuple[list[tuple[str, Any]], tuple[str, Any]] | None:
    """The steps before the SVM and the SVM step of a pipeline ending in one.

    ``None`` when ``estimator`` is not a :class:`~sklearn.pipeline.Pipeline`
    whose last step is an ``SVC`` or an ``AlphaSeededSVC``.
    """
    if not isinstance(estimator, Pipeline) or not estimator.steps:
        return None
    *before, last = estimator.steps
    if not _is_svm(last[1]):
        return None
    return list(before), last


def scaling_refusal(estimator) -> str | None:
    """Why the alpha-seeding backend cannot run this SVM pipeline, or ``None``.

    Every step before the SVM must be one of the scalers our engines fit per
    fold (:func:`~sklearn_ext.utils._scalers.scaler_refusal`: exact classes,
    passthrough steps skipped), several in a row allowed: the backend fits
    the scalers themselves, one after another, on each fold's rows.
    """
    if split_pipeline(estimator) is None:
        return None
    return scaler_refusal(estimator, "the alpha-seeding backend", chained=True)


@dataclass
class ScaledFold:
    """One fold's scaling: its fitted steps, every row scaled, its ``gamma``.

    Attributes
    ----------
    steps : list of (str, estimator)
        The pipeline's steps before the SVM, fitted on the fold's rows.
    X : {ndarray, CSR matrix} of shape (n_samples, n_features)
        Every row of the data set scaled by them (float64, C order), as the
        fold's ``SVC`` sees its training rows and its ``predict`` the test rows.
    gamma : float
        The SVM's ``gamma`` resolved on the fold's scaled training rows.
    fit_rows : ndarray of intp
        The fold's training rows in the splitter's own order.
    seconds : float
        Time spent fitting the steps and scaling the rows.
    """

    steps: list
    X: Any
    gamma: float
    fit_rows: np.ndarray
    seconds: float = 0.0


class FoldScaling:
    """The per-fold scalers of one run of ``Pipeline([scalers..., SVM])``.

    Parameters
    ----------
    steps : list of (str, estimator)
        The pipeline's steps before the SVM (unfitted; see :func:`split_pipeline`).
    X : {ndarray, CSR matrix}
        The run's data as the pipeline gets it.
    params : SVMParams
        The SVM's problem (its ``gamma`` is resolved per fold).
    """

    def __init__(self, steps, X, params) -> None:
        self.steps = active_steps(steps)
        self.X = X
        self.params = params
        self.key = scaling_key(self.steps)

    def fold(self, fit_rows: np.ndarray) -> ScaledFold:
        """Fit the steps on rows ``fit_rows`` (in this order), scale every row."""
        tic = time.perf_counter()
        fitted = [(name, clone(step)) for name, step in self.steps]
        train, every = self.X[fit_rows], self.X
        for _, step in active_steps(fitted):
            # fit_transform is fit then transform for these scalers: the
            # training rows come out exactly as the pipeline's fit makes them.
            train = step.fit(train).transform(train)
            every = step.transform(every)
        # As SVC's fit and predict check their input.
        every = check_array(every, accept_sparse="csr", dtype=np.float64, order="C")
        train = check_array(train, accept_sparse="csr", dtype=np.float64, order="C")
        gamma = self.params.resolve_gamma(train)
        return ScaledFold(
            fitted, every, gamma, fit_rows, seconds=time.perf_counter() - tic
        )


def scaling_key(steps) -> str:
    """What names the per-fold scaling in warm-start keys: each step's class
    and parameters (a fold's scaler is fixed by them, the data and its rows)."""
    parts = [
        (name, type(step).__qualname__, step.get_params(deep=False))
        for name, step in active_steps(steps)
    ]
    return content_digest("svm-fold-scaling", parts).hex()


def fitted_pipeline(pipeline: Pipeline, fold: ScaledFold, svm) -> Pipeline:
    """``pipeline`` as fitted on one fold: its fitted scalers, then ``svm``."""
    fitted = clone(pipeline)
    steps = dict(fold.steps)
    svm_name = fitted.steps[-1][0]
    fitted.steps = [
        (name, steps[name] if name in steps else step)
        for name, step in fitted.steps[:-1]
    ] + [(svm_name, svm)]
    return fitted


class ScaledFoldModels:
    """Builds a scaled fold's fitted pipeline from its solved pairs.

    The CV engine's ``make_model`` for a scaled run: the fold's fitted
    scalers, then the fold's :class:`~sklearn_ext.svm.AlphaSeededSVC` laid out
    as a fit on the fold's scaled training rows would lay it out (``support_``
    indexes those rows in the splitter's order, ``support_vectors_`` are
    scaled rows), with its own Platt sigmoids under ``probability=True``.

    Parameters
    ----------
    pipeline : Pipeline
        The unfitted pipeline of the run.
    estimator : AlphaSeededSVC
        Its SVM, as the engine runs it.
    y : ndarray
        The run's labels.
    """

    def __init__(self, pipeline: Pipeline, estimator, y) -> None:
        self.pipeline = pipeline
        self.estimator = estimator
        self.y = y

    def __call__(self, fit, rows: np.ndarray, gamma: float, scaled: ScaledFold):
        from sklearn_ext.svm._classes import FoldModels
        from sklearn_ext.svm._training import PairFit

        fit_rows = np.asarray(scaled.fit_rows, dtype=np.intp)
        position = np.full(self.y.shape[0], -1, dtype=np.intp)
        position[fit_rows] = np.arange(fit_rows.shape[0])
        local = PairFit(
            [replace(p, idx=position[p.idx]) for p in fit.problems],
            fit.seeds,
            fit.seeded_at,
        )
        make = FoldModels(self.estimator, scaled.X[fit_rows], self.y[fit_rows])
        svm = make(local, np.arange(fit_rows.shape[0], dtype=np.intp), gamma)
        return fitted_pipeline(self.pipeline, scaled, svm)
