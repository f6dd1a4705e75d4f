"""The order of the gallery's examples (``within_subsection_order``)."""

#: Shown first, in this order; other examples follow by file name, then the
#: Görnitz command-line tools, which the build shows but does not run.
FIRST = (
    "plot_treecv_vs_standard.py",
    "plot_one_standard_error.py",
    "optuna_quickstart.py",
    "plot_optuna_pruning.py",
    "plot_svm_c_path.py",
    "plot_exact_statistics.py",
)


def example_order(filename: str) -> tuple:
    """Sort key: the examples of :data:`FIRST`, the others, the Görnitz tools."""
    if filename in FIRST:
        return (0, FIRST.index(filename), filename)
    is_tool = filename.startswith(("gornitz_", "plot_gornitz_"))
    return (2 if is_tool else 1, 0, filename)
