"""What ``optuna-treecv tune`` prints after its trials: the summary, the
baseline (standard CV of the best parameters, timed) and the final model."""

from __future__ import annotations

import time
import warnings
from typing import Any

import numpy as np

from optuna_treecv._cli_args import CLIError
from optuna_treecv._cli_timing import (
    _duration,
    _first_folds,
    _rough_standard,
    _seconds,
    _times_words,
)
from optuna_treecv._preprocess import describe_steps, final_step


def _summarize(args, objective, study, n_before, elapsed, errors, interrupted) -> int:
    """Print what this run did; every figure compares like with like."""
    from optuna.trial import TrialState

    trials = study.get_trials(deepcopy=False)[n_before:]
    complete = [t for t in trials if t.state == TrialState.COMPLETE]
    pruned = [t for t in trials if t.state == TrialState.PRUNED]
    failed = [t for t in trials if t.state == TrialState.FAIL]
    if interrupted:
        print("\nInterrupted (Ctrl-C): the summary of the trials that finished.")
    print(
        f"\n{len(trials)} trials in {elapsed:.1f} s: {len(complete)} complete, "
        f"{len(pruned)} pruned" + (f", {len(failed)} failed" if failed else "")
    )
    if errors:
        print(f"Last error of a failed trial: {errors[-1][:300]}")
    if not complete and not pruned and errors and not interrupted:
        hint = ""
        if args.scoring and "predict_proba" in errors[-1]:
            hint = (
                f" (--scoring {args.scoring} needs predict_proba: fix or search "
                "parameters that provide it, e.g. --set loss=log_loss for sgd)"
            )
        raise CLIError(f"every trial failed: {errors[-1][:300]}{hint}")
    if not study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        print("No trial completed; nothing to summarize.")
        return 1
    best = study.best_trial
    attrs = _details(best)
    this_run = {t.number for t in trials}
    origin = "" if best.number in this_run else " (from an earlier run of this study)"
    print(
        f"Best trial #{best.number}{origin}: "
        f"{attrs.get('mean_test_score', best.value):.4f} "
        f"± {attrs.get('stderr_test_score', float('nan')):.4f} (standard error, "
        f"{args.cv} folds, backend {attrs.get('backend')})"
    )
    for name, value in best.params.items():
        print(f"  {name} = {value!r}")
    _say_turned_to_fit(objective)
    # Only trials that ran CV (complete or pruned) are compared with standard CV.
    ran = [t for t in complete + pruned if "n_samples_fed" in _details(t)]
    if ran:
        fed = sum(int(_details(t)["n_samples_fed"]) for t in ran)
        standard_fed = len(ran) * objective.fold_plan_.n_samples * (args.cv - 1)
        print(
            f"Rows fed to the learner by these {len(ran)} trials: {fed:,} "
            f"(standard CV of the same trials without pruning: {standard_fed:,}, "
            f"{_ratio(standard_fed, fed)})"
        )
    if args.baseline and ran and not interrupted:
        _baseline(args, objective, best, ran)
    if not interrupted or args.save_model:
        _final_model(args, objective, study)
    if "://" in args.storage:
        print(
            f"Open the study: optuna-dashboard {args.storage}  "
            "(pip install optuna-dashboard)"
        )
    elif args.storage == "memory":
        print("The study was in memory and is gone; --storage sqlite:///FILE keeps it.")
    return 0


def _say_turned_to_fit(objective) -> None:
    """Say it when ``--backend auto`` turned the study to the learner's fit."""
    gap = objective.core_.gap_
    if not objective.core_.fit_instead_ or gap is None:
        return
    name = type(final_step(objective.estimator)).__name__
    print(
        f"Scored by {name}.fit: on the first trial, one ordered pass scored "
        f"{gap.tree_score:.4f} against {gap.fit_score:.4f} for the learner's own fit "
        f"(gap {gap.gap:+.4f}, {len(gap.splits)} folds), so --backend auto scored "
        "the learner's own fit (standard CV) for every trial; --backend treecv "
        "keeps the one pass."
    )


def _ratio(reference: float, value: float) -> str:
    """``reference / value`` as "N.Nx more", or what prevents a ratio."""
    if value <= 0:
        return "no ratio: nothing was fed"
    return f"{reference / value:.1f}x as many"


def _baseline(args, objective, best, ran) -> None:
    """Time standard CV of the best parameters once and extrapolate honestly."""
    from optuna.trial import FixedTrial
    from sklearn.base import clone

    from optuna_treecv._objective import suggest_params

    params = suggest_params(FixedTrial(best.params, best.number), objective.params)
    estimator = clone(objective.estimator).set_params(**params)
    resolved = objective.core_.resolve(estimator)
    backend = resolved.backend
    if backend.name == "standard":
        print("Time: the trials ran standard CV; there is no TreeCV to compare.")
        return
    runs, learn, took = _time_best(args, objective, estimator, resolved)
    print(
        f"Time: one standard {args.cv}-fold CV of the best parameters {took}, "
        f"one with {backend.name} {runs['tree']:.2f} s "
        f"({_speedup(runs['standard'], runs['tree'])})."
    )
    _say_time_saved(ran, learn["standard"])


def _time_best(args, objective, estimator, resolved) -> tuple[dict, dict, str]:
    """One CV of the best parameters with the trials' backend and one standard.

    Returns the wall seconds and the fitting and scoring seconds of each run
    (keys ``"tree"`` and ``"standard"``), and how the standard run took them:
    measured, or extrapolated from its first folds when it would be long.
    """
    from sklearn_ext import tree_cross_validate
    from sklearn_ext.model_selection import TreeCVOrderWarning, TreeCVRegimeWarning
    from sklearn_ext.model_selection._regime import regime_estimator

    # Like with like: standard CV trains each fold the way the trials scored it
    # (one ordered pass after a tree backend), not with the learner's own fit.
    reference = regime_estimator(estimator, resolved.regime, objective.core_.classes)
    runs, learn = {}, {}

    def run(model, method, leaf_callback=None):
        with warnings.catch_warnings():
            # The trials have said what TreeCV scores, and the set-up how the
            # rows are ordered; the timing, on the same rows, would say it again.
            warnings.simplefilter("ignore", TreeCVRegimeWarning)
            warnings.simplefilter("ignore", TreeCVOrderWarning)
            return tree_cross_validate(
                model,
                objective.X,
                objective.y,
                cv=objective.fold_plan_,
                scoring=args.scoring,
                method=method,
                n_jobs=args.n_jobs,
                leaf_callback=leaf_callback,
                return_run_info=True,
            )

    tic = time.perf_counter()
    result = run(estimator, resolved.backend)
    runs["tree"] = time.perf_counter() - tic
    learn["tree"] = float(np.sum(result["fit_time"]) + np.sum(result["score_time"]))
    first: list[float] = []
    plan = objective.fold_plan_
    fed = np.sum(result["n_samples_fed"])
    if _rough_standard(runs["tree"], fed, plan.n_samples, plan.n_splits):
        # Standard CV would hold the command for long: its first folds, timed
        # and extrapolated, stand for it.
        first = _first_folds(lambda stop: run(reference, "standard", stop))
    if first:
        runs["standard"] = learn["standard"] = sum(first) / len(first) * args.cv
        took = (
            f"would take about {_duration(runs['standard'])} (its first "
            f"{len(first)} folds took {sum(first):.2f} s, extrapolated)"
        )
    else:
        tic = time.perf_counter()
        result = run(reference, "standard")
        runs["standard"] = time.perf_counter() - tic
        learn["standard"] = float(
            np.sum(result["fit_time"]) + np.sum(result["score_time"])
        )
        took = (
            f"took {runs['standard']:.2f} s ({learn['standard']:.2f} s fitting "
            "and scoring)"
        )
    return runs, learn, took


def _say_time_saved(ran, standard_learn: float) -> None:
    """Compare the trials' fitting and scoring with standard CV of each trial.

    Standard CV of one trial is taken to cost ``standard_learn`` seconds, the
    run of the best parameters measured by :func:`_time_best`.
    """
    spent = sum(
        float(_details(t).get("fit_time", 0.0))
        + float(_details(t).get("score_time", 0.0))
        for t in ran
    )
    estimate = len(ran) * standard_learn
    if estimate < 0.05 or spent < 0.05:
        print(
            f"The {len(ran)} trials spent {spent:.2f} s fitting and scoring: too "
            "little to compare with an extrapolation. The rest of the study's "
            "time is Optuna's sampling and storage."
        )
        return
    if estimate > spent:
        verdict = (
            f"so TreeCV and pruning saved about {_seconds(estimate - spent)} "
            f"({estimate / spent:.1f}x)"
        )
    else:
        verdict = "so TreeCV and pruning saved no time on this data"
    print(
        f"The {len(ran)} trials spent {spent:.1f} s fitting and scoring; standard "
        f"CV of the same trials without pruning: about {_seconds(estimate)} "
        f"({len(ran)} x the measured run, an estimate: other parameters train "
        f"at other speeds), {verdict}. The rest of the study's time is Optuna's "
        "sampling and storage."
    )


def _speedup(standard: float, tree: float) -> str:
    return _times_words(
        standard,
        tree,
        less="faster",
        more="slower on this data",
        none="too fast to compare",
    )


def _final_model(args, objective, study) -> None:
    """Build the best trial's model as the trials scored it; save it if asked."""
    import joblib

    from optuna_treecv._refit import refit_estimator

    tic = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # The regime notes were said already.
            model = refit_estimator(
                study,
                objective.estimator,
                objective.X,
                objective.y,
                params=objective.params,
                warm_start_store=objective.warm_start_store_,
                **objective.fit_params,
            )
    except (ValueError, TypeError, AttributeError) as exc:
        raise CLIError(
            "cannot fit the final model on all rows: " + " ".join(str(exc).split())
        ) from None
    seconds = time.perf_counter() - tic
    print(
        f"Final model: trial #{model.optuna_trial_.number}'s parameters fitted on "
        f"all {objective.X.shape[0]} rows in {seconds:.2f} s, "
        f"{_regime_words(model)}."
    )
    if args.save_model is None:
        print("  To keep it in a file: --save-model PATH.")
        return
    try:
        joblib.dump(model, args.save_model)
    except OSError as exc:
        raise CLIError(f"cannot save the model to {args.save_model!r}: {exc}") from None
    print(
        f"Saved to {args.save_model}: model = joblib.load({args.save_model!r}); "
        "model.optuna_trial_ records its trial (number, params, value, regime, "
        "backend; .trial(study) reads the whole trial)."
    )


def _regime_words(model) -> str:
    """How the final model was trained, in the words of the summary."""
    from sklearn_ext import TreeCVEstimator

    if isinstance(model, TreeCVEstimator):
        inner = around = type(model.estimator).__name__
        if hasattr(model.estimator, "steps"):  # A StreamingPipeline inside.
            inner = "Pipeline"
            around = f"the pipeline {describe_steps(model.estimator)}"
        return (
            "trained as the trials scored it: one ordered pass of partial_fit in "
            f"batches of {model.batch_size} rows (a TreeCVEstimator around {around}, "
            f"not {inner}.fit)"
        )
    name = type(model).__name__
    steps = f" ({describe_steps(model)})" if hasattr(model, "steps") else ""
    if model.optuna_trial_.regime == "one_pass":
        return f"trained as the trials scored it: {name}.fit{steps}, one ordered pass"
    return f"trained as the trials scored it: {name}.fit{steps}"


def _details(trial) -> dict[str, Any]:
    """A trial's CV details (the "cv" attribute of TreeCVObjective)."""
    return trial.user_attrs.get("cv", {})
