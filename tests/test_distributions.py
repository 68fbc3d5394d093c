"""serq's extension distributions (docs/distributions.md): `~lognormal(mean,
cv2)`, `~gamma(k, mean)`, `~pareto(mean, alpha)` and `~empirical("FILE.csv"[,
"COLUMN"])`.

* Each law against scipy's distribution of the same parameters: the sample
  mean and variance within about 4 standard errors (a 99.99 % interval, the
  standard errors from scipy's variance and kurtosis), and a
  Kolmogorov-Smirnov test at alpha = 0.001, every one at a fixed seed; the
  same test rejects a law written with the wrong parameterisation, so it
  can fail.
* The empirical law reproduces its CSV's distribution (KS on the table's
  step CDF, and a chi-square over bins of equal probability).
* The laws draw from companion streams: the draws of serQ 0.1.3's laws do
  not move when a program adds one (programs without them are checked
  against pyserq by the conformance tests).
* A step-engine program with lognormal prompts and empirical answers, end to
  end; `--strict` refuses every law; the IR round trip (and pyserq refusing
  it); located errors for bad parameters and bad files.
"""
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

import serq
from serq.compiler import compile_program
from serq.empirical import read_table
from serq.errors import LinkError, RunError, SerqError
from serq.ir import nodes as ir
from serq.ir.json import IRError, dumps, loads
from serq.ir.validate import validate
from serq.sim import rng as streams
from serq.sim import xdist

stats = pytest.importorskip("scipy.stats")

ROOT = Path(__file__).resolve().parent.parent
LENGTHS = ROOT / "examples" / "data" / "chat_lengths.csv"

N = 20000      # draws per law
Z = 3.89       # two-sided 99.99 % normal quantile: the moment tolerances
ALPHA = 0.001  # the KS and chi-square tests' level


def scipy_law(law, a, b):
    """scipy's frozen distribution of serq's ``~law(a, b)``."""
    if law == "lognormal":  # mean a, cv2 b
        s2 = math.log1p(b)
        return stats.lognorm(math.sqrt(s2), scale=math.exp(math.log(a) - s2 / 2))
    if law == "gamma":  # shape a, mean b
        return stats.gamma(a, scale=b / a)
    xm = a * (b - 1) / b  # pareto: mean a, tail index b
    return stats.pareto(b, scale=xm)


def draws(law, a, b, seed=7, n=N):
    r = streams.Rng(seed)
    f = xdist.LAWS[law]
    return [f(r, a, b) for _ in range(n)]


# (law, a, b, whether its fourth moment is finite: the variance test)
CASES = [
    ("lognormal", 600.0, 1.5, True),
    ("lognormal", 2.0, 0.1, True),
    ("gamma", 0.3, 5.0, True),   # k < 1: the boosted branch
    ("gamma", 1.0, 2.0, True),   # an exponential
    ("gamma", 7.5, 100.0, True),
    ("pareto", 300.0, 5.0, True),
    ("pareto", 1.0, 2.5, False),  # a finite variance, an infinite kurtosis
]


@pytest.mark.parametrize("law,a,b,fourth", CASES)
def test_sample_moments_match_the_law(law, a, b, fourth):
    x = draws(law, a, b)
    mean, var, _, kurt = (float(v) for v in scipy_law(law, a, b).stats(moments="mvsk"))
    n = len(x)
    m = sum(x) / n
    assert abs(m - mean) < Z * math.sqrt(var / n), (m, mean)
    if fourth:
        s2 = sum((v - m) ** 2 for v in x) / (n - 1)
        se = var * math.sqrt(2.0 / (n - 1) + kurt / n)  # of the sample variance
        assert abs(s2 - var) < Z * se, (s2, var)
    assert min(x) >= 0.0
    if law == "pareto":
        assert min(x) >= a * (b - 1) / b  # x_m, the smallest value


@pytest.mark.parametrize("law,a,b,fourth", CASES)
def test_kolmogorov_smirnov_accepts_the_law(law, a, b, fourth):
    x = draws(law, a, b, seed=11)
    assert stats.kstest(x, scipy_law(law, a, b).cdf).pvalue > ALPHA


@pytest.mark.parametrize("law,a,b,wrong", [
    # sigma^2 = cv2 instead of ln(1 + cv2)
    ("lognormal", 600.0, 1.5, stats.lognorm(math.sqrt(1.5), scale=600.0 * math.exp(-0.75))),
    # the mean read as the scale
    ("gamma", 2.0, 5.0, stats.gamma(2.0, scale=5.0)),
    # the mean read as the smallest value
    ("pareto", 300.0, 5.0, stats.pareto(5.0, scale=300.0)),
])
def test_kolmogorov_smirnov_rejects_another_parameterisation(law, a, b, wrong):
    x = draws(law, a, b, seed=11, n=5000)
    assert stats.kstest(x, wrong.cdf).pvalue < ALPHA


def test_normal_quantile_is_scipys():
    ps = [1e-300, 1e-30, 1e-9, 0.001, 0.0249, 0.075, 0.075001, 0.3, 0.5, 0.7, 0.925, 0.975,
          0.9999, 1 - 2 ** -53] + [(k + 0.5) / 997 for k in range(997)]
    for p in ps:
        z = float(stats.norm.ppf(p))
        assert abs(xdist.normal_quantile(p) - z) <= 2e-15 * max(1.0, abs(z)), p


def test_gamma_of_a_whole_shape_is_the_erlang_of_0_1_3():
    # ~gamma(k, mean) is ~erlang(k, mean) in distribution for a whole k
    from serq.sim import dist
    r = streams.Rng(3)
    erl = [dist.erlang(r, 3.0, 2.0) for _ in range(5000)]
    gam = draws("gamma", 3.0, 2.0, seed=3, n=5000)
    assert stats.ks_2samp(erl, gam).pvalue > ALPHA


# ------------------------------------------------------------- empirical


def step_cdf(values, counts):
    rows = sum(counts)
    acc, out = 0, []
    for c in counts:
        acc += c
        out.append(acc / rows)
    return out


def discrete_ks(x, values, counts):
    """KS statistic of ``x`` against the table's step CDF, at its support
    points (where both step functions jump), and its p-value (scipy's
    exact KS distribution: conservative for a discrete law)."""
    cdf = step_cdf(values, counts)
    xs = sorted(x)
    n = len(xs)
    d, i = 0.0, 0
    for v, f in zip(values, cdf):
        while i < n and xs[i] <= v:
            i += 1
        d = max(d, abs(i / n - f))
    assert i == n  # every draw is a value of the table
    return d, float(stats.kstwo.sf(d, n))


def empirical_draws(values, counts, seed=5, n=N):
    law = xdist.Empirical(values, counts)
    r = streams.Rng(seed)
    return [law.draw(r) for _ in range(n)]


def test_empirical_reproduces_the_csv():
    values, counts = read_table(str(LENGTHS), "output")
    assert sum(counts) == 1000 and values == sorted(set(values))
    x = empirical_draws(values, counts)
    assert set(x) <= set(values)
    _, p = discrete_ks(x, values, counts)
    assert p > ALPHA
    # chi-square over 20 bins of about equal probability
    cdf = step_cdf(values, counts)
    edges, k = [], 1
    for v, f in zip(values, cdf):
        if f >= k / 20 and v not in edges:
            edges.append(v)
            k = int(f * 20) + 1
    expected, observed, lo, prev = [], [], -math.inf, 0.0
    for v in edges:
        f = cdf[values.index(v)]
        expected.append((f - prev) * len(x))
        observed.append(sum(1 for y in x if lo < y <= v))
        lo, prev = v, f
    assert sum(observed) == len(x) and min(expected) >= 5
    assert stats.chisquare(observed, expected).pvalue > ALPHA
    rows = [v for v, c in zip(values, counts) for _ in range(c)]
    mean = sum(rows) / len(rows)
    sd = math.sqrt(sum((v - mean) ** 2 for v in rows) / len(rows))
    assert abs(sum(x) / len(x) - mean) < Z * sd / math.sqrt(len(x))


def test_empirical_draws_are_not_the_other_column():
    out = read_table(str(LENGTHS), "output")
    prompt = read_table(str(LENGTHS), "prompt")
    x = empirical_draws(*prompt, n=5000)
    merged = sorted(set(out[0]) | set(prompt[0]))
    counts = [dict(zip(*out)).get(v, 0) for v in merged]
    # the prompt draws against the answers' CDF (support points of both)
    cdf = step_cdf(merged, counts)
    xs = sorted(x)
    i = d = 0
    for v, f in zip(merged, cdf):
        while i < len(xs) and xs[i] <= v:
            i += 1
        d = max(d, abs(i / len(xs) - f))
    assert stats.kstwo.sf(d, len(xs)) < ALPHA


def test_empirical_is_the_quantile_of_its_rows():
    law = xdist.Empirical([1.0, 2.0, 5.0], [1, 2, 1])  # rows 1 2 2 5
    r = streams.Rng(1)
    got = [law.draw(r) for _ in range(4000)]
    assert {v: got.count(v) for v in (1.0, 2.0, 5.0)}.keys() == {1.0, 2.0, 5.0}
    assert abs(got.count(2.0) / 4000 - 0.5) < Z * math.sqrt(0.25 / 4000)
    # one U each: the draws are the U-quantile of the sorted rows
    r1, r2 = streams.Rng(1), streams.Rng(1)
    for _ in range(200):
        u = r2.extension(xdist.EMPIRICAL).random_f64()
        assert law.draw(r1) == [1.0, 2.0, 2.0, 5.0][int(u * 4)]


# --------------------------------------------------------------- streams


def test_the_companion_streams_are_the_documented_substreams():
    parent = streams.Rng(42)
    for law in range(streams.EXTENSION_LAWS):
        c = parent.extension(law)
        assert c is parent.extension(law)
        ref = streams.substream(42, streams.EXTENSION_TAG, law, 0)
        assert [c.next_u64() for _ in range(40)] == [ref.next_u64() for _ in range(40)]
    sub = streams.statement_stream(9, 3)
    ref = streams.substream(sub.seed, streams.EXTENSION_TAG, xdist.GAMMA, 0)
    assert sub.extension(xdist.GAMMA).next_u64() == ref.next_u64()


def test_the_companions_match_pyserqs_generator():
    pyserq = pytest.importorskip("pyserq")
    seed = streams.substream_seed(streams.substream_seed(5, 7, 0, 2), streams.EXTENSION_TAG,
                                  xdist.LOGNORMAL, 0)
    ours = streams.statement_stream(5, 7).extension(xdist.LOGNORMAL)
    theirs = pyserq.Rng(seed)
    assert [ours.random_f64() for _ in range(100)] == [theirs.random_f64() for _ in range(100)]


def test_extension_draws_leave_the_stream_where_it_is():
    a, b = streams.Rng(8), streams.Rng(8)
    seq = []
    for i in range(300):
        xdist.lognormal(b, 1.0, 1.0)
        xdist.gamma(b, 0.5, 1.0)
        xdist.pareto(b, 1.0, 3.0)
        xdist.Empirical([1.0, 2.0], [1, 1]).draw(b)
        seq.append(b.random_f64())
    assert seq == [a.random_f64() for _ in range(300)]


def test_rewind_covers_the_companions():
    r = streams.Rng(4)
    r.extension(0).random_f64()
    at = r.position()
    first = ([r.extension(0).random_f64() for _ in range(5)],
             [r.extension(2).random_f64() for _ in range(5)], r.random_f64())
    r.rewind(at)
    again = ([r.extension(0).random_f64() for _ in range(5)],
             [r.extension(2).random_f64() for _ in range(5)], r.random_f64())
    assert first == again
    fresh = streams.Rng(4)
    assert at[4] is not None and fresh.position()[4] is None


BASE = """
stage s : fifo(2);
workload {
  arrive poisson(2);
  init { set a = ~exp(3); %s observe a0 = a; }
}
session {
  set t0 = now;
  set b = ~uniform(0, 1);
  %s
  run s (b);
  set c = ~bernoulli(0.5) + ~erlang(2, 1);
  observe b0 = b;
  observe c0 = c;
}
run { horizon 200; seed 3; }
"""


def observed(text):
    report = serq.run(serq.compile(source=text))
    return {k: sorted(zip(o.sessions, o.samples)) for k, o in report.observes.items()}


def test_adding_an_extension_draw_moves_no_0_1_3_draw():
    plain = observed(BASE % ("", ""))
    mixed = observed(BASE % ("set x = ~gamma(0.5, 2); observe x0 = x;",
                             "set y = ~lognormal(1, 4) + ~pareto(1, 3); run s (y / 10); "
                             "observe y0 = y;"))
    for name in ("a0", "b0", "c0"):
        a, b = dict(plain[name]), dict(mixed[name])
        both = set(a) & set(b)
        assert len(both) > 300 and all(a[k] == b[k] for k in both)
    assert len(mixed["y0"]) == len(mixed["b0"]) > 300


def test_a_program_without_them_keeps_the_reference_report():
    pyserq = pytest.importorskip("pyserq")
    text = BASE % ("", "")
    assert serq.run(serq.compile(source=text)).json() == \
        pyserq.run(pyserq.compile(source=text)).json()


# ------------------------------------------------------------ end to end

ENGINE = """
// Prompts lognormal (mean 600 tokens, cv2 1.5), answers from a CSV.
pool kv { cap 262144; block 16; preempt lifo; }

stage gpu : step {
  budget 2048;
  cost 0.004 + 0.00002 * tokens + 0.0000001 * kv_decode;
  memory kv;
}

workload {
  arrive poisson(3);
  init {
    set raw = ~lognormal(600, 1.5);
    set prompt = ceil(raw);
    set answer = ~empirical("%s", "output");
    observe raw_prompt = raw;
    observe answer_len = answer;
  }
}

session {
  set t0 = now;
  hold kv (prompt) {
    run gpu prefill (prompt) growing kv;
    observe ttft = now - t0;
    run gpu decode (answer) growing kv;
  }
  observe e2e = now - t0;
}

run { horizon 100; warmup 10; seed 5; }
"""


def test_a_step_engine_with_lognormal_prompts_and_empirical_answers():
    program = serq.compile(source=ENGINE % LENGTHS)
    report = serq.run(program)
    raw = report.observe("raw_prompt")
    assert raw.count > 200
    assert abs(raw.mean - 600.0) < 2 * raw.ci  # 2 x the 95 % half-width: ~4 standard errors
    values, counts = read_table(str(LENGTHS), "output")
    rows = sum(counts)
    mean = sum(v * c for v, c in zip(values, counts)) / rows
    ans = report.observe("answer_len")
    assert set(ans.samples) <= set(values)
    assert abs(ans.mean - mean) < 2 * ans.ci
    assert report.observe("e2e").count > 150 and report.observe("ttft").mean > 0
    assert report.stage("gpu").utilization > 0
    # the same report from the IR (which holds the table: no file read)
    assert serq.run(serq.Program.from_json(program.to_json())).json() == report.json()


# ---------------------------------------------------------------- strict

LAWS_TEXT = [("lognormal", "~lognormal(1, 2)"), ("gamma", "~gamma(2, 1)"),
             ("pareto", "~pareto(1, 3)"), ("empirical", '~empirical("l.csv")')]


@pytest.mark.parametrize("law,draw", LAWS_TEXT)
def test_strict_refuses_each_law_where_it_is_named(law, draw, tmp_path):
    (tmp_path / "l.csv").write_text("3\n4\n")
    p = tmp_path / "p.sq"
    p.write_text("stage s : fifo(1);\nsession {\n  run s (1 + %s);\n}\nrun { horizon 1; }\n"
                 % draw)
    compile_program(str(p))  # accepted without --strict
    with pytest.raises(LinkError) as info:
        compile_program(str(p), strict=True)
    e = info.value
    assert (e.span.line, e.span.col) == (3, 15)
    assert e.message.startswith("the distribution `~%s` is serq's extension, not serQ 0.1.3"
                                % law)
    r = subprocess.run([sys.executable, "-m", "serq", "check", "--strict", str(p)],
                       capture_output=True, text=True)
    assert r.returncode == 1 and r.stderr.startswith("%s:3:15: error: the distribution" % p)


def test_strict_sees_a_law_inside_a_definition_where_it_is_used():
    text = ("def svc() = ~gamma(2, 1);\nstage s : fifo(1);\nsession { run s (svc()); }\n"
            "run { horizon 1; }\n")
    with pytest.raises(LinkError) as info:
        compile_program(source=text, strict=True)
    assert "`~gamma`" in info.value.message
    unused = "def svc() = ~gamma(2, 1);\nstage s : fifo(1);\nsession { run s (1); }\n" \
             "run { horizon 1; }\n"
    compile_program(source=unused, strict=True)  # defined, never used: 0.1.3's program


def test_their_names_are_no_words_of_the_language():
    # a 0.1.3 program may call its own things gamma or pareto
    text = ("def gamma() = 2;\nstage s : fifo(1);\nsession { set pareto = gamma(); "
            "run s (pareto); }\nrun { horizon 1; }\n")
    compile_program(source=text, strict=True)


# -------------------------------------------------------------------- IR


def test_ir_round_trip_and_strict_refusal(tmp_path):
    (tmp_path / "l.csv").write_text("x\n5\n1\n5\n")
    p = tmp_path / "p.sq"
    p.write_text("stage s : fifo(1);\nworkload { arrive poisson(1); }\n"
                 "session { run s (~lognormal(1, 2) + ~gamma(0.5, 1) + ~pareto(1, 3) + "
                 '~empirical("l.csv")); }\nrun { horizon 50; }\n')
    prog = compile_program(str(p))
    text = dumps(prog)
    back = loads(text)
    assert dumps(back) == text
    found = [x for x in ir.walk(back) if type(x) is ir.ExtSample]
    assert sorted(x.dist for x in found) == ["Empirical", "Gamma", "Lognormal", "Pareto"]
    emp = [x for x in found if x.dist == "Empirical"][0]
    assert (emp.values, emp.counts, emp.source) == ([1.0, 5.0], [1, 2], "l.csv")
    with pytest.raises(IRError) as info:
        loads(text, strict=True)
    assert "serq's extension (not serQ 0.1.3)" in info.value.message
    (tmp_path / "p.json").write_text(text)
    r = subprocess.run([sys.executable, "-m", "serq", "ir", "--from-json",
                        str(tmp_path / "p.json"), "--strict"], capture_output=True, text=True)
    assert r.returncode == 1 and "`~lognormal` (ExtSample) is serq's extension" in r.stderr
    r = subprocess.run([sys.executable, "-m", "serq", "ir", "--from-json",
                        str(tmp_path / "p.json")], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.rstrip("\n") == text
    # the IR needs no CSV to run
    (tmp_path / "l.csv").unlink()
    assert serq.run(serq.Program.from_json(text)).json() == \
        serq.run(serq.Program(prog)).json()


def test_pyserq_refuses_the_extension_ir():
    pyserq = pytest.importorskip("pyserq")
    prog = compile_program(source="stage s : fifo(1);\nsession { run s (~gamma(2, 1)); }\n"
                                  "run { horizon 1; }\n")
    with pytest.raises(ValueError, match="unknown variant `ExtSample`"):
        pyserq.Program.from_json(dumps(prog))


def bad_ir(change):
    prog = compile_program(source="stage s : fifo(1);\nsession { run s (~gamma(2, 1) + "
                                  "~empirical(\"%s\", \"prompt\")); }\nrun { horizon 1; }\n"
                           % LENGTHS)
    d = json.loads(dumps(prog))
    work = d["blocks"][prog.session][0]["Run"]["work"]["Binary"]
    change(work[1]["ExtSample"], work[2]["ExtSample"])
    return validate(loads(json.dumps(d)))


@pytest.mark.parametrize("change,message", [
    (lambda g, e: g["args"].__setitem__(0, {"Num": -1.0}), "the shape k is -1"),
    (lambda g, e: g["args"].pop(), "~gamma takes 2 argument(s), not 1"),
    (lambda g, e: g.__setitem__("values", [1.0]), "~gamma has no table"),
    (lambda g, e: e.__setitem__("values", e["values"][::-1]), "the values ascend"),
    (lambda g, e: e.pop("counts"), "without its table"),
    (lambda g, e: e["counts"].__setitem__(0, 0), "count 0 is 0"),
    (lambda g, e: e.__setitem__("dist", "Weibull"), "expected one of Lognormal"),
])
def test_validate_refuses_a_bad_extension_draw(change, message):
    with pytest.raises(IRError) as info:
        bad_ir(change)
    assert message in info.value.message


# ---------------------------------------------------------------- errors


def refused(tmp_path, body, csv=None, name="l.csv"):
    if csv is not None:
        (tmp_path / name).write_bytes(csv.encode())
    p = tmp_path / "p.sq"
    p.write_text("stage s : fifo(1);\nworkload { arrive poisson(1); }\nsession {\n  %s\n}\n"
                 "run { horizon 10; }\n" % body)
    with pytest.raises(SerqError) as info:
        compile_program(str(p))
    e = info.value
    assert "Traceback" not in e.render()
    return e


@pytest.mark.parametrize("body,col,message", [
    ("run s (~gamma(-2, 1));", 17, "`~gamma(k, mean)`: the shape k is -2; it must be positive"),
    ("run s (~gamma(0, 1));", 17, "the shape k is 0"),
    ("run s (~gamma(2, -1));", 20, "the mean is -1"),
    ("run s (~lognormal(-5, 1));", 21, "`~lognormal(mean, cv2)`: the mean is -5"),
    ("run s (~lognormal(5, -0.5));", 24, "cv2 (the squared coefficient of variation) is -0.5"),
    ("run s (~lognormal(5, 1 / 0));", 26, "cv2 (the squared coefficient of variation) is inf"),
    ("run s (~pareto(1, 1));", 21, "the tail index alpha is 1; it must be more than 1"),
    ("run s (~pareto(1, 0.5));", 21, "the tail index alpha is 0.5"),
    ("run s (~lognormal(1));", 11, "`~lognormal` takes 2 argument(s), got 1"),
    ("run s (~empirical(3));", 21, "`~empirical` reads a file name string here, found `3`"),
    ('run s (~empirical("a", "b", "c"));', 29, "expected `)`"),
])
def test_bad_parameters_are_located(tmp_path, body, col, message):
    e = refused(tmp_path, body)
    assert (e.span.line, e.span.col) == (4, col), e.render()
    assert message in e.message, e.render()


def test_a_constant_expression_is_checked_too(tmp_path):
    e = refused(tmp_path, "run s (~gamma(1 - exp(0) * 2, 1));")
    assert "the shape k is -1" in e.message and e.span.col == 19  # (the `-`)


def test_a_bad_parameter_of_the_run_stops_it_where_it_is_drawn():
    text = ("stage s : fifo(1);\nworkload { arrive poisson(1); }\n"
            "session {\n  set k = 1 - serial;\n  run s (~gamma(k, 1));\n}\nrun { horizon 10; }\n")
    with pytest.raises(RunError) as info:
        serq.run(serq.compile(source=text))
    e = info.value
    assert "`~gamma(k, mean)`: the shape k is 0" in e.message
    assert (e.span.line, e.span.col) == (5, 7)  # (the run statement)


@pytest.mark.parametrize("csv,where,message", [
    ("", (1, 1), "l.csv holds no values"),
    ("# only a comment\n\n", (1, 1), "l.csv holds no values"),
    ("length\n", (1, 1), "l.csv holds no values (only a header)"),
    ("n\n12\n7\n1x\n", (4, 1), "`1x` is not a number"),
    ("12\n 7\n  abc \n", (3, 3), "`abc` is not a number"),
    ("12\n\n\ninf\n", (4, 1), "`inf` is not a finite number"),
    ("1_000\n", (1, 1), "`1_000` is not a number"),
    ("n\n1\n2,3\n", (3, 3), "this row has 2 cells, the first row 1"),
    ("1,2\n3,4\n", (1, 3), "l.csv has 2 columns and no header"),
    ("a,b\n1,2\n", (1, 1), "l.csv has 2 columns (`a`, `b`): name the one to read"),
])
def test_bad_files_are_located_in_the_file(tmp_path, csv, where, message):
    e = refused(tmp_path, 'run s (~empirical("l.csv"));', csv)
    assert e.span.file.endswith("l.csv") and (e.span.line, e.span.col) == where, e.render()
    assert message in e.message, e.render()
    assert str(tmp_path) not in (e.help or "")  # the path as the program writes it
    assert any('read for `~empirical("l.csv")` at %s:4:21' % (tmp_path / "p.sq") in n
               for n in e.notes), e.render()


def test_a_non_numeric_cell_names_its_column(tmp_path):
    e = refused(tmp_path, 'run s (~empirical("l.csv", "out"));', "in,out\n3,4\n5,x\n")
    assert (e.span.line, e.span.col) == (3, 3) and "`x` is not a number (column `out`)" \
        in e.message
    e = refused(tmp_path, 'run s (~empirical("l.csv", "nope"));', "in,out\n3,4\n")
    assert "l.csv has no column `nope`; its columns are `in`, `out`" in e.message
    e = refused(tmp_path, 'run s (~empirical("l.csv", "out"));', "3,4\n")
    assert "l.csv has no header row, so no column `out`" in e.message


def test_a_missing_file_is_located_at_its_name(tmp_path):
    e = refused(tmp_path, 'run s (~empirical("gone.csv"));')
    assert isinstance(e, LinkError)
    assert (e.span.line, e.span.col, e.span.length) == (4, 21, 10)
    assert e.message.startswith("cannot read")
    assert "looked for %s" % (tmp_path / "gone.csv") in e.notes
    assert "4 |   run s (~empirical(\"gone.csv\"));" in e.render()
    (tmp_path / "dir.csv").mkdir()
    e = refused(tmp_path, 'run s (~empirical("dir.csv"));')
    assert "it is a directory, not a file" in e.message


def test_the_path_is_relative_to_the_file_that_holds_the_draw(tmp_path, monkeypatch):
    lib = tmp_path / "lib" / "lengths"
    lib.mkdir(parents=True)
    (lib / "l.csv").write_text("8\n8\n")
    (lib / "defs.sq").write_text('def out_len() = ~empirical("l.csv");\n')
    (tmp_path / "l.csv").write_text("3\n")
    prog = tmp_path / "p.sq"
    prog.write_text('use "lib/lengths/defs.sq";\nstage s : fifo(1);\n'
                    'session { run s (out_len() + ~empirical("l.csv")); }\nrun { horizon 1; }\n')
    found = sorted((x.values, x.counts) for x in ir.walk(compile_program(str(prog)))
                   if type(x) is ir.ExtSample)
    assert found == [([3.0], [1]), ([8.0], [2])]
    # a program given as text: the current directory
    monkeypatch.chdir(tmp_path)
    text = 'stage s : fifo(1);\nsession { run s (~empirical("l.csv")); }\nrun { horizon 1; }\n'
    x = [x for x in ir.walk(compile_program(source=text)) if type(x) is ir.ExtSample][0]
    assert (x.values, x.counts) == ([3.0], [1])


def test_builder_draws():
    from serq import builder
    e = builder.draw("empirical", [4, 1, 4, 2.5]).node
    assert (e.dist, e.values, e.counts) == ("Empirical", [1.0, 2.5, 4.0], [1, 1, 2])
    assert builder.draw("pareto", 2, 3).node.dist == "Pareto"
    with pytest.raises(SerqError):
        builder.draw("empirical", "lengths.csv")
    with pytest.raises(SerqError):
        builder.draw("gamma", 1)
