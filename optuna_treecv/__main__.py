"""``python -m optuna_treecv``: the ``optuna-treecv`` command line."""

import sys

from optuna_treecv._cli import main

sys.exit(main())
