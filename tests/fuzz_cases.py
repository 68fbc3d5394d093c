"""One fuzz case: compile a program's text, run it bounded, classify the end.

Every case must end in one of

* ``syntax`` / ``link``: a ``SerqError`` from the front end, located
  (file:line:col) when it is a syntax error;
* ``run``: a ``RunError`` from the simulator that names the time (and the
  session and statement when one was running);
* ``report``: a report (text and JSON both built), possibly partial when the
  event cap stopped the run.

Anything else is a ``Failure``: a Python exception other than a serq error
(a traceback for the user), an unlocated syntax error, a run-time error that
does not say when.  ``hang`` is the caller's: it bounds each case in time.
"""
import os

from serq.compiler import compile_program
from serq.errors import LinkError, RunError, SerqError, SyntaxError_
from serq.report.build import build_report
from serq.report.jsonfmt import report_json
from serq.report.text import report_text
from serq.runner import simulate


class Failure(Exception):
    """A case that did not end cleanly: ``kind`` and the rendered detail."""

    def __init__(self, kind, detail):
        Exception.__init__(self, "%s: %s" % (kind, detail))
        self.kind = kind
        self.detail = detail


def compile_case(text, path=None):
    """The IR, or the kind of front-end error (``syntax`` or ``link``)."""
    try:
        if path is not None:
            with open(path, "w") as f:
                f.write(text)
            return compile_program(path), None
        return compile_program(source=text), None
    except SyntaxError_ as e:
        rendered = e.render()
        if e.span is None:
            raise Failure("unlocated syntax error", rendered)
        return None, "syntax"
    except SerqError as e:
        e.render()
        return None, "link" if isinstance(e, LinkError) else "input"


def run_case(text, max_events=2000, path=None, check_invariants=False):
    """Classify one program (see the module's doc); raises ``Failure``."""
    try:
        prog, kind = compile_case(text, path)
        if prog is None:
            return kind
        try:
            sim = simulate(prog, check_invariants=check_invariants, max_events=max_events)
        except RunError as e:
            rendered = e.render()
            if e.help and "bug in serq" in e.help:  # --check-invariants found one broken
                raise Failure("invariant broken", rendered)
            if "t = " not in rendered and not rendered.startswith("error: run:"):
                raise Failure("run-time error without its time", rendered)
            return "run"
        report = build_report(sim)
        report_text(report)
        report_json(report)
        return "partial" if sim.partial is not None else "report"
    except Failure:
        raise
    except RecursionError:
        return "too deep"  # the CLI's clean message for it
    except SerqError as e:
        raise Failure("serq error outside its place (%s)" % type(e).__name__, e.render())
    except Exception as e:
        import traceback
        raise Failure("traceback", "%s: %s\n%s" % (type(e).__name__, e,
                                                  traceback.format_exc(limit=-6)))


def example_sources(root):
    """Every examples/*.sq (and under it) program: (path, text)."""
    out = []
    for dirpath, _, files in os.walk(os.path.join(root, "examples")):
        for f in sorted(files):
            if f.endswith(".sq"):
                p = os.path.join(dirpath, f)
                with open(p) as fh:
                    out.append((p, fh.read()))
    return sorted(out)


class Hang(Exception):
    """A case ran past its time limit."""


def bounded(seconds, fn, *args, **kwargs):
    """``fn(*args, **kwargs)``, or ``Failure("hang")`` after ``seconds`` of
    wall time (SIGALRM: the main thread of a Unix process)."""
    import signal

    def alarm(signum, frame):
        raise Hang()
    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return fn(*args, **kwargs)
    except Hang:
        raise Failure("hang", "no end within %s s" % seconds)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
