"""Python front end (libcst)."""
from .rewrite import analyze, reparse_problem  # noqa: F401

SUFFIXES = (".py", ".pyi")
