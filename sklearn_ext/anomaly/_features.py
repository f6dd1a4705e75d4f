"""Random Fourier features of the RBF kernel and their bounded in-process cache."""

from __future__ import annotations

from numbers import Integral

import numpy as np

from sklearn_ext._fast import _ssad
from sklearn_ext.utils._hashing import content_digest
from sklearn_ext.utils._lru import LRUStore

__all__ = [
    "FeatureCache",
    "FEATURE_CACHE",
    "draw_weights",
    "random_features",
    "resolve_gamma",
]


def resolve_gamma(gamma, X) -> float:
    """The RBF kernel width that ``gamma`` means for the rows ``X``.

    As in scikit-learn's kernel estimators (:class:`sklearn.svm.SVC`):
    ``"scale"`` is ``1 / (n_features * X.var())`` (1.0 when ``X`` is constant),
    ``"auto"`` is ``1 / n_features``, and a number is taken as given.
    ``X.var()`` is the variance of all entries of ``X``.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn_ext.anomaly._features import resolve_gamma
    >>> X = np.array([[0.0, 2.0], [2.0, 0.0]])  # X.var() == 1
    >>> resolve_gamma("scale", X), resolve_gamma("auto", X), resolve_gamma(0.3, X)
    (0.5, 0.5, 0.3)
    """
    if isinstance(gamma, str):
        n_features = X.shape[1]
        if gamma == "auto":
            return 1.0 / n_features
        variance = float(X.var())
        return 1.0 / (n_features * variance) if variance != 0 else 1.0
    return float(gamma)


def draw_weights(rng, n_features: int, n_components: int, gamma: float):
    """Weights and offsets drawn as :class:`sklearn.kernel_approximation.RBFSampler`.

    Returns ``random_weights`` of shape (n_features, n_components), entries
    ``N(0, 2 * gamma)``, and ``random_offset`` uniform on ``[0, 2 pi)``.
    """
    weights = np.sqrt(2.0 * gamma) * rng.normal(size=(n_features, n_components))
    offset = rng.uniform(0.0, 2.0 * np.pi, size=n_components)
    return weights, offset


def random_features(X, weights, offset) -> np.ndarray:
    """``sqrt(2 / D) * cos(X @ weights + offset)``, computed row by row in C."""
    X = np.ascontiguousarray(X, dtype=np.float64)
    out = np.empty((X.shape[0], offset.shape[0]), dtype=np.float64)
    _ssad.random_features(
        X,
        np.ascontiguousarray(weights.T, dtype=np.float64),
        np.ascontiguousarray(offset, dtype=np.float64),
        out,
    )
    return out


class FeatureCache(LRUStore):
    """Feature matrices keyed by the data's digest and the feature parameters.

    A least-recently-used :class:`~sklearn_ext.utils._lru.LRUStore` bounded
    by ``max_bytes`` of feature matrices; the matrices are returned read-only
    and shared (never copied).
    """

    def __init__(self, max_bytes: int = 256 * 2**20) -> None:
        super().__init__(max_bytes)

    @staticmethod
    def key(X: np.ndarray, gamma: float, n_components: int, seed: int) -> bytes:
        """Digest of ``X`` (values, shape, dtype) and the feature parameters."""
        return content_digest(
            "rff", np.asarray(X), float(gamma), int(n_components), int(seed)
        )

    def put(self, key: bytes, value: np.ndarray, nbytes: int | None = None) -> bool:
        value.setflags(write=False)
        return super().put(key, value, nbytes)

    def __repr__(self) -> str:
        return f"FeatureCache(max_bytes={self.max_bytes})"


#: The process's feature cache (bounded, least recently used first out).
FEATURE_CACHE = FeatureCache()


def cached_features(X, weights, offset, gamma, n_components, random_state):
    """Features of ``X``, from :data:`FEATURE_CACHE` when ``random_state`` is an int.

    Only an int seed identifies the weights: with ``None`` or a ``RandomState``
    the features are computed every time.
    """
    if not isinstance(random_state, Integral) or isinstance(random_state, bool):
        return random_features(X, weights, offset)
    key = FeatureCache.key(X, gamma, n_components, random_state)
    phi = FEATURE_CACHE.get(key)
    if phi is None:
        phi = random_features(X, weights, offset)
        FEATURE_CACHE.put(key, phi)
    return phi
