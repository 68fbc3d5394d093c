"""The readable text report (report/text.py, issue 18 point 1): units per
column, 3 significant digits, one empty mark, a util that means busy
serving, the key of the columns; ``--format ref`` byte for byte the layout
serq printed before it (tests/data/text_report/*.ref.txt, captured from
main before the change); colour on a terminal only (cli/colour.py)."""
import contextlib
import io
import os
import pty
import re
import select
import subprocess
import sys
from pathlib import Path

import pytest

from serq.cli import main
from serq.compiler import compile_program
from serq.errors import LinkError, Span
from serq.report.model import ObserveRow, PoolRow, Report, StageRow
from serq.report.text import fmt, report_lines, report_text
from serq.report.text_ref import report_text_ref
from serq.runner import run_program

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "text_report"
ESC = "\x1b["


def _stage(name, wait, service, kind=None, servers=None, iterations=0, util=0.5,
           shares=(0.0, 0.0, 0.0)):
    row = StageRow(name, None, 1.25, util, 10, 1.0, wait, service, iterations,
                   shares[0], shares[1], shares[2], 0.3, None, None, None, None, None, False)
    row.kind, row.servers = kind, servers
    return row


def _report(**kw):
    r = Report(horizon=600.0, end=600.0, warmup=60.0, seed=11, events=73226, arrivals=6002,
               ended=5397, turns=0, mean_live=16.2822)
    r.observes["ttft"] = ObserveRow("ttft", 5390, 0.0166041, 0.00917547, 0.982, 0.136)
    r.observes["ttft"].unit = "s"
    r.observes["ttft"].quantiles = [0.0174864, 0.0840126, 0.136365, 0.208506]
    r.observes["e2e"] = ObserveRow("e2e", 5397, 1.63255, 0.0383005, 0.932904, 7.34905)
    r.observes["e2e"].unit = "s"
    r.observes["e2e"].quantiles = [1.11211, 3.80422, 7.34905, 9.43694]
    r.observes["hit"] = ObserveRow("hit", 30, 0.25, None, float("nan"), 1.0)
    r.observes["hit"].quantiles = [0.0, 1.0, 1.0, 1.0]
    r.stages = [_stage("front", 0.00015, 0.0474, "fifo", 2),
                _stage("back", 0.25, 2.5, "ps"),
                _stage("think", 0.0, 19.7, "delay", util=1.0)]
    r.pools = [PoolRow("kv", None, 15299.7, 431516.0, 0.0, 16.2084, None, 6002, 5502,
                       2.6983e6, 0, 0, 0, 0, None)]
    for k, v in kw.items():
        setattr(r, k, v)
    return r


def _table(text, first):
    """The rows (split on runs of 2+ spaces) of the table whose header
    starts with ``first``."""
    block = next(b for b in text.split("\n\n") if b.startswith(first))
    return [re.split(r"  +", line.strip()) for line in block.split("\n")]


def _row(table, name):
    head = table[0]
    row = next(r for r in table[1:] if r[0] == name)
    return dict(zip(head, row))


# ---------------------------------------------------------------------------
# The layout, by hand


def test_times_take_their_unit_per_column():
    text = report_text(_report())
    stage = _table(text, "stage")
    # every wait is below a second: ms; a service of 19.7 s: the column in s
    assert stage[0] == ["stage", "kind", "number", "util", "done", "thru (/s)", "wait (ms)",
                        "service (s)", "iters"]
    assert _row(stage, "front")["wait (ms)"] == "0.150"
    assert _row(stage, "back")["wait (ms)"] == "250"
    assert _row(stage, "front")["service (s)"] == "0.0474"
    # the observe table's rows are different quantities: each row of times
    # chooses its unit (mean, CI and percentiles together) and names it
    obs = _table(text, "observe")
    ttft, e2e, hit = _row(obs, "ttft"), _row(obs, "e2e"), _row(obs, "hit")
    assert (ttft["unit"], ttft["mean"], ttft["95% CI"], ttft["p99.9"]) == \
        ("ms", "16.6", "\u00b19.18", "209")
    assert (e2e["unit"], e2e["mean"], e2e["95% CI"], e2e["p90"]) == \
        ("s", "1.63", "\u00b10.0383", "3.80")
    assert hit["unit"] == "-"  # the program's own units
    # the old layout: seconds everywhere, 6 digits
    ref = report_text_ref(_report())
    assert "wait (s)" in ref and "0.0166041" in ref and "\u00b10.00917547" in ref


def test_numbers_have_three_significant_digits_and_counts_are_whole():
    text = report_text(_report())
    pool = _row(_table(text, "pool"), "kv")
    assert (pool["used"], pool["cached"], pool["evicted units"], pool["admitted"]) == \
        ("15300", "431516", "2698300", "6002")
    assert "e+" not in text and "e-" not in text
    assert "0.0166041" not in text and "2.6983e+06" not in text and "0.00917547" not in text
    assert [fmt(x) for x in (0.0166041, 2.6983e6, 0.00917547, 84.0126, 99.96, 5.0, -0.0,
                             1774.52, None, float("nan"), 7)] == \
        ["0.0166", "2698300", "0.00918", "84.0", "100", "5", "0", "1775", "-", "-", "7"]
    assert text.split("\n")[:2] == [
        "run: horizon 600 s, warm-up 60 s, end 600 s, seed 11, 73226 events",
        "sessions: 6002 arrived, 5397 ended after the warm-up, 16.3 live on average"]


def test_every_empty_cell_has_the_same_mark():
    r = _report()
    text = report_text(r)
    assert "NaN" not in text and "nan" not in text
    hit = _row(_table(text, "observe"), "hit")
    assert hit["95% CI"] == "-" and hit["cv2"] == "-"  # a CI below 40 samples, no cv2
    assert _row(_table(text, "pool"), "kv")["wait (s)"] == "-"  # nothing waited
    # the reference layout has NaN in one and - in the next
    ref = _table(report_text_ref(r), "observe")
    assert _row(ref, "hit")["95% CI"] == "NaN" and _row(ref, "hit")["cv2"] == "NaN"


def test_util_means_busy_serving():
    r = _report()
    r.stages.append(_stage("eng", 0.0, 0.01, "step", iterations=6, util=1.0,
                           shares=(0.0033, 0.0133, 0.0033)))
    text = report_text(r)
    stage = _table(text, "stage")
    think, eng = _row(stage, "think"), _row(stage, "eng")
    # a delay stage serves no one: no util (and no iterations); a step
    # stage's util is the time an iteration ran, not the time it held work
    assert (think["kind"], think["util"], think["number"], think["iters"]) == \
        ("delay", "-", "1.25", "-")
    assert (eng["kind"], eng["util"], eng["iters"]) == ("step", "2.0%", "6")
    assert _row(stage, "front")["kind"] == "fifo(2)" and _row(stage, "back")["util"] == "50.0%"
    keys = [l for l in text.split("\n") if l.startswith("key:")]
    assert len(keys) == 2 and "delay" in keys[0] and keys[1].startswith("key: step: ")
    # 0.1.3's utilization says 1 for both
    ref = _table(report_text_ref(r), "stage")
    assert _row(ref, "think")["util"] == "1" and _row(ref, "eng")["util"] == "1"


def test_a_report_read_back_from_json_has_no_kind_column():
    r = _report()
    for s in r.stages:
        s.kind = s.servers = None
    stage = _table(report_text(r), "stage")
    assert "kind" not in stage[0]
    assert _row(stage, "think")["util"] == "100.0%"  # 0.1.3's, with nothing to tell
    assert not any(l.startswith("key:") for l in report_text(r).split("\n"))


def test_every_fixture_report_renders_aligned_without_nan():
    from report_oracle import fixture
    from serq.report.model import from_pyserq_json
    for name, js in fixture()["json"].items():
        text = report_text(from_pyserq_json(js))
        # an exponent only past 1e15 (a fixture writes 1e300)
        assert "NaN" not in text and not re.search(r"e\+(0\d|1[0-4])\b", text), name
        for block in text.strip("\n").split("\n\n")[1:]:
            rows = block.split("\n")
            if rows[0].startswith(("warning:", "note:", "key:")):
                continue
            # right-aligned numbers: every line of a table ends at one column
            assert len({len(r) for r in rows}) == 1, (name, block)


def test_the_text_is_the_styled_lines_text():
    lines = report_lines(_report())
    assert "".join("".join(t for t, _ in l) + "\n" for l in lines) == report_text(_report())
    heads = [l for l in lines if l and l[0][1] == "head"]
    assert [l[0][0].split()[0] for l in heads] == ["observe", "stage", "pool"]
    assert all(l == [] or "".join(t for t, _ in l) == "".join(t for t, _ in l).rstrip()
               for l in lines)


# ---------------------------------------------------------------------------
# Programs run


def _run(name):
    return run_program(compile_program(str(DATA / (name + ".sq"))))


def test_a_delay_stage_and_a_deadlocked_engine_run():
    service = report_text(_run("service"))
    think = _row(_table(service, "stage"), "think")
    assert think["util"] == "-" and think["kind"] == "delay"
    r = _run("deadlock_step")
    (eng,) = r.stages
    assert eng.utilization == 1.0 and eng.idle_with_work  # 0.1.3: a job was present
    text = report_text(r)
    row = _row(_table(text, "stage"), "eng")
    busy = eng.prefill_only + eng.decode_only + eng.mixed
    assert row["util"] == "%.1f%%" % (100 * busy) and busy < 0.05
    step = _row(_table(text, "step"), "eng")
    assert step["idle"] == "%.1f%%" % (100 * (1 - busy))


def _cli(*argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main([str(a) for a in argv])
    return status, out.getvalue(), err.getvalue()


REF_CASES = [
    ("service.ref.txt", ["service.sq"]),
    ("service.slo_admission.ref.txt", ["service.sq", "--slo", "lat <= 0.5", "--slo",
                                       "wait <= 100ms", "--admission"]),
    ("engine.ref.txt", ["engine.sq"]),
    ("engine.no_samples.ref.txt", ["engine.sq", "--no-samples"]),
    ("engine.partial.ref.txt", ["engine.sq", "--max-events", "3000"]),
    ("deadlock_step.ref.txt", ["deadlock_step.sq"]),
]


@pytest.mark.parametrize("expected,argv", REF_CASES, ids=[c[0] for c in REF_CASES])
def test_format_ref_is_the_previous_layout_byte_for_byte(expected, argv, monkeypatch):
    monkeypatch.chdir(DATA)
    monkeypatch.setenv("FORCE_COLOR", "1")  # the reference layout is never coloured
    status, out, _ = _cli("run", "--quiet", "--format", "ref", *argv)
    assert status == 0
    assert out == (DATA / expected).read_text()


def test_the_default_differs_from_ref_and_keeps_the_extras(monkeypatch):
    monkeypatch.chdir(DATA)
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    _, out, _ = _cli("run", "--quiet", "service.sq", "--slo", "lat <= 0.5", "--admission")
    assert out != (DATA / "service.slo_admission.ref.txt").read_text()
    slo = _row(_table(out, "slo"), "lat <= 500 ms")
    assert slo["attainment"].endswith("%") and slo["95% CI"].startswith("\u00b1")
    assert "window (ms)" in out and out.endswith("\n\n")
    _, partial, _ = _cli("run", "--quiet", "engine.sq", "--max-events", "3000", "--no-samples")
    first = partial.split("\n")[0]
    assert first.startswith("partial: the run stopped at t = 23.12 s after 3000 events "
                            "(--max-events 3000)")
    assert "note: --no-samples: " in partial
    status, _, err = _cli("run", "service.sq", "--json", "--format", "ref")
    assert status == 2 and "--format ref" in err and "--json" in err


# ---------------------------------------------------------------------------
# Colour


def _subprocess(argv, env_extra, cwd=DATA):
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(PYTHONPATH=str(ROOT / "src"), **env_extra)
    return subprocess.run([sys.executable, "-m", "serq"] + argv, cwd=str(cwd), env=env,
                          capture_output=True, text=True, timeout=120)


def _strip(text):
    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def test_piped_output_has_no_escape_codes_unless_forced():
    argv = ["run", "--quiet", "deadlock_step.sq"]
    piped = _subprocess(argv, {})
    assert ESC not in piped.stdout and piped.stdout.startswith("run: horizon 3 s")
    forced = _subprocess(argv, {"FORCE_COLOR": "1"})
    assert ESC + "1m" in forced.stdout and ESC + "1;33mwarning:" in forced.stdout
    assert _strip(forced.stdout) == piped.stdout  # the same text under the colour
    assert ESC not in _subprocess(argv, {"FORCE_COLOR": "1", "NO_COLOR": "1"}).stdout
    assert ESC in _subprocess(argv + ["--color", "always"], {"NO_COLOR": "1"}).stdout
    assert ESC not in _subprocess(argv + ["--color", "never"], {"FORCE_COLOR": "1"}).stdout
    assert ESC not in _subprocess(argv + ["--format", "ref"], {"FORCE_COLOR": "1"}).stdout


def _on_a_terminal(argv, env_extra):
    """What serq writes to a pseudo-terminal (stdout and stderr both)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR", "FORCE_COLOR")}
    env.update(PYTHONPATH=str(ROOT / "src"), TERM="xterm", **env_extra)
    master, slave = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "serq"] + argv, cwd=str(DATA), env=env,
                            stdin=subprocess.DEVNULL, stdout=slave, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            proc.kill()
            break
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    proc.wait(timeout=60)
    return proc.returncode, b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def test_a_terminal_gets_colour_and_no_color_turns_it_off(tmp_path):
    status, out = _on_a_terminal(["run", "--quiet", "deadlock_step.sq"], {})
    assert status == 0
    assert ESC + "1mobserve" in out and ESC + "1;33mwarning:" in out
    assert _strip(out) == report_text(_run("deadlock_step")) + "\n"
    status, out = _on_a_terminal(["run", "--quiet", "deadlock_step.sq"], {"NO_COLOR": "1"})
    assert status == 0 and ESC not in out
    # an error on stderr: the place bold, `error:` red, the caret red
    bad = tmp_path / "bad.sq"
    bad.write_text("stage s : fifo;\nsession { run s (1) }\nrun { horizon 1; }\n")
    status, err = _on_a_terminal(["run", str(bad)], {})
    assert status == 1
    assert ESC + "1;31merror:" in err and ESC + "1m" + str(bad) + ":2:" in err
    plain = _subprocess(["run", str(bad)], {})
    assert _strip(err) == plain.stderr and ESC not in plain.stderr


def test_styled_errors_render_as_before():
    source = "let a = 1;\nstage s : fifo;\n"
    e = LinkError("stage `s` is unused", Span("p.sq", 2, 7, 1), help="run work on it",
                  notes=["declared here"], source=source)
    assert e.render() == ("p.sq:2:7: error: stage `s` is unused\n"
                          "2 | stage s : fifo;\n"
                          "  |       ^\n"
                          "note: declared here\n"
                          "help: run work on it")
    styles = [[style for _, style in line] for line in e.styled()]
    assert styles[0] == ["loc", "error", "msg"] and styles[2][-1] == "error"
    assert LinkError("no span").render() == "error: no span"
