"""AST -> IR: names, arrays, constants, moments, hidden attributes, lints."""
from .program import Overrides, link

__all__ = ["Overrides", "link"]
