"""
AUROC heat maps over pairs of SSAD hyperparameters, from the grid study
=======================================================================

Reads the study written by ``gornitz_optuna_grid.py`` (same ``--storage`` and
``--n``/``--grid-size``/``--synthetic``, or ``--study-name``) and draws, for each
of the six pairs of ``eta_u``, ``eta_l``, ``kappa`` and ``gamma``, the mean
10-fold AUROC maximised over the other two hyperparameters: what the best
setting can reach with those two fixed. It prints the same maps as text, so it
is useful without matplotlib; the figure needs matplotlib (an optional
dependency: ``pip install matplotlib``, or the ``examples`` extra).

Usage::

    python examples/gornitz_optuna_grid.py
    python examples/plot_gornitz_heatmaps.py --output docs/gornitz_heatmaps.png

The maps of the full 10^4-point grid on 20,000 ForestCover rows:

.. image:: /gornitz_heatmaps.png
   :alt: Best 10-fold AUROC over each pair of SSAD hyperparameters
"""

# sphinx_gallery_thumbnail_path = "gornitz_heatmaps.png"

from __future__ import annotations

import itertools
import sys

import _gornitz as g  # The sibling module examples/_gornitz.py.
import numpy as np
import optuna
from optuna.trial import TrialState

from optuna_treecv import open_storage

#: The order of the axes of the score array.
NAMES = ("eta_u", "eta_l", "kappa", "gamma")


def score_array(study: optuna.Study, space) -> np.ndarray:
    """Mean AUROC of every grid point, shape (len(eta_u), ..., len(gamma));
    NaN where the grid point has no complete trial."""
    scores = np.full([len(space[name]) for name in NAMES], np.nan)
    position = {name: {v: i for i, v in enumerate(space[name])} for name in NAMES}
    for trial in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,)):
        try:
            index = tuple(position[name][float(trial.params[name])] for name in NAMES)
        except KeyError:  # Not a grid point.
            continue
        scores[index] = np.fmax(scores[index], trial.value)
    return scores


def pair_maps(
    scores: np.ndarray, reduce: str = "max"
) -> dict[tuple[str, str], np.ndarray]:
    """For each pair of hyperparameters, the maximum (or mean) over the other two."""
    function = {"max": np.nanmax, "mean": np.nanmean}[reduce]
    maps = {}
    for a, b in itertools.combinations(range(len(NAMES)), 2):
        others = tuple(i for i in range(len(NAMES)) if i not in (a, b))
        with np.errstate(all="ignore"), _quiet_nan_warning():
            maps[NAMES[a], NAMES[b]] = function(scores, axis=others)
    return maps


class _quiet_nan_warning:
    """Silence numpy's all-NaN slice warning (an unevaluated pair stays NaN)."""

    def __enter__(self):
        import warnings

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc):
        return self._catch.__exit__(*exc)


def print_maps(maps, space, reduce: str = "max") -> None:
    for (a, b), values in maps.items():
        print(f"\n{reduce} AUROC over the others; rows {a}, columns {b}")
        print(" " * 9 + "".join(f"{v:>7.3g}" for v in space[b]))
        for v, row in zip(space[a], values, strict=True):
            print(f"{v:>9.3g}" + "".join(f"{x:>7.3f}" for x in row))


def plot_maps(maps, space, output: str, title: str, reduce: str = "max") -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 3, figsize=(12, 7.2), constrained_layout=True)
    finite = np.concatenate([m[np.isfinite(m)] for m in maps.values()])
    vmin, vmax = (float(finite.min()), float(finite.max())) if finite.size else (0, 1)
    for ax, ((a, b), values) in zip(axes.flat, maps.items(), strict=True):
        image = ax.imshow(
            values, origin="lower", cmap="viridis", vmin=vmin, vmax=vmax, aspect="auto"
        )
        ax.set_xticks(range(len(space[b])), [f"{v:g}" for v in space[b]], rotation=60)
        ax.set_yticks(range(len(space[a])), [f"{v:g}" for v in space[a]])
        ax.set_xlabel(b)
        ax.set_ylabel(a)
    fig.colorbar(
        image,
        ax=axes,
        shrink=0.8,
        label=f"mean 10-fold AUROC ({reduce} over the other two)",
    )
    fig.suptitle(title)
    fig.savefig(output, dpi=72)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = g.make_parser(__doc__.strip().splitlines()[0])
    parser.add_argument(
        "--output", default="gornitz_heatmaps.png", help="PNG file of the figure"
    )
    parser.add_argument(
        "--reduce",
        choices=("max", "mean"),
        default="max",
        help="combine the other two hyperparameters by their best (max) or mean AUROC",
    )
    parser.add_argument("--no-plot", action="store_true", help="text only")
    args = parser.parse_args(argv)
    g.check_args(parser, args)
    if args.synthetic is False and args.data is None:
        # The grid script falls back to the synthetic stand-in without the data.
        if not g.default_data_path().is_file():
            args.study_name += "-synthetic"
    space = g.grid(args.grid_size)
    try:
        study = optuna.load_study(
            study_name=args.study_name, storage=open_storage(args.storage)
        )
    except KeyError:
        parser.error(
            f"no study {args.study_name!r} in {args.storage}; run "
            "gornitz_optuna_grid.py with the same options first"
        )
    scores = score_array(study, space)
    n_done = int(np.isfinite(scores).sum())
    print(
        f"study {args.study_name!r}: {n_done:,} of {scores.size:,} grid points complete"
    )
    if n_done == 0:
        print("nothing to plot", file=sys.stderr)
        return 1
    maps = pair_maps(scores, args.reduce)
    print_maps(maps, space, args.reduce)
    if args.no_plot:
        return 0
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print(
            "\nmatplotlib is not installed: no figure drawn (the maps are above). "
            "Install it with `pip install matplotlib` (or the examples extra: "
            "`pip install -e .[examples]`), or pass --no-plot.",
            file=sys.stderr,
        )
        return 1
    best = np.unravel_index(np.nanargmax(scores), scores.shape)
    setting = ", ".join(
        f"{n}={space[n][i]:g}" for n, i in zip(NAMES, best, strict=True)
    )
    title = (
        f"SSAD, {n_done:,} grid points, 10-fold TreeCV, {args.reduce} over the "
        f"other two\nbest AUROC {np.nanmax(scores):.4f} at {setting}"
    )
    plot_maps(maps, space, args.output, title, args.reduce)
    print(f"\nfigure written to {args.output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
