"""One declaration of the scalers our engines fit per fold (``utils/_scalers.py``).

The native tree, the streaming batch kernels, the exact backend and the SVM's
alpha seeding each keep a scaler in front of their learner; they recognise
the same scalers (exact classes, passthrough steps skipped) and name a
refused step the same way.
"""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.linear_model import Ridge
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    MaxAbsScaler,
    MinMaxScaler,
    Normalizer,
    RobustScaler,
    StandardScaler,
)
from sklearn.svm import SVC

from sklearn_ext.linear_model import PegasosClassifier
from sklearn_ext.model_selection import (
    ExactStatisticsBackend,
    NativeTreeBackend,
    StreamingPipeline,
)
from sklearn_ext.model_selection._sgd_stream import batch_kernel
from sklearn_ext.svm import AlphaSeedingBackend
from sklearn_ext.utils._scalers import (
    SCALERS,
    is_passthrough,
    is_scaler,
    scaler_refusal,
    setting_refusal,
    split_scaled,
)


class MyScaler(StandardScaler):
    """A user's subclass: it may override fit or transform."""


# -- the declaration -----------------------------------------------------------------
def test_the_scalers_are_the_three_exact_classes():
    assert SCALERS == (StandardScaler, MinMaxScaler, MaxAbsScaler)
    for scaler in SCALERS:
        assert is_scaler(scaler())
    for step in (MyScaler(), RobustScaler(), Normalizer(), "passthrough", None):
        assert not is_scaler(step)


def test_passthrough_is_the_string_or_none():
    assert is_passthrough("passthrough") and is_passthrough(None)
    for step in ("drop", "Passthrough", StandardScaler(), 0):
        assert not is_passthrough(step)


@pytest.mark.parametrize(
    "steps, split",
    [
        ([("s", StandardScaler()), ("r", Ridge())], ("s", "r")),
        (
            [("a", "passthrough"), ("s", MaxAbsScaler()), ("b", None), ("r", Ridge())],
            ("s", "r"),
        ),
        ([("r", Ridge())], (None, "r")),
        ([("a", None), ("r", Ridge())], (None, "r")),
        ([("s", StandardScaler()), ("r", "passthrough")], None),
        ([("s", MyScaler()), ("r", Ridge())], None),
        ([("s", RobustScaler()), ("r", Ridge())], None),
        ([("a", StandardScaler()), ("b", MinMaxScaler()), ("r", Ridge())], None),
    ],
    ids=[
        "scaler",
        "passthrough-skipped",
        "learner-alone",
        "none-skipped",
        "passthrough-learner",
        "subclass",
        "other-scaler",
        "two-scalers",
    ],
)
def test_split_skips_passthrough_and_recognises_exact_classes(steps, split):
    parts = split_scaled(Pipeline(steps))
    if split is None:
        assert parts is None
        return
    scaler, learner = parts
    assert (None if scaler is None else scaler[0], learner[0]) == split
    named = dict(steps)
    assert scaler is None or scaler[1] is named[scaler[0]]
    assert learner[1] is named[learner[0]]


def test_split_refuses_what_is_not_a_plain_pipeline():
    assert split_scaled(Ridge()) is None
    assert split_scaled(Pipeline([])) is None
    routed = Pipeline(
        [("s", StandardScaler()), ("r", Ridge())], transform_input=["sample_weight"]
    )
    assert split_scaled(routed) is None
    assert "transform_input=['sample_weight']" in scaler_refusal(routed, "E")


@pytest.mark.parametrize(
    "pipeline, words",
    [
        (
            make_pipeline(MyScaler(), Ridge()),
            "its step 'myscaler' (MyScaler) subclasses StandardScaler, and E fits "
            "per fold only the exact classes",
        ),
        (
            make_pipeline(RobustScaler(), Ridge()),
            "its step 'robustscaler' (RobustScaler) is not a scaler E fits per fold "
            "(StandardScaler, MinMaxScaler or MaxAbsScaler)",
        ),
        (
            make_pipeline(StandardScaler(), MinMaxScaler(), Ridge()),
            "its step 'minmaxscaler' (MinMaxScaler) follows another scaler; E fits "
            "one scaler per fold",
        ),
        (
            Pipeline([("s", StandardScaler()), ("r", "passthrough")]),
            "the pipeline has no final estimator",
        ),
    ],
    ids=["subclass", "other", "two-scalers", "no-learner"],
)
def test_a_refusal_names_the_step_and_its_class(pipeline, words):
    assert scaler_refusal(pipeline, "E").startswith(words)


def test_chained_scalers_and_passthrough_are_not_refused():
    chained = make_pipeline(StandardScaler(), "passthrough", MinMaxScaler(), Ridge())
    assert scaler_refusal(chained, "E", chained=True) is None
    assert scaler_refusal(make_pipeline(None, Ridge()), "E") is None
    assert scaler_refusal(make_pipeline(MaxAbsScaler(), Ridge()), "E") is None


def test_a_setting_refusal_names_step_class_and_value():
    words = setting_refusal("scale", MinMaxScaler(), "feature_range=(1, 0)", "E")
    assert words == (
        "its step 'scale' (MinMaxScaler) has feature_range=(1, 0), which E does not run"
    )


# -- the four engines agree ----------------------------------------------------------
X = np.random.RandomState(0).randn(60, 4) * [1.0, 10.0, 100.0, 0.1]
Y = (X[:, 0] > 0).astype(int)


def _native(front) -> bool:
    pipeline = Pipeline([*front, ("learner", PegasosClassifier())])
    return (
        NativeTreeBackend.accepts(pipeline)
        and NativeTreeBackend().refusal(pipeline, X, Y) is None
    )


def _streaming(front) -> bool:
    # The kernel judges a stream after its first batch.
    stream = StreamingPipeline([*front, ("learner", PegasosClassifier())])
    stream.partial_fit(X[:20], Y[:20], classes=[0, 1])
    return batch_kernel(stream) is not None


def _exact(front) -> bool:
    pipeline = Pipeline([*front, ("learner", Ridge())])
    return (
        ExactStatisticsBackend.accepts(pipeline)
        and ExactStatisticsBackend().refusal(pipeline, X, Y.astype(float)) is None
    )


def _svm(front) -> bool:
    pipeline = Pipeline([*front, ("learner", SVC())])
    return (
        AlphaSeedingBackend.accepts(pipeline)
        and AlphaSeedingBackend().refusal(pipeline, X, Y) is None
    )


ENGINES = {"native": _native, "streaming": _streaming, "exact": _exact, "svm": _svm}


@pytest.mark.parametrize(
    "front, kept",
    [
        ([("s", StandardScaler())], True),
        ([("s", MinMaxScaler())], True),
        ([("s", MaxAbsScaler())], True),
        ([("a", "passthrough"), ("s", StandardScaler()), ("b", None)], True),
        ([("a", None), ("s", MinMaxScaler(feature_range=(-1, 1)))], True),
        ([("s", MyScaler())], False),
        ([("s", Normalizer())], False),
        # The SVM fits its scalers themselves, one after another, on each
        # fold's rows: a chain of per-feature maps is one. The other engines
        # compute one scaler's statistics (running or per chunk) themselves.
        ([("a", StandardScaler()), ("b", MinMaxScaler())], {"svm"}),
    ],
    ids=[
        "standard",
        "minmax",
        "maxabs",
        "passthrough-around",
        "none-before",
        "subclass",
        "other-step",
        "two-scalers",
    ],
)
@pytest.mark.parametrize("engine", list(ENGINES))
def test_the_engines_keep_the_same_scalers(engine, front, kept):
    expected = engine in kept if isinstance(kept, set) else kept
    assert ENGINES[engine](front) is expected


def test_exact_and_svm_name_a_subclass_alike():
    # The native tree and the streaming kernel do not refuse: they leave such a
    # pipeline to the Python tree, which calls the subclass's own methods.
    exact = make_pipeline(MyScaler(), Ridge())
    svm = make_pipeline(MyScaler(), SVC())
    exact_reason = ExactStatisticsBackend().refusal(exact, X, Y.astype(float))
    svm_reason = AlphaSeedingBackend().refusal(svm, X, Y)
    words = "its step 'myscaler' (MyScaler) subclasses StandardScaler, and {} fits "
    words += "per fold only the exact classes"
    assert exact_reason.startswith(words.format("the exact backend"))
    assert svm_reason.startswith(words.format("the alpha-seeding backend"))
