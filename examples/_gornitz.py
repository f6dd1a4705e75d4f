"""Shared pieces of the Görnitz-style grid examples (``gornitz_*.py``).

The semi-supervised anomaly detector of Görnitz, Kloft, Rieck and Brefeld (JAIR
2013) has four hyperparameters: the slack weights ``eta_u`` (unlabelled rows)
and ``eta_l`` (labelled rows), the margin weight ``kappa`` and the RBF kernel
width ``gamma``. Ten values each make the 10^4-point grid of the TreeCV paper.
This module holds the grid, the command-line options every script shares, the
data lookup (``--data``, ``$OPTUNA_TREECV_DATA``, the project's shared copy, else
the synthetic stand-in), a progress printer, the estimate of what standard 10-fold
CV would cost, and the printouts. The scripts import it as a sibling module; the
reusable pieces are public names of the packages: the data loaders of
:mod:`sklearn_ext.datasets` and :class:`optuna_treecv.ResumableGridSampler`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import optuna
from optuna.distributions import FloatDistribution
from optuna.trial import TrialState

from optuna_treecv import ResumableGridSampler
from sklearn_ext import SemiSupervisedAnomalyDetector, tree_cross_validate
from sklearn_ext.datasets import (
    AnomalyData,
    load_forestcover_anomaly,
    make_anomaly_data,
)

if TYPE_CHECKING:
    from optuna.trial import FrozenTrial

#: Ten values per hyperparameter, half a decade apart (10 x 10 x 10 x 10 points).
GRID: dict[str, list[float]] = {
    "eta_u": [0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0],
    "eta_l": [0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0, 100.0, 300.0, 1000.0],
    "kappa": [0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0],
    "gamma": [3e-5, 1e-4, 3e-4, 0.001, 0.003, 0.01, 0.03, 0.1, 0.3, 1.0],
}
#: Folds of every cross-validation.
N_FOLDS = 10
#: Settings of ``--quick``: a 2 x 2 x 2 x 2 grid on 2,000 rows.
QUICK_GRID_SIZE = 2
QUICK_N = 2_000


def grid(size: int = 10) -> dict[str, list[float]]:
    """``size`` values per hyperparameter, spread evenly over :data:`GRID`.

    Examples
    --------
    >>> grid(2)["gamma"]
    [3e-05, 1.0]
    """
    if not 1 <= size <= 10:
        raise ValueError(f"size must be in [1, 10]. Got {size!r} instead.")
    picks = np.unique(np.round(np.linspace(0, 9, size)).astype(int))
    return {name: [values[i] for i in picks] for name, values in GRID.items()}


def grid_points(space: Mapping[str, Sequence[float]]) -> list[dict[str, float]]:
    """Every point of the grid, as parameter dicts (the order of
    :attr:`optuna_treecv.ResumableGridSampler.points`)."""
    return ResumableGridSampler(space).points


def search_space(space: Mapping[str, Sequence[float]]) -> dict[str, FloatDistribution]:
    """Log-uniform distributions spanning the grid (for ``TreeCVObjective``)."""
    return {
        name: FloatDistribution(min(values), max(values), log=True)
        for name, values in space.items()
    }


def make_estimator(seed: int = 0) -> SemiSupervisedAnomalyDetector:
    """The learner every script tunes: 100 random Fourier features, seeded so
    the features of each kernel width are computed once and cached."""
    return SemiSupervisedAnomalyDetector(n_components=100, random_state=seed)


# -- data ---------------------------------------------------------------------------
#: Environment variable naming ``covtype.npz`` (or the folder holding it).
DATA_ENV = "OPTUNA_TREECV_DATA"


def default_data_path() -> Path:
    """``$OPTUNA_TREECV_DATA`` (a file or a folder holding ``covtype.npz``), else
    ``../shared/data/covtype.npz`` relative to the repository."""
    env = os.environ.get(DATA_ENV)
    if env:
        path = Path(env)
        return path / "covtype.npz" if path.is_dir() else path
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "covtype.npz"


def load_anomaly_data(
    path: str | os.PathLike | None = None,
    n: int | None = 20_000,
    *,
    synthetic: bool = False,
    label_fraction: float = 0.05,
    random_state: int = 0,
) -> AnomalyData:
    """ForestCover from ``path`` (default :func:`default_data_path`), or the
    synthetic stand-in when ``synthetic`` is set or the file is missing (with a
    notice on stderr saying how to get it)."""
    if not synthetic:
        file = Path(path) if path is not None else default_data_path()
        try:
            return load_forestcover_anomaly(
                file, n, label_fraction=label_fraction, random_state=random_state
            )
        except FileNotFoundError as exc:
            if path is not None:  # Asked for explicitly: no silent substitute.
                raise
            print(
                f"Notice: {exc}\nUsing the synthetic stand-in (--synthetic).",
                file=sys.stderr,
            )
    return make_anomaly_data(
        2_000 if n is None else n,
        label_fraction=label_fraction,
        random_state=random_state,
    )


# -- command line ------------------------------------------------------------------
def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def make_parser(description: str) -> argparse.ArgumentParser:
    """The options every Görnitz script takes."""
    parser = argparse.ArgumentParser(
        description=description,
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
    )
    parser.add_argument(
        "--n",
        type=_positive_int,
        default=None,
        help="rows of the stratified ForestCover sample (default 20000, or "
        f"{QUICK_N} with --quick)",
    )
    parser.add_argument(
        "--grid-size",
        type=_positive_int,
        default=None,
        help="values per hyperparameter, 1..10 (10: the 10^4-point grid; "
        f"default 10, or {QUICK_GRID_SIZE} with --quick)",
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"a {QUICK_GRID_SIZE}^4-point grid on {QUICK_N} rows, for a smoke test",
    )
    parser.add_argument(
        "--storage",
        default="sqlite:///gornitz.db",
        help="Optuna storage: sqlite:///PATH, another SQLAlchemy URL "
        "(postgresql://, mysql://...), journal:PATH (JournalFileStorage) or "
        "memory (nothing kept)",
    )
    parser.add_argument("--study-name", default=None, help="study name")
    parser.add_argument(
        "--data",
        default=None,
        help="covtype.npz (default: $OPTUNA_TREECV_DATA or "
        "../shared/data/covtype.npz relative to the repository; the synthetic "
        "stand-in, with a notice, when that is missing)",
    )
    parser.add_argument(
        "--synthetic",
        action="store_true",
        help="use the synthetic stand-in instead of ForestCover",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seeds data, folds, learner"
    )
    parser.add_argument(
        "--sample-standard",
        type=int,
        default=20,
        metavar="M",
        help="grid points timed with standard 10-fold CV to extrapolate its cost "
        "(0: skip)",
    )
    return parser


STORAGE_SCHEMES = ("sqlite", "postgresql", "mysql", "oracle", "mssql")


def check_args(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Fill the ``--quick`` defaults and reject bad values (exit status 2)."""
    if args.n is None:
        args.n = QUICK_N if args.quick else 20_000
    if args.grid_size is None:
        args.grid_size = QUICK_GRID_SIZE if args.quick else 10
    if args.grid_size > 10:
        parser.error(f"--grid-size must be in [1, 10]; got {args.grid_size}")
    if args.n < 20 * N_FOLDS:
        parser.error(
            f"--n must be at least {20 * N_FOLDS} (every one of the {N_FOLDS} "
            f"folds needs normal rows and anomalies); got {args.n}"
        )
    if args.sample_standard < 0:
        parser.error(f"--sample-standard must be >= 0; got {args.sample_standard}")
    storage = args.storage
    if storage != "memory" and not storage.startswith("journal:"):
        scheme = storage.split(":", 1)[0].split("+", 1)[0]
        if "://" not in storage or scheme not in STORAGE_SCHEMES:
            parser.error(
                f"--storage must be sqlite:///PATH, a SQLAlchemy URL "
                f"({', '.join(s + '://' for s in STORAGE_SCHEMES[1:])}), "
                f"journal:PATH or memory; got {storage!r}"
            )
    if args.study_name is None:
        args.study_name = f"gornitz-n{args.n}-g{args.grid_size}" + (
            "-synthetic" if args.synthetic else ""
        )


def load_data(args: argparse.Namespace) -> AnomalyData:
    """The data the options ask for (exit status 2 when ``--data`` is missing)."""
    try:
        data = load_anomaly_data(
            args.data, args.n, synthetic=args.synthetic, random_state=args.seed
        )
    except (FileNotFoundError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    if "synthetic" in data.source and not args.synthetic:
        args.synthetic = True
        args.study_name += (
            "" if args.study_name.endswith("-synthetic") else "-synthetic"
        )
    n_anomalies = int(np.sum(data.y < 0))
    if n_anomalies < N_FOLDS:
        print(
            f"error: the sample holds {n_anomalies} anomalies, fewer than the "
            f"{N_FOLDS} folds; use a larger --n",
            file=sys.stderr,
        )
        sys.exit(2)
    return data


# -- progress -----------------------------------------------------------------------
class ProgressPrinter:
    """An ``optimize`` callback printing one line every ``every`` trials (and at
    the end): points done, rate, time left, best so far. No dependency; readable
    in a log file (``nohup ... > log``), unlike a redrawn bar."""

    def __init__(self, total: int, start: int = 0, every: int | None = None) -> None:
        self.total = total
        self.count = start
        self.start = start
        self.every = every or max(1, total // 100)
        self.tic = time.perf_counter()
        self._lock = threading.Lock()  # Callbacks run in optimize's threads.

    def __call__(self, study: optuna.Study, trial: FrozenTrial) -> None:
        if trial.state != TrialState.COMPLETE:
            return
        with self._lock:
            self.count += 1
            if (self.count - self.start) % self.every and self.count != self.total:
                return
            self._print(study)

    def _print(self, study: optuna.Study) -> None:
        elapsed = time.perf_counter() - self.tic
        rate = (self.count - self.start) / elapsed
        left = (self.total - self.count) / rate if rate > 0 else math.inf
        best = study.best_value
        bar = "#" * int(30 * self.count / self.total)
        print(
            f"[{bar:<30}] {self.count:>6,}/{self.total:,} points  "
            f"{rate:6.1f}/s  {elapsed:7.1f} s  ~{left:6.0f} s left  "
            f"best AUROC {best:.4f}",
            flush=True,
        )


# -- standard CV, timed on a sample of grid points -----------------------------------
class StandardCVTimer:
    """Time one 10-fold CV with ``method="standard"`` and with TreeCV on ``m``
    random grid points, one point at a time.

    Each point is cross-validated both ways on the same folds ``cv``, after an
    untimed run of each that fills the feature caches (as they are in all but
    10 of the grid's 10^4 runs). Standard CV trains each fold's model by
    ``partial_fit`` on its 9 training chunks (the same single ordered pass over
    the same rows that TreeCV makes), so the two produce the same models; only
    the sharing differs. Measuring one point at a time lets a long run spread
    the measurements over its course (:meth:`measure_next` from a callback), so
    that standard CV is timed under the same machine load as the grid.
    """

    def __init__(
        self,
        data: AnomalyData,
        points: Sequence[Mapping[str, float]],
        cv,
        m: int,
        seed: int = 0,
    ) -> None:
        rng = np.random.RandomState(seed)
        size = max(0, min(m, len(points)))
        self.data, self.cv, self.seed = data, cv, seed
        self.points = [points[i] for i in rng.choice(len(points), size, replace=False)]
        self.times: dict[str, list[float]] = {"standard": [], "treecv": []}
        self.seconds = 0.0  # Wall time spent here, warm-up runs included.

    def measure_next(self) -> bool:
        """Measure the next point; False when all are measured."""
        if len(self.times["standard"]) >= len(self.points):
            return False
        tic0 = time.perf_counter()
        params = self.points[len(self.times["standard"])]
        estimator = make_estimator(self.seed).set_params(**params)
        for timed in (False, True):
            for method in ("treecv", "standard"):
                tic = time.perf_counter()
                tree_cross_validate(
                    estimator,
                    self.data.X,
                    self.data.y,
                    cv=self.cv,
                    method=method,
                    fit_params={"labeled": self.data.labeled},
                )
                if timed:
                    self.times[method].append(time.perf_counter() - tic)
        self.seconds += time.perf_counter() - tic0
        return True

    def finish(self) -> dict[str, float] | None:
        """Measure the points left; mean seconds per CV, or None when m = 0."""
        while self.measure_next():
            pass
        if not self.points:
            return None
        return {
            "m": len(self.points),
            "standard": float(np.mean(self.times["standard"])),
            "treecv": float(np.mean(self.times["treecv"])),
        }


def time_standard_cv(
    data: AnomalyData,
    points: Sequence[Mapping[str, float]],
    cv,
    m: int,
    seed: int = 0,
) -> dict[str, float] | None:
    """Mean seconds of one 10-fold CV with ``method="standard"`` and with TreeCV
    on ``m`` random grid points, measured now (see :class:`StandardCVTimer`)."""
    return StandardCVTimer(data, points, cv, m, seed).finish()


# -- printouts ----------------------------------------------------------------------
def describe_grid(space: Mapping[str, Sequence[float]]) -> str:
    n = math.prod(len(v) for v in space.values())
    lines = [f"grid: {n:,} points ({' x '.join(str(len(v)) for v in space.values())})"]
    for name, values in space.items():
        lines.append(f"  {name:<6} {', '.join(f'{v:g}' for v in values)}")
    return "\n".join(lines)


def print_best(params: Mapping[str, float], score: float, label: str = "best") -> None:
    settings = ", ".join(f"{name}={params[name]:g}" for name in sorted(params))
    print(f"{label}: mean 10-fold AUROC {score:.4f} at {settings}")


def print_final_model(model, n_rows: int) -> None:
    """Say how the chosen model was trained: the regime its score describes.

    The trials (or candidates) were scored by one ordered pass of
    ``partial_fit`` over each fold's training rows (the native tree). The model
    returned by :func:`optuna_treecv.refit_estimator` or by a search's refit is
    trained the same way on all rows: for SSAD with its defaults
    (``max_iter=1, shuffle=False``) that is its own ``fit``.
    """
    from sklearn_ext.model_selection import fit_is_one_pass

    name = type(model).__name__
    if name == "TreeCVEstimator":
        inner = type(model.estimator).__name__
        how = f"one ordered pass of partial_fit (a TreeCVEstimator around {inner})"
    elif fit_is_one_pass(model):
        how = f"{name}.fit, one ordered pass as in the folds"
    else:
        how = f"{name}.fit (max_iter={model.max_iter}, as the folds were scored)"
    print(
        f"final model: the best settings fitted on all {n_rows:,} rows by {how}: "
        "the regime the score describes"
    )


def print_times(
    seconds: float,
    n_points: int,
    standard: dict[str, float] | None,
    *,
    what: str = "this run",
    unit: str = "grid points",
    method: str = "TreeCV",
) -> None:
    """The measured time and the extrapolated time of standard 10-fold CV."""
    print(
        f"time: {seconds:.1f} s ({seconds / 60:.1f} min) for {n_points:,} "
        f"{unit} with 10-fold {method}, {what}; "
        f"{1e3 * seconds / max(n_points, 1):.1f} ms each"
    )
    if standard is None:
        return
    total = standard["standard"] * n_points
    print(
        f"standard 10-fold CV: {1e3 * standard['standard']:.1f} ms per grid point "
        f"(TreeCV alone {1e3 * standard['treecv']:.1f} ms), measured on "
        f"{standard['m']} random grid points; EXTRAPOLATED to {n_points:,} {unit}: "
        f"{total:.0f} s ({total / 60:.1f} min) of CV alone, no storage or "
        f"sampler time; {total / seconds:.1f}x the measured time"
    )


def load_average() -> str:
    try:
        return "load average " + ", ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:  # Not on every platform.
        return "load average unknown"
