"""The Görnitz-style grid examples: scripts end to end on tiny settings, resuming,
bad options, the scripts' data lookup and their shared helpers (``_gornitz.py``).

The data sets and the grid sampler they use are public names, tested in
``test_datasets.py`` and ``test_samplers.py``."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import optuna
import pytest
from optuna.trial import TrialState

from optuna_treecv import ResumableGridSampler
from sklearn_ext.datasets import make_anomaly_data

# The scripts and their sibling helper module import as they do when run.
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
sys.path.insert(0, str(EXAMPLES))

import _gornitz as g  # noqa: E402

COVTYPE = g.default_data_path()
TINY = ["--quick", "--synthetic", "--n", "300", "--sample-standard", "2"]


def run_script(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
    )


def complete_points(storage: str, study_name: str) -> list[int | None]:
    study = optuna.load_study(study_name=study_name, storage=storage)
    sampler = ResumableGridSampler(g.grid(2))
    return [
        sampler.point_index(t.params)
        for t in study.get_trials(states=(TrialState.COMPLETE,))
    ]


# -- script (a): the grid through Optuna ---------------------------------------------
GRID_STUDY = "gornitz-n300-g2-synthetic"


@pytest.fixture(scope="module")
def grid_run(tmp_path_factory):
    """The quick grid, run once by script (a) into a SQLite file."""
    folder = tmp_path_factory.mktemp("grid")
    storage = f"sqlite:///{folder / 'g.db'}"
    out = run_script("gornitz_optuna_grid.py", *TINY, "--storage", storage, cwd=folder)
    return storage, out


def test_grid_script_end_to_end(grid_run):
    storage, out = grid_run
    assert out.returncode == 0, out.stderr
    assert "grid: 16 points (2 x 2 x 2 x 2)" in out.stdout
    assert "grid complete: 16 points, 16 complete trials (0 repeated)" in out.stdout
    assert "best: mean 10-fold AUROC" in out.stdout
    assert "EXTRAPOLATED to 16 grid points" in out.stdout
    assert "standard CV timed on 2 random grid points, 2 of them during the run" in (
        out.stdout
    )
    assert "16/16 points" in out.stdout  # The last progress line.
    points = complete_points(storage, GRID_STUDY)
    assert sorted(points) == list(range(16))
    # Per-fold details in one attribute, the summary as attributes of their own.
    trial = optuna.load_study(study_name=GRID_STUDY, storage=storage).best_trial
    assert trial.user_attrs["mean_test_score"] == pytest.approx(trial.value)
    cv = trial.user_attrs["cv"]
    folds = [cv[f"split{i}_test_score"] for i in range(10)]
    assert np.mean(folds) == pytest.approx(trial.value)
    assert cv["backend"] == "native_tree"


def test_grid_scripts_final_model_is_the_scored_regime(grid_run):
    # Issue 16: the model the script settles on is trained as the trials were
    # scored, so its standard CV on the study's folds gives the best value.
    from sklearn.base import clone
    from sklearn.model_selection import cross_val_score

    from optuna_treecv import TreeCVObjective, refit_estimator

    storage, out = grid_run
    assert (
        "final model: the best settings fitted on all 300 rows by "
        "SemiSupervisedAnomalyDetector.fit, one ordered pass" in out.stdout
    )
    study = optuna.load_study(study_name=GRID_STUDY, storage=storage)
    data = g.load_anomaly_data(None, 300, synthetic=True, random_state=0)
    objective = TreeCVObjective(  # As the script builds it: the same folds.
        g.make_estimator(0),
        g.search_space(g.grid(2)),
        data.X,
        data.y,
        cv=g.N_FOLDS,
        report=None,
        random_state=0,
        fit_params={"labeled": data.labeled},
    )
    model = refit_estimator(
        study, objective.estimator, data.X, data.y, labeled=data.labeled
    )
    assert type(model) is type(objective.estimator)  # Its fit is the pass.
    scores = cross_val_score(
        clone(model),
        data.X,
        data.y,
        cv=list(objective.fold_plan_.split()),
        params={"labeled": data.labeled},
    )
    assert abs(scores.mean() - study.best_value) <= 1e-12


def test_grid_script_resumes_only_missing_points(tmp_path, monkeypatch, capsys):
    import gornitz_optuna_grid

    monkeypatch.chdir(tmp_path)  # In process: the end-to-end run is the fixture's.
    storage = f"sqlite:///{tmp_path / 'r.db'}"
    name = "gornitz-n300-g2-synthetic"
    args = [*TINY, "--storage", storage]
    assert gornitz_optuna_grid.main([*args, "--max-trials", "5"]) == 0
    assert "11 grid points left" in capsys.readouterr().out
    done = complete_points(storage, name)
    assert len(done) == 5
    # An interrupted trial (FAIL) on a missing point and a trial left RUNNING by
    # a killed process: the rerun must still evaluate that point.
    study = optuna.load_study(study_name=name, storage=storage)
    missing = sorted(set(range(16)) - set(done))[0]
    point = g.grid_points(g.grid(2))[missing]
    study.add_trial(
        optuna.trial.create_trial(
            state=TrialState.FAIL,
            params=point,
            distributions=g.search_space(g.grid(2)),
        )
    )
    stale = study.ask()
    assert gornitz_optuna_grid.main(args) == 0
    out = capsys.readouterr().out
    assert "resuming: 5 of 16 grid points already complete" in out
    assert "1 stale running trial(s) marked failed" in out
    assert "grid complete: 16 points, 16 complete trials (0 repeated)" in out
    assert "for 11 grid points" in out
    points = complete_points(storage, name)
    assert sorted(points) == list(range(16))  # Each point exactly once.
    study = optuna.load_study(study_name=name, storage=storage)
    assert study.trials[stale.number].state == TrialState.FAIL
    # A third run has nothing to do.
    assert gornitz_optuna_grid.main(args) == 0
    assert "resuming: 16 of 16" in capsys.readouterr().out
    assert len(complete_points(storage, name)) == 16


def test_grid_script_standard_method_same_scores(
    grid_run, tmp_path, monkeypatch, capsys
):
    import gornitz_optuna_grid

    storage, _ = grid_run
    monkeypatch.chdir(tmp_path)
    args = [*TINY, "--storage", storage, "--method", "standard", "--max-trials", "3"]
    assert gornitz_optuna_grid.main(args) == 0
    assert "for 3 grid points with 10-fold STANDARD CV" in capsys.readouterr().out
    standard = optuna.load_study(study_name=GRID_STUDY + "-standard", storage=storage)
    treecv = optuna.load_study(study_name=GRID_STUDY, storage=storage)
    by_params = {tuple(sorted(t.params.items())): t for t in treecv.trials}
    assert len(standard.trials) == 3
    for trial in standard.trials:
        assert trial.user_attrs["cv"]["backend"] == "standard"
        same = by_params[tuple(sorted(trial.params.items()))]
        assert trial.value == pytest.approx(same.value, abs=1e-12)  # Same models.


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT")
def test_grid_script_ctrl_c_then_resume(tmp_path):
    import signal

    storage = f"sqlite:///{tmp_path / 'c.db'}"
    args = ["--synthetic", "--n", "2000", "--grid-size", "2", "--storage", storage]
    command = [sys.executable, str(EXAMPLES / "gornitz_optuna_grid.py"), *args]
    process = subprocess.Popen(
        [*command, "--sample-standard", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    for line in process.stdout:
        if "/16 points" in line:  # The first progress line: send Ctrl-C.
            process.send_signal(signal.SIGINT)
            break
    out, err = process.communicate(timeout=120)
    assert process.returncode == 130, err
    assert "interrupted:" in out and "run the same command again" in out
    name = "gornitz-n2000-g2-synthetic"
    study = optuna.load_study(study_name=name, storage=storage)
    n_done = len(study.get_trials(states=(TrialState.COMPLETE,)))
    assert 1 <= n_done < 16
    again = run_script(
        "gornitz_optuna_grid.py", *args, "--sample-standard", "1", cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr
    assert f"resuming: {n_done} of 16 grid points already complete" in again.stdout
    assert "grid complete: 16 points, 16 complete trials (0 repeated)" in again.stdout


@pytest.mark.parametrize(
    "args, message",
    [
        (["--n", "50"], "--n must be at least 200"),
        (["--n", "abc"], "expected an integer"),
        (["--storage", "foo://x.db"], "--storage must be sqlite:///PATH"),
        (["--storage", "gornitz.db"], "--storage must be sqlite:///PATH"),
        (["--grid-size", "11"], "--grid-size must be in [1, 10]"),
        (["--sample-standard", "-1"], "--sample-standard must be >= 0"),
        (["--max-trials", "0"], "--max-trials must be >= 1"),
    ],
)
def test_grid_script_bad_options(tmp_path, monkeypatch, capsys, args, message):
    import gornitz_optuna_grid

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        gornitz_optuna_grid.main(["--quick", "--synthetic", *args])
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
    assert not list(tmp_path.iterdir())  # Nothing created.


def test_grid_script_missing_data_file(tmp_path, monkeypatch, capsys):
    import gornitz_optuna_grid

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        gornitz_optuna_grid.main(["--quick", "--data", str(tmp_path / "nope.npz")])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "nope.npz not found" in err and "fetch_covtype" in err


# -- script (b): TreeCVSearchCV -------------------------------------------------------
def test_search_cv_script(tmp_path):
    out = run_script("gornitz_search_cv.py", *TINY, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    assert "searched 16 candidates" in out.stdout
    assert "best: mean 10-fold AUROC" in out.stdout
    assert "TreeCVSearchCV, refit included" in out.stdout
    assert "EXTRAPOLATED to 16 grid points" in out.stdout
    assert (
        "final model: the best settings fitted on all 300 rows by "
        "SemiSupervisedAnomalyDetector.fit, one ordered pass" in out.stdout
    )
    assert not list(tmp_path.iterdir())  # No storage.


def test_scripts_fall_back_to_the_stand_in(tmp_path, monkeypatch, capsys):
    import gornitz_search_cv

    monkeypatch.setenv(g.DATA_ENV, str(tmp_path))  # No covtype.npz there.
    monkeypatch.chdir(tmp_path)
    assert (
        gornitz_search_cv.main(["--quick", "--n", "300", "--sample-standard", "0"]) == 0
    )
    out = capsys.readouterr()
    assert "covtype.npz not found" in out.err and "Using the synthetic" in out.err
    assert "synthetic stand-in: 300 rows" in out.out
    assert "searched 16 candidates" in out.out


# -- script (c): TPE with pruning -----------------------------------------------------
def test_tpe_script_reads_the_grid_target(grid_run, tmp_path):
    storage, _ = grid_run
    best = optuna.load_study(study_name=GRID_STUDY, storage=storage).best_value
    out = run_script(
        "gornitz_tpe.py",
        *TINY,
        "--storage",
        storage,
        "--tolerance",
        "0.05",
        "--n-trials",
        "40",
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert f"target: the grid's best mean AUROC, {best:.4f}" in out.stdout
    assert "(tolerance 0.0500, given)" in out.stdout
    assert f"reached the target {best:.4f} (less the tolerance 0.0500) after" in (
        out.stdout
    )
    assert "final model: the best settings fitted on all 300 rows by" in out.stdout
    tpe = optuna.load_study(study_name=GRID_STUDY + "-tpe", storage=storage)
    assert 1 <= len(tpe.trials) <= 40
    assert tpe.best_value >= best - 0.05
    assert "TPE with pruning" in out.stdout


def test_tpe_default_tolerance_is_the_grid_best_stderr(grid_run):
    import gornitz_tpe

    storage, _ = grid_run
    best = optuna.load_study(study_name=GRID_STUDY, storage=storage).best_trial
    value, stderr = gornitz_tpe.grid_best(storage, GRID_STUDY)
    assert value == best.value
    assert stderr == best.user_attrs["stderr_test_score"] > 0
    assert gornitz_tpe.grid_best(storage, "no-such-study") is None


def test_tpe_script_needs_a_target(tmp_path, monkeypatch, capsys):
    import gornitz_tpe

    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exit_info:
        gornitz_tpe.main([*TINY, "--storage", "memory"])
    assert exit_info.value.code == 2
    assert "no --target given and no grid study" in capsys.readouterr().err


# -- the heat maps ---------------------------------------------------------------
def test_heatmaps_from_the_grid_study(grid_run, tmp_path, capsys):
    import plot_gornitz_heatmaps as plot

    storage, _ = grid_run
    output = tmp_path / "maps.png"
    code = plot.main([*TINY, "--storage", storage, "--output", str(output)])
    out = capsys.readouterr()
    assert "16 of 16 grid points complete" in out.out
    assert "max AUROC over the others; rows eta_u, columns gamma" in out.out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert code == 1 and "matplotlib is not installed" in out.err
    else:
        assert code == 0 and output.stat().st_size > 1000


def test_heatmaps_without_matplotlib(grid_run, tmp_path, monkeypatch, capsys):
    import plot_gornitz_heatmaps as plot

    monkeypatch.setitem(sys.modules, "matplotlib", None)  # Import fails.
    storage, _ = grid_run
    output = tmp_path / "maps.png"
    args = [*TINY, "--storage", storage, "--output", str(output), "--reduce", "mean"]
    assert plot.main(args) == 1
    out = capsys.readouterr()
    assert "mean AUROC over the others; rows kappa, columns gamma" in out.out
    assert "matplotlib is not installed" in out.err and "--no-plot" in out.err
    assert not output.exists()
    assert plot.main([*args, "--no-plot"]) == 0


def test_heatmaps_need_the_grid_study(tmp_path, capsys):
    import plot_gornitz_heatmaps as plot

    storage = f"sqlite:///{tmp_path / 'empty.db'}"
    with pytest.raises(SystemExit) as exit_info:
        plot.main([*TINY, "--storage", storage, "--no-plot"])
    assert exit_info.value.code == 2
    assert "run gornitz_optuna_grid.py with the same options first" in (
        capsys.readouterr().err
    )


def test_heatmap_maxima():
    import plot_gornitz_heatmaps as plot

    space = g.grid(2)
    study = optuna.create_study(direction="maximize")
    distributions = g.search_space(space)
    values = {}
    for point in g.grid_points(space)[:-1]:  # One point missing.
        value = point["eta_u"] + 10 * point["kappa"] - point["gamma"]
        values[tuple(point[n] for n in plot.NAMES)] = value
        study.add_trial(
            optuna.trial.create_trial(
                params=point, distributions=distributions, value=value
            )
        )
    scores = plot.score_array(study, space)
    assert scores.shape == (2, 2, 2, 2) and np.isnan(scores).sum() == 1
    maps = plot.pair_maps(scores)
    assert len(maps) == 6
    expected = max(v for k, v in values.items() if k[0] == 0.03 and k[2] == 0.001)
    assert maps["eta_u", "kappa"][0, 0] == pytest.approx(expected)
    assert maps["eta_u", "eta_l"].max() == pytest.approx(max(values.values()))
    means = plot.pair_maps(scores, "mean")
    expected = np.mean([v for k, v in values.items() if k[1] == 1000 and k[3] == 1])
    assert means["eta_l", "gamma"][1, 1] == pytest.approx(expected)


# -- the data -------------------------------------------------------------------------
def test_loader_falls_back_with_a_notice(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(g.DATA_ENV, str(tmp_path))  # A folder without covtype.npz.
    data = g.load_anomaly_data(n=300)
    assert data.source == "synthetic stand-in" and len(data.y) == 300
    err = capsys.readouterr().err
    assert "covtype.npz not found" in err and "synthetic stand-in" in err
    with pytest.raises(FileNotFoundError, match="fetch_covtype"):
        g.load_anomaly_data(tmp_path / "covtype.npz", n=300)
    assert g.load_anomaly_data(n=300, synthetic=True).source == "synthetic stand-in"
    assert not capsys.readouterr().err  # Asked for: no notice.


def test_default_data_path(tmp_path, monkeypatch):
    monkeypatch.setenv(g.DATA_ENV, str(tmp_path))
    assert g.default_data_path() == tmp_path / "covtype.npz"
    monkeypatch.setenv(g.DATA_ENV, str(tmp_path / "x.npz"))
    assert g.default_data_path() == tmp_path / "x.npz"
    monkeypatch.delenv(g.DATA_ENV)
    expected = EXAMPLES.parents[1] / "shared" / "data" / "covtype.npz"
    assert g.default_data_path() == expected


@pytest.mark.skipif(not COVTYPE.is_file(), reason="needs ../shared/data/covtype.npz")
def test_forestcover_sample():
    data = g.load_anomaly_data(n=2_000, random_state=0)
    assert data.X.shape == (2_000, 10)
    assert int(np.sum(data.y < 0)) == 19  # 0.96 % of 2,000, rounded.
    assert 60 < data.labeled.sum() < 140  # About 5 %.


# -- the shared helpers ---------------------------------------------------------------
def test_grid_definition():
    full = g.grid()
    assert [len(v) for v in full.values()] == [10, 10, 10, 10]
    assert len(g.grid_points(full)) == 10_000
    assert g.grid(2)["eta_u"] == [0.03, 1000.0]
    assert g.grid(1)["kappa"] == [0.001]
    with pytest.raises(ValueError, match="size must be in"):
        g.grid(0)
    space = g.search_space(full)
    assert all(d.log for d in space.values())


def test_time_standard_cv_measures_both_methods():
    from sklearn_ext import StratifiedTreeCVSplitter

    data = make_anomaly_data(300)
    plan = StratifiedTreeCVSplitter(10).plan(data.X, data.y)
    points = g.grid_points(g.grid(2))
    timing = g.time_standard_cv(data, points, plan, m=2)
    assert timing["m"] == 2
    assert timing["standard"] > 0 and timing["treecv"] > 0
    assert g.time_standard_cv(data, points, plan, m=0) is None
    timer = g.StandardCVTimer(data, points, plan, m=3, seed=1)
    assert timer.measure_next() and len(timer.times["standard"]) == 1
    assert timer.seconds > 0
    assert timer.finish()["m"] == 3 and not timer.measure_next()
