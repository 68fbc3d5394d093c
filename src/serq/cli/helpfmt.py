"""The command line's help formatter.

argparse makes a help formatter for every option added (to check its
metavar), and its default one asks ``shutil.get_terminal_size`` for the
width, importing ``shutil`` (and the compression modules it imports) at
every start of every command.  ``TerminalFormatter`` finds the same width
the same way (``COLUMNS``, else the terminal of standard output, else 80)
without that import.
"""
import argparse
import os
import sys


def terminal_columns() -> int:
    """The columns ``shutil.get_terminal_size()`` reports."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        size = os.get_terminal_size(sys.__stdout__.fileno())
    except (AttributeError, ValueError, OSError):
        return 80
    return size.columns or 80


class TerminalFormatter(argparse.HelpFormatter):
    """argparse's ``HelpFormatter``, its default width found without shutil."""

    def __init__(self, prog, indent_increment=2, max_help_position=24, width=None, **kw):
        if width is None:
            width = terminal_columns() - 2
        argparse.HelpFormatter.__init__(self, prog, indent_increment, max_help_position,
                                        width, **kw)
