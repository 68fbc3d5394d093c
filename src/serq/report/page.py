"""What ``serq run`` prints for a finished run, in one place for the
command line and the Python API (``Report.text()``, ``Report.json()``), so
that the two give the same bytes.

* ``run_text`` (``run_lines``, styled for a terminal): the readable text
  report (report/text.py), after a ``partial:`` line for a run that
  stopped early, followed by the admission table (``--admission``) and the
  note of ``--no-samples``, and a last empty line; ``run_text_ref`` the
  same in the earlier layout (``--format ref``, report/text_ref.py);
* ``run_json``: the JSON report (report/jsonfmt.py, no newline), with
  serq's key ``extended`` last: the ``partial`` object of a stopped run
  and, under ``--extended``, the admission rows, the findings, serq's own
  measures and the SLOs (``--slo``), in that order.  A whole run without
  ``--extended`` is the reference's JSON, byte for byte.
"""
from typing import List, Optional, Sequence, Tuple

from .jsonfmt import format_float, report_json
from .model import Report

def run_lines(report: Report, partial: Optional[str] = None,
              admission: Optional[Sequence] = None, no_samples: bool = False) -> list:
    """``serq run``'s readable standard output as styled lines (report/text.py:
    the command line paints them on a terminal): ``partial`` is why the run
    stopped early (None for a whole run), ``admission`` the admission rows
    under ``--admission`` (report/admission.py), ``no_samples`` the option."""
    from . import text
    lines: list = []
    if partial is not None:
        lines += [text.partial_line(report.end, report.events, partial, report.warmup), []]
    lines += text.report_lines(report)
    if admission is not None:
        lines += [[]] + text.admission_lines(admission)
    if no_samples and report.observes:
        lines += [[], text.no_samples_note()]
    lines.append([])
    return lines


def run_text(report: Report, partial: Optional[str] = None, admission: Optional[Sequence] = None,
             no_samples: bool = False) -> str:
    """``serq run``'s standard output (the readable report) as plain text."""
    from .text import plain
    return plain(run_lines(report, partial, admission, no_samples))


NO_SAMPLES_NOTE = ("note: --no-samples: observe count, mean and cv2 are exact; p99 is "
                   "estimated (within 0.5%), and so is ci above 10240 samples (within about "
                   "1%); see serq run --help\n")


def run_text_ref(report: Report, partial: Optional[str] = None,
                 admission: Optional[Sequence] = None, no_samples: bool = False) -> str:
    """``serq run --format ref``: the earlier layout (report/text_ref.py),
    byte for byte, with its ``partial:`` line and notes."""
    from .text_ref import report_text_ref
    out: List[str] = []
    if partial is not None:
        out.append("partial: the run stopped at t = %s after %d events (%s); the report "
                   "covers [%s, %s]\n\n" % (format_float(report.end), report.events, partial,
                                            format_float(report.warmup), format_float(report.end)))
    out.append(report_text_ref(report))
    if admission is not None:
        from .admission import admission_text
        out.append("\n" + admission_text(admission))
    if no_samples and report.observes:
        out.append("\n" + NO_SAMPLES_NOTE)
    out.append("\n")
    return "".join(out)


def run_json(report: Report, partial: Optional[str] = None, extended: bool = False,
             admission: Optional[Sequence] = None) -> str:
    """``serq run --json [--extended]``'s standard output, without its
    newline; ``admission`` (the rows) is needed with ``extended``."""
    pairs: Optional[List[Tuple[str, str]]] = None
    if partial is not None:
        import json  # (only here: a run's start does not pay for it)
        pairs = [("partial", '{"reason":%s,"at":%s,"events":%d}' % (
            json.dumps(partial), format_float(report.end), report.events))]
    if extended:
        from .admission import admission_json
        from .findings import findings_json, report_findings
        from .jsonfmt import extras_json
        pairs = (pairs or []) + [("admission", admission_json(admission or [])),
                                 ("findings", findings_json(report_findings(report)))]
        pairs += extras_json(report)
        if report.slo is not None:
            pairs.append(("slo", report.slo.json()))
    return report_json(report, pairs)
