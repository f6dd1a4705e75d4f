"""The command line's preprocessing and shuffled folds (issue 31, item 5)."""

from __future__ import annotations

import re

import joblib
import numpy as np
import optuna
import pytest
from sklearn.base import clone, is_classifier
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from optuna_treecv._cli import main
from optuna_treecv._data import load_data, load_dataset
from optuna_treecv._learners import make_learner
from sklearn_ext import StratifiedTreeCVSplitter, TreeCVSplitter, tree_cross_validate

pytestmark = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def tune(tmp_path, *extra, name="s"):
    storage = f"sqlite:///{tmp_path / 'cli.db'}"
    argv = ["tune", *extra, "--storage", storage, "--study-name", name]
    return argv + ["--no-progress-bar", "--no-baseline"]


def best_trial(tmp_path, name="s"):
    storage = f"sqlite:///{tmp_path / 'cli.db'}"
    return optuna.load_study(study_name=name, storage=storage).best_trial


@pytest.fixture(scope="module")
def shop_csv(tmp_path_factory):
    """A CSV with two text columns, two numeric ones and a text label."""
    rng = np.random.default_rng(0)
    path = tmp_path_factory.mktemp("data") / "shop.csv"
    lines = ["age,city,income,plan,label"]
    for _ in range(240):
        city, plan = rng.choice(["paris", "oslo", "rome"]), rng.choice(["basic", "pro"])
        age, income = rng.integers(18, 80), rng.normal(50000, 15000)
        score = 1.5 * (city == "oslo") + (plan == "pro") - (age - 50) / 20
        label = "yes" if score + rng.normal() > 0.5 else "no"
        lines.append(f"{age},{city},{income:.0f},{plan},{label}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    "learner, dataset, n_trials, backend",
    [
        ("svc", "breast_cancer", 4, "alpha_seeding"),
        ("pegasos", "breast_cancer", 5, "native_tree"),  # the scaler in its state
        ("sgd-regressor", "diabetes", 15, "python_tree"),
    ],
)
def test_tune_reaches_the_scaled_default(
    tmp_path, capsys, learner, dataset, n_trials, backend
):
    # Unscaled, these scored at chance: svc 0.629, pegasos 0.613, R^2 -0.03.
    code, out, err = run(
        tune(tmp_path, learner, dataset, "--cv", "5", "--n-trials", n_trials), capsys
    )
    assert code == 0, err
    X, y = load_dataset(dataset)
    default = make_learner(learner, random_state=0)[0]
    splitter = StratifiedTreeCVSplitter if is_classifier(default) else TreeCVSplitter
    folds = list(splitter(5, shuffle=True, random_state=0).split(X, y))
    scaled = make_pipeline(StandardScaler(), default)
    reference = cross_val_score(scaled, X, y, cv=folds).mean()
    best = best_trial(tmp_path)
    assert best.value >= reference - 0.02, (best.value, reference)
    assert best.user_attrs["cv"]["backend"] == backend
    step = type(default).__name__.lower()
    assert all(name.startswith(f"{step}__") for name in best.params)
    header = out.splitlines()[1]
    name = type(default).__name__
    assert header.startswith(f"Preprocessing: StandardScaler, then {name};")
    assert "rows shuffled with --seed 0" in header
    if learner == "svc":  # Each fold's own scaling, under alpha seeding.
        assert "fit on that fold's training rows gives (the alpha_seeding" in header


def test_preprocess_none_no_shuffle_is_the_old_behaviour(capsys):
    code, out, _ = run(
        ["cv", "pegasos", "breast_cancer", "--preprocess", "none", "--no-shuffle"],
        capsys,
    )
    assert code == 0
    assert (
        "Preprocessing: none (--preprocess none). Folds: 5 stratified folds in "
        "the file's row order (--no-shuffle)." in out
    )
    X, y = load_dataset("breast_cancer")
    bare = make_learner("pegasos", random_state=0)[0]
    old = tree_cross_validate(
        bare, X, y, cv=5, return_run_info=True
    )  # An int cv, as the CLI gave it.
    row = next(line for line in out.splitlines() if line.startswith(old["backend"]))
    assert float(row.split()[1]) == pytest.approx(old["test_score"].mean(), abs=6e-5)


def test_folds_are_shuffled_by_seed_unless_no_shuffle(tmp_path, capsys):
    # Sorted by the target, unshuffled folds hold out whole ranges of it.
    X, y = load_dataset("diabetes")
    order = np.argsort(y, kind="stable")
    path = tmp_path / "sorted.npz"
    np.savez(path, X=X[order], y=y[order])
    means = {}
    for flags in ([], ["--no-shuffle"], ["--seed", "1"]):
        argv = ["cv", "sgd-regressor", path, "--set", "average=True", "--set",
                "eta0=0.1", *flags]  # fmt: skip
        code, out, _ = run(argv, capsys)
        assert code == 0
        row = next(line for line in out.splitlines() if line.startswith("python_"))
        means[" ".join(flags)] = float(row.split()[1])
    assert means[""] > 0.4 and means["--seed 1"] > 0.4
    assert means[""] != means["--seed 1"]  # Other folds.
    assert means["--no-shuffle"] < 0


def test_step_names_for_set_space_and_import_paths(tmp_path, capsys):
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "2",
                "--space", "alpha=float:1e-5:1e-2:log", "--set", "loss=log_loss",
                "--set", "standardscaler__with_mean=False")  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 0, err
    assert set(best_trial(tmp_path).params) == {"sgdclassifier__alpha"}
    # A module:Class learner keeps its features unless asked, and its names.
    path = tmp_path / "m.joblib"
    argv = tune(tmp_path, "sklearn.linear_model:SGDClassifier", "iris",
                "--cv", "3", "--n-trials", "2", "--space",
                "alpha=float:1e-5:1e-2:log", "--preprocess", "scale",
                "--backend", "treecv",  # the streaming pipeline, kept
                "--save-model", path, name="import-path")  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    model = joblib.load(path)
    assert [type(s).__name__ for s in model.estimator] == [
        "StandardScaler",
        "SGDClassifier",
    ]
    assert set(best_trial(tmp_path, "import-path").params) == {"sgdclassifier__alpha"}
    assert (
        model.estimator[-1].alpha
        == best_trial(tmp_path, "import-path").params["sgdclassifier__alpha"]
    )
    code, out, err = run(
        ["cv", "sklearn.linear_model:SGDClassifier", "iris", "--set", "alpah=1"],
        capsys,
    )
    assert code == 2 and "bad --set ['alpah']: not parameters of SGDClassifier" in err


def test_naive_bayes_takes_its_features_as_given(capsys):
    code, out, _ = run(["cv", "multinomial-nb", "digits"], capsys)
    assert code == 0
    assert "Preprocessing: none (MultinomialNB takes them as given)." in out
    assert re.search(r"^exact ", out, re.M)


def test_csv_with_text_columns_end_to_end(tmp_path, capsys, shop_csv):
    code, out, err = run(["cv", "sgd", shop_csv, "--cv", "4"], capsys)
    assert code == 0, err
    assert (
        "Preprocessing: a ColumnTransformer (one-hot encoding of the text column(s) "
        "'city' (3 categories), 'plan' (2 categories) and StandardScaler on the 2 "
        "numeric column(s)), then SGDClassifier" in out
    )
    assert re.search(r"^python_tree ", out, re.M)
    path = tmp_path / "shop.joblib"
    argv = tune(tmp_path, "logistic-sgd", shop_csv, "--cv", "4", "--n-trials", "3",
                "--save-model", path)  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "around the pipeline ColumnTransformer, then LogisticSGDClassifier" in out
    model = joblib.load(path)
    X, y, names = load_data(str(shop_csv), text=True)
    assert names == ["age", "city", "income", "plan"]
    assert X.dtype == object and isinstance(X[0, 1], str)
    # The saved model predicts on the CSV's rows, as pandas reads them too.
    pd = pytest.importorskip("pandas")
    rows = pd.read_csv(shop_csv).drop(columns="label").to_numpy(dtype=object)
    np.testing.assert_array_equal(model.predict(rows), model.predict(X))
    assert np.mean(model.predict(X) == y) > 0.7
    # Scored = returned: its CV on the study's folds gives the best trial's value.
    folds = StratifiedTreeCVSplitter(4, shuffle=True, random_state=0).split(X, y)
    scores = cross_val_score(clone(model), X, y, cv=list(folds))
    assert abs(scores.mean() - best_trial(tmp_path).value) <= 1e-12
    # An unseen category encodes as zeros.
    rows[0, 1] = "lima"
    assert model.predict(rows[:1])[0] in ("yes", "no")


def test_csv_text_with_preprocess_none_is_refused(capsys, shop_csv):
    code, _, err = run(["cv", "sgd", shop_csv, "--preprocess", "none"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert "feature column 'city' (column 2), line 2: " in err
    assert "text columns are one-hot encoded unless --preprocess none" in err


def test_a_study_of_the_learner_alone_is_told_how_to_resume(tmp_path, capsys):
    old = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "1")
    code, _, err = run(old + ["--preprocess", "none", "--no-shuffle"], capsys)
    assert code == 0, err
    code, _, err = run(old, capsys)  # The defaults: a pipeline, shuffled folds.
    assert code == 2 and err.count("\n") == 1
    assert "now sklearn.pipeline.Pipeline" in err
    assert err.rstrip().endswith("resumes with --preprocess none --no-shuffle)")
