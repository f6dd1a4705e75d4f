"""What the command line puts before a learner, and how it cuts the folds.

A built-in learner that wants scaled features gets a ``StandardScaler`` before
it (a scikit-learn pipeline); a CSV file with text columns gets a
``ColumnTransformer`` that one-hot encodes them and scales the numeric ones.
The pipeline is cross-validated as a whole, so every fold's scaler and encoder
learn from that fold's training rows only (the tree streams them with the
learner; see ``docs/treecv.md``, "Pipelines through the tree").
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from optuna.trial import BaseTrial

__all__ = [
    "PREPROCESS_MODES",
    "Prepared",
    "describe_steps",
    "final_step",
    "make_splitter",
    "prepare",
    "preprocessing_line",
    "step_names",
    "step_space",
    "text_columns",
]

#: Values of ``--preprocess``: the learner's default, always scale, nothing.
PREPROCESS_MODES = ("auto", "scale", "none")


@dataclass(frozen=True)
class Prepared:
    """A learner with the preprocessing the command line chose for it.

    Attributes
    ----------
    estimator : estimator object
        The learner itself, or a ``Pipeline`` ending in it.
    step : str or None
        The learner's step name in the pipeline (``None`` for the learner alone):
        its own parameter ``alpha`` is the pipeline's ``<step>__alpha``.
    words : str
        What was done, for the output, e.g. ``"StandardScaler, then SGDClassifier"``.
    """

    estimator: Any
    step: str | None
    words: str


def text_columns(X) -> list[int]:
    """The columns of ``X`` that hold text (an object array read from a CSV)."""
    if getattr(X, "dtype", None) is None or X.dtype.kind != "O":
        return []
    return [j for j in range(X.shape[1]) if any(isinstance(v, str) for v in X[:, j])]


def prepare(
    learner,
    X,
    mode: str,
    *,
    scales: bool,
    feature_names: list[str] | None = None,
) -> Prepared:
    """Put the preprocessing ``mode`` asks for before ``learner``.

    Parameters
    ----------
    learner : estimator object
        The learner (not fitted).
    X : array-like or sparse matrix
        The features; an object array holds the text columns of a CSV file.
    mode : {"auto", "scale", "none"}
        ``"auto"`` scales when ``scales`` is true, ``"scale"`` always, ``"none"``
        never; text columns are one-hot encoded unless ``mode`` is ``"none"``.
    scales : bool
        Whether the learner wants scaled features (its registry entry says).
    feature_names : list of str, default=None
        Column names, for the words shown.

    Returns
    -------
    Prepared
    """
    from scipy import sparse
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    text = text_columns(X)
    scale = mode == "scale" or (mode == "auto" and scales)
    name = type(learner).__name__
    if mode == "none" or not (scale or text):
        why = "--preprocess none" if mode == "none" else f"{name} takes them as given"
        return Prepared(learner, None, f"none ({why})")
    if text:
        first, words = _encoder(X, text, scale, feature_names)
    else:
        # Centering would fill a sparse matrix; scaling alone keeps it sparse.
        first = StandardScaler(with_mean=not sparse.issparse(X))
        words = "StandardScaler"
    pipeline = make_pipeline(first, learner)
    return Prepared(pipeline, pipeline.steps[-1][0], f"{words}, then {name}")


def _encoder(X, text: list[int], scale: bool, feature_names: list[str] | None):
    """A ColumnTransformer that one-hot encodes ``text`` and scales the rest."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    numeric = [j for j in range(X.shape[1]) if j not in text]
    names = feature_names or [f"column {j}" for j in range(X.shape[1])]
    # The categories are fixed from all rows up front, as the classes are, so
    # that every fold's encoder (and the final model's) has the same columns;
    # then the encoder learns nothing and streams in any regime.
    categories = [np.unique(X[:, j].astype(str)) for j in text]
    encoded = ", ".join(
        f"{names[j]!r} ({len(c)} categories)"
        for j, c in zip(text, categories, strict=True)
    )
    # New rows of a saved model with an unseen category encode it as zeros.
    encoder = OneHotEncoder(categories=categories, handle_unknown="ignore")
    parts: list = [("onehot", encoder, text)]
    words = f"one-hot encoding of the text column(s) {encoded}"
    if numeric:
        # A scaler that neither centers nor scales turns the object array's
        # numbers into floats, and streams like the other steps.
        scaler = StandardScaler(with_mean=scale, with_std=scale)
        parts.append(("scale" if scale else "numeric", scaler, numeric))
        what = "StandardScaler on" if scale else "as given:"
        words += f" and {what} the {len(numeric)} numeric column(s)"
    return ColumnTransformer(parts), f"a ColumnTransformer ({words})"


def step_names(names: Mapping[str, Any], prepared: Prepared) -> dict[str, Any]:
    """``names`` with the learner's own parameter names made the pipeline's.

    ``{"alpha": ...}`` becomes ``{"sgdclassifier__alpha": ...}``; a name that is
    not the learner's (``standardscaler__with_mean``) is kept as given.
    """
    if prepared.step is None:
        return dict(names)
    own = final_step(prepared.estimator).get_params()
    return {
        (f"{prepared.step}__{name}" if name in own else name): value
        for name, value in names.items()
    }


def step_space(space, prepared: Prepared):
    """The search space of the learner, for the pipeline ``prepared`` built.

    A dict maps its names with :func:`step_names`; a callable ``trial -> dict``
    is wrapped so that the dict it returns is mapped the same way (the trial's
    own parameter names stay the learner's).
    """
    if prepared.step is None:
        return space
    if isinstance(space, Mapping):
        return step_names(space, prepared)
    return _StepSpace(space, prepared)


class _StepSpace:
    """A ``trial -> dict`` space whose names are mapped to the learner's step."""

    def __init__(self, space: Callable[[BaseTrial], dict], prepared: Prepared):
        self.space = space
        self.prepared = prepared
        # The study records a callable space by this name.
        self.__qualname__ = getattr(space, "__qualname__", type(space).__qualname__)

    def __call__(self, trial: BaseTrial) -> dict[str, Any]:
        return step_names(self.space(trial), self.prepared)


def final_step(estimator):
    """The learner at the end of a pipeline (or of a ``TreeCVEstimator``)."""
    inner = getattr(estimator, "estimator", None)
    if inner is not None and hasattr(inner, "fit"):
        estimator = inner
    steps = getattr(estimator, "steps", None)
    return steps[-1][1] if steps else estimator


def describe_steps(estimator) -> str:
    """A pipeline's steps by class, ``"StandardScaler, then SGDClassifier"``."""
    steps = getattr(estimator, "steps", None)
    if not steps:
        return type(estimator).__name__
    names = [type(step).__name__ for _, step in steps]
    return ", then ".join([", ".join(names[:-1]), names[-1]])


def preprocessing_line(prepared: Prepared, folds: str, backend: str) -> str:
    """The header line that says what runs before the learner, and the folds.

    Parameters
    ----------
    prepared : Prepared
        The learner and its preprocessing.
    folds : str
        How the folds were cut (:func:`make_splitter`'s words).
    backend : str
        The backend that runs the CV, e.g. ``"python_tree"`` or ``"standard"``.
    """
    if prepared.step is None:
        return f"Preprocessing: {prepared.words}. Folds: {folds}."
    if backend == "standard":
        how = "standard CV fits each fold's whole pipeline on its training rows"
        if type(final_step(prepared.estimator)).__name__ in _SVMS:
            how += (
                " (alpha seeding keeps only per-feature scalers before the SVM, "
                "and scaling outside the folds would leak the held-out rows into "
                "them; --preprocess none runs alpha seeding on the features as "
                "given)"
            )
    elif _streams(backend):
        how = (
            f"the {backend} backend streams each fold's training rows through the "
            "pipeline, so its steps learn from those rows only"
        )
    else:
        how = (
            f"each fold's steps are what their fit on that fold's training rows "
            f"gives (the {backend} backend), so they learn from those rows only"
        )
    return (
        f"Preprocessing: {prepared.words}; {how}; --preprocess none turns it "
        f"off. Folds: {folds}."
    )


def _streams(backend: str) -> bool:
    """Whether ``backend``'s folds are one ordered pass (its declaration)."""
    from sklearn_ext.model_selection._choice import backend_class

    return backend_class(backend).scores == "one_pass"


#: Kernel SVMs whose fast backend (alpha seeding) takes per-feature scalers only.
_SVMS = ("AlphaSeededSVC", "SVC")


def make_splitter(estimator, y, n_splits: int, *, shuffle: bool, seed: int):
    """The command line's folds, and how they were cut, in words.

    A ``StratifiedTreeCVSplitter`` for a classifier whose every class has at
    least ``n_splits`` rows (as an int ``cv`` of ``tree_cross_validate``), else
    a ``TreeCVSplitter``; the rows are shuffled with ``seed`` unless
    ``shuffle`` is false (the file's order).
    """
    from sklearn.base import is_classifier, is_outlier_detector
    from sklearn.utils.multiclass import type_of_target

    from sklearn_ext import StratifiedTreeCVSplitter, TreeCVSplitter

    stratify = (is_classifier(estimator) or is_outlier_detector(estimator)) and (
        type_of_target(y) in ("binary", "multiclass")
        and np.min(np.unique(y, return_counts=True)[1]) >= n_splits
    )
    cls = StratifiedTreeCVSplitter if stratify else TreeCVSplitter
    kind = "stratified " if stratify else ""
    if shuffle:
        splitter = cls(n_splits, shuffle=True, random_state=seed)
        words = f"{n_splits} {kind}folds of rows shuffled with --seed {seed}"
    else:
        splitter = cls(n_splits)
        words = f"{n_splits} {kind}folds in the file's row order (--no-shuffle)"
    return splitter, words
