"""The ``alpha_seeding`` CV backend: kernel SVMs with a shared kernel store."""

from __future__ import annotations

import time

from sklearn.svm import SVC

from sklearn_ext.model_selection._backends import Backend, CVTask, LeafResult
from sklearn_ext.svm._classes import AlphaSeededSVC
from sklearn_ext.svm._cv import is_native_scoring, run_folds

__all__ = ["AlphaSeedingBackend"]


class AlphaSeedingBackend(Backend):
    """Solve the folds in order, each seeded from the previous one.

    Runs :class:`~sklearn_ext.svm.AlphaSeededSVC` and scikit-learn's
    :class:`~sklearn.svm.SVC` (whose parameters an ``AlphaSeededSVC`` takes
    over; the fold models are ``AlphaSeededSVC`` instances). All folds share one
    kernel store; ``seeding`` picks the strategy (default ``"sir"``). Folds are
    solved one after the other since each seeds the next, so ``n_jobs`` is not
    used. ``LeafResult.n_samples_fed`` is the fold's number of training rows;
    the SMO iteration counts are returned by
    :func:`~sklearn_ext.svm.alpha_seeded_cv`.
    """

    name = "alpha_seeding"

    def __init__(self, seeding: str = "sir") -> None:
        self.seeding = seeding

    @classmethod
    def accepts(cls, estimator) -> bool:
        if isinstance(estimator, AlphaSeededSVC):
            return True
        # SVC.probability defaults to "deprecated" in recent scikit-learn.
        return (
            type(estimator) is SVC
            and estimator.probability is not True
            and estimator.break_ties is not True
        )

    def run(self, task: CVTask) -> list[LeafResult]:
        if task.fit_params:
            raise ValueError(
                "The alpha_seeding backend takes no fit parameters; got "
                f"{sorted(task.fit_params)}. Use method='standard'."
            )
        results = []
        # Accuracy is computed from the shared kernel store (the test rows'
        # kernel values are already there); other metrics go through the scorer.
        native = is_native_scoring(task.scoring)
        for solution in run_folds(
            task.estimator, task.X, task.y, task.plan, seeding=self.seeding
        ):
            if native:
                tic = time.perf_counter()
                test = task.plan.test_indices(solution.fold)
                scores = {"score": solution.accuracy(test, task.y[test])}
                score_time = time.perf_counter() - tic
            else:
                scores, score_time = task.score(solution.model, solution.fold)
            leaf = LeafResult(
                fold=solution.fold,
                scores=scores,
                n_samples_fed=solution.n_train,
                fit_time=solution.seed_time + solution.fit_time,
                score_time=score_time,
                estimator=solution.model if task.return_estimator else None,
            )
            results.append(leaf)
            if task.on_leaf is not None:
                task.on_leaf(leaf)
        return results
