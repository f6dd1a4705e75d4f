"""What an ``optuna-treecv`` command runs, from its parsed arguments: the
estimator with its preprocessing, the search space, the data and the folds;
and why no fast backend runs a learner, in the header's words."""

from __future__ import annotations

import re

from optuna_treecv._cli_args import CLIError, _parse_fixed, _parse_space
from optuna_treecv._data import load_data
from optuna_treecv._learners import make_learner, scales_by_default
from optuna_treecv._preprocess import make_splitter, prepare, step_names, step_space


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
