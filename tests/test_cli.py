"""The optuna-treecv command line: tune, cv and one-line errors (exit code 2)."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import optuna
import pytest
from sklearn.datasets import dump_svmlight_file, load_iris

from optuna_treecv._cli import main
from optuna_treecv._data import load_dataset
from optuna_treecv._learners import LEARNERS, make_learner
from sklearn_ext.model_selection import choose_backend


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
            "--no-progress-bar",
        ],
        capsys,
    )
    assert code == 0, err
    assert "4 trials" in out and "Best trial #" in out
    assert "measured once" in out and "saved" in out
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
    assert "python_tree" in out and "standard" in out and "faster" in out


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
            ["tune", "sklearn.linear_model:SGDClassifier", "iris"],
            "no default search space",
        ),
        (["tune", "sgd", "iris", "--n-trials", "0"], "--n-trials must be at least 1"),
        (["tune", "sgd", "iris", "--timeout", "-1"], "--timeout must be positive"),
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
        code, _, err = run(["cv", "sgd", path], capsys)
        assert code == 2 and match in err and err.count("\n") == 1, err


def test_bundled_and_registry():
    X, y = load_dataset("breast_cancer")
    assert X.shape == (569, 30)
    for name in LEARNERS:
        estimator, space = make_learner(name, random_state=0)
        # Every registered learner has a fast backend (a tree or alpha seeding).
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


def test_cv_runs_the_svm_through_alpha_seeding(capsys):
    assert main(["cv", "svc", "iris", "--cv", "3", "--set", "C=10"]) == 0
    out = capsys.readouterr().out
    assert "alpha_seeding" in out
