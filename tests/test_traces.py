"""serq trace convert: small samples written in each public trace's format
(tests/data/traces/) convert to the trace CSV, and `serq run` replays the
result with each request starting at its time in the trace."""
import csv
import json
from pathlib import Path

import pytest

import serq
from serq.cli import main
from serq.traces.readers import estimate_tokens

DATA = Path(__file__).resolve().parent / "data" / "traces"
REPLAY = str(DATA / "replay.sq")


def convert(capsys, *args):
    code = main(["trace", "convert"] + [str(a) for a in args])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out


def rows(text):
    lines = [l for l in text.splitlines() if l and not l.startswith("#")]
    assert lines[0].startswith("session,turn,new,out,think")
    return [[float(x) for x in l.split(",")] for l in lines[1:]]


def replay(tmp_path, text):
    f = tmp_path / "replay.csv"
    f.write_text(text)
    return serq.run(serq.compile(REPLAY, trace=str(f)))


def check_replay(tmp_path, text, times, new, out):
    """The replay starts request i at times[i] - times[0] and serves it."""
    r = replay(tmp_path, text)
    start = r.observe("start")
    assert start.count == len(times) == r.turns
    order = sorted(range(start.count), key=lambda i: start.turns[i])
    got = [start.samples[i] for i in order]
    assert got == pytest.approx([t - times[0] for t in times], abs=1e-6)
    prompt = r.observe("prompt")
    assert sorted(zip(prompt.turns, prompt.samples)) == list(zip(range(1, len(new) + 1), new))
    assert r.observe("e2e").count == len(new)
    assert r.pool("kv").admissions == len(new)
    return r


def test_burstgpt_timeline_and_replay(capsys, tmp_path):
    src = list(csv.DictReader(open(DATA / "burstgpt.csv")))
    text = convert(capsys, DATA / "burstgpt.csv", "--format", "burstgpt")
    got = rows(text)
    times = [float(r["Timestamp"]) for r in src]
    new = [float(r["Request tokens"]) for r in src]
    out = [float(r["Response tokens"]) for r in src]
    assert [r[2] for r in got] == new and [r[3] for r in got] == out
    assert {r[0] for r in got} == {0.0} and [r[1] for r in got] == list(range(1, 11))
    gaps = [b - a for a, b in zip(times, times[1:])] + [0]
    assert [r[4] for r in got] == gaps
    check_replay(tmp_path, text, times, new, out)
    # The CLI runs the converted file too.
    f = tmp_path / "replay.csv"
    assert main(["run", REPLAY, "--trace", str(f), "--quiet"]) == 0
    assert ", 10 turns" in capsys.readouterr().out  # (the run line: `sessions: ..., 10 turns`)


def azure_times(path):
    from datetime import datetime
    out = []
    for r in csv.DictReader(open(path)):
        stamp = r["TIMESTAMP"].replace("+00:00", "")
        day, frac = stamp.split(".")
        whole = datetime.strptime(day, "%Y-%m-%d %H:%M:%S").timestamp()
        out.append((whole, float("0." + frac), float(r["ContextTokens"]),
                    float(r["GeneratedTokens"])))
    return [(w - out[0][0]) + f for w, f, _, _ in out], [x[2] for x in out], [x[3] for x in out]


@pytest.mark.parametrize("name,fmt", [("azure2023.csv", "azure2023"),
                                      ("azure2024.csv", "azure2024"),
                                      ("azure2024.csv", "azure")])
def test_azure_timeline_and_replay(capsys, tmp_path, name, fmt):
    times, new, out = azure_times(DATA / name)
    text = convert(capsys, DATA / name, "--format", fmt)
    got = rows(text)
    assert [r[2] for r in got] == new and [r[3] for r in got] == out
    gaps = [b - a for a, b in zip(times, times[1:])] + [0]
    assert [r[4] for r in got] == pytest.approx(gaps, abs=1e-9)
    check_replay(tmp_path, text, times, new, out)


def test_mooncake_shared_prefix_and_replay(capsys, tmp_path):
    src = [json.loads(l) for l in open(DATA / "mooncake.jsonl")]
    text = convert(capsys, DATA / "mooncake.jsonl", "--format", "mooncake")
    got = rows(text)
    assert text.splitlines()[1] == "session,turn,new,out,think,forced"
    assert [r[2] for r in got] == [s["input_length"] for s in src]
    # Leading hash ids seen before, times 512 tokens: the third request
    # repeats the first one's 13 leading blocks, the fifth the second's 2,
    # the last the first's 3.
    assert [r[5] for r in got] == [0, 0, 13 * 512, 0, 2 * 512, 0, 3 * 512]
    text16 = convert(capsys, DATA / "mooncake.jsonl", "--format", "mooncake",
                     "--block-tokens", "16")
    assert [r[5] for r in rows(text16)] == [0, 0, 13 * 16, 0, 2 * 16, 0, 3 * 16]
    times = [s["timestamp"] / 1000 for s in src]
    check_replay(tmp_path, text, times, [s["input_length"] for s in src],
                 [s["output_length"] for s in src])


def test_sharegpt_conversations(capsys):
    src = json.load(open(DATA / "sharegpt.json"))
    got = rows(convert(capsys, DATA / "sharegpt.json", "--format", "sharegpt", "--think", "2"))
    # conv-a: two exchanges; conv-b: the system message skipped; conv-c: the
    # leading reply skipped, two prompts in a row one, the last unanswered
    # prompt dropped; conv-d: empty, left out; conv-e: user/assistant.
    a = src[0]["conversations"]
    c = src[2]["conversations"]
    tok = lambda m: estimate_tokens(m["value"], "chars4")  # noqa: E731
    assert got == [
        [0, 1, tok(a[0]), tok(a[1]), 2], [0, 2, tok(a[2]), tok(a[3]), 2],
        [1, 1, tok(src[1]["conversations"][1]), tok(src[1]["conversations"][2]), 2],
        [2, 1, tok(c[1]) + tok(c[2]), tok(c[3]), 2],
        [3, 1, tok(src[4]["conversations"][0]), tok(src[4]["conversations"][1]), 2]]
    assert tok({"value": "Lima."}) == 2 and tok({"value": ""}) == 1
    words = rows(convert(capsys, DATA / "sharegpt.json", "--format", "sharegpt",
                         "--tokenizer", "words"))
    assert words[2][2:4] == [3, 1]  # "Capital of Peru?" / "Lima."


def test_sharegpt_poisson_timeline(capsys, tmp_path):
    a = convert(capsys, DATA / "sharegpt.json", "--format", "sharegpt", "--rate", "2",
                "--seed", "5")
    assert a == convert(capsys, DATA / "sharegpt.json", "--format", "sharegpt", "--rate", "2",
                        "--seed", "5")
    b = convert(capsys, DATA / "sharegpt.json", "--format", "sharegpt", "--rate", "2",
                "--seed", "6")
    assert a != b
    got = rows(a)
    assert len(got) == 4 and all(r[4] > 0 for r in got[:-1]) and got[-1][4] == 0
    # The gaps are the Poisson stream's: -ln(1 - U) / rate with U from serq.Rng(seed).
    import math
    rng = serq.Rng(5)
    assert [r[4] for r in got[:-1]] == pytest.approx(
        [-math.log(1 - rng.random_f64()) / 2 for _ in range(3)], abs=1e-9)
    times = [0.0]
    for r in got[:-1]:
        times.append(times[-1] + r[4])
    check_replay(tmp_path, a, times, [r[2] for r in got], [r[3] for r in got])


def test_requests_layout_with_poisson_arrivals(capsys, tmp_path):
    text = convert(capsys, DATA / "azure2024.csv", "--format", "azure", "--layout", "requests")
    got = rows(text)
    assert [r[0] for r in got] == list(range(8)) and all(r[1] == 1 and r[4] == 0 for r in got)
    f = tmp_path / "req.csv"
    f.write_text(text)
    r = serq.run(serq.compile(source="""
stage gpu : ps(1);
workload { arrive poisson(2); trace "%s" ordered; }
session { turn; run gpu (0.0001 * new + 0.01 * out); observe prompt = new; }
run { horizon 50; seed 3; }
""" % f.as_posix()))
    prompts = r.observe("prompt")
    by_session = dict(zip(prompts.sessions, prompts.samples))
    assert by_session and all(v == got[s % 8][2] for s, v in by_session.items())


def test_windows_limit_and_scale(capsys, tmp_path):
    base = [float(r["Timestamp"]) for r in csv.DictReader(open(DATA / "burstgpt.csv"))]
    got = rows(convert(capsys, DATA / "burstgpt.csv", "--format", "burstgpt",
                       "--start", "6", "--duration", "13"))
    kept = [t for t in base if 6 <= t - base[0] < 19]
    assert len(got) == len(kept) == 5
    got = rows(convert(capsys, DATA / "burstgpt.csv", "--format", "burstgpt",
                       "--start", "6", "--limit", "2", "--scale", "0.5"))
    assert [r[2] for r in got] == [230, 1542] and [r[4] for r in got] == [0.5, 0]
    out = tmp_path / "w.csv"
    assert main(["trace", "convert", str(DATA / "azure2023.csv"), "--format", "azure",
                 "--scale", "2", "-o", str(out)]) == 0
    assert "8 request(s) in 1 session(s)" in capsys.readouterr().err
    times, _, _ = azure_times(DATA / "azure2023.csv")
    assert rows(out.read_text())[0][4] == pytest.approx(2 * (times[1] - times[0]))


@pytest.mark.parametrize("fmt,ext,content,where", [
    ("burstgpt", "csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
     "5,ChatGPT,472,18,490,Conversation log\n6,ChatGPT,12x,3,15,API log\n",
     r":3:11: error: Request tokens: `12x` is not a token count"),
    ("burstgpt", "csv", "Timestamp,Model,Request tokens\n", r"no column `Response tokens`"),
    ("burstgpt", "csv", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n"
     "5,ChatGPT,472\n", r":2:1: error: expected 6 fields, got 3"),
    ("azure", "csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46.68,374,44\n"
     "2023-13-16 18:15:47,1,1\n", r":3:1: error: TIMESTAMP: `2023-13-16 18:15:47` is not"),
    ("azure", "csv", "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,-3,44\n",
     r":2:21: error: ContextTokens: `-3` is not a token count"),
    ("mooncake", "jsonl", '{"timestamp": 0, "input_length": 5, "output_length": 1}\n'
     '{"timestamp": 1, "input_length": 5.5, "output_length": 1}\n',
     r":2:\d+: error: `input_length` is 5.5; expected a token count"),
    ("mooncake", "jsonl", '{"timestamp": 0, "input_length": 5, "output_length": 1}\n{oops\n',
     r":2:2: error: not JSON"),
    ("sharegpt", "json", '[\n  {"conversations": [\n    {"from": "human", "value": "hi"},\n'
     '    {"from": "robot", "value": "beep"}]}\n]\n',
     r"\[0\]\.conversations\[1\]\.from: unknown speaker \"robot\""),
    ("sharegpt", "json", '[\n  {"conversations": [\n    {"from": "human" "value": "x"}]}]',
     r":3:22: error: not JSON"),
])
def test_bad_input_is_a_located_error(capsys, tmp_path, fmt, ext, content, where):
    f = tmp_path / ("bad." + ext)
    f.write_text(content)
    assert main(["trace", "convert", str(f), "--format", fmt]) == 1
    err = capsys.readouterr().err
    assert "Traceback" not in err
    import re
    assert re.search(where, err), err


def test_usage_errors(capsys, tmp_path):
    sg = str(DATA / "sharegpt.json")
    for args, msg in [
            ([sg, "--format", "sharegpt", "--layout", "timeline"], "give `--rate R`"),
            ([str(DATA / "burstgpt.csv"), "--format", "burstgpt", "--rate", "3"],
             "a burstgpt trace has its own"),
            ([str(DATA / "burstgpt.csv"), "--format", "burstgpt", "--layout",
              "conversations"], "the conversations layout is ShareGPT's"),
            ([str(DATA / "burstgpt.csv"), "--format", "burstgpt", "--start", "1000"],
             "no request to write"),
            ([sg, "--format", "sharegpt", "--duration", "5"], "conversations have no times"),
            ([str(tmp_path / "missing.csv"), "--format", "azure"], "cannot read")]:
        code = main(["trace", "convert"] + args)
        err = capsys.readouterr().err
        assert code in (1, 2) and msg in err, err
    assert main(["trace"]) == 2
    assert "needs a command" in capsys.readouterr().err
