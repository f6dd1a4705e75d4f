"""The ``optuna-treecv`` command line: ``tune`` a learner, or ``cv`` it once.

The commands live in their own modules: :mod:`optuna_treecv._cli_args` parses
the arguments, :mod:`optuna_treecv._cli_setup` turns them into what a command
runs, :mod:`optuna_treecv._cli_tune` and :mod:`optuna_treecv._cli_report` run a
study and report on it, :mod:`optuna_treecv._cli_cv` cross-validates once.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from optuna_treecv._cli_args import EXIT_INTERRUPTED, CLIError, _parser
from optuna_treecv._cli_cv import _cv
from optuna_treecv._cli_tune import _tune

__all__ = ["main"]


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
