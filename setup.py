"""Build the Cython extension modules.

Every ``*.pyx`` file under ``sklearn_ext/`` becomes an extension module of the same
dotted name, so adding a kernel never touches this file. Compiler directives are set
once here; ``OPTUNA_TREECV_DEBUG=1`` builds with bounds checks and wraparound on.
"""

import os
from pathlib import Path

import numpy as np
from Cython.Build import cythonize
from setuptools import Extension, setup

DEBUG = os.environ.get("OPTUNA_TREECV_DEBUG", "0") == "1"
DIRECTIVES = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": True,
    "embedsignature": True,
}


def _extensions():
    here = Path(__file__).parent
    extensions = []
    for pyx in sorted(here.glob("sklearn_ext/**/*.pyx")):
        rel = pyx.relative_to(here)
        extensions.append(
            Extension(
                ".".join(rel.with_suffix("").parts),
                [str(rel)],
                include_dirs=[np.get_include()],
                define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
                extra_compile_args=["-O3"] if not DEBUG else ["-O0", "-g"],
            )
        )
    return extensions


setup(ext_modules=cythonize(_extensions(), compiler_directives=DIRECTIVES))
