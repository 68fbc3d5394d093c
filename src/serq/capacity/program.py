"""The program at one value of the searched parameter.

The parameter is a `let` constant.  Most are replaced as ``serq run --set``
replaces them; a `let` that sizes a family (``pool kv[replicas]``) is
resolved while parsing, where ``--set`` cannot reach it, so its value is
written into the program's text instead (the `let` statement of the file
itself; `use`d files and error locations stay the file's).
"""
import os
from fractions import Fraction
from typing import Dict, Optional

from ..errors import SerqError, UsageError


def value_text(v) -> str:
    """A probe's value as program text (``4``, ``12.5``)."""
    if isinstance(v, int):
        return str(v)
    from ..report.jsonfmt import format_float
    return format_float(float(v))


def _offsets(text: str):
    starts = [0]
    for i, ch in enumerate(text):
        if ch == "\n":
            starts.append(i + 1)
    return starts


def rewrite_let(text: str, file: str, name: str, value: str) -> Optional[str]:
    """``text`` with the top-level ``let NAME = ...;`` given ``value``; None
    when the file has no such statement (the `let` is in a `use`d file)."""
    from ..syntax.lexer import tokenize
    toks = tokenize(text, file)
    starts = _offsets(text)

    def at(t) -> int:
        return starts[t.line - 1] + t.col - 1
    depth = 0
    for i, t in enumerate(toks):
        if t.kind == "punct" and t.text == "{":
            depth += 1
        elif t.kind == "punct" and t.text == "}":
            depth -= 1
        elif (depth == 0 and t.kind == "ident" and t.text == "let" and i + 3 < len(toks) and
              toks[i + 1].text == name and toks[i + 2].text == "="):
            for j in range(i + 3, len(toks)):
                if toks[j].kind == "punct" and toks[j].text == ";":
                    return text[:at(toks[i + 3])] + value + text[at(toks[j]):]
            return None
    return None


class ProbeCompiler(object):
    """Compiles the program at each value of ``name`` (with the run
    settings and ``--def``s given), checking first that the program has
    that `let`."""

    def __init__(self, file: str, name: str, sets: Dict[str, object], defs: Dict[str, str],
                 settings: Dict[str, object]):
        from ..compiler import is_ir, read_source
        from ..syntax.parser import parse_program
        self.file = file
        self.name = name
        self.defs = defs
        if name in sets:
            raise UsageError("`--set %s=...` fixes the constant the search varies: drop it"
                             % name)
        self.sets = dict(sets)
        self.settings = {k: v for k, v in settings.items() if v is not None}
        self.text = read_source(file)
        if is_ir(file, self.text):
            raise UsageError("`serq capacity` changes a `let` of the program text, which IR "
                             "has not: search the program file (.sq)")
        tree = parse_program(self.text, file, defs=defs)
        self.cache: Dict[object, object] = {}
        self.in_text = name in tree.array_lets

    def compile(self, value):
        """The program at ``value`` (compiled once per value)."""
        if value not in self.cache:
            self.cache[value] = self._compile(value)
        return self.cache[value]

    def _compile(self, value):
        from ..compiler import compile_program
        try:
            if self.in_text:
                text = rewrite_let(self.text, self.file, self.name, value_text(value))
                if text is None:
                    raise UsageError("`%s` sizes a family and is defined in a file the program "
                                     "`use`s: serq capacity can only change it in %s"
                                     % (self.name, self.file),
                                     help="write `let %s = ...;` in %s itself"
                                     % (self.name, os.path.basename(self.file)))
                prog = compile_program(self.file, text=text, sets=self.sets or None,
                                       defs=self.defs, **self.settings)
            else:
                sets = dict(self.sets)
                sets[self.name] = value
                prog = compile_program(self.file, sets=sets, defs=self.defs, **self.settings)
        except UsageError:
            raise
        except SerqError as e:
            e.notes.append("at %s = %s" % (self.name, value_text(value)))
            raise
        if prog.trace is not None:
            # Workers may run elsewhere (Ray): the trace is read from an absolute path.
            from ..compiler import trace_path
            prog.trace = os.path.abspath(trace_path(prog))
            prog.trace_dir = None
        return prog


def grid_value(lo: Fraction, step: Fraction, k: int, last: int, hi: Fraction, integer: bool):
    """The ``k``-th point of the grid ``lo, lo + step, ...`` (the last one
    is ``hi`` itself), correctly rounded once."""
    v = hi if k >= last else lo + step * k
    return int(v) if integer else float(v)
