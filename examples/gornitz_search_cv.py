"""
The 10^4-point SSAD grid through scikit-learn's search interface: TreeCVSearchCV
================================================================================

The same grid as ``gornitz_optuna_grid.py`` (``eta_u``, ``eta_l``, ``kappa``,
``gamma``, ten values each), searched with :class:`sklearn_ext.TreeCVSearchCV`
instead of Optuna: a ``GridSearchCV`` look-alike (same ``cv_results_`` keys,
``best_params_``, refit) whose unit of work is a candidate, cross-validated
10-fold by one TreeCV tree on one shared fold plan (the native tree for this
learner). The revealed labels travel as the ``labeled`` fit parameter.

Why not ``GridSearchCV(..., cv=TreeCVSplitter(10))``: scikit-learn fits every
(candidate, fold) pair on its own, so the ten fold models of a candidate share
nothing unless the learner is wrapped in ``TreeCVEstimator`` (prefix sharing in
Python, per batch); ``TreeCVSearchCV`` runs the whole tree per candidate in C.

Nothing is stored: this is the in-memory, no-Optuna way to the same table. It
prints the best settings, the refit model (``best_estimator_``, trained as the
candidates were scored), the time taken and the time standard 10-fold CV
would take (measured on random grid points and extrapolated).

Usage::

    python examples/gornitz_search_cv.py                       # the full grid
    python examples/gornitz_search_cv.py --quick --synthetic   # 16 points
"""

# The script is not run by the docs build (it takes minutes on the real data); its
# thumbnail is the figure of plot_gornitz_heatmaps.py, which draws this grid's results.
# sphinx_gallery_thumbnail_path = "gornitz_heatmaps.png"

from __future__ import annotations

import sys
import time

import _gornitz as g  # The sibling module examples/_gornitz.py.
import numpy as np

from sklearn_ext import StratifiedTreeCVSplitter, TreeCVSearchCV


def main(argv: list[str] | None = None) -> int:
    parser = g.make_parser(__doc__.strip().splitlines()[0])
    parser.add_argument(
        "--n-jobs",
        type=int,
        default=None,
        help="candidates cross-validated in parallel (joblib)",
    )
    args = parser.parse_args(argv)
    g.check_args(parser, args)  # --storage and --study-name are not used here.
    data = g.load_data(args)
    space = g.grid(args.grid_size)
    n_points = len(g.grid_points(space))
    print(data.describe())
    print(g.describe_grid(space))
    print(g.load_average())

    # One fold plan for every candidate (and for the standard-CV estimate).
    plan = StratifiedTreeCVSplitter(g.N_FOLDS).plan(data.X, data.y)
    search = TreeCVSearchCV(
        g.make_estimator(args.seed),
        space,
        cv=plan,
        n_jobs=args.n_jobs,
        return_run_info=True,  # n_samples_fed per candidate
    )
    tic = time.perf_counter()
    search.fit(data.X, data.y, labeled=data.labeled)
    seconds = time.perf_counter() - tic
    print(g.load_average())
    results = search.cv_results_
    print(
        f"searched {len(results['params']):,} candidates; mean AUROC over the grid "
        f"{np.mean(results['mean_test_score']):.4f}, "
        f"{int(np.sum(results['n_samples_fed'])):,} rows fed in all "
        f"(standard CV: {9 * len(data.y) * n_points:,})"
    )
    g.print_best(search.best_params_, search.best_score_)
    g.print_final_model(search.best_estimator_, len(data.y))  # The refit model.
    standard = g.time_standard_cv(
        data, g.grid_points(space), plan, args.sample_standard
    )
    g.print_times(seconds, n_points, standard, what="TreeCVSearchCV, refit included")
    return 0


if __name__ == "__main__":
    sys.exit(main())
