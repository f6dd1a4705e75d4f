"""The optuna-treecv command line: tune, cv and one-line errors (exit code 2)."""

from __future__ import annotations

import contextlib
import re
import subprocess
import sys
import warnings

import numpy as np
import optuna
import pytest
from sklearn.datasets import dump_svmlight_file, load_iris

from optuna_treecv._cli import main
from optuna_treecv._data import load_dataset
from optuna_treecv._learners import LEARNERS, make_learner
from sklearn_ext.model_selection import TreeCVRegimeWarning, choose_backend

# Most runs tune SGDClassifier or MLPClassifier through the tree on purpose: their
# regime note is expected (test_a_whole_run_says_the_regime_note_once checks it).
pytestmark = pytest.mark.filterwarnings("ignore::sklearn_ext.TreeCVRegimeWarning")


@pytest.fixture(scope="module")
def iris_files(tmp_path_factory):
    X, y = load_iris(return_X_y=True)
    root = tmp_path_factory.mktemp("data")
    np.savez(root / "iris.npz", X=X, y=y)
    with open(root / "iris.csv", "w") as f:
        f.write("a,b,c,d,species\n")
        for row, label in zip(X, y, strict=True):
            f.write(",".join(map(str, row)) + f",{'xyz'[label]}\n")
    dump_svmlight_file(X, y, str(root / "iris.svm"))
    return root


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_tune_writes_a_study_and_summarizes(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'cli.db'}"
    code, out, err = run(
        [
            "tune",
            "sgd",
            "iris",
            "--cv",
            "4",
            "--n-trials",
            "4",
            "--storage",
            storage,
            "--study-name",
            "s",
            "--pruner",
            "median",
            "--backend",
            "treecv",  # one pass kept: the time line compares it
            "--no-progress-bar",
        ],
        capsys,
    )
    assert code == 0, err
    assert "4 trials" in out and "Best trial #" in out
    assert "Time: one standard 4-fold CV of the best parameters took" in out
    assert f"optuna-dashboard {storage}" in out
    study = optuna.load_study(study_name="s", storage=storage)
    assert len(study.trials) == 4
    assert study.best_trial.user_attrs["cv"]["backend"] == "python_tree"


@pytest.mark.parametrize("fmt", ["npz", "csv", "svm"])
def test_cv_reads_files(iris_files, fmt, capsys):
    extra = ["--target", "species"] if fmt == "csv" else []
    code, out, err = run(
        ["cv", "sgd", iris_files / f"iris.{fmt}", "--cv", "3", *extra],
        capsys,
    )
    assert code == 0, err
    assert (
        "python_tree" in out
        and "standard" in out
        and "time than standard CV of the same models" in out
    )


def test_tune_journal_storage_and_wilcoxon(tmp_path, capsys):
    code, out, err = run(
        [
            "tune",
            "multinomial-nb",
            "digits",
            "--cv",
            "3",
            "--n-trials",
            "2",
            "--storage",
            f"journal:{tmp_path / 'j.log'}",
            "--pruner",
            "wilcoxon",
            "--no-progress-bar",
            "--no-baseline",
            "--set",
            "fit_prior=False",
        ],
        capsys,
    )
    assert code == 0, err
    assert (tmp_path / "j.log").stat().st_size > 0


def test_tune_mlp_with_timeout_only(tmp_path, capsys):
    code, out, err = run(
        ["tune", "mlp", "iris", "--cv", "3", "--timeout", "1", "--storage",
         f"sqlite:///{tmp_path / 'm.db'}", "--no-progress-bar", "--set",
         "max_iter=20"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert "Best trial #" in out and "n_units" in out


def test_import_path_learner_with_space(tmp_path, capsys):
    code, out, err = run(
        [
            "tune",
            "sklearn.linear_model:SGDClassifier",
            "iris",
            "--cv",
            "3",
            "--n-trials",
            "1",
            "--space",
            "alpha=float:1e-5:1e-1:log",
            "--space",
            "loss=cat:hinge,log_loss",
            "--storage",
            f"sqlite:///{tmp_path / 'x.db'}",
            "--no-progress-bar",
            "--no-baseline",
        ],
        capsys,
    )
    assert code == 0, err


@pytest.mark.parametrize(
    "argv, match",
    [
        (["cv", "forest", "iris"], "unknown learner 'forest'"),
        (["cv", "nosuchmodule:Foo", "iris"], "cannot import 'nosuchmodule'"),
        (["cv", "sgd", "no-such-data"], "neither a file nor a bundled"),
        (["cv", "sgd", "covtype"], "not bundled with scikit-learn"),
        (["cv", "sgd", "iris", "--set", "alpah=1"], r"bad --set \['alpah'\]"),
        (["cv", "sgd", "iris", "--set", "alpha"], "expected NAME=VALUE"),
        (["cv", "sgd", "iris", "--cv", "1"], "--cv must be at least 2"),
        (["cv", "sgd", "iris", "--scoring", "acuracy"], "Invalid scoring"),
        (
            ["tune", "sgd", "iris", "--storage", "sqlite:////no/such/dir/x.db"],
            "cannot open storage",
        ),
        (["tune", "sgd", "iris", "--storage", "nosuchdb://x"], "cannot open storage"),
        (["tune", "sgd", "iris", "--storage", "just-a-name"], "cannot open storage"),
        (["tune", "sgd", "iris", "--space", "alpha=float:1"], "bad --space"),
        (
            ["tune", "sgd", "iris", "--space", "alpha=float:nan:1"],
            r"bad --space 'alpha=float:nan:1': LOW and HIGH must be finite .* nan",
        ),
        (
            ["tune", "sgd", "iris", "--space", "alpha=float:0:inf"],
            r"'alpha=float:0:inf': LOW and HIGH must be finite .* inf",
        ),
        (
            ["tune", "sgd", "iris", "--space", "alpha=float:-1e308:1e308"],
            "LOW and HIGH must be finite numbers less than 1.8e\\+308 apart",
        ),
        (
            ["tune", "sgd", "iris", "--space", "max_iter=int:1:" + "9" * 400],
            "bad --space 'max_iter=int:1:999",
        ),
        (
            ["tune", "sklearn.linear_model:SGDClassifier", "iris"],
            "no default search space",
        ),
        (["tune", "sgd", "iris", "--n-trials", "0"], "--n-trials must be at least 1"),
        (["tune", "sgd", "iris", "--timeout", "-1"], "--timeout must be positive"),
        (
            ["tune", "sgd", "iris", "--save-model", "no/such/dir/m.joblib"],
            "the folder 'no/such/dir' does not exist",
        ),
        (["tune", "sgd", "iris", "--save-model", "."], "'.' is a directory"),
    ],
)
def test_errors_are_one_line_exit_2(argv, match, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    code, out, err = run(argv, capsys)
    assert code == 2
    assert err.startswith("optuna-treecv: error: ")
    assert err.count("\n") == 1
    assert re.search(match, err), err


def test_every_trial_failing_is_a_clear_error(tmp_path, capsys):
    X = np.random.default_rng(0).normal(size=(60, 3))  # MultinomialNB needs X >= 0.
    np.savez(tmp_path / "neg.npz", X=X, y=np.arange(60) % 2)
    code, out, err = run(
        ["tune", "multinomial-nb", tmp_path / "neg.npz", "--cv", "3",
         "--n-trials", "2", "--storage", f"sqlite:///{tmp_path / 'f.db'}",
         "--no-progress-bar"],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert "every trial failed" in err and "Negative values" in err
    assert err.count("\n") == 1


def test_unreadable_files(tmp_path, capsys):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"not a zip")
    wrong_keys = tmp_path / "keys.npz"
    np.savez(wrong_keys, data=np.zeros(3))
    text = tmp_path / "t.csv"
    text.write_text("a,b\nx,1\ny,2\n")
    for path, match in [
        (bad, "cannot read dataset"),
        (wrong_keys, "needs arrays 'X' and 'y'"),
        (text, "feature columns must be numeric"),
        (tmp_path, "is a directory"),
    ]:
        # Text columns are read only where they would be one-hot encoded.
        code, _, err = run(["cv", "sgd", path, "--preprocess", "none"], capsys)
        assert code == 2 and match in err and err.count("\n") == 1, err


def test_bundled_and_registry():
    X, y = load_dataset("breast_cancer")
    assert X.shape == (569, 30)
    for name in LEARNERS:
        estimator, space = make_learner(name, random_state=0)
        # Every registered learner has a fast backend (exact statistics, a
        # tree or alpha seeding).
        assert choose_backend(estimator).name != "standard", name
        assert space, name


def test_console_entry_point():
    result = subprocess.run(
        [sys.executable, "-m", "optuna_treecv", "cv", "forest", "iris"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert result.stderr.startswith("optuna-treecv: error: unknown learner")


def test_a_whole_run_says_the_regime_note_once(tmp_path):
    # The trials and the closing time comparison both run the tree on SGD.
    result = subprocess.run(
        [sys.executable, "-m", "optuna_treecv", "tune", "sgd", "digits", "--cv",
         "3", "--n-trials", "3", "--storage", f"sqlite:///{tmp_path / 'w.db'}",
         "--no-progress-bar"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Time: " in result.stdout  # The comparison ran.
    # One clean line, in the command line's words.
    assert result.stderr.count("note: TreeCV scores") == 1, result.stderr
    assert "TreeCVRegimeWarning" not in result.stderr


def test_a_whole_run_says_the_order_note_once(tmp_path):
    # iris is stored sorted by class: the set-up says so, and the closing time
    # comparison, which runs the tree on the same rows, does not say it again.
    result = subprocess.run(
        [sys.executable, "-m", "optuna_treecv", "tune", "pegasos", "iris", "--cv",
         "8", "--n-trials", "3", "--storage", f"sqlite:///{tmp_path / 'o.db'}",
         "--no-progress-bar"],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "Time: " in result.stdout  # The comparison ran.
    said = result.stdout + result.stderr
    assert said.count("The rows are fed in an order related to y") == 1, said
    assert "TreeCVOrderWarning" not in said


def test_cv_runs_the_svm_through_alpha_seeding(capsys):
    argv = ["cv", "svc", "iris", "--cv", "3", "--set", "C=10", "--preprocess", "none"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "alpha_seeding" in out


@pytest.mark.parametrize(
    "learner, dataset", [("ridge", "diabetes"), ("lda", "breast_cancer")]
)
def test_cv_runs_scaled_statistics_learners_exact(learner, dataset, capsys):
    """``--preprocess auto`` scales them; each fold's scaler and learner come
    from the exact statistics, with standard CV's scores."""
    code, out, err = run(["cv", learner, dataset, "--cv", "4"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[1].startswith("Preprocessing: StandardScaler, then ")
    assert "(the exact backend), so they learn from those rows only" in lines[1]
    exact = next(line.split() for line in lines if line.startswith("exact "))
    standard = next(line.split() for line in lines if line.startswith("standard "))
    assert exact[1:3] == standard[1:3]  # mean and std, as printed
    assert "TreeCVFallbackWarning" not in err


# -- honest headers and summaries ----------------------------------------------------
def tune(tmp_path, *extra, storage=None, name="s"):
    storage = storage or f"sqlite:///{tmp_path / 'cli.db'}"
    return ["tune", *extra, "--storage", storage, "--study-name", name,
            "--no-progress-bar"]  # fmt: skip


def test_learner_without_partial_fit_runs_standard_cv_and_says_so(tmp_path, capsys):
    argv = tune(
        tmp_path, "sklearn.linear_model:LogisticRegression", "iris", "--cv", "3",
        "--n-trials", "3", "--space", "C=float:1e-2:10:log", "--set", "max_iter=1000",
    )  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    header = out.splitlines()[0]
    assert "standard 3-fold CV (TreeCV cannot run LogisticRegression)" in header
    assert "TreeCVFallbackWarning" not in err
    assert "3 complete" in out and "backend standard" in out
    assert "there is no TreeCV to compare" in out
    assert "saved" not in out


def test_ridge_runs_with_the_backend_the_resolver_picks(tmp_path, capsys):
    # The case (it died with KeyError: 'tree'): Ridge has no
    # partial_fit; the resolver gives it a backend, the summary compares that.
    argv = tune(
        tmp_path, "sklearn.linear_model:Ridge", "diabetes", "--cv", "3",
        "--n-trials", "3", "--space", "alpha=float:1e-3:10:log",
    )  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    from sklearn.linear_model import Ridge

    name = choose_backend(Ridge()).name
    assert f"backend {name}" in out and "Traceback" not in err
    if name != "standard":
        assert f"3-fold CV with the {name} backend" in out.splitlines()[0]
        assert f"one with {name}" in out


def test_backend_standard_header(tmp_path, capsys):
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "2",
                "--backend", "standard")  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "standard 3-fold CV (--backend standard)" in out.splitlines()[0]


def test_summary_never_claims_negative_or_absurd_savings(tmp_path, capsys):
    code, out, err = run(
        tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "5"), capsys
    )
    assert code == 0, err
    assert "3-fold CV with the python_tree backend" in out.splitlines()[0]
    assert "about -" not in out and "(-" not in out
    for ratio in re.findall(r"([\d.]+)x", out):
        assert 0.05 < float(ratio) < 100, out
    rows = re.search(r"by these (\d+) trials: ([\d,]+) \(standard CV of the same "
                     r"trials without pruning: ([\d,]+)", out)  # fmt: skip
    assert rows and int(rows.group(1)) == 5
    assert int(rows.group(3).replace(",", "")) == 5 * 150 * 2


def test_scoring_needing_predict_proba(tmp_path, capsys):
    # The learner as given cannot give probabilities: one error line.
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "2",
                "--scoring", "neg_log_loss")  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 2 and err.count("\n") == 1 and "predict_proba" in err
    # It can, but the space has losses that cannot: those trials fail, the
    # others complete, the summary says why.
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "8",
                "--scoring", "neg_log_loss", "--set", "loss=log_loss",
                "--space", "loss=cat:hinge,log_loss", "--no-baseline",
                name="mixed")  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "Best trial #" in out and "failed" in out and "predict_proba" in out
    # Only losses without it: one error line, exit 2, with a hint.
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "2",
                "--scoring", "neg_log_loss", "--set", "loss=log_loss",
                "--space", "loss=cat:hinge", name="hinge")  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 2 and err.count("\n") == 1
    assert "every trial failed" in err and "predict_proba" in err
    assert "--set loss=log_loss" in err
    code, out, err = run(["cv", "sgd", "iris", "--scoring", "neg_log_loss"], capsys)
    assert code == 2 and "predict_proba" in err and err.count("\n") == 1


def test_ctrl_c_prints_the_summary_and_exits_130(tmp_path, capsys, monkeypatch):
    from optuna_treecv._objective import TreeCVObjective

    call = TreeCVObjective.__call__
    seen = []

    def interrupted_third(self, trial):
        seen.append(trial.number)
        if len(seen) == 3:
            raise KeyboardInterrupt
        return call(self, trial)

    monkeypatch.setattr(TreeCVObjective, "__call__", interrupted_third)
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "10")
    code, out, err = run(argv, capsys)
    assert code == 130
    assert "Interrupted (Ctrl-C)" in out
    assert "3 trials in" in out and "2 complete" in out and "1 failed" in out
    assert "Best trial #" in out and "Traceback" not in out + err
    assert "Time:" not in out  # No baseline run after Ctrl-C.
    assert "Final model" not in out  # Nor a final model nobody asked to save.


# An MLP far from one pass is scored by its own fit ("auto"), whose small
# max_iter does not converge here: on purpose.
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("preprocess", ["auto", "none"])
@pytest.mark.parametrize("learner", ["sgd", "pegasos", "mlp"])
def test_saved_model_reproduces_the_best_trials_value(
    tmp_path, capsys, learner, preprocess
):
    # The CLI's final model is trained as the trials scored it: its standard
    # CV on the study's folds gives the best trial's value (issue 16), with
    # the default scaling (a pipeline, issue 31) or without.
    import joblib
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score

    from sklearn_ext import StratifiedTreeCVSplitter

    path = tmp_path / "model.joblib"
    argv = tune(tmp_path, learner, "iris", "--cv", "3", "--n-trials", "3",
                "--no-baseline", "--pruner", "none", "--save-model",
                path, "--preprocess", preprocess)  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path}/cli.db")
    best = study.best_trial
    assert f"Final model: trial #{best.number}'s parameters fitted on all 150 rows" in (
        out
    )
    assert f"Saved to {path}" in out
    model = joblib.load(path)
    assert model.optuna_trial_.number == best.number
    name = type(make_learner(learner)[0]).__name__
    if model.optuna_trial_.regime == "fit" and learner != "pegasos":
        # One pass was far from the learner's fit on iris: "auto" scored fit.
        assert "so --backend auto scored the learner's own fit" in out
        assert type(model).__name__ == ("Pipeline" if preprocess == "auto" else name)
    elif preprocess == "auto":  # The scaler streams with the learner.
        assert type(model).__name__ == "TreeCVEstimator"
        assert [type(s).__name__ for s in model.estimator] == ["StandardScaler", name]
        assert (
            f"a TreeCVEstimator around the pipeline StandardScaler, then {name}, not "
            "Pipeline.fit" in out
        )
    elif learner == "pegasos":  # Its fit is the scored pass: the learner itself.
        assert type(model).__name__ == name
        assert f"{name}.fit, one ordered pass" in out
    else:
        assert type(model).__name__ == "TreeCVEstimator"
        assert f"a TreeCVEstimator around {name}, not {name}.fit" in out
    # The folds the CLI scored on: stratified, rows shuffled with --seed 0.
    X, y = load_dataset("iris")
    folds = StratifiedTreeCVSplitter(3, shuffle=True, random_state=0).split(X, y)
    scores = cross_val_score(clone(model), X, y, cv=list(folds))
    assert abs(scores.mean() - best.value) <= 1e-12


def test_saved_model_after_standard_cv_is_the_learners_fit(tmp_path, capsys):
    import joblib
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score

    from optuna_treecv import TreeCVObjective

    path = tmp_path / "model.joblib"
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "2",
                "--backend", "standard", "--no-baseline", "--save-model",
                path, "--preprocess", "none", "--no-shuffle")  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "trained as the trials scored it: SGDClassifier.fit." in out
    model = joblib.load(path)
    assert type(model).__name__ == "SGDClassifier"
    estimator, space = make_learner("sgd", random_state=0)
    X, y = load_dataset("iris")
    # --no-shuffle: the folds of an int cv, as before issue 31.
    plan = TreeCVObjective(estimator, space, X, y, cv=3, random_state=0).fold_plan_
    scores = cross_val_score(clone(model), X, y, cv=list(plan.split()))
    best = optuna.load_study(study_name="s", storage=f"sqlite:///{tmp_path}/cli.db")
    assert abs(scores.mean() - best.best_value) <= 1e-12


def test_final_model_is_built_without_saving(tmp_path, capsys):
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "2",
                "--no-baseline")  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "Final model: trial #" in out
    assert "To keep it in a file: --save-model PATH." in out


def test_memory_storage_has_no_dashboard_hint(tmp_path, capsys):
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "2",
                "--no-baseline", storage="memory")  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "optuna-dashboard" not in out and "in memory and is gone" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert re.match(r"optuna-treecv \S+ \(Optuna \S+, scikit-learn \S+", out)


# -- resuming a study ----------------------------------------------------------------
@pytest.mark.parametrize(
    "change, match",
    [
        (
            ["--space", "alpha=float:1e-3:1:log"],
            "the search space: sgdclassifier__alpha",
        ),
        (["--cv", "4"], "the fold plan: recorded 3 folds"),
        (["--scoring", "f1_macro"], "the scoring: recorded score, now f1_macro"),
        (["--set", "max_iter=7"], "fixed parameters: sgdclassifier__max_iter 5 -> 7"),
        (["iris.npz"], r"the data \(X and y\): recorded 150x4, hash"),
    ],
)
def test_resume_with_other_settings_is_one_clear_error(
    tmp_path, capsys, iris_files, change, match
):
    def argv(dataset="iris.csv", extra=()):
        return tune(
            tmp_path, "sgd", iris_files / dataset, "--n-trials", "1",
            "--no-baseline", "--set", "max_iter=5", "--cv", "3", *extra,
        )  # fmt: skip

    code, _, err = run(argv(), capsys)
    assert code == 0, err
    # A later --cv or --set wins over the first (argparse keeps the last).
    other = argv(change[0]) if change[0].endswith(".npz") else argv(extra=change)
    code, out, err = run(other, capsys)
    assert code == 2, out
    assert err.count("\n") == 1 and err.startswith("optuna-treecv: error: study 's'")
    assert re.search(match, err), err
    assert "--study-name OTHER_NAME" in err and "optuna delete-study" in err
    # The refused run added no trial; the same settings resume.
    storage = f"sqlite:///{tmp_path / 'cli.db'}"
    assert len(optuna.load_study(study_name="s", storage=storage).trials) == 1
    code, out, err = run(argv(), capsys)
    assert code == 0, err
    assert len(optuna.load_study(study_name="s", storage=storage).trials) == 2


@pytest.mark.parametrize("made_by", ["trials", "direction"])
def test_tune_refuses_a_study_made_by_other_code(tmp_path, capsys, made_by):
    storage = f"sqlite:///{tmp_path / 'cli.db'}"
    if made_by == "trials":
        study = optuna.create_study(
            study_name="s", storage=storage, direction="maximize"
        )
        study.optimize(lambda t: t.suggest_float("x", 0, 1) + 10.0, n_trials=2)
        match = "made by other code: it has no treecv_.* 2 finished trial"
    else:  # `optuna create-study` minimizes unless told.
        optuna.create_study(study_name="s", storage=storage)
        match = "the direction: recorded minimize, now maximize"
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "1",
                "--no-baseline")  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 2, out
    assert err.count("\n") == 1 and err.startswith("optuna-treecv: error: study 's'")
    assert re.search(match, err), err
    # Refused up front: no trial added, nothing recorded in the study.
    study = optuna.load_study(study_name="s", storage=storage)
    assert len(study.trials) == (2 if made_by == "trials" else 0)
    assert not study.user_attrs


def test_tune_adopts_an_empty_study_made_to_maximize(tmp_path, capsys):
    storage = f"sqlite:///{tmp_path / 'cli.db'}"
    optuna.create_study(study_name="s", storage=storage, direction="maximize")
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "1",
                "--no-baseline")  # fmt: skip
    code, _, err = run(argv, capsys)
    assert code == 0, err


# -- heartbeats and recovery ---------------------------------------------------------
def test_heartbeat_defaults_and_errors(tmp_path, capsys):
    from optuna_treecv._cli_args import CLIError
    from optuna_treecv._cli_tune import _open_storage

    assert (
        _open_storage(f"sqlite:///{tmp_path / 'h.db'}", None).heartbeat_interval == 60
    )
    assert _open_storage(f"sqlite:///{tmp_path / 'h.db'}", 0).heartbeat_interval is None
    assert _open_storage(f"sqlite:///{tmp_path / 'h.db'}", 5).heartbeat_interval == 5
    with pytest.raises(CLIError, match="--heartbeat needs a database"):
        _open_storage(f"journal:{tmp_path / 'j.log'}", 5)
    with pytest.raises(CLIError, match="--heartbeat must be 0"):
        _open_storage("memory", -1)


def test_retry_running_recovers_a_killed_journal_worker(tmp_path, capsys):
    from optuna_treecv import open_storage

    url = f"journal:{tmp_path / 'j.log'}"
    code, _, err = run(tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "1",
                            "--no-baseline", storage=url), capsys)  # fmt: skip
    assert code == 0, err
    study = optuna.load_study(study_name="s", storage=open_storage(url))
    killed = study.ask()  # A worker killed mid-trial leaves this RUNNING.
    for name, dist in study.trials[0].distributions.items():
        killed._suggest(name, dist)
    argv = tune(tmp_path, "sgd", "iris", "--cv", "3", "--n-trials", "1",
                "--no-baseline", "--retry-running", storage=url)  # fmt: skip
    code, out, err = run(argv, capsys)
    assert code == 0, err
    assert "Failed 1 RUNNING trial(s) and queued their points again" in out
    trials = optuna.load_study(study_name="s", storage=open_storage(url)).trials
    assert [t.state.name for t in trials] == ["COMPLETE", "FAIL", "COMPLETE"]
    assert trials[2].params == trials[1].params


SLOW_LEARNER = """
import time
from sklearn.linear_model import SGDClassifier

CALLS = []


class SlowSGD(SGDClassifier):
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        if not CALLS:  # The first trial's CV lasts a second: time to stop it.
            time.sleep(1.0)
        CALLS.append(1)
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)
"""


@pytest.mark.slow
def test_worker_paused_past_the_grace_period_drops_its_late_result(tmp_path):
    """SIGSTOP a worker mid-trial until another worker fails its trial as stale,
    then SIGCONT: it says so in one line and runs its remaining trials."""
    import os
    import signal
    import sqlite3
    import time

    from optuna_treecv import open_storage

    (tmp_path / "slowlearner.py").write_text(SLOW_LEARNER)
    db = tmp_path / "paused.db"
    url = f"sqlite:///{db}"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(tmp_path), *filter(None, [env.get("PYTHONPATH")])]
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "optuna_treecv", "tune", "slowlearner:SlowSGD",
         "iris", "--cv", "2", "--n-trials", "2", "--space",
         "alpha=float:1e-4:1e-1:log", "--storage", url, "--study-name", "s",
         "--heartbeat", "1", "--pruner", "none", "--no-progress-bar",
         "--no-baseline"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip

    def count(query):
        try:
            with contextlib.closing(sqlite3.connect(db, timeout=10)) as connection:
                return connection.execute(query).fetchone()[0]
        except sqlite3.Error:  # No tables yet.
            return 0

    stopped = False
    try:
        deadline = time.monotonic() + 120
        # Stop it inside its first trial's CV: a heartbeat and a point recorded.
        while not (
            count("SELECT COUNT(*) FROM trial_heartbeats")
            and count("SELECT COUNT(*) FROM trial_params")
        ):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() < deadline, "no heartbeat in 120 s"
            time.sleep(0.05)
        proc.send_signal(signal.SIGSTOP)
        stopped = True
        # Another worker (this test) fails the stale trial and queues its point.
        other = optuna.load_study(
            study_name="s", storage=open_storage(url, heartbeat_interval=1)
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            while other.trials[0].state != optuna.trial.TrialState.FAIL:
                assert time.monotonic() < deadline, "the trial never went stale"
                time.sleep(0.25)
                optuna.storages.fail_stale_trials(other)
        proc.send_signal(signal.SIGCONT)
        stopped = False
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            if stopped:
                proc.send_signal(signal.SIGCONT)
            proc.kill()
    assert proc.returncode == 0, err
    assert "Cannot tell a FAIL trial" not in err and "Traceback" not in err
    note = "Trial #0 was failed as stale by another worker while this one was paused"
    assert err.count(note) == 1
    trials = optuna.load_study(study_name="s", storage=url).trials
    # The dropped trial stays FAIL; the worker ran its queued point and went on.
    assert [t.state.name for t in trials] == ["FAIL", "COMPLETE"]
    assert trials[1].params == trials[0].params
    assert "2 trials in" in out and "1 complete, 0 pruned, 1 failed" in out


LOCKING_LEARNER = """
import os
import sqlite3
from sklearn.linear_model import SGDClassifier

HOLDERS = []


class LockingSGD(SGDClassifier):
    def partial_fit(self, X, y, classes=None, sample_weight=None):
        if not HOLDERS:  # Another connection takes the write lock, and keeps it.
            holder = sqlite3.connect(os.environ["LOCKED_DB"], isolation_level=None)
            holder.execute("BEGIN EXCLUSIVE")
            HOLDERS.append(holder)
        return super().partial_fit(X, y, classes=classes, sample_weight=sample_weight)
"""


@pytest.mark.parametrize("when", ["before", "during"])
def test_a_long_database_lock_is_reported_as_a_lock(
    tmp_path, capsys, monkeypatch, when
):
    import sqlite3

    from optuna_treecv import _storage

    # 0.3 s stands for the 60 s a real run waits (a lock held for 150 s).
    monkeypatch.setattr(_storage, "SQLITE_BUSY_TIMEOUT", 0.3)
    db = tmp_path / "locked.db"
    holders = []
    if when == "before":
        optuna.create_study(study_name="s", storage=f"sqlite:///{db}")
        holder = sqlite3.connect(db, isolation_level=None)
        holder.execute("BEGIN EXCLUSIVE")
        holders.append(holder)
        learner = "sgd"
    else:
        (tmp_path / "locking_learner.py").write_text(LOCKING_LEARNER)
        monkeypatch.syspath_prepend(str(tmp_path))
        monkeypatch.setenv("LOCKED_DB", str(db))
        import locking_learner

        holders = locking_learner.HOLDERS
        learner = "locking_learner:LockingSGD"
    argv = tune(tmp_path, learner, "iris", "--cv", "3", "--n-trials", "2",
                "--no-baseline", "--space", "alpha=float:1e-4:1e-1:log",
                storage=f"sqlite:///{db}")  # fmt: skip
    try:
        code, out, err = run(argv, capsys)
    finally:
        for holder in holders:
            holder.close()
        holders.clear()
    assert code == 2 and err.count("\n") == 1, err
    assert "the database is locked: another process held its write lock for " in err
    assert "longer than the 0.3 s this one waits" in err
    assert "exceeding max length" not in err


@pytest.mark.parametrize(
    "text, match",
    [
        ("a;b;c\n1;2;0\n3;4;1\n5;6;0\n", "it looks ';'-separated"),
        ("a,b,c\n1,2,0\n3,x,1\n5,6,0\n", r"column 'b' \(column 2\), line 3: 'x'"),
        ("a,b,c\n1,2,0\n3,,1\n5,6,0\n", "line 3: an empty cell is not a number"),
        ("a,b,c\n1,2,0\n3,4\n5,6,0\n", "line 3 has 2 columns, the header has 3"),
        ("1,2,0\n\n3,4,1,7\n5,6,0\n", "line 3 has 4 columns, line 1 has 3"),
    ],
)
def test_csv_errors_name_the_line_column_or_delimiter(tmp_path, capsys, text, match):
    path = tmp_path / "d.csv"
    path.write_text(text)
    code, _, err = run(["cv", "sgd", path, "--preprocess", "none"], capsys)
    assert code == 2 and err.count("\n") == 1
    assert re.search(match, err), err


def test_csv_with_a_byte_order_mark_and_no_header_keeps_its_first_row(tmp_path):
    path = tmp_path / "bom.csv"
    path.write_bytes(b"\xef\xbb\xbf1.5,2,0\n3,4,1\n5,6,0\n")
    X, y = load_dataset(str(path))
    np.testing.assert_array_equal(X, [[1.5, 2], [3, 4], [5, 6]])
    np.testing.assert_array_equal(y, [0, 1, 0])
    # A header after the mark is still a header, its first name without the mark.
    path.write_bytes(b"\xef\xbb\xbfa,label\n1,0\n2,1\n")
    X, y = load_dataset(str(path), target="a")
    np.testing.assert_array_equal(X, [[0], [1]])


def test_csv_labels_never_merge_or_overflow(tmp_path):
    path = tmp_path / "ids.csv"
    path.write_text("a,y\n1,12345678901234567890\n2,12345678901234567891\n3,7\n")
    _, y = load_dataset(str(path))
    # Beyond int64, float64 would merge the first two and int64 would wrap.
    assert len(np.unique(y)) == 3
    assert list(y) == ["12345678901234567890", "12345678901234567891", "7"]
    path.write_text(f"a,y\n1,{2**63 - 1}\n2,{-(2**63)}\n3,0\n")
    _, y = load_dataset(str(path))
    assert y.dtype == np.int64 and list(y) == [2**63 - 1, -(2**63), 0]
    path.write_text("a,y\n1,1e19\n2,0.5\n3,2.0\n")
    _, y = load_dataset(str(path))
    assert y.dtype == np.float64 and list(y) == [1e19, 0.5, 2.0]
    path.write_text("a,y\n1,1e19\n2,0\n3,2.0\n")  # Integral, beyond int64.
    _, y = load_dataset(str(path))
    assert y.dtype == np.float64 and y[0] == 1e19


@pytest.mark.parametrize("label", ["inf", "-inf", "nan"])
def test_csv_non_finite_label_is_refused(tmp_path, capsys, label):
    path = tmp_path / "inf.csv"
    path.write_text(f"a,y\n1,0\n2,{label}\n3,1\n")
    code, _, err = run(["cv", "sgd", path], capsys)
    assert code == 2 and err.count("\n") == 1
    assert f"target value {label!r} on line 3 is not a finite number" in err


def test_csv_unknown_target_lists_the_columns(iris_files, capsys):
    code, _, err = run(["cv", "sgd", iris_files / "iris.csv", "--target", "x"], capsys)
    assert code == 2
    assert "no target column 'x'; the columns are 'a', 'b', 'c', 'd', 'species'" in err


def _complete_trials(db) -> int:
    """COMPLETE trials in a study database, read without creating its tables.

    Opening the file with Optuna (``load_study``) while the command is still
    creating the tables would race it for them.
    """
    import contextlib
    import sqlite3

    if not db.exists():
        return 0
    try:
        with contextlib.closing(sqlite3.connect(db, timeout=10)) as connection:
            query = "SELECT COUNT(*) FROM trials WHERE state = 'COMPLETE'"
            return connection.execute(query).fetchone()[0]
    except sqlite3.Error:  # No tables yet, or busy: ask again later.
        return 0


@pytest.mark.slow
def test_real_sigint_exits_130_with_a_summary(tmp_path):
    import signal
    import time

    db = tmp_path / "int.db"
    proc = subprocess.Popen(
        [sys.executable, "-m", "optuna_treecv", "tune", "sgd", "digits", "--cv",
         "3", "--n-trials", "10000", "--storage", f"sqlite:///{db}",
         "--study-name", "s", "--no-progress-bar", "--pruner", "none"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        # Generous on a loaded machine; the interrupt comes once 2 trials are in.
        deadline = time.monotonic() + 300
        while _complete_trials(db) < 2 and proc.poll() is None:
            assert time.monotonic() < deadline, "no 2 complete trials in 300 s"
            time.sleep(0.3)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "Interrupted (Ctrl-C)" in out and "Best trial #" in out
    assert "Traceback" not in err
    # The regime note is said once, not once per trial.
    assert err.count("TreeCVRegimeWarning") <= 1
    # No trial of this process is left RUNNING.
    study = optuna.load_study(study_name="s", storage=f"sqlite:///{db}")
    assert not study.get_trials(states=(optuna.trial.TrialState.RUNNING,))


def run_noting(argv, capsys):
    """``run`` with TreeCV's regime notes shown (this module ignores them)."""
    with warnings.catch_warnings():
        warnings.simplefilter("default", TreeCVRegimeWarning)
        return run(argv, capsys)


@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
def test_notes_are_clean_lines_and_auto_turns_to_fit(tmp_path, capsys):
    argv = tune(tmp_path, "mlp", "iris", "--cv", "4",
                "--n-trials", "2", "--pruner", "none")  # fmt: skip
    code, out, err = run_noting(argv, capsys)
    assert code == 0, err
    notes = [line for line in err.splitlines() if line.startswith("note: ")]
    assert len(notes) == 1 and "--backend auto therefore scores" in notes[0]
    assert "method=" not in err and "Warning:" not in err and ".py:" not in err
    assert "so --backend auto scored the learner's own fit" in out
    assert "backend standard)" in out  # the best trial's backend


@pytest.mark.parametrize(
    "ignore",
    [
        {},  # -W ignore
        {"category": TreeCVRegimeWarning},  # -W ignore::...TreeCVRegimeWarning
        {"message": "TreeCV scores"},  # -W "ignore:TreeCV scores"
    ],
)
def test_notes_honour_the_users_warning_filters(tmp_path, capsys, ignore):
    argv = tune(tmp_path, "sgd", "digits", "--cv", "3", "--n-trials", "2")
    code, out, err = run_noting(argv, capsys)
    assert code == 0 and "note: TreeCV scores" in err, err  # said by default
    with warnings.catch_warnings():
        warnings.simplefilter("default", TreeCVRegimeWarning)
        warnings.filterwarnings("ignore", **ignore)
        code, out, err = run(tune(tmp_path, *argv[1:7], name="t"), capsys)
    assert code == 0, err
    assert "note: TreeCV scores" not in err, err


def test_a_module_filter_matches_the_module_python_names():
    import sklearn_ext
    from optuna_treecv import _cli_tune

    assert _cli_tune._module_name(_cli_tune.__file__) == "optuna_treecv._cli_tune"
    assert _cli_tune._module_name(sklearn_ext.__file__) == "sklearn_ext"


@pytest.mark.parametrize("command", ["tune", "cv"])
def test_backend_choices_are_the_run_cores_methods(command, capsys):
    # Both commands take the methods every other door takes, and refuse
    # another name in the command line's words.
    from sklearn_ext.model_selection._choice import METHODS

    with pytest.raises(SystemExit) as stop:
        main([command, "sgd", "iris", "--backend", "bogus"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "argument --backend: invalid choice: 'bogus'" in err
    assert all(f"'{method}'" in err for method in METHODS)


def test_times_words_of_cv_and_tune():
    from optuna_treecv._cli_cv import _ratio_words
    from optuna_treecv._cli_report import _speedup

    assert _speedup(2.5, 1.0) == "2.5x faster"
    assert _speedup(1.0, 2.0) == "2.0x slower on this data"
    assert _speedup(0.0, 1.0) == "too fast to compare"
    assert _ratio_words(3.0, 1.0) == "3.0x less time than"
    assert _ratio_words(1.0, 1.5) == "1.5x more time than"
    assert _ratio_words(1.0, 0.0) == "too little time to compare with"
