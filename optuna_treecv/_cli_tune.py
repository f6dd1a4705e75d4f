"""``optuna-treecv tune``: a study of a learner's parameters, with its storage,
its header, its progress lines and each warning said once."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

from optuna_treecv._cli_args import (
    DEFAULT_HEARTBEAT,
    EXIT_INTERRUPTED,
    EXIT_TERMINATED,
    PROGRESS_EVERY,
    CLIError,
    _make_pruner,
    _report_of,
)
from optuna_treecv._cli_report import _summarize
from optuna_treecv._cli_setup import _fallback_reason, _setup
from optuna_treecv._interrupt import optimize_until_interrupted
from optuna_treecv._preprocess import final_step, preprocessing_line
from optuna_treecv._storage import (
    describe_storage_error,
    open_storage,
    retry_running_trials,
)

if TYPE_CHECKING:
    import optuna


def _tune(args) -> int:
    _check_budget(args)
    _check_save_path(args.save_model)
    estimator, space, X, y, splitter, notes = _setup(args)
    if not space:
        raise CLIError(
            f"{args.learner!r} has no default search space; give one with "
            "--space NAME=SPEC."
        )
    report = _report_of(args)
    objective = _make_objective(args, estimator, space, X, y, splitter, report)
    study = _open_study(args, objective, report)
    if args.retry_running:
        retried = retry_running_trials(study)
        print(f"Failed {len(retried)} RUNNING trial(s) and queued their points again.")
    n_before = len(study.trials)
    said = _say_header(args, objective, estimator, X, study.study_name, notes)
    tic = time.perf_counter()
    interrupted, terminated, errors = _run_study(args, study, objective, said)
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


def _check_budget(args) -> None:
    """Check --timeout and --n-trials; 30 trials when neither is given."""
    if args.timeout is not None and not args.timeout > 0:
        raise CLIError(f"--timeout must be positive, got {args.timeout}.")
    if args.n_trials is None and args.timeout is None:
        args.n_trials = 30
    if args.n_trials is not None and args.n_trials < 1:
        raise CLIError(f"--n-trials must be at least 1, got {args.n_trials}.")


def _make_objective(args, estimator, space, X, y, splitter, report):
    """The study's TreeCVObjective; a setting it refuses is a user error."""
    from optuna_treecv._objective import TreeCVObjective

    try:
        return TreeCVObjective(
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


def _open_study(args, objective, report) -> optuna.Study:
    """Create the study, or load it when its settings match the objective's."""
    import optuna

    from optuna_treecv._objective import StudyIdentityError

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
    return study


def _say_header(args, objective, estimator, X, study_name: str, notes) -> _Notes:
    """Print what the study runs; return the notes that say each warning once."""
    from sklearn_ext.model_selection import TreeCVFallbackWarning

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
    return said


def _run_study(args, study, objective, said) -> tuple[bool, list[int], list[str]]:
    """Run the trials until done, Ctrl-C or SIGTERM.

    Returns whether Ctrl-C stopped the study, the SIGTERMs received and the
    error of each failed trial.
    """
    import optuna

    from sklearn_ext.model_selection import TreeCVFallbackWarning

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
            where = f"study {study.study_name!r} in {args.storage}"
            raise CLIError(f"{where}: {describe_storage_error(exc)}") from None
        finally:
            optuna.logging.set_verbosity(optuna.logging.WARNING)
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)
    return interrupted, terminated, errors


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


def _stem(dataset: str) -> str:
    from pathlib import Path

    return Path(dataset).stem or dataset


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
