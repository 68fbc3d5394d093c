"""docs/validation.md's table and summary are what the code computes from
tests/data/validation (the published measurements and the calibrated
parameters): rebuilt here, compared line for line."""
import csv
import importlib.util
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "validation"


def table_module():
    spec = importlib.util.spec_from_file_location("validation_table",
                                                  ROOT / "docs" / "validation_table.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_every_point_names_its_source_and_figure():
    with open(DATA / "points.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert len({r["load"] for r in rows}) >= 8          # the eight points
    for r in rows:
        assert r["source"].startswith("https://") and len(r["figure"]) > 20, r["id"]
        assert r["half"] in ("fit", "judge") and float(r["measured"]) > 0
    for g in {r["group"] for r in rows}:
        halves = {r["half"] for r in rows if r["group"] == g}
        assert halves == {"fit", "judge"}, g              # every group is judged on rows it
                                                          # was not fitted to


def test_the_page_is_what_the_code_computes():
    v = table_module()
    points = v.read_points()
    table, summary, figures = v.build(points, v.read_calibrated())
    doc = (ROOT / "docs" / "validation.md").read_text(encoding="utf-8")
    assert v.splice(doc, v.BEGIN, v.END, table) == doc, \
        "docs/validation.md's table is stale: run python docs/validation_table.py --write"
    assert v.splice(doc, v.SUMMARY_BEGIN, v.SUMMARY_END, summary) == doc
    # calibrating helped where it was fitted, and on the held-out rows
    med = figures["median"]
    assert med["after_fit"] < med["before"] and med["after_judge"] < med["before_judge"]


def test_the_calibrated_parameters_are_no_worse_than_the_defaults_on_their_fit_rows():
    v = table_module()
    points = [p for p in v.read_points() if p.half == "fit"]
    _, _, figures = v.build(points, v.read_calibrated())

    def squared_log_error(pred, ps):
        return sum(math.log(pred[p.id] / p.measured) ** 2 for p in ps)

    for g in {p.group for p in points}:
        ps = [p for p in points if p.group == g]
        assert squared_log_error(figures["after"], ps) <= squared_log_error(figures["before"], ps)
