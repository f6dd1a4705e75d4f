"""Cython kernels shared by the ``sklearn_ext`` subpackages (private)."""
