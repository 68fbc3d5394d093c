"""`serq draw`: the deployment as SVG, TikZ and Graphviz DOT.

Structure tests read each format back (the SVG as XML); Graphviz must accept
the DOT text (skipped without `dot`); headless Chromium renders the SVG and
the screenshot must show the picture (skipped without Chromium)."""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from corpus import programs
from serq.cli import main
from serq.compiler import compile_program
from serq.errors import SerqError
from serq.draw import draw
from serq.draw.model import WRAP, Repeat, Split, build, fold, steps
from serq.draw.dot import MAX_USE_EDGES
from serq.draw.tikz import escape

ROOT = Path(__file__).resolve().parent.parent
SRC = str(ROOT / "src")
SVG_NS = "{http://www.w3.org/2000/svg}"
EXAMPLES = ["vllm_single_turn.sq", "pd_disaggregation.sq", "agent_subagents.sq",
            "replica_routing.sq", "chat.sq", "chat_prefix_reuse.sq", "policies/sarathi.sq",
            "admission/watermark.sq"]
CORPUS = ["fork_in_loop.sq", "fork_join.sq", "stmt_loop.sq"]
PATHS = [ROOT / "examples" / e for e in EXAMPLES] + \
    [ROOT / "tests" / "programs" / "valid" / c for c in CORPUS]
IDS = [p.name for p in PATHS]


def families(prog):
    """The pool and stage family names of a program."""
    return sorted({p.name for p in prog.pools}), sorted({s.name for s in prog.stages})


def svg_texts(root):
    return ["".join(t.itertext()) for t in root.iter(SVG_NS + "text")]


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_svg_structure(path):
    prog = compile_program(str(path))
    root = ET.fromstring(draw(prog, "svg", path.name).split("\n", 1)[1])
    assert root.tag == SVG_NS + "svg"
    w, h = float(root.get("width")), float(root.get("height"))
    assert root.get("viewBox") == "0 0 %s %s" % (root.get("width"), root.get("height"))
    texts = svg_texts(root)
    pools, stages = families(prog)
    heads = [t.split(" ×")[0] for t in texts]
    for name in pools + stages:
        assert name in heads, name
    assert path.name in texts and "legend" in texts and "workload" in texts and "done" in texts
    # every arrow's marker is defined, nothing outside the document is used
    markers = {m.get("id") for m in root.iter(SVG_NS + "marker")}
    for p in root.iter(SVG_NS + "path"):
        ref = p.get("marker-end")
        if ref:
            assert ref[len("url(#"):-1] in markers
    text = ET.tostring(root, encoding="unicode")
    assert "href" not in text and "<script" not in text and "<image" not in text
    # every box lies inside the picture
    for r in root.iter(SVG_NS + "rect"):
        x, y = float(r.get("x")), float(r.get("y"))
        assert 0 <= x and x + float(r.get("width")) <= w + 0.5
        assert 0 <= y and y + float(r.get("height")) <= h + 0.5


def test_svg_boxes_do_not_overlap():
    for path in PATHS:
        root = ET.fromstring(draw(compile_program(str(path)), "svg").split("\n", 1)[1])
        boxes = [tuple(float(r.get(k)) for k in ("x", "y", "width", "height"))
                 for r in root.iter(SVG_NS + "rect") if r.get("rx") in ("3", "12")]
        for i, a in enumerate(boxes):
            for b in boxes[i + 1:]:
                apart = (a[0] + a[2] <= b[0] or b[0] + b[2] <= a[0] or
                         a[1] + a[3] <= b[1] or b[1] + b[3] <= a[1])
                assert apart, (path.name, a, b)


SHIPPED = sorted((ROOT / "examples").rglob("*.sq"))
RES_FILL = {"#e8f5e9": "pool", "#e3f2fd": "stage"}


def parse_svg(prog, title=""):
    return ET.fromstring(draw(prog, "svg", title).split("\n", 1)[1])


def path_points(d):
    nums = [float(v) for v in re.findall(r"-?[0-9.]+", d)]
    return list(zip(nums[0::2], nums[1::2]))


def resource_rects(root):
    """(kind, x, y, w, h) of each pool and stage box (the legend's swatches
    are 18 wide)."""
    return [(RES_FILL[r.get("fill")],) + tuple(float(r.get(k)) for k in ("x", "y", "width",
                                                                          "height"))
            for r in root.iter(SVG_NS + "rect")
            if r.get("fill") in RES_FILL and float(r.get("width")) > 18]


def lines_into(root, rect):
    """The arrows that end on a resource box's top or bottom (a family's
    stack is 8 above its box)."""
    _, x, y, w, h = rect
    out = []
    for p in root.iter(SVG_NS + "path"):
        if not p.get("marker-end"):
            continue
        ex, ey = path_points(p.get("d"))[-1]
        if x - 0.5 <= ex <= x + w + 0.5 and (abs(ey - (y + h)) < 0.6 or -0.6 < y - ey < 8.6):
            out.append(p)
    return out


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_every_pool_and_stage_used_has_a_line(path):
    """No line to a pool or stage is left out, however many uses there are;
    the legend shows the kinds of line drawn and only those."""
    try:
        prog = compile_program(str(path))
    except SerqError:
        pytest.skip("a program that needs overrides")
    pic = build(prog)
    used = {}
    for s in steps(pic.path):
        for u in s.uses:
            used[u.resource] = used.get(u.resource, 0) + 1
    root = parse_svg(prog)
    texts = svg_texts(root)
    rects = resource_rects(root)
    assert len(rects) == len(pic.resources)
    by_name = {}
    for r in pic.resources:
        head = r.name + (" ×%d" % r.count if r.count > 1 else "")
        by_name[r.key] = head
    bundled = any(t.startswith("%d uses of pools and stages" % sum(used.values())) for t in texts)
    counts = [int(t.split()[0]) for t in texts if re.match(r"^\d+ uses?$", t)]
    total_lines = 0
    for rect in rects:
        total_lines += len(lines_into(root, rect))
    if bundled:
        # one line a pool or stage, labelled with its count of uses
        assert total_lines == len(used) and sorted(counts) == sorted(used.values())
    else:
        assert total_lines == sum(used.values()) and counts == []
    for key in used:
        assert by_name[key] in texts
    # the legend: each kind of line it shows is drawn, each one drawn is shown
    legend_y = next(float(t.get("y")) for t in root.iter(SVG_NS + "text") if t.text == "legend")
    legend, drawn = set(), set()
    for p in root.iter(SVG_NS + "path"):
        pts = path_points(p.get("d"))
        style = (p.get("stroke"), p.get("stroke-dasharray"))
        if pts[0][1] > legend_y:
            legend.add(style)
        elif any(p in lines_into(root, r) for r in rects):
            drawn.add(style)
    legend.discard(("#424242", None))  # the path
    assert legend == drawn, (legend, drawn)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_pictures_are_bounded_and_families_are_one_box(path):
    try:
        prog = compile_program(str(path))
    except SerqError:
        pytest.skip("a program that needs overrides")
    root = parse_svg(prog, path.name)
    assert float(root.get("width")) <= 1600, path.name
    pic = build(prog)
    texts = svg_texts(root)
    for r in pic.resources:
        if r.count > 1:
            assert texts.count("%s ×%d" % (r.name, r.count)) == 1
    assert len(resource_rects(root)) == len(pic.resources)


def test_a_family_of_sixteen_is_one_stacked_box():
    prog = compile_program(source="pool e[16] { cap 8; }\nstage g[16] : delay;\n"
                           "workload { arrive poisson(1); }\nsession { choose i in 16 by (i);"
                           " hold e[i] (1) { run g[i] (1); } }\nrun { horizon 5; }\n")
    root = parse_svg(prog)
    rects = resource_rects(root)
    assert sorted(r[0] for r in rects) == ["pool", "stage"]
    texts = svg_texts(root)
    assert "e ×16" in texts and "g ×16" in texts
    # the stack: two outlines behind each family's box, in its colour
    for kind, x, y, w, h in rects:
        color = "#2e7d32" if kind == "pool" else "#1565c0"
        behind = [p for p in root.iter(SVG_NS + "path") if p.get("stroke") == color and
                  not p.get("marker-end") and path_points(p.get("d"))[1] in
                  ((x + w + 4, y - 4), (x + w + 8, y - 8))]
        assert len(behind) == 2


def test_the_long_path_wraps_into_rows():
    """The disaggregation example's branch lane is longer than a row: it
    wraps (the picture was one 2,400-point row)."""
    prog = compile_program(str(ROOT / "examples" / "pd_disaggregation.sq"))
    root = parse_svg(prog)
    assert float(root.get("width")) <= 1450
    pic = build(prog)
    split = next(x for x in pic.path.items if type(x) is Split)
    ys = set()
    for r in root.iter(SVG_NS + "rect"):
        if r.get("rx") == "3" and r.get("fill") == "#ffffff":
            ys.add(round(float(r.get("y")) + float(r.get("height")) / 2))
    # the then lane, the else lane and its second row: three axes
    assert len(ys) >= 3, ys
    assert len(steps(split.lanes[1])) > 10


def test_path_of_the_vllm_example():
    prog = compile_program(str(ROOT / "examples" / "vllm_single_turn.sq"))
    pic = build(prog)
    kinds = [s.kind for s in steps(pic.path)]
    assert kinds == ["start", "turn", "hold", "run", "run", "release", "done"]
    hold = steps(pic.path)[2]
    assert hold.lines[0] == "hold seqs (1)" and hold.lines[1].startswith("     kv (")
    runs = [s for s in steps(pic.path) if s.kind == "run"]
    assert [r.lines[0] for r in runs] == ["run gpu prefill", "run gpu decode"]
    assert {(u.resource, u.how) for u in runs[0].uses} == {("stage:0", "run"), ("pool:1", "grow")}
    rels = {(r.src, r.dst, r.label) for r in pic.relations}
    assert rels == {("pool:0", "stage:0", "admit via"), ("stage:0", "pool:1", "memory")}
    assert "observes hit_share, recompute, ttft, e2e" in pic.notes


def test_path_of_the_disaggregation_example():
    prog = compile_program(str(ROOT / "examples" / "pd_disaggregation.sq"))
    pic = build(prog)
    assert [(r.name, r.count) for r in pic.resources] == [
        ("P.kv", 2), ("D.kv", 2), ("P", 2), ("P.nic", 2), ("D", 2), ("D.nic", 2),
        ("D.nic.latency", 2)]
    split = [x for x in pic.path.items if type(x) is Split]
    assert len(split) == 1 and split[0].kind == "branch" and split[0].label == "prompt < 512"
    long_lane = [s for s in steps(split[0].lanes[1])]
    assert "load" in [s.kind for s in long_lane]
    load = next(s for s in long_lane if s.kind == "load")
    assert load.lines[0] == "transfer into D.kv[j]"
    lease = next(s for s in long_lane if s.kind == "release" and "lease" in " ".join(s.lines))
    assert lease.lines == ["release P.kv[i]", "lease P.kv[i] (inf)"]


def test_labels_in_surface_syntax_wrapped_not_cut():
    prog = compile_program(str(ROOT / "examples" / "pd_disaggregation.sq"))
    pic = build(prog)
    d = next(r for r in pic.resources if r.name == "D.kv")
    assert "preempt lifo" in d.detail and not any("admission" in x for x in d.detail)
    p = next(r for r in pic.resources if r.name == "P")
    # the cost as written (a library `def` use), wrapped onto two lines
    assert p.detail[1:3] == ["cost cost_step(compute_eff, memory_eff,", "  step_overhead)"]
    for r in pic.resources:
        assert not any("…" in x for x in r.detail) and r.tip == ""
    for s in steps(pic.path):
        assert not any("…" in x for x in s.lines) and s.tip == ""
        assert all(len(x) <= WRAP for x in s.lines), s.lines


@pytest.mark.parametrize("text,shown", [
    ("-free(D[j].kv)", "-free(D[j].kv)"), ("a?b:c", "a ? b : c"), ("~exp(2)*3", "~exp(2) * 3"),
    ("x[i]+f(-1,-y)", "x[i] + f(-1, -y)"), ("2*-x", "2 * -x"), ("!(a&&b)", "!(a && b)"),
    ("(a-1)*(b+2)", "(a - 1) * (b + 2)"), ("f(x)[0]", "f(x)[0]")])
def test_surface_text_is_spaced_as_fmt_spaces_it(text, shown):
    from serq.syntax.lexer import EOF, tokenize
    from serq.syntax.declarations import tokens_text
    assert tokens_text([t for t in tokenize(text, "<t>") if t.kind != EOF]) == shown


def test_fold_wraps_and_cuts_past_a_generous_limit():
    lines, tip = fold(["cost " + "+".join("f(x%d, y)" % i for i in range(8))], 40)
    assert len(lines) == 2 and tip == "" and all(len(x) <= 40 for x in lines)
    assert "".join(x.strip() for x in lines).replace(" ", "") == \
        ("cost " + "+".join("f(x%d, y)" % i for i in range(8))).replace(" ", "")
    long = "cost " + " + ".join("g(%d)" % i for i in range(200))
    lines, tip = fold([long], 40, 6)
    assert len(lines) == 6 and lines[-1].endswith("…") and tip == long
    # the SVG keeps the whole text in a tooltip
    prog = compile_program(source="pool kv { cap 10; }\nstage gpu : delay;\n"
                           "workload { arrive poisson(1); init { set prompt = 1 + ~exp(1); } }\nsession { hold kv (%s) { run gpu (1); }"
                           " }\nrun { horizon 10; }\n" % " + ".join("prompt" for _ in range(150)))
    root = ET.fromstring(draw(prog, "svg").split("\n", 1)[1])
    tips = ["".join(t.itertext()) for g in root.iter(SVG_NS + "g") for t in g.findall(SVG_NS + "title")]
    assert any(t.startswith("hold kv (prompt + prompt + ") and t.count("+") == 149 for t in tips), tips


def test_loops_and_forks():
    prog = compile_program(str(ROOT / "tests" / "programs" / "valid" / "fork_in_loop.sq"))
    pic = build(prog)
    loops = [x for x in pic.path.items if type(x) is Repeat]
    assert len(loops) == 1
    splits = []
    todo = list(loops[0].body.items)
    while todo:
        x = todo.pop()
        if type(x) is Split:
            splits.append(x.kind)
            for lane in x.lanes:
                todo.extend(lane.items)
    assert sorted(splits) == ["branch", "branch", "fork"]
    assert "join" in [s.kind for s in steps(loops[0].body)]
    assert [s.kind for s in steps(pic.path)][-1] == "done"


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_tikz_structure(path):
    prog = compile_program(str(path))
    tex = draw(prog, "tikz", path.name)
    body = "\n".join(line for line in tex.splitlines() if not line.startswith("%"))
    assert body.count("\\begin{tikzpicture}") == 1 and body.rstrip().endswith("\\end{tikzpicture}")
    depth = 0
    for ch in re.sub(r"\\[{}]", "", body):
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert depth == 0
    # no special character of TeX left unescaped in the node texts
    for text in re.findall(r"\\node\[[^\]]*\] at \([^)]*\) \{(.*)\};$", body, re.M):
        assert not re.search(r"(?<!\\)[_#%&$]", text.replace("$\\times$", "")), text
    pools, stages = families(prog)
    for name in pools + stages:
        assert "\\textbf{%s" % escape(name) in body, name
    colors = set(re.findall(r"\\definecolor\{(\w+)\}", body))
    used = set(re.findall(r"\b(c[0-9A-F]{6})\b", body))
    assert used <= colors


PDFLATEX = shutil.which("pdflatex")


@pytest.mark.skipif(PDFLATEX is None, reason="pdflatex is not installed (optional: apt packages "
                    "texlive-latex-base texlive-pictures)")
def test_latex_compiles_the_tikz(tmp_path):
    path = ROOT / "examples" / "pd_disaggregation.sq"
    (tmp_path / "pic.tikz").write_text(draw(compile_program(str(path)), "tikz", "pd_disagg.sq"))
    (tmp_path / "doc.tex").write_text(
        "\\documentclass{article}\n\\usepackage[paperwidth=120cm,paperheight=60cm]{geometry}\n"
        "\\usepackage{tikz}\n\\usetikzlibrary{arrows.meta}\n\\begin{document}\n"
        "\\input{pic.tikz}\n\\end{document}\n")
    r = subprocess.run([PDFLATEX, "-interaction=nonstopmode", "-halt-on-error", "doc.tex"],
                       cwd=str(tmp_path), capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:]
    assert (tmp_path / "doc.pdf").stat().st_size > 1000


def test_tikz_escapes():
    assert escape("a_b & 50% {x} #1 $") == r"a\_b \& 50\% \{x\} \#1 \$"
    assert escape("~exp(2) ^ …") == r"\textasciitilde{}exp(2) \textasciicircum{} \ldots{}"


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_dot_structure(path):
    prog = compile_program(str(path))
    text = draw(prog, "dot", path.name)
    assert text.startswith("digraph serq {") and text.rstrip().endswith("}")
    pic = build(prog)
    for r in pic.resources:
        assert '"%s" [shape=box' % r.key in text
    for s in steps(pic.path):
        assert re.search(r"^    s%d \[" % s.id, text, re.M)
    for name in ("cluster_path", "cluster_pools", "cluster_stages"):
        assert ("subgraph %s {" % name in text) == (name == "cluster_path" or any(
            r.kind == name[len("cluster_"):-1] for r in pic.resources))
    assert "rankdir=TB;" in text
    uses = [(s.id, u.resource) for s in steps(pic.path) for u in s.uses]
    edges = re.findall(r'^  s(\d+) -> "((?:pool|stage):\d+)" \[[^\n]*xlabel="([^"]+)"', text, re.M)
    if len(uses) <= MAX_USE_EDGES:
        assert sorted((int(a), b) for a, b, _ in edges) == sorted(uses)
    else:
        # one edge a pool or stage, from its first use, labelled with the count
        counts = {}
        for _, key in uses:
            counts[key] = counts.get(key, 0) + 1
        assert sorted(b for _, b, _ in edges) == sorted(counts)
        for a, b, label in edges:
            assert (int(a), b) == next(x for x in uses if x[1] == b)
            assert label == "%d use%s" % (counts[b], "" if counts[b] == 1 else "s")


DOT = shutil.which("dot")


@pytest.mark.skipif(DOT is None, reason="Graphviz `dot` is not installed (apt package graphviz)")
@pytest.mark.parametrize("path", sorted((ROOT / "examples").rglob("*.sq")) +
                         programs("valid")[::7], ids=lambda p: p.name)
def test_graphviz_accepts_the_dot(path):
    try:
        prog = compile_program(str(path))
    except SerqError:
        pytest.skip("a library or a program that needs overrides")
    r = subprocess.run([DOT, "-Tsvg"], input=draw(prog, "dot"), capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0 and not r.stderr, r.stderr
    assert "<svg" in r.stdout


@pytest.mark.skipif(DOT is None, reason="Graphviz `dot` is not installed (apt package graphviz)")
def test_graphviz_draws_the_disaggregation_example_readably():
    """Clusters, one edge a resource, a size that fits a page or two (it was
    3,025 x 854 points with 19 crossing edges)."""
    prog = compile_program(str(ROOT / "examples" / "pd_disaggregation.sq"))
    r = subprocess.run([DOT, "-Tsvg"], input=draw(prog, "dot", "pd"), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0 and r.stderr == "", r.stderr
    root = ET.fromstring(r.stdout[r.stdout.index("<svg"):])
    w, h = (float(root.get(k).rstrip("pt")) for k in ("width", "height"))
    assert w <= 1100 and h <= 1600, (w, h)
    titles = ["".join(t.itertext()) for g in root.iter(SVG_NS + "g")
              if g.get("class") == "cluster" for t in g.findall(SVG_NS + "title")]
    assert sorted(titles) == ["cluster_path", "cluster_pools", "cluster_stages"]
    edges = [g for g in root.iter(SVG_NS + "g") if g.get("class") == "edge"]
    to_resources = [g for g in edges if re.match(r"s\d+->(pool|stage):",
                                                  "".join(g.find(SVG_NS + "title").itertext()))]
    assert len(to_resources) == len(build(prog).resources)


# ------------------------------------------------------------------ Chromium

CHROMIUM = next((c for c in ("/usr/bin/chromium", shutil.which("chromium") or "",
                             shutil.which("chromium-browser") or "") if c and os.path.exists(c)),
                None)


def read_png(data):
    """(width, height, rows of (r, g, b) tuples) of an 8-bit RGB or RGBA PNG."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos = 8
    idat = b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        chunk = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            width, height, depth, color = struct.unpack(">IIBB", chunk[:10])
            assert depth == 8 and color in (2, 6), (depth, color)
            bpp = 3 if color == 2 else 4
        elif kind == b"IDAT":
            idat += chunk
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = width * bpp
    rows = []
    prev = bytearray(stride)
    i = 0
    for _ in range(height):
        ftype = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if ftype == 1:
                line[x] = (line[x] + a) & 255
            elif ftype == 2:
                line[x] = (line[x] + b) & 255
            elif ftype == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif ftype == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pred) & 255
        rows.append([tuple(line[x:x + 3]) for x in range(0, stride, bpp)])
        prev = line
    return width, height, rows


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt package chromium)")
@pytest.mark.parametrize("name", ["vllm_single_turn.sq", "pd_disaggregation.sq",
                                  "replica_routing.sq", "agent_subagents.sq"])
def test_chromium_renders_the_svg(name, tmp_path):
    prog = compile_program(str(ROOT / "examples" / name))
    svg = tmp_path / "picture.svg"
    svg.write_text(draw(prog, "svg", name))
    root = ET.parse(str(svg)).getroot()
    w, h = int(float(root.get("width"))) + 1, int(float(root.get("height"))) + 1
    assert w <= 1600 and w < 1.6 * h + 400, (w, h)
    png = tmp_path / "shot.png"
    r = chromium(["--screenshot=" + str(png), "--window-size=%d,%d" % (w, h), svg.as_uri()],
                 tmp_path)
    assert png.exists(), r.stderr[-2000:]
    width, height, rows = read_png(png.read_bytes())
    assert (width, height) == (w, h)
    pixels = [p for row in rows for p in row]
    ink = [p for p in pixels if min(p) < 200]
    # lines, boxes and text cover a few percent of the picture, not all of it
    assert 0.01 < len(ink) / len(pixels) < 0.5
    # the pools' green and the stages' blue borders are there
    green = sum(1 for p in ink if p[1] > p[0] + 40 and p[1] > p[2] + 40)
    blue = sum(1 for p in ink if p[2] > p[0] + 60 and p[2] > p[1] + 20)
    assert green > 200 and blue > 200, (green, blue)
    # something is drawn in each third of the picture's width (the path)
    for k in range(3):
        band = [p for row in rows for p in row[k * width // 3:(k + 1) * width // 3]]
        assert sum(1 for p in band if min(p) < 200) > 100


MEASURE_JS = r"""
function measure(svg) {
  var texts = [], boxes = [], out = {};
  svg.querySelectorAll("rect").forEach(function (r) {
    var rx = r.getAttribute("rx");
    if ((rx === "3" || rx === "12") && r.getBBox().width > 18) boxes.push(r.getBBox());
  });
  svg.querySelectorAll("text").forEach(function (t) {
    if (t.parentNode.nodeName === "title") return;
    var b = t.getBBox();
    texts.push({s: t.textContent, x: b.x, y: b.y, w: b.width, h: b.height,
                ax: +t.getAttribute("x"), ay: +t.getAttribute("y")});
  });
  var overlaps = [];
  for (var i = 0; i < texts.length; i++) {
    for (var j = i + 1; j < texts.length; j++) {
      var a = texts[i], b = texts[j];
      // rows of text 15 apart touch by a point or two of their line boxes
      var dx = Math.min(a.x + a.w, b.x + b.w) - Math.max(a.x, b.x);
      var dy = Math.min(a.y + a.h, b.y + b.h) - Math.max(a.y, b.y);
      if (dx > 1 && dy > 3) overlaps.push([a.s, b.s]);
    }
  }
  var outside = [];
  texts.forEach(function (t) {
    boxes.forEach(function (b) {
      if (t.ax > b.x && t.ax < b.x + b.width && t.ay > b.y && t.ay < b.y + b.height &&
          (t.x + t.w > b.x + b.width + 0.5 || t.y < b.y - 0.5 || t.y + t.h > b.y + b.height + 0.5))
        outside.push(t.s);
    });
  });
  // a label outside the boxes (a lane's name, a count of uses) touches none
  var onbox = [];
  texts.forEach(function (t) {
    var inside = boxes.some(function (b) {
      return t.ax > b.x && t.ax < b.x + b.width && t.ay > b.y && t.ay < b.y + b.height;
    });
    if (inside) return;
    boxes.forEach(function (b) {
      var dx = Math.min(t.x + t.w, b.x + b.width) - Math.max(t.x, b.x);
      var dy = Math.min(t.y + t.h, b.y + b.height) - Math.max(t.y, b.y);
      if (dx > 1 && dy > 1) onbox.push(t.s);
    });
  });
  var r = svg.getBoundingClientRect();
  return {texts: texts.map(function (t) { return t.s; }), overlaps: overlaps, outside: outside,
          onbox: onbox,
          width: r.width, height: r.height,
          right: Math.max.apply(null, texts.map(function (t) { return t.x + t.w; }))};
}
var res = {};
document.querySelectorAll("div.pic").forEach(function (d) {
  res[d.getAttribute("data-name")] = measure(d.querySelector("svg"));
});
document.getElementById("out").textContent = JSON.stringify(res);
"""


def chromium(args, tmp_path, timeout=120):
    profile = tempfile.mkdtemp(dir=str(tmp_path))
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu",
                           "--disable-quic", "--no-first-run", "--disable-background-networking",
                           "--disable-component-update", "--disable-sync", "--hide-scrollbars",
                           "--user-data-dir=" + profile] + args, capture_output=True, text=True,
                          timeout=timeout)


@pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (apt package chromium)")
def test_chromium_lays_out_the_shipped_pictures_readably(tmp_path):
    """Every shipped example's SVG (and a few of the corpus's, with forks and
    loops) on one page in Chromium, measured there (getBBox of each text as
    the browser sets it): no two texts overlap, no text runs out of its box
    and no label runs into one, every pool and stage is named, and the
    picture is at most 1,600 wide."""
    import html
    import json
    progs = {}
    for path in SHIPPED + PATHS[len(EXAMPLES):]:
        try:
            progs[str(path.relative_to(ROOT))] = compile_program(str(path))
        except SerqError:
            pass  # a program that needs overrides
    assert len(progs) >= 13
    page = ["<!DOCTYPE html><html><body>"]
    for name, prog in progs.items():
        page.append('<div class="pic" data-name="%s">%s</div>'
                    % (name, draw(prog, "svg", name).split("\n", 1)[1]))
    page.append('<pre id="out"></pre><script>%s</script></body></html>' % MEASURE_JS)
    (tmp_path / "all.html").write_text("".join(page), encoding="utf-8")
    r = chromium(["--dump-dom", (tmp_path / "all.html").as_uri()], tmp_path)
    got = re.search(r'<pre id="out">(.*?)</pre>', r.stdout, re.S)
    assert got and got.group(1), r.stderr[-2000:]
    res = json.loads(html.unescape(got.group(1)))
    assert sorted(res) == sorted(progs)
    for name, prog in progs.items():
        m = res[name]
        assert m["overlaps"] == [], (name, m["overlaps"][:5])
        assert m["outside"] == [], (name, m["outside"][:5])
        assert m["onbox"] == [], (name, m["onbox"][:5])
        assert m["width"] <= 1600 and m["right"] <= m["width"], (name, m["width"])
        heads = {t.split(" ×")[0] for t in m["texts"]}
        pools, stages = families(prog)
        assert set(pools + stages) <= heads, (name, set(pools + stages) - heads)


# ------------------------------------------------------------------ the CLI

def test_cli_draw_formats_and_output(tmp_path, capsys):
    prog = str(ROOT / "examples" / "vllm_single_turn.sq")
    assert main(["draw", prog]) == 0
    assert capsys.readouterr().out.startswith("<?xml")
    out = tmp_path / "p.dot"
    assert main(["draw", prog, "--format", "dot", "--output", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert out.read_text().startswith("digraph serq {")
    assert main(["draw", prog, "--format", "tikz"]) == 0
    assert "\\begin{tikzpicture}" in capsys.readouterr().out
    # --set reaches the picture
    assert main(["draw", prog, "--set", "kv_blocks=10", "--format", "dot"]) == 0
    assert "cap 160, block 16" in capsys.readouterr().out


def test_cli_draw_from_ir_json(tmp_path, capsys):
    prog = str(ROOT / "examples" / "vllm_single_turn.sq")
    assert main(["ir", prog]) == 0
    ir_file = tmp_path / "p.json"
    ir_file.write_text(capsys.readouterr().out)
    assert main(["draw", str(ir_file), "--format", "dot"]) == 0
    from_ir = capsys.readouterr().out
    assert main(["draw", prog, "--format", "dot"]) == 0
    from_text = capsys.readouterr().out
    # IR keeps no program text: its step cost is the `def`'s expansion, the
    # program's is written as the program writes it; all else is the same
    assert "cost cost_step(compute_eff, memory_eff," in from_text
    assert "cost cost_step(" not in from_ir and "cost max(" in from_ir

    def no_cost(text):
        return re.sub(r'(\\lcost [^"]*"|, tooltip="cost [^"]*")', "", text)
    assert no_cost(from_text.replace(prog, "")) == no_cost(from_ir.replace(str(ir_file), ""))


def test_cli_draw_errors(tmp_path):
    bad = tmp_path / "bad.sq"
    bad.write_text("pool kv { cap 1 }\n")
    env = dict(os.environ, PYTHONPATH=SRC)
    r = subprocess.run([sys.executable, "-m", "serq", "draw", str(bad)], capture_output=True,
                       text=True, env=env)
    assert r.returncode == 1 and "bad.sq:1:17: error:" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "serq", "draw", str(bad), "--format", "png"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "invalid choice" in r.stderr
    r = subprocess.run([sys.executable, "-m", "serq", "draw",
                        str(ROOT / "examples" / "chat.sq"), "-o", str(tmp_path / "no" / "x.svg")],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 5 and "cannot write" in r.stderr
