"""What defines a study: the learner, data, folds, scoring and space it scores.

A study's trials compare only when they score the same learner on the same data,
folds and metric over one search space; ``TreeCVObjective.check_study`` records
these as study user attributes the first time it meets a study and checks them
on resume (:class:`StudyIdentityError`). The data and fold fingerprints are
persisted in studies, so their format stays as recorded.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import optuna

from sklearn_ext.model_selection import FoldPlan

#: The one user attribute holding a trial's per-fold details.
CV_ATTR = "cv"

IDENTITY = {
    "treecv_learner": "the learner",
    "treecv_learner_params": "the learner's fixed parameters",
    "treecv_data": "the data (X and y)",
    "treecv_folds": "the fold plan",
    "treecv_scoring": "the scoring",
    "treecv_search_space": "the search space",
    "treecv_report": "the reported values (report=...)",
}


class StudyIdentityError(ValueError):
    """A study was resumed with another learner, data, folds, scoring or space.

    Attributes
    ----------
    study_name : str
        The study's name.
    changes : list of str
        One phrase per difference, e.g. ``"the data (X and y): recorded
        1797x64 ..., now 150x4 ..."``.
    """

    def __init__(self, study_name: str, changes: list[str]) -> None:
        self.study_name = study_name
        self.changes = list(changes)
        super().__init__(
            f"The study {study_name!r} was recorded with other settings; resuming "
            f"it would mix trials that cannot be compared. Changed: "
            f"{'; '.join(changes)}. Start a new study instead (another study_name), "
            f"or delete this one with optuna.delete_study(study_name="
            f"{study_name!r}, storage=...)."
        )


def _refuse_foreign_trials(study: optuna.Study) -> None:
    """Raise if a study without a TreeCV record holds finished trials of other code."""
    from optuna.trial import TrialState

    finished = study.get_trials(
        deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)
    )
    foreign = [t for t in finished if CV_ATTR not in t.user_attrs]
    if foreign:
        names = ", ".join(sorted(foreign[0].params)) or "none"
        raise StudyIdentityError(
            study.study_name,
            [
                f"the study was made by other code: it has no treecv_* attributes "
                f"and {len(foreign)} finished trial(s) that no TreeCVObjective "
                f"scored (trial #{foreign[0].number} searched: {names})"
            ],
        )


def study_identity(
    estimator, params, X, y, fold_plan: FoldPlan, scoring, report, data=None
) -> dict[str, Any]:
    """The JSON-safe study attributes that define a TreeCV study.

    ``data``, for data that lives elsewhere (a Dask cluster's blocks), is its
    rows, columns and content hash taken there: ``X`` is not read here.
    """
    searched = set(params) if isinstance(params, Mapping) else set()
    fixed = {
        name: _plain(value)
        for name, value in sorted(estimator.get_params(deep=True).items())
        if name not in searched and not hasattr(value, "get_params")
    }
    if isinstance(params, Mapping):
        # The repr names the kind and every setting, e.g.
        # "FloatDistribution(high=0.1, log=True, low=1e-05, step=None)".
        space: Any = {name: repr(dist) for name, dist in sorted(params.items())}
    else:
        space = f"callable {_qualname(params)}"
    if scoring is None:
        scoring_name = "score"
    elif isinstance(scoring, str):
        scoring_name = scoring
    else:
        scoring_name = f"callable {_qualname(scoring)}"
    if data is None:
        n_samples = X.shape[0]
        n_features = X.shape[1] if len(X.shape) > 1 else 1
        data = n_samples, n_features, _data_hash(X, y)
    n_samples, n_features, data_hash = data
    folds = (
        f"{fold_plan.n_splits} folds, {fold_plan.order} order, "
        f"hash {_fold_plan_hash(fold_plan)}"
    )
    return {
        "treecv_learner": _learner_name(estimator),
        "treecv_learner_params": fixed,
        "treecv_data": f"{n_samples}x{n_features}, hash {data_hash}",
        "treecv_folds": folds,
        "treecv_scoring": scoring_name,
        "treecv_search_space": space,
        "treecv_report": "none" if report is None else str(report),
    }


def _learner_name(estimator) -> str:
    cls = type(estimator)
    module = cls.__module__
    # The public module: sklearn.linear_model, not sklearn.linear_model._sgd.
    parts = module.split(".")
    while len(parts) > 1 and parts[-1].startswith("_"):
        parts.pop()
    public = ".".join(parts)
    try:
        import importlib

        if getattr(importlib.import_module(public), cls.__name__, None) is cls:
            module = public
    except ImportError:
        pass
    return f"{module}.{cls.__qualname__}"


def _qualname(obj) -> str:
    name = getattr(obj, "__qualname__", None) or type(obj).__qualname__
    return f"{getattr(obj, '__module__', None) or type(obj).__module__}.{name}"


def _plain(value) -> Any:
    """A JSON-safe value that is the same in every process for the same input."""
    if isinstance(value, np.generic):
        value = value.item()
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=repr)}
    if isinstance(value, np.ndarray):
        return f"array{value.shape} hash {_digest(value)}"
    if callable(value) and hasattr(value, "__qualname__"):
        return f"callable {_qualname(value)}"
    text = repr(value)
    # A default repr names a memory address, which differs between processes.
    return f"{type(value).__qualname__} object" if " at 0x" in text else text


def _canonical(value) -> str:
    return json.dumps(value, sort_keys=True)


def _digest(*arrays) -> str:
    h = hashlib.blake2b(digest_size=8)
    for array in arrays:
        array = np.ascontiguousarray(array)
        if array.dtype == object:
            array = np.asarray([str(v) for v in array.ravel()])
        h.update(f"{array.dtype.str}{array.shape}|".encode())
        h.update(array.view(np.uint8).ravel())
    return h.hexdigest()


def _data_hash(X, y) -> str:
    import scipy.sparse as sp

    y = np.zeros(0) if y is None else np.asarray(y)
    if sp.issparse(X):
        X = X.tocsr()
        return _digest(np.asarray(X.shape), X.data, X.indices, X.indptr, y)
    return _digest(np.asarray(X), y)


def _fold_plan_hash(plan: FoldPlan) -> str:
    return _digest(
        plan.sample_order,
        plan.bounds,
        np.asarray(plan.leaf_order),
        np.asarray([-1 if plan.seed is None else plan.seed], dtype=np.float64),
    )


def _describe_change(key: str, recorded, current) -> str:
    what = IDENTITY.get(key, key)
    if isinstance(recorded, dict) and isinstance(current, dict):
        names = sorted(set(recorded) | set(current))
        diffs = [
            f"{name} {_short(recorded.get(name, '(none)'))} -> "
            f"{_short(current.get(name, '(none)'))}"
            for name in names
            if _canonical(recorded.get(name)) != _canonical(current.get(name))
        ]
        return f"{what}: {', '.join(diffs)}"
    return f"{what}: recorded {_short(recorded)}, now {_short(current)}"


def _short(value, limit: int = 80) -> str:
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 3] + "..."
