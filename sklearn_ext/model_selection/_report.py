"""What the doors report about each split: ``_fit_and_score``'s dicts, its
``verbose`` lines and scikit-learn's callback hooks (``sklearn.callback``).

The tree trains a candidate's folds together, so the per-split reports that
scikit-learn makes around each independent fit are made here from the run's
:class:`LeafTable`: after the run for the tree backends, around each fold's
``fit`` for the standard backend (whose fits are independent, as in
``GridSearchCV``, so callbacks propagate into the learner's own ``fit``).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from joblib import logger
from sklearn.utils import _safe_indexing

from sklearn_ext.model_selection._backends import LeafTable
from sklearn_ext.model_selection._core import RunCore
from sklearn_ext.model_selection._scoring import metric_names

__all__ = [
    "SplitHooks",
    "print_splits",
    "print_starts",
    "split_dicts",
    "summarize_extras",
]


class SplitHooks:
    """scikit-learn's ``on_fit_task_begin`` / ``on_fit_task_end`` per split.

    Parameters
    ----------
    contexts : list of CallbackContext
        One ``"candidate-split-evaluation"`` context per split, in split order.
    caller : estimator
        The search, passed to the hooks as ``estimator``.
    core : RunCore
        The run's core, for the training rows of each split.
    """

    def __init__(self, contexts: list, caller, core: RunCore) -> None:
        self.contexts = contexts
        self.caller = caller
        self.core = core
        self.announced: set[int] = set()

    @contextlib.contextmanager
    def around_fit(self, fold: tuple):
        """Around one independent ``fit``: the hooks, the callbacks propagated.

        ``fold`` is ``(split, model, X, y, params)``: the split's number, the
        model about to be fitted and its training data (``CVTask.around_fit``).
        """
        split, model, X, y, params = fold
        context = self.contexts[split]
        self.announced.add(split)
        metadata = _metadata(params)
        try:
            with context.propagate_callback_context(model):
                context.call_on_fit_task_begin(
                    estimator=self.caller, X=X, y=y, metadata=metadata
                )
                yield
        finally:
            context.call_on_fit_task_end(
                estimator=self.caller, X=X, y=y, metadata=metadata
            )

    def finish(self) -> None:
        """Begin and end the splits whose folds the tree trained together."""
        core = self.core
        for split, context in enumerate(self.contexts):
            if split in self.announced:
                continue
            rows = core.plan.fit_indices(int(core.plan.leaf_order[split]))
            train = {
                "X": lambda rows=rows: _safe_indexing(core.X, rows),
                "y": lambda rows=rows: None if core.y is None else core.y[rows],
                "metadata": lambda rows=rows: _metadata(
                    {
                        k: _safe_indexing(v, rows)
                        for k, v in core.fit_params.items()
                        if k == "sample_weight" and v is not None
                    }
                ),
            }
            context.call_on_fit_task_begin(estimator=self.caller, **train)
            context.call_on_fit_task_end(estimator=self.caller, **train)


def _metadata(params: dict[str, Any]):
    """The hooks' ``metadata``: the fold's ``sample_weight``, as scikit-learn's."""
    weight = params.get("sample_weight")
    return None if weight is None else {"sample_weight": weight}


def _failed_scores(core: RunCore):
    """The test scores of a failed fit, as ``_fit_and_score`` gives them."""
    if isinstance(core.scoring, list | tuple | set | dict):
        return {name: core.error_score for name in metric_names(core.scoring)}
    return core.error_score


def split_dicts(table: LeafTable, core: RunCore) -> list[dict]:
    table = table.by_split()
    multimetric = isinstance(core.scoring, list | tuple | set | dict)
    splits = []
    for i in range(len(table)):
        leaf = {name: float(values[i]) for name, values in table.scores.items()}
        error = None if table.fit_error is None else table.fit_error[i]
        split = {
            "fit_error": error,
            "test_scores": _unflatten(leaf, "", multimetric),
            "n_test_samples": len(core.plan.test_indices(int(table.leaf[i]))),
            "fit_time": float(table.fit_time[i]),
            "score_time": float(table.score_time[i]),
        }
        if error is not None:
            split["test_scores"] = _failed_scores(core)
        if core.return_train_score:
            split["train_scores"] = (
                _unflatten(leaf, "train:", multimetric)
                if error is None
                else _failed_scores(core)
            )
        splits.append(split)
    return splits


def _unflatten(leaf: dict[str, float], prefix: str, multimetric: bool):
    """A split's scores as ``_fit_and_score`` gives them: a float or a dict."""
    scores = {
        name[len(prefix) :]: value
        for name, value in leaf.items()
        if name.startswith(prefix) and (prefix or not name.startswith("train:"))
    }
    if not multimetric and list(scores) == ["score"]:
        return scores["score"]
    return scores


def _progress_msg(verbose: int, split: int, n_splits: int, progress) -> str:
    """The ``" 2/5; 1/4"`` of ``_fit_and_score``'s lines: split, then candidate.

    Empty without ``progress`` (``cross_validate`` numbers no split).
    """
    if verbose <= 2 or progress is None:
        return ""
    message = f" {split + 1}/{n_splits}"
    if verbose > 9:
        message += f"; {progress[0] + 1}/{progress[1]}"
    return message


def _params_msg(parameters) -> str:
    return ", ".join(f"{k}={parameters[k]}" for k in sorted(parameters))


def print_starts(verbose: int, parameters, progress, n_splits) -> None:
    """``GridSearchCV``'s START lines (``verbose > 9``), before the tree runs.

    The tree trains a candidate's folds together, so all of them start here;
    ``GridSearchCV`` prints each START just before its own fit.
    """
    if verbose <= 9:
        return
    params_msg = _params_msg(parameters)
    for j in range(n_splits):
        progress_msg = _progress_msg(verbose, j, n_splits, progress)
        start_msg = f"[CV{progress_msg}] START {params_msg}"
        print(f"{start_msg}{(80 - len(start_msg)) * '.'}")


def print_splits(verbose: int, parameters, progress, splits) -> None:
    """``GridSearchCV``'s per-split lines (``verbose > 1``), after the tree ran."""
    if verbose <= 1:
        return
    params_msg = _params_msg(parameters)
    for j, split in enumerate(splits):
        progress_msg = _progress_msg(verbose, j, len(splits), progress)
        end_msg = f"[CV{progress_msg}] END "
        result_msg = params_msg + (";" if params_msg else "")
        test, train = split["test_scores"], split.get("train_scores")
        if verbose > 2:
            if isinstance(test, dict):
                for name in sorted(test):
                    result_msg += f" {name}: ("
                    if train is not None:
                        result_msg += f"train={train[name]:.3f}, "
                    result_msg += f"test={test[name]:.3f})"
            else:
                result_msg += ", score="
                if train is not None:
                    result_msg += f"(train={train:.3f}, test={test:.3f})"
                else:
                    result_msg += f"{test:.3f}"
        total = split["fit_time"] + split["score_time"]
        result_msg += f" total time={logger.short_format_time(total)}"
        end_msg += "." * (80 - len(end_msg) - len(result_msg))
        print(end_msg + result_msg)


def summarize_extras(
    kinds: Mapping[str, str | None], extras: Mapping[str, Sequence]
) -> dict[str, Any]:
    """One JSON-safe value per extra of a run, as :attr:`Backend.extras` says."""
    summary: dict[str, Any] = {}
    for name, kind in kinds.items():
        if kind is None or name not in extras:
            continue
        values = np.asarray(extras[name], dtype=float)
        if kind == "sum":
            total = float(np.nansum(values))
            summary[name] = int(total) if total.is_integer() else total
        elif kind == "mode":
            values = values[~np.isnan(values)]
            if values.shape[0] == 0:
                summary[name] = None
            else:
                unique, counts = np.unique(values, return_counts=True)
                summary[name] = float(unique[np.argmax(counts)])
        else:
            raise ValueError(f"Unknown summary {kind!r} of extra {name!r}.")
    return summary
