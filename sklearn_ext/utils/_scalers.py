"""The scikit-learn scalers our engines fit per fold, declared once.

Four engines keep a scaler in front of a learner instead of leaving the
pipeline to the standard backend: the native tree's kernel
(``sklearn_ext.model_selection._native_scaled``), the streaming batch kernels
(``sklearn_ext.model_selection._sgd_stream``), the exact backend
(``sklearn_ext.model_selection._exact._scaling``) and the SVM's alpha seeding
(``sklearn_ext.svm._scaled``). Each recognises the scalers here and nothing
else:

- the exact classes of :data:`SCALERS`, not their subclasses: the engines
  make a fold's scaler with their own arithmetic of its statistics (or, for
  the SVM, key its warm starts and seeds on it being a per-feature map), which
  is the class's ``fit`` and ``transform`` only while nobody overrides them;
- ``"passthrough"`` and ``None`` steps do nothing and are skipped;
- a pipeline that routes metadata through its steps (``transform_input``)
  is not split.

A refusal names the step, its class and what about it is refused
(:func:`step_words`), so that a fallback note tells the user which step to
change. The floor module: it imports no other ``sklearn_ext`` package.
"""

from __future__ import annotations

from typing import Any

from sklearn.pipeline import Pipeline
from sklearn.preprocessing import MaxAbsScaler, MinMaxScaler, StandardScaler

__all__ = [
    "SCALERS",
    "active_steps",
    "is_passthrough",
    "is_scaler",
    "scaler_refusal",
    "setting_refusal",
    "split_scaled",
    "step_words",
]

#: The scalers our engines fit per fold (exact classes).
SCALERS: tuple[type, ...] = (StandardScaler, MinMaxScaler, MaxAbsScaler)

_NAMES = "StandardScaler, MinMaxScaler or MaxAbsScaler"

Step = tuple[str, Any]


def is_passthrough(step) -> bool:
    """Whether a pipeline step does nothing: ``"passthrough"`` or ``None``.

    Examples
    --------
    >>> from sklearn_ext.utils._scalers import is_passthrough
    >>> is_passthrough("passthrough"), is_passthrough(None), is_passthrough("drop")
    (True, True, False)
    """
    return step is None or (isinstance(step, str) and step == "passthrough")


def is_scaler(step) -> bool:
    """Whether ``step`` is one of :data:`SCALERS` (the exact class, not a subclass).

    Examples
    --------
    >>> from sklearn.preprocessing import RobustScaler, StandardScaler
    >>> from sklearn_ext.utils._scalers import is_scaler
    >>> is_scaler(StandardScaler()), is_scaler(RobustScaler())
    (True, False)
    >>> is_scaler(type("MyScaler", (StandardScaler,), {})())
    False
    """
    return type(step) in SCALERS


def active_steps(steps) -> list[Step]:
    """The ``(name, step)`` pairs of ``steps`` that are not passthrough."""
    return [(name, step) for name, step in steps if not is_passthrough(step)]


def split_scaled(pipeline) -> tuple[Step | None, Step] | None:
    """``(scaler step or None, learner step)`` of a pipeline the engines run.

    The pipeline's steps, passthrough ones skipped, are one of
    :data:`SCALERS` and then the learner, or the learner alone (the scaler
    step is then ``None``). ``None`` for any other shape: not a
    :class:`~sklearn.pipeline.Pipeline`, a passthrough last step, another
    step in front, two scalers, ``transform_input`` set
    (:func:`scaler_refusal` says which). Each engine then judges the learner.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.pipeline import Pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_ext.utils._scalers import split_scaled
    >>> pipe = Pipeline(
    ...     [("skip", None), ("scale", StandardScaler()), ("ridge", Ridge())]
    ... )
    >>> split_scaled(pipe)
    (('scale', StandardScaler()), ('ridge', Ridge()))
    """
    if not isinstance(pipeline, Pipeline) or not pipeline.steps:
        return None
    if getattr(pipeline, "transform_input", None) is not None:
        return None
    steps = active_steps(pipeline.steps)
    if is_passthrough(pipeline.steps[-1][1]) or len(steps) > 2:
        return None
    if len(steps) == 1:
        return None, steps[0]
    if not is_scaler(steps[0][1]):
        return None
    return steps[0], steps[1]


def step_words(name: str, step) -> str:
    """``"its step 'name' (Class)"``: how a refusal names a pipeline step."""
    return f"its step {name!r} ({type(step).__name__})"


def setting_refusal(name: str, step, setting: str, engine: str) -> str:
    """A refusal of a recognised scaler's parameter ``setting`` (``"k=v"``).

    Examples
    --------
    >>> from sklearn.preprocessing import StandardScaler
    >>> from sklearn_ext.utils._scalers import setting_refusal
    >>> print(setting_refusal("scale", StandardScaler(), "with_std=False", "X"))
    its step 'scale' (StandardScaler) has with_std=False, which X does not run
    """
    return f"{step_words(name, step)} has {setting}, which {engine} does not run"


def scaler_refusal(pipeline, engine: str, *, chained: bool = False) -> str | None:
    """Why ``engine`` does not fit ``pipeline``'s steps per fold, or ``None``.

    Every step before the last, passthrough ones skipped, must be one of
    :data:`SCALERS`; one at most unless ``chained`` (an engine that fits
    the scalers themselves, one after another). The reason names the step,
    its class and what is refused; ``engine`` is how it names the engine
    (``"the exact backend"``). The learner is left to the engine.

    Examples
    --------
    >>> from sklearn.decomposition import PCA
    >>> from sklearn.linear_model import Ridge
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn_ext.utils._scalers import scaler_refusal
    >>> print(scaler_refusal(make_pipeline(PCA(2), Ridge()), "X"))  # doctest: +ELLIPSIS
    its step 'pca' (PCA) is not a scaler X fits per fold (StandardScaler, ...)
    """
    steps = active_steps(pipeline.steps)
    if not steps or is_passthrough(pipeline.steps[-1][1]):
        return "the pipeline has no final estimator"
    transform_input = getattr(pipeline, "transform_input", None)
    if transform_input is not None:
        return (
            f"the pipeline has transform_input={transform_input!r} (metadata "
            f"routed through its steps), which {engine} does not run"
        )
    for position, (name, step) in enumerate(steps[:-1]):
        what = step_words(name, step)
        if isinstance(step, SCALERS) and not is_scaler(step):
            base = next(c for c in SCALERS if isinstance(step, c)).__name__
            return (
                f"{what} subclasses {base}, and {engine} fits per fold only the "
                f"exact classes ({_NAMES}): a subclass may change fit or transform"
            )
        if not is_scaler(step):
            return f"{what} is not a scaler {engine} fits per fold ({_NAMES})"
        if position > 0 and not chained:
            return f"{what} follows another scaler; {engine} fits one scaler per fold"
    return None
