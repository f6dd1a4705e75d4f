"""Parameter validation of public functions, in scikit-learn's wording."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable

from sklearn import get_config
from sklearn.utils._param_validation import validate_parameter_constraints

__all__ = ["validate_params"]


def validate_params(parameter_constraints: dict) -> Callable:
    """Check a public function's arguments against ``parameter_constraints``.

    The same constraints and messages as scikit-learn's own
    ``sklearn.utils._param_validation.validate_params`` ("The 'cv' parameter
    of tree_cross_validate must be ..."). Unlike it, errors raised by the
    estimators the function runs keep their own names: ours are doors onto
    estimators, and "The 'alpha' parameter of PegasosClassifier" tells the user
    where to look. Skipped under ``sklearn.config_context(
    skip_parameter_validation=True)``.

    Parameters
    ----------
    parameter_constraints : dict
        Parameter name to a list of constraints, as for scikit-learn's
        ``_parameter_constraints``.

    Returns
    -------
    decorator : callable
    """

    def decorator(func: Callable) -> Callable:
        signature = inspect.signature(func)

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            if not get_config()["skip_parameter_validation"]:
                bound = signature.bind(*args, **kwargs)
                bound.apply_defaults()
                params = {
                    name: value
                    for name, value in bound.arguments.items()
                    if name in parameter_constraints
                }
                validate_parameter_constraints(
                    parameter_constraints, params, caller_name=func.__qualname__
                )
            return func(*args, **kwargs)

        return wrapper

    return decorator
