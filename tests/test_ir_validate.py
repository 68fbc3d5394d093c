"""serq.ir.validate: every IR the text front end makes (and the reference's
own IR of the corpus) passes; each broken IR is refused where it breaks."""
import json
from pathlib import Path

import pytest

import serq
from serq.ir.json import loads
from serq.ir.validate import validate
from serq.errors import SerqError

ROOT = Path(__file__).resolve().parent.parent
VALID_IR = sorted((ROOT / "tests" / "programs" / "valid").glob("*.ir.json"))
EXAMPLES = sorted((ROOT / "examples").glob("**/*.sq"))

BASE = """
pool kv { cap 64; block 16; }
stage gpu : step { budget 100; cost 0.01; memory kv; }
stage s : fifo;
workload { arrive poisson(1); }
session {
  hold kv (16) { run gpu prefill (16) growing kv; }
  run s (1);
  observe t = now;
}
run { horizon 10; }
"""


def base():
    return json.loads(serq.compile(source=BASE).to_json())


def test_the_reference_ir_of_the_corpus_passes():
    assert len(VALID_IR) > 100
    for f in VALID_IR:
        validate(loads(f.read_text()))


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_compiled_examples_pass(path):
    validate(serq.compile(str(path), horizon=10, warmup=0).ir)


def _refused(d, pattern):
    with pytest.raises(SerqError, match=pattern):
        serq.Program.from_json(json.dumps(d))


def test_broken_ir_is_refused_where_it_breaks():
    serq.Program.from_json(json.dumps(base()))
    d = base()
    d["blocks"][2][1]["Run"]["stage"]["base"] = 7
    _refused(d, r"stage reference 7\.\.8 out of range \(the program has 2 stages\) "
             r"at blocks\[2\]\[1\]")
    d = base()
    d["blocks"][2][2]["Observe"][0] = 3
    _refused(d, r"observation 3 out of range .* at blocks\[2\]\[2\]")
    d = base()
    d["blocks"][2][0]["Hold"]["body"] = 2
    _refused(d, r"block 2 is the body of two statements")
    d = base()
    d["blocks"][2][1]["Run"]["mode"] = "Decode"
    _refused(d, r"decode run on `s`, which is not a step stage")
    d = base()
    d["blocks"][0].append(d["blocks"][2][1])
    _refused(d, r"`init` and `turn` blocks only set and observe; found Run at blocks\[0\]\[0\]")
    d = base()
    d["warmup"] = 10.0
    _refused(d, r"need 0 <= warmup < horizon .* at warmup")
    d = base()
    d["arrival"] = {"Poisson": 0.0}
    _refused(d, r"Poisson rate of 0.0")
    d = base()
    d["stages"][0]["kind"]["Step"]["memory"] = 4
    _refused(d, r"memory pool 4 out of range .* at stages\[0\]")
    d = base()
    d["observes"].append("t")
    _refused(d, r"two observations named `t`")
    d = base()
    d["blocks"][2][1]["Run"]["work"] = {"Num": -1.0}
    _refused(d, r"a run's work is -1.0")
    d = base()
    d["blocks"][2][1]["Run"]["work"] = {"Call": ["Used", [{"Expr": {"Num": 1.0}}]]}
    _refused(d, r"Used reads a pool where it was given an expression")
    d = base()
    d["slot_turn"] = 99
    _refused(d, r"attribute slot 99 out of range .* at slot_turn")


def test_statement_errors_point_at_the_source_line():
    p = serq.compile(source=BASE)
    p.ir.blocks[2][1].mode = "Decode"
    with pytest.raises(SerqError) as e:
        validate(p.ir)
    assert e.value.span.line == 8


def test_cli_refuses_bad_ir(tmp_path, capsys):
    from serq.cli import main
    d = base()
    d["blocks"][2][1]["Run"]["stage"]["base"] = 7
    f = tmp_path / "bad.json"
    f.write_text(json.dumps(d))
    assert main(["run", str(f)]) == 1
    assert "stage reference 7..8 out of range" in capsys.readouterr().err
    assert main(["ir", "--from-json", str(f)]) == 1
