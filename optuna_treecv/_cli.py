"""The ``optuna-treecv`` command line: ``tune`` a learner, or ``cv`` it once."""

from __future__ import annotations

import os
import re
import signal
import sys
import threading
import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from optuna_treecv._cli_args import (
    DEFAULT_HEARTBEAT,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    PROBE_ABOVE,
    PROBE_FOLDS,
    PROBE_SECONDS,
    PROGRESS_EVERY,
    STANDARD_LIMIT,
    CLIError,
    _make_pruner,
    _parse_fixed,
    _parse_space,
    _parser,
    _report_of,
)
from optuna_treecv._data import load_data
from optuna_treecv._interrupt import optimize_until_interrupted
from optuna_treecv._learners import make_learner, scales_by_default
from optuna_treecv._preprocess import (
    describe_steps,
    final_step,
    make_splitter,
    prepare,
    preprocessing_line,
    step_names,
    step_space,
)
from optuna_treecv._storage import (
    describe_storage_error,
    open_storage,
    retry_running_trials,
)

if TYPE_CHECKING:
    import optuna

__all__ = ["main"]


# -- argument parsing -----------------------------------------------------------------
def _setup(args):
    """The estimator (with its preprocessing), space, data, folds and header."""
    if args.cv < 2:
        raise CLIError(f"--cv must be at least 2, got {args.cv}.")
    try:
        learner, space = make_learner(args.learner, random_state=args.seed)
        data = load_data(args.dataset, args.target, text=args.preprocess != "none")
    except ValueError as exc:
        raise CLIError(str(exc)) from None
    X, y = data.X, data.y
    if args.cv > X.shape[0]:
        raise CLIError(f"--cv {args.cv} exceeds the {X.shape[0]} samples.")
    prepared = prepare(
        learner,
        X,
        args.preprocess,
        scales=scales_by_default(args.learner),
        feature_names=data.feature_names,
    )
    estimator = prepared.estimator
    fixed = step_names(_parse_fixed(args.fixed), prepared)
    try:
        estimator.set_params(**fixed)
    except ValueError:
        valid = sorted(learner.get_params())
        bad = [k for k in fixed if k not in estimator.get_params()]
        raise CLIError(
            f"bad --set {bad}: not parameters of {type(learner).__name__} "
            f"(valid: {', '.join(valid)})."
        ) from None
    space = step_space(space, prepared)
    if isinstance(space, dict):
        space = {k: v for k, v in space.items() if k not in fixed}
    if getattr(args, "space", None):
        space = step_names(_parse_space(args.space), prepared)
    splitter, folds = make_splitter(
        estimator, y, args.cv, shuffle=args.shuffle, seed=args.seed
    )
    return estimator, space, X, y, splitter, (prepared, folds)


def _open_storage(url: str, heartbeat: int | None):
    is_database = "://" in url
    if heartbeat is None:
        heartbeat = DEFAULT_HEARTBEAT if is_database else 0
    elif heartbeat < 0:
        raise CLIError(f"--heartbeat must be 0 (off) or positive, got {heartbeat}.")
    elif heartbeat and not is_database:
        raise CLIError(
            f"--heartbeat needs a database storage; {url!r} keeps no heartbeats. "
            "Recover the trials of killed workers with --retry-running once "
            "every worker has stopped."
        )
    try:
        return open_storage(url, heartbeat_interval=heartbeat or None)
    except ValueError as exc:
        raise CLIError(" ".join(str(exc).split())) from None


# -- commands -------------------------------------------------------------------------
def _tune(args) -> int:
    import optuna

    from optuna_treecv._objective import StudyIdentityError, TreeCVObjective
    from sklearn_ext.model_selection import TreeCVFallbackWarning

    if args.timeout is not None and not args.timeout > 0:
        raise CLIError(f"--timeout must be positive, got {args.timeout}.")
    if args.n_trials is None and args.timeout is None:
        args.n_trials = 30
    if args.n_trials is not None and args.n_trials < 1:
        raise CLIError(f"--n-trials must be at least 1, got {args.n_trials}.")
    _check_save_path(args.save_model)
    estimator, space, X, y, splitter, notes = _setup(args)
    if not space:
        raise CLIError(
            f"{args.learner!r} has no default search space; give one with "
            "--space NAME=SPEC."
        )
    report = _report_of(args)
    try:
        objective = TreeCVObjective(
            estimator,
            space,
            X,
            y,
            cv=splitter,
            scoring=args.scoring,
            backend=args.backend,
            report=report,
            n_jobs=args.n_jobs,
            random_state=args.seed,
            progress=_TrialProgress() if args.progress_bar else None,
        )
    except (TypeError, ValueError, AttributeError) as exc:
        raise CLIError(" ".join(str(exc).split())) from None
    storage = _open_storage(args.storage, args.heartbeat)
    study_name = args.study_name or f"{args.learner}-{_stem(args.dataset)}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    try:
        study = optuna.create_study(
            storage=storage,
            study_name=study_name,
            direction="maximize",
            sampler=optuna.samplers.TPESampler(seed=args.seed),
            pruner=_make_pruner(args.pruner, args.cv, report),
            load_if_exists=True,
        )
    except Exception as exc:
        message = describe_storage_error(exc)
        raise CLIError(f"cannot create study {study_name!r}: {message}") from None
    try:
        directions = [d.name.lower() for d in study.directions]
        if directions != ["maximize"]:  # Made by other code: a score is maximized.
            changes = [f"the direction: recorded {', '.join(directions)}, now maximize"]
            raise StudyIdentityError(study_name, changes)
        objective.check_study(study)
    except StudyIdentityError as exc:
        raise CLIError(
            f"study {study_name!r} in {args.storage} was run with other settings, "
            f"and its trials would not compare with new ones. Changed: "
            f"{'; '.join(exc.changes)}. Start a new study with --study-name "
            f"OTHER_NAME, or delete this one: optuna delete-study --study-name "
            f"{study_name} --storage {args.storage}{_older_study_hint(exc.changes)}"
        ) from None
    if args.retry_running:
        retried = retry_running_trials(study)
        print(f"Failed {len(retried)} RUNNING trial(s) and queued their points again.")
    n_before = len(study.trials)
    # The study's one core decides, once, what runs the trials: a learner no
    # fast backend accepts falls back to standard CV (said in the header).
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", TreeCVFallbackWarning)
        backend = objective.core_.resolve(estimator).backend
    # A learner without partial_fit falls back quietly: the core's note says why.
    fallback = [str(w.message) for w in caught if w.category is TreeCVFallbackWarning]
    fallback += objective.core_.notes
    said = _Notes()  # The user's warning filters, taken before any trial.
    said.say([w for w in caught if w.category is not TreeCVFallbackWarning])
    if backend.name == "standard":
        why = _fallback_reason(estimator, fallback) if fallback else None
        method = f"standard {args.cv}-fold CV ({why or '--backend standard'})"
    else:
        method = f"{args.cv}-fold CV with the {backend.name} backend"
    print(
        f"Tuning {type(final_step(estimator)).__name__} on {args.dataset} "
        f"({X.shape[0]} x {X.shape[1]}), {method}, pruner={args.pruner}, "
        f"study {study_name!r} in {args.storage}"
    )
    print(preprocessing_line(*notes, backend.name))
    errors: list[str] = []

    def run_trial(trial: optuna.Trial) -> float:
        caught: list = []
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                return objective(trial)
        except (ValueError, TypeError, AttributeError) as exc:
            # A parameter combination failed, e.g. a scoring that needs
            # predict_proba with a loss that has none.
            errors.append(" ".join(str(exc).split()))
            raise
        finally:
            said.say(caught)

    tic = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.simplefilter("ignore", TreeCVFallbackWarning)  # Said above.
        # Failed trials are recorded as FAIL and summarized below, not logged
        # with a traceback each.
        optuna.logging.set_verbosity(optuna.logging.CRITICAL)
        terminated: list[int] = []
        previous = _abort_on_sigterm(terminated)
        try:
            interrupted = optimize_until_interrupted(
                study,
                run_trial,
                n_trials=args.n_trials,
                timeout=args.timeout,
                catch=(ValueError, TypeError, AttributeError),
                show_progress_bar=args.progress_bar,
            )
        except optuna.exceptions.StorageInternalError as exc:
            where = f"study {study_name!r} in {args.storage}"
            raise CLIError(f"{where}: {describe_storage_error(exc)}") from None
        finally:
            optuna.logging.set_verbosity(optuna.logging.WARNING)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    elapsed = time.perf_counter() - tic
    if terminated:
        print(
            "optuna-treecv: terminated (SIGTERM): the running trial is recorded as "
            "failed.",
            file=sys.stderr,
            flush=True,
        )
    code = _summarize(args, objective, study, n_before, elapsed, errors, interrupted)
    if terminated:
        return EXIT_TERMINATED
    return EXIT_INTERRUPTED if interrupted else code


def _abort_on_sigterm(terminated: list[int]):
    """Make SIGTERM abort the running trial as a second Ctrl-C does.

    ``kill PID``, a batch scheduler's preemption or a closed session would
    otherwise end the process on the spot and leave its trial RUNNING until
    another worker finds its heartbeat stale. Returns the previous handler.
    """

    def on_sigterm(signum, frame):
        terminated.append(signum)
        raise KeyboardInterrupt

    if threading.current_thread() is not threading.main_thread():
        return None  # Python delivers signals to the main thread only.
    return signal.signal(signal.SIGTERM, on_sigterm)


class _TrialProgress:
    """Progress lines within a long trial, on stderr, every few seconds.

    The objective calls it about once a second while a trial's CV runs; a
    line is printed when :data:`PROGRESS_EVERY` seconds have passed since the
    trial's last one (through tqdm, so that Optuna's progress bar stays whole).
    """

    def __init__(self) -> None:
        self.last: dict[int, float] = {}

    def __call__(self, trial, done: int, n_splits: int, n_samples_fed: int) -> None:
        now = time.monotonic()
        number = int(trial.number)
        if number not in self.last:
            # The first call comes a second into the trial: the first line
            # comes PROGRESS_EVERY seconds into it, none for a short trial.
            self.last = {number: now - 1.0}  # One trial at a time.
        if now - self.last[number] < PROGRESS_EVERY:
            return
        self.last[number] = now
        line = (
            f"  trial #{number}: {done:,} of {n_splits:,} folds scored, "
            f"{n_samples_fed:,} rows fed"
        )
        try:
            from tqdm import tqdm

            tqdm.write(line, file=sys.stderr)
        except ImportError:  # pragma: no cover - Optuna depends on tqdm
            print(line, file=sys.stderr, flush=True)


def _older_study_hint(changes: Sequence[str]) -> str:
    """A way to resume a study of a learner that the CLI now preprocesses."""
    if not any("now sklearn.pipeline.Pipeline" in change for change in changes):
        return ""
    return (
        " (a study of the learner alone, as the command line ran it before it "
        "scaled features and shuffled folds, resumes with --preprocess none "
        "--no-shuffle)"
    )


#: The reason a fallback note gives: "TreeCV cannot run X (<reason>); ...".
_FALLBACK_REASON = re.compile(r"cannot run \w+ \((.*)\); method=")


def _fallback_reason(estimator, messages: list[str]) -> str:
    """Why no fast backend runs ``estimator``, from its fallback messages."""
    name = type(estimator).__name__
    if not hasattr(estimator, "steps"):
        return f"TreeCV cannot run {name}"
    for message in messages:
        match = _FALLBACK_REASON.search(message)
        if match:
            return f"TreeCV cannot run this pipeline: {match.group(1)}"
    return f"TreeCV cannot run this {name}"


#: The library's words for a choice, and the command line's.
_CLI_WORDS = {
    "method='standard'": "--backend standard",
    "method='treecv'": "--backend treecv",
    "method='auto'": "--backend auto",
}


class _Notes:
    """Show each distinct warning of a run once, as one clean line.

    Python's own "default"/"once" bookkeeping resets whenever a library
    touches the warning filters, so a note such as TreeCVRegimeWarning would
    be repeated for every trial; the trials therefore record every warning,
    and this says each once, on stderr above the progress bar: ``note:`` for
    TreeCV's own notes (with the command line's flags for the library's
    parameters), ``warning (Category):`` for others, without the file and
    line a Python warning shows. The user's filters (``-W``,
    ``PYTHONWARNINGS``), as they stood when the run began, still decide:
    a warning they ignore is not shown.
    """

    def __init__(self) -> None:
        self.filters = list(warnings.filters)
        self.said: set = set()

    def say(self, caught) -> None:
        """Print each warning of ``caught`` not said before and not ignored."""
        for w in caught:
            key = (str(w.message), w.category)
            if key in self.said or self.ignored(w):
                continue
            self.said.add(key)
            text = " ".join(str(w.message).split())
            for words, flag in _CLI_WORDS.items():
                text = text.replace(words, flag)
            ours = w.category.__module__.split(".")[0] == "sklearn_ext"
            head = "note" if ours else f"warning ({w.category.__name__})"
            _print_above_bar(f"{head}: {text}")

    def ignored(self, w) -> bool:
        """Whether the first of the user's filters that matches ``w`` ignores it."""
        text = str(w.message)
        module = _module_name(w.filename)
        for action, message, category, mod, lineno in self.filters:
            if (
                (message is None or message.match(text))
                and issubclass(w.category, category)
                and (mod is None or mod.match(module))
                and lineno in (0, w.lineno)
            ):
                return action == "ignore"
        return False


def _module_name(filename: str) -> str:
    """The dotted module name of ``filename``, as a warning filter matches it."""
    path = os.path.abspath(filename)
    roots = [os.path.abspath(entry or os.curdir) for entry in sys.path]
    inside = [root for root in roots if path.startswith(root + os.sep)]
    relative = os.path.relpath(path, max(inside, key=len)) if inside else path
    name = relative.removesuffix(".py").replace(os.sep, ".")
    return name.removesuffix(".__init__")


def _print_above_bar(line: str) -> None:
    """Print ``line`` on stderr without breaking an active progress bar."""
    from tqdm import tqdm

    tqdm.write(line, file=sys.stderr)


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


def _check_save_path(path: str | None) -> None:
    """Refuse a --save-model path that cannot be written, before the study runs."""
    if path is None:
        return
    from pathlib import Path

    target = Path(path)
    if target.is_dir():
        raise CLIError(f"--save-model {path!r} is a directory; give a file name.")
    if not target.parent.is_dir():
        raise CLIError(
            f"--save-model {path!r}: the folder {str(target.parent)!r} does not exist."
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
    from sklearn_ext import tree_cross_validate
    from sklearn_ext.model_selection import TreeCVRegimeWarning
    from sklearn_ext.model_selection._regime import regime_estimator

    params = suggest_params(FixedTrial(best.params, best.number), objective.params)
    estimator = clone(objective.estimator).set_params(**params)
    resolved = objective.core_.resolve(estimator)
    backend = resolved.backend
    if backend.name == "standard":
        print("Time: the trials ran standard CV; there is no TreeCV to compare.")
        return
    # Like with like: standard CV trains each fold the way the trials scored it
    # (one ordered pass after a tree backend), not with the learner's own fit.
    reference = regime_estimator(estimator, resolved.regime, objective.core_.classes)
    runs, learn = {}, {}

    def run(model, method, leaf_callback=None):
        with warnings.catch_warnings():
            # The trials have said what TreeCV scores; the timing says it once more.
            warnings.simplefilter("ignore", TreeCVRegimeWarning)
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
    result = run(estimator, backend)
    runs["tree"] = time.perf_counter() - tic
    learn["tree"] = float(np.sum(result["fit_time"]) + np.sum(result["score_time"]))
    first: list[float] = []
    if _rough_standard(runs["tree"], np.sum(result["n_samples_fed"]), objective):
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
    spent = sum(
        float(_details(t).get("fit_time", 0.0))
        + float(_details(t).get("score_time", 0.0))
        for t in ran
    )
    estimate = len(ran) * learn["standard"]
    print(
        f"Time: one standard {args.cv}-fold CV of the best parameters {took}, "
        f"one with {backend.name} {runs['tree']:.2f} s "
        f"({_speedup(runs['standard'], runs['tree'])})."
    )
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
    if tree <= 0 or standard <= 0:
        return "too fast to compare"
    if standard >= tree:
        return f"{standard / tree:.1f}x faster"
    return f"{tree / standard:.1f}x slower on this data"


def _cv(args) -> int:
    estimator, _, X, y, splitter, notes = _setup(args)
    name = type(final_step(estimator)).__name__
    rows = [_cv_row(args, estimator, X, y, args.backend, splitter)]
    note = None
    if rows[0][0] == "standard":
        if rows[0][4]:
            print(rows[0][4])
    elif not args.standard:
        note = "Standard CV not run (--no-standard)."
    else:
        if not args.force_standard:
            note = _standard_too_long(args, estimator, X, y, rows[0], splitter)
        if note is None:
            # Like with like: standard CV of the regime the tree scored.
            reference = _same_regime(rows[0][0], estimator, X, y)
            rows.append(_cv_row(args, reference, X, y, "standard", splitter))
    print(
        f"{name} on {args.dataset} ({X.shape[0]} x "
        f"{X.shape[1]}), {args.cv}-fold CV, scoring={args.scoring or 'score'}"
    )
    print(preprocessing_line(*notes, rows[0][0]))
    print(f"{'backend':<12} {'mean':>8} {'std':>8} {'rows fed':>12} {'time (s)':>9}")
    for backend, scores, fed, wall, _, _ in rows:
        print(
            f"{backend:<12} {np.mean(scores):>8.4f} {np.std(scores):>8.4f} "
            f"{fed:>12,} {wall:>9.3f}"
        )
    if len(rows) == 2:
        print(
            f"{rows[0][0]} takes {_ratio_words(rows[1][3], rows[0][3])} standard CV "
            "of the same models"
            + (" (one ordered pass each)." if _one_pass(rows[0][0]) else ".")
        )
    gap = rows[0][5]
    if gap is not None:
        print(
            f"{name}.fit, a different training regime, scores {gap['fit_score']:.4f} "
            f"on {len(gap['splits'])} of the folds where the tree's models score "
            f"{gap['tree_score']:.4f} (gap {gap['gap']:+.4f}); --backend standard "
            f"scores {name}.fit on every fold."
        )
    if note:
        print(note)
    return 0


def _one_pass(backend: str) -> bool:
    """Whether ``backend``'s folds are one ordered pass (its declaration)."""
    from sklearn_ext.model_selection._choice import backend_class

    return backend_class(backend).scores == "one_pass"


def _same_regime(backend: str, estimator, X, y):
    """The estimator whose ``fit`` is the regime ``backend`` scored."""
    from sklearn.base import is_classifier

    from sklearn_ext.model_selection._choice import backend_class
    from sklearn_ext.model_selection._regime import regime_estimator

    classes = np.unique(y) if is_classifier(estimator) and y is not None else None
    return regime_estimator(estimator, backend_class(backend).scores, classes, X=X)


def _ratio_words(standard: float, tree: float) -> str:
    if tree <= 0 or standard <= 0:
        return "too little time to compare with"
    if standard >= tree:
        return f"{standard / tree:.1f}x less time than"
    return f"{tree / standard:.1f}x more time than"


def _cv_row(args, estimator, X, y, method, cv) -> tuple:
    """One CV run of ``cv``: backend, fold scores, rows fed, wall time, what
    was said when no fast backend runs the learner, and the regime gap."""
    from sklearn_ext.model_selection import TreeCVFallbackWarning
    from sklearn_ext.model_selection._choice import learner_without_partial_fit

    tic = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", TreeCVFallbackWarning)  # said below
            result = _tree_cv(args, estimator, X, y, method, cv)
    except (TypeError, ValueError, AttributeError) as exc:
        # AttributeError: e.g. a scoring that needs predict_proba.
        raise CLIError(" ".join(str(exc).split())) from None
    wall = time.perf_counter() - tic
    scores = next(v for k, v in result.items() if k.startswith("test_"))
    said = ""
    if method != "standard" and result["backend"] == "standard":
        reasons = [
            match.group(1)
            for w in caught
            if w.category is TreeCVFallbackWarning
            and (match := _FALLBACK_REASON.search(str(w.message)))
        ]
        # A learner without partial_fit falls back without a warning.
        quiet = learner_without_partial_fit(estimator)
        reasons += [] if quiet is None else [quiet]
        why = f" ({reasons[0]})" if reasons else ""
        name = type(final_step(estimator)).__name__
        said = f"No fast backend runs {name}{why}: standard CV only."
    gap = result.get("regime_gap")
    return result["backend"], scores, result["n_samples_fed"], wall, said, gap


class _EnoughFolds(Exception):
    """Raised by the leaf callback that times standard CV's first folds."""


def _rough_standard(tree_wall: float, tree_fed: int, objective) -> bool:
    """Whether standard CV may take more than :data:`PROBE_ABOVE` seconds.

    A rough estimate from TreeCV's wall time per row fed and the ``n (k - 1)``
    rows standard CV feeds.
    """
    plan = objective.fold_plan_
    rows = plan.n_samples * (plan.n_splits - 1)
    return tree_wall * rows / max(int(tree_fed), 1) > PROBE_ABOVE


def _first_folds(run) -> list[float]:
    """Seconds of fitting and scoring of standard CV's first folds.

    ``run(leaf_callback)`` runs standard CV; it is stopped after
    :data:`PROBE_FOLDS` folds or about :data:`PROBE_SECONDS` seconds.
    """
    spent: list[float] = []
    start = time.perf_counter()

    def enough(leaf) -> None:
        spent.append(float(leaf.fit_time) + float(leaf.score_time))
        if len(spent) >= PROBE_FOLDS or time.perf_counter() - start > PROBE_SECONDS:
            raise _EnoughFolds

    try:
        run(enough)
    except _EnoughFolds:
        pass
    except (TypeError, ValueError, AttributeError) as exc:
        raise CLIError(" ".join(str(exc).split())) from None
    return spent


def _standard_too_long(args, estimator, X, y, tree_row, cv) -> str | None:
    """Why standard CV is not run, or ``None`` when it takes at most an hour.

    When the rough estimate (:func:`_rough_standard`) exceeds
    :data:`PROBE_ABOVE`, standard CV's first folds are timed (fitting and
    scoring) and extrapolated to the ``k`` folds.
    """
    _, _, fed, wall, _, _ = tree_row
    rows = X.shape[0] * (args.cv - 1)
    if wall * rows / max(int(fed), 1) <= PROBE_ABOVE:
        return None
    spent = _first_folds(
        lambda stop: _tree_cv(args, estimator, X, y, "standard", cv, stop)
    )
    if not spent:
        return None
    estimate = sum(spent) / len(spent) * args.cv
    if estimate <= STANDARD_LIMIT:
        return None
    return (
        f"Standard CV not run: it would take about {_duration(estimate)} (its "
        f"first {len(spent)} folds took {sum(spent):.2f} s fitting and scoring, "
        f"x {args.cv:,} folds). --force-standard runs it anyway; --no-standard "
        "skips it without timing."
    )


def _seconds(seconds: float) -> str:
    """``seconds`` to a tenth below two minutes, else as :func:`_duration`."""
    return f"{seconds:.1f} s" if seconds < 120 else _duration(seconds)


def _duration(seconds: float) -> str:
    """``seconds`` in the unit a reader compares: s, min, h or days."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    if seconds < 172800:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 86400:.1f} days"


def _tree_cv(args, estimator, X, y, method, cv, leaf_callback=None):
    from sklearn_ext import tree_cross_validate

    return tree_cross_validate(
        estimator,
        X,
        y,
        cv=cv,
        scoring=args.scoring,
        method=method,
        n_jobs=args.n_jobs,
        error_score="raise",
        leaf_callback=leaf_callback,
        return_run_info=True,
    )


def _details(trial) -> dict[str, Any]:
    """A trial's CV details (the "cv" attribute of TreeCVObjective)."""
    return trial.user_attrs.get("cv", {})


def _stem(dataset: str) -> str:
    from pathlib import Path

    return Path(dataset).stem or dataset


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code.

    0 for a run that completed, 1 when no trial completed, 2 for a user error
    (one ``optuna-treecv: error: ...`` line on stderr), 130 after Ctrl-C
    (``tune`` prints the summary of the trials that finished first), 143
    when SIGTERM ended ``tune`` (its running trial recorded as failed).
    """
    args = _parser().parse_args(argv)
    try:
        return _tune(args) if args.command == "tune" else _cv(args)
    except CLIError as exc:
        print(f"optuna-treecv: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:  # Outside a study: while loading or in `cv`.
        print("optuna-treecv: interrupted.", file=sys.stderr)
        return EXIT_INTERRUPTED


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
