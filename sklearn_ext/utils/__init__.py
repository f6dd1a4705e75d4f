"""The ground floor of ``sklearn_ext``: helpers that every package may import.

Nothing here imports another ``sklearn_ext`` package.
"""
