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


#: The largest seed: serQ 0.1.3's seeds are unsigned 64-bit integers.
MAX_SEED = 2 ** 64 - 1


def seed_int(text: str) -> int:
    """A seed: a whole number from 0 to 2^64 - 1, as serQ 0.1.3 takes."""
    v = nonneg_int(text)
    if v > MAX_SEED:
        raise argparse.ArgumentTypeError("%r is past the largest seed, 2^64 - 1 = %d"
                                         % (text, MAX_SEED))
    return v


def pos_int(text: str) -> int:
    v = nonneg_int(text)
    if v < 1:
        raise argparse.ArgumentTypeError("%r is not positive" % text)
    return v


_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def memory_size(text: str) -> int:
    """``--max-memory``: bytes, or a number with K, M, G or T (powers of 1024;
    a trailing ``B`` or ``iB`` is allowed): ``2G``, ``512MiB``, ``1.5G``."""
    t = text.strip().upper()
    for suffix in ("IB", "B"):
        if t.endswith(suffix) and t[:-len(suffix)][-1:] in "KMGT" and len(t) > len(suffix):
            t = t[:-len(suffix)]
            break
    unit = t[-1:] if t[-1:] in "KMGT" else ""
    try:
        v = float(t[:len(t) - len(unit)])
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a size (write bytes, or 512M, 2G)" % text)
    n = v * _SIZE_UNITS[unit]
    if not (n >= 64 << 20 and n < float(1 << 62)):
        raise argparse.ArgumentTypeError("%r: a memory bound is at least 64M (Python itself "
                                         "takes tens of MB)" % text)
    return int(n)


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


#: The help of --set and --def where they replace a program's text.
SET_HELP = "replace a `let` constant's value (a number or a constant expression)"
DEF_HELP = "replace an expression definition's body"


def add_run_settings(p, seed_help: str = "the random seed (default: the program's `seed`, "
                     "else 1)") -> None:
    """The options that replace a program's `run { … }` settings (serq run,
    ir, plot --run; serq sweep has its own --seed), with their help."""
    p.add_argument("--seed", type=seed_int, metavar="N", help=seed_help)
    add_run_times(p)


def add_run_times(p) -> None:
    """--horizon, --warmup, --arrivals and --trace, with their help."""
    p.add_argument("--horizon", type=lambda t: time_value(t, True), metavar="T",
                   help="simulated seconds to run (replaces the program's `horizon`)")
    p.add_argument("--warmup", type=lambda t: time_value(t, False), metavar="T",
                   help="simulated seconds left out of the report, below the horizon "
                   "(replaces the program's `warmup`)")
    p.add_argument("--arrivals", type=pos_int, metavar="N",
                   help="stop the arrivals after N and run until the last session ends "
                   "(replaces the program's `arrivals`)")
    p.add_argument("--trace", metavar="FILE",
                   help="replay this trace CSV (replaces the workload's `trace \"…\"`; "
                   "relative to the current directory)")
