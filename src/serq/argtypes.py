"""Argument types shared by the command line (cli.py) and its subcommands
(plot/cli.py, costmodel/command.py): each parses a flag's text or raises argparse's error."""
import argparse
import math


def nonneg_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a whole number" % text)
    if v < 0:
        raise argparse.ArgumentTypeError("%r is negative" % text)
    return v


def pos_int(text: str) -> int:
    v = nonneg_int(text)
    if v < 1:
        raise argparse.ArgumentTypeError("%r is not positive" % text)
    return v


def number(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % text)


def time_value(text: str, positive: bool):
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a number" % text)
    if math.isnan(v) or math.isinf(v) or v < 0 or (positive and v == 0):
        raise argparse.ArgumentTypeError("%r is not a finite %s number"
                                         % (text, "positive" if positive else "non-negative"))
    return v
