"""pooch: trains networks larger than GPU memory, unmodified (`pooch run -- python train.py`).

This package holds the pooch command line (bin/pooch) and the library it preloads
(lib/libpooch.so); `pooch run` finds the library beside its binary, at ../lib/libpooch.so. The
`pooch` command and `python -m pooch` run the binary (__main__.py). Usage: docs/usage.md.
"""

import os

from pooch._version import __version__

_HERE = os.path.dirname(os.path.abspath(__file__))


def binary_path():
    """The pooch command line's binary."""
    return os.path.join(_HERE, "bin", "pooch")


def library_path():
    """libpooch.so, for an LD_PRELOAD set by hand (`pooch run` sets it itself)."""
    return os.path.join(_HERE, "lib", "libpooch.so")


__all__ = ["__version__", "binary_path", "library_path"]
