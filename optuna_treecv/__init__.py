"""Optuna side of optuna-treecv."""

__version__ = "0.1.0.dev0"

__all__: list[str] = []
