"""The package's version (pyproject.toml's, checked by a test), importable by every stage without
importing the package's public surface."""

__version__ = "0.1.0"
