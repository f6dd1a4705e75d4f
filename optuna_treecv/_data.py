"""Data sets for the command line: files and scikit-learn's bundled sets."""

from __future__ import annotations

import csv
import zipfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

__all__ = ["BUNDLED", "Data", "load_data", "load_dataset"]

#: Data sets shipped inside scikit-learn (no download).
BUNDLED = {
    "iris": "load_iris",
    "digits": "load_digits",
    "wine": "load_wine",
    "breast_cancer": "load_breast_cancer",
    "diabetes": "load_diabetes",
}
#: scikit-learn data sets that must be downloaded: never fetched here.
_FETCHED = {
    "covtype",
    "20newsgroups",
    "california_housing",
    "kddcup99",
    "lfw_people",
    "olivetti_faces",
    "rcv1",
    "openml",
}
SVMLIGHT_SUFFIXES = (".svm", ".svmlight", ".libsvm", ".txt")


class Data(NamedTuple):
    """A data set as the command line reads it.

    Attributes
    ----------
    X : ndarray or sparse matrix
        The features; an object array when a CSV file has text columns (floats
        in the numeric columns, strings in the text ones).
    y : ndarray
        The target.
    feature_names : list of str or None
        The feature columns' names, from a CSV file's header.
    """

    X: Any
    y: np.ndarray
    feature_names: list[str] | None = None


def load_dataset(spec: str, target: str | None = None) -> tuple[Any, np.ndarray]:
    """Load ``X, y`` from a file or a bundled scikit-learn data set name.

    Parameters
    ----------
    spec : str
        A ``.npz`` file (arrays ``X`` and ``y``), a ``.csv`` file (the last
        column, or ``target``, is the target; a non-numeric first row is a
        header), an svmlight/libsvm file (``.svm``, ``.svmlight``,
        ``.libsvm``, ``.txt``), or one of :data:`BUNDLED`.
    target : str, default=None
        The target column of a CSV file: a header name or a 0-based index.

    Returns
    -------
    X : ndarray or sparse matrix
    y : ndarray

    Raises
    ------
    ValueError
        With a one-line message when the data set cannot be read, e.g. a CSV
        feature column that is not numeric (:func:`load_data` reads those).
    """
    X, y, _ = load_data(spec, target)
    return X, y


def load_data(spec: str, target: str | None = None, *, text: bool = False) -> Data:
    """Load a data set as :func:`load_dataset`, text columns of a CSV included.

    Parameters
    ----------
    spec : str
        As in :func:`load_dataset`.
    target : str, default=None
        The target column of a CSV file: a header name or a 0-based index.
    text : bool, default=False
        Whether a CSV feature column may hold text: a column with a cell that
        is not a number is then read as text (every cell kept as a string),
        and ``X`` is an object array. An empty cell of a numeric column is
        refused either way.

    Returns
    -------
    Data
        ``X``, ``y`` and the feature names (``None`` but for a CSV header).

    Raises
    ------
    ValueError
        With a one-line message when the data set cannot be read.
    """
    path = Path(spec)
    if not path.exists():
        key = spec.lower().replace("-", "_")
        if key in BUNDLED:
            import sklearn.datasets

            return Data(*getattr(sklearn.datasets, BUNDLED[key])(return_X_y=True))
        if key in _FETCHED:
            raise ValueError(
                f"{spec!r} is not bundled with scikit-learn (it must be downloaded, "
                "which optuna-treecv never does); pass a local .npz, .csv or "
                "svmlight file instead."
            )
        raise ValueError(
            f"dataset {spec!r} is neither a file nor a bundled data set "
            f"({', '.join(sorted(BUNDLED))})."
        )
    if path.is_dir():
        raise ValueError(f"dataset {spec!r} is a directory, not a data file.")
    suffix = path.suffix.lower()
    try:
        if suffix == ".npz":
            return Data(*_load_npz(path))
        if suffix == ".csv":
            return _load_csv(path, target, allow_text=text)
        if suffix in SVMLIGHT_SUFFIXES:
            from sklearn.datasets import load_svmlight_file

            X, y = load_svmlight_file(str(path))
            return Data(X, y)
    except ValueError as exc:
        raise ValueError(f"cannot read dataset {spec!r}: {_one_line(exc)}") from None
    except (OSError, zipfile.BadZipFile, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read dataset {spec!r}: {_one_line(exc)}") from None
    raise ValueError(
        f"cannot read dataset {spec!r}: unknown file type {suffix or '(none)'!r}; "
        f"use .npz, .csv or svmlight ({', '.join(SVMLIGHT_SUFFIXES)})."
    )


def _load_npz(path: Path):
    with np.load(path, allow_pickle=False) as data:
        missing = {"X", "y"} - set(data.files)
        if missing:
            raise ValueError(
                f"the .npz file needs arrays 'X' and 'y'; it has {sorted(data.files)}"
            )
        return data["X"], data["y"]


def _load_csv(path: Path, target: str | None, *, allow_text: bool) -> Data:
    # utf-8-sig: a byte-order mark (Excel's "CSV UTF-8") is not part of the
    # first cell, which would otherwise read as text and pass for a header.
    with open(path, newline="", encoding="utf-8-sig") as f:
        text = f.read()
    # (line number, cells) of the non-empty lines; line numbers count from 1.
    lines = [
        (number, row)
        for number, row in enumerate(csv.reader(text.splitlines()), start=1)
        if row
    ]
    if not lines:
        raise ValueError("the file is empty")
    header = None
    if not all(_is_number(cell) for cell in lines[0][1]):
        header, lines = lines[0][1], lines[1:]
    if len(lines) < 2:
        raise ValueError("the file has fewer than 2 data rows")
    n_columns = len(header) if header is not None else len(lines[0][1])
    if n_columns < 2:
        delimiter = _likely_delimiter(text)
        hint = (
            f"; it looks {delimiter!r}-separated: save it with commas"
            if delimiter
            else ""
        )
        raise ValueError(
            "each row has a single column (a comma-separated file needs a "
            f"feature column and a target column){hint}"
        )
    for number, row in lines:
        if len(row) != n_columns:
            where = "the header" if header is not None else f"line {lines[0][0]}"
            raise ValueError(
                f"line {number} has {len(row)} columns, {where} has {n_columns}"
            )
    names = header or [str(i) for i in range(n_columns)]
    column = n_columns - 1
    if target is not None:
        if header is not None and target in header:
            column = header.index(target)
        elif target.lstrip("-").isdigit() and -n_columns <= int(target) < n_columns:
            column = int(target) % n_columns
        else:
            shown = ", ".join(repr(n) for n in names[:20])
            raise ValueError(
                f"no target column {target!r}; the columns are {shown}"
                + (" ..." if n_columns > 20 else "")
                + " (or give a 0-based index)"
            )
    table = np.array([row for _, row in lines], dtype=object)
    feature_columns = [c for c in range(n_columns) if c != column]
    features = table[:, feature_columns]
    numbers = [number for number, _ in lines]
    X = _features(features, names, feature_columns, numbers, allow_text)
    y = _target(table[:, column].astype(str), numbers)
    return Data(X, y, names[:column] + names[column + 1 :] if header else None)


def _features(
    cells: np.ndarray,
    names: list[str],
    columns: list[int],
    numbers: list[int],
    text: bool,
):
    """The feature cells as floats, or an object array with text columns kept.

    A column is text when ``text`` is true and one of its non-empty cells is
    not a number; an empty cell of a numeric column is refused with its line.
    ``columns`` are the cells' columns in the file, ``names`` the file's.
    """
    try:
        return cells.astype(float)
    except ValueError:
        pass
    hint = "; text columns are one-hot encoded unless --preprocess none"
    X = np.empty(cells.shape, dtype=object)
    for j in range(cells.shape[1]):
        column = cells[:, j]
        if text and not all(_is_number(v) for v in column if v.strip()):
            X[:, j] = [str(v) for v in column]
            continue
        for i, cell in enumerate(column):
            if not _is_number(cell):
                what = "an empty cell" if not cell.strip() else repr(cell)
                raise ValueError(
                    f"feature column {names[columns[j]]!r} (column "
                    f"{columns[j] + 1}), line {numbers[i]}: {what} is not a number "
                    "(feature columns must be numeric; choose the target with "
                    "--target" + ("" if text else hint) + ")"
                )
        X[:, j] = column.astype(float)
    return X


def _target(cells: np.ndarray, numbers: list[int]) -> np.ndarray:
    """The target column as numbers where no two labels merge, else as text.

    Integers that fit int64 become int64, other finite numbers float64. Integers
    beyond int64 (e.g. 20-digit ids) stay text, so that distinct labels stay
    distinct classes; a non-finite number (nan, inf) is refused with its line.
    """
    if not all(_is_number(v) for v in cells):
        return cells
    values = cells.astype(float)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        i = int(bad[0])
        raise ValueError(
            f"target value {str(cells[i])!r} on line {numbers[i]} is not a finite "
            "number; a target must be a finite number or a text label"
        )
    try:
        exact = [int(v) for v in cells]
    except ValueError:  # Not all integer literals: "1.5", "2e3".
        exact = None
    if exact is not None:
        if all(-(2**63) <= v < 2**63 for v in exact):
            return np.asarray(exact, dtype=np.int64)
        # float64 would merge neighbouring labels and int64 would overflow.
        return np.asarray([str(v) for v in exact])
    if np.all(values == np.round(values)) and np.all(np.abs(values) < 2.0**63):
        return values.astype(np.int64)
    return values


def _likely_delimiter(text: str) -> str | None:
    """The delimiter that splits the first lines evenly, if not a comma."""
    head = [line for line in text.splitlines()[:20] if line.strip()]
    for delimiter in (";", "\t", "|", " "):
        counts = {line.count(delimiter) for line in head}
        if len(counts) == 1 and counts.pop() > 0:
            return delimiter
    return None


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__
