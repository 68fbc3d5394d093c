"""Where everything goes: a ``Picture`` to a list of shapes with coordinates.

A simple layered layout, no Graphviz needed.  Three layers, top to bottom:
the pool families, the request path, the stage families.  The path runs
left to right; a branch or fork stacks its lanes under the path's line and
joins them again, a loop frames its body.  Each pool and stage is placed at
the mean position of the steps that use it (then pushed right to avoid
overlap), so the lines from steps to resources stay short.  The shapes
(``Box``, ``Label``, ``Line``, ``Frame``) are plain data; ``svg`` and
``tikz`` only translate them.  Coordinates are points, y growing downwards.
"""
import math
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from .model import Picture, Seq, Split, Step, steps

LABEL_CHAR_W = 6.4  # width of a character of the 10.5 pt labels
CHAR_W = 7.3      # width of a character of the 12 pt monospace font
LINE_H = 15.0
PAD_X = 9.0
PAD_Y = 6.0
GAP = 34.0        # between path items
LANE_GAP = 44.0
ROW_GAP = 70.0    # between the layers
RES_GAP = 26.0
MARGIN = 24.0
TITLE_H = 34.0
DIAMOND = 22.0
MERGE = 10.0
FRAME_PAD = 12.0
STACK = 4.0       # offset of the outlines behind a family's box
MAX_USE_LINES = 24  # more (or a path in several rows): no lines to resources
ROW_MAX = 1800.0  # the path wraps into rows this wide
WRAP_GAP = 56.0

# colours: (stroke, fill) by step or resource kind
STROKE = {"pool": "#2e7d32", "stage": "#1565c0", "hold": "#2e7d32", "release": "#2e7d32",
          "grow": "#2e7d32", "drop": "#2e7d32", "run": "#1565c0", "load": "#6a1b9a",
          "choose": "#b26a00", "start": "#424242", "done": "#424242", "turn": "#424242",
          "end": "#c62828", "join": "#424242", "split": "#616161"}
FILL = {"pool": "#e8f5e9", "stage": "#e3f2fd", "start": "#f5f5f5", "done": "#f5f5f5"}
# lines from a step to a resource, by how it is used: (colour, dashed)
USE_STYLE = {"hold": ("#2e7d32", False), "release": ("#2e7d32", True),
             "grow": ("#66bb6a", True), "run": ("#1565c0", False),
             "transfer": ("#6a1b9a", False), "query": ("#9e9e9e", True)}


@dataclass
class Box:
    x: float
    y: float
    w: float
    h: float
    lines: List[str]
    stroke: str
    fill: str = "#ffffff"
    shape: str = "rect"       # rect | round | diamond | circle
    bold_first: bool = True
    key: str = ""             # a resource key or "step:ID"
    tip: str = ""             # a tooltip: the whole text of lines cut short
    stack: int = 1            # members of a family (drawn as a stack when > 1)


@dataclass
class Label:
    x: float
    y: float
    text: str
    color: str = "#424242"
    size: float = 11.0
    anchor: str = "start"     # start | middle | end
    bold: bool = False
    italic: bool = False


@dataclass
class Line:
    points: List[Tuple[float, float]]
    color: str = "#424242"
    dashed: bool = False
    arrow: bool = True
    curve: bool = False       # points are start, control, control, end
    width: float = 1.4


@dataclass
class Frame:
    x: float
    y: float
    w: float
    h: float
    color: str = "#9e9e9e"


@dataclass
class Layout:
    width: float
    height: float
    boxes: List[Box] = field(default_factory=list)
    labels: List[Label] = field(default_factory=list)
    lines: List[Line] = field(default_factory=list)
    frames: List[Frame] = field(default_factory=list)


def text_size(lines: List[str]) -> Tuple[float, float]:
    w = max([len(s) for s in lines] + [1]) * CHAR_W + 2 * PAD_X
    return w, len(lines) * LINE_H + 2 * PAD_Y


# -------------------------------------------------------------- the path

def _split_label(node: Split) -> str:
    return ("if " if node.kind == "branch" else "") + node.label


def _split_head(node: Split) -> float:
    """Room for the diamond and its label (written above it, from its left)."""
    return max(DIAMOND, len(_split_label(node)) * LABEL_CHAR_W + 4 - GAP / 2)


def _measure(node, memo: Dict[int, Tuple[float, float, float]]):
    """(width, extent above the axis, extent below it)."""
    got = memo.get(id(node))
    if got is not None:
        return got
    t = type(node)
    if t is Step:
        w, h = text_size(node.lines)
        r = (w, h / 2, h / 2)
    elif t is Seq:
        if not node.items:
            r = (0.0, 8.0, 8.0)
        else:
            ms = [_measure(x, memo) for x in node.items]
            r = (sum(m[0] for m in ms) + GAP * (len(ms) - 1),
                 max(m[1] for m in ms), max(m[2] for m in ms))
    elif t is Split:
        ms = [_measure(x, memo) for x in node.lanes]
        inner = max([m[0] for m in ms] + [40.0])
        up = max(ms[0][1], DIAMOND / 2 + 18)
        down = ms[0][2]
        for m in ms[1:]:
            down += LANE_GAP + m[1] + m[2]
        r = (_split_head(node) + GAP + inner + GAP + MERGE, up, max(down, DIAMOND / 2))
    else:  # Repeat
        w, up, down = _measure(node.body, memo)
        r = (max(w, 40.0) + 2 * FRAME_PAD + 2 * GAP / 2, up + FRAME_PAD + 14, down + FRAME_PAD + 14)
    memo[id(node)] = r
    return r


class _Placer(object):
    def __init__(self, out: Layout):
        self.out = out
        self.memo: Dict[int, Tuple[float, float, float]] = {}
        self.step_box: Dict[int, Box] = {}

    def place(self, node, x: float, axis: float) -> Tuple[float, float]:
        """Place ``node`` with its left end at ``x`` on the line ``axis``;
        return the (entry x, exit x) the path line attaches to."""
        t = type(node)
        w, up, down = _measure(node, self.memo)
        if t is Step:
            _, h = text_size(node.lines)
            shape = "round" if node.kind in ("start", "done") else "rect"
            b = Box(x, axis - h / 2, w, h, node.lines, STROKE.get(node.kind, "#424242"),
                    FILL.get(node.kind, "#ffffff"), shape, node.kind not in ("done",),
                    "step:%d" % node.id, node.tip)
            self.out.boxes.append(b)
            self.step_box[node.id] = b
            return x, x + w
        if t is Seq:
            if not node.items:
                return x, x
            cx = x
            prev_end = None
            first = None
            for item in node.items:
                iw = _measure(item, self.memo)[0]
                a, b = self.place(item, cx, axis)
                if prev_end is not None:
                    self.out.lines.append(Line([(prev_end, axis), (a, axis)]))
                else:
                    first = a
                prev_end = b
                cx += iw + GAP
            return first, prev_end
        if t is Split:
            dx = x
            self.out.boxes.append(Box(dx, axis - DIAMOND / 2, DIAMOND, DIAMOND, [],
                                      STROKE["split"], "#fafafa", "diamond", False))
            self.out.labels.append(Label(dx, axis - DIAMOND / 2 - 5, _split_label(node),
                                         "#616161", 10.5, "start", italic=True))
            head = _split_head(node)
            mx = x + w - MERGE
            self.out.boxes.append(Box(mx, axis - MERGE / 2, MERGE, MERGE, [], STROKE["split"],
                                      "#616161", "circle", False))
            lane_axis = axis
            names = ("then", "else") if node.kind == "branch" else ("forked", "goes on")
            ms = [_measure(ln, self.memo) for ln in node.lanes]
            for i, lane in enumerate(node.lanes):
                if i > 0:
                    lane_axis += ms[i - 1][2] + LANE_GAP + ms[i][1]
                a, b = self.place(lane, dx + head + GAP, lane_axis)
                sx = dx + DIAMOND / 2 if i else dx + DIAMOND
                sy = axis + DIAMOND / 2 if i else axis
                if lane.items:
                    self.out.lines.append(Line([(sx, sy), (sx, lane_axis), (a, lane_axis)]
                                               if i else [(sx, sy), (a, lane_axis)]))
                    self.out.lines.append(Line([(b, lane_axis), (mx + MERGE / 2, lane_axis),
                                                (mx + MERGE / 2, axis + MERGE / 2)]
                                               if i else [(b, lane_axis), (mx, axis)]))
                else:
                    pts = [(sx, sy), (sx, lane_axis), (mx + MERGE / 2, lane_axis),
                           (mx + MERGE / 2, axis + MERGE / 2)] if i else [(sx, sy), (mx, axis)]
                    self.out.lines.append(Line(pts))
                self.out.labels.append(Label(sx + 5, lane_axis - 4, names[min(i, 1)], "#757575",
                                             9.5, italic=True))
            return dx, mx + MERGE
        # Repeat: a frame around the body, a line back from its end to its start
        bw, bup, bdown = _measure(node.body, self.memo)
        fx = x + GAP / 2
        fy = axis - bup - FRAME_PAD - 14
        fw = w - GAP
        fh = bup + bdown + 2 * FRAME_PAD + 28
        self.out.frames.append(Frame(fx, fy, fw, fh))
        self.out.labels.append(Label(fx + 6, fy + 12, node.label, "#616161", 10.5, italic=True))
        a, b = self.place(node.body, fx + FRAME_PAD, axis)
        if not node.body.items:
            a = b = fx + FRAME_PAD
        self.out.lines.append(Line([(x, axis), (a, axis)]))
        back_y = axis + bdown + FRAME_PAD
        self.out.lines.append(Line([(b, axis), (b + 6, axis), (b + 6, back_y), (a - 6, back_y),
                                    (a - 6, axis), (a, axis)], "#757575", True))
        self.out.lines.append(Line([(b, axis), (x + w, axis)], arrow=False))
        return x, x + w


# -------------------------------------------------------------- resources

def _row(pic: Picture, kind: str, step_box: Dict[int, Box], y: float,
         placed: Dict[str, Box], out: Layout) -> float:
    """Place one kind of resource in a row at ``y``; return the row's height."""
    users: Dict[str, List[float]] = {}
    for s in steps(pic.path):
        b = step_box.get(s.id)
        for u in s.uses:
            if b is not None:
                users.setdefault(u.resource, []).append(b.x + b.w / 2)
    res = [r for r in pic.resources if r.kind == kind]
    wanted = []
    for order, r in enumerate(res):
        xs = users.get(r.key)
        if not xs:
            # one it is related to, else after everything
            for rel in pic.relations:
                other = rel.dst if rel.src == r.key else rel.src if rel.dst == r.key else None
                if other in placed:
                    xs = [placed[other].x + placed[other].w / 2]
                    break
        wanted.append((sum(xs) / len(xs) if xs else 1e9 + order, order, r))
    wanted.sort(key=lambda t: (t[0], t[1]))
    x_next = MARGIN
    height = 0.0
    for want, _, r in wanted:
        title = r.name + (" ×%d" % r.count if r.count > 1 else "")
        lines = [title] + r.detail
        for rel in pic.relations:
            if rel.src == r.key and rel.label in ("admit via", "memory", "spill via"):
                target = next((q for q in pic.resources if q.key == rel.dst), None)
                if target is not None:
                    lines.append("%s %s" % (rel.label, target.name))
        w, h = text_size(lines)
        x = max(x_next, (want - w / 2) if want < 1e8 else x_next)
        b = Box(x, y, w, h, lines, STROKE[kind], FILL[kind], "rect", True, r.key, r.tip, r.count)
        out.boxes.append(b)
        placed[r.key] = b
        x_next = x + w + RES_GAP
        height = max(height, h)
    return height


def _wrap(path: Seq, memo) -> List[Seq]:
    """The path's top-level items in rows of about equal width, as few as
    keep each under ROW_MAX (an item wider than that gets a row of its own);
    a small last item (`done`) never sits alone."""
    widths = [_measure(item, memo)[0] for item in path.items]
    total = sum(widths) + GAP * max(0, len(widths) - 1)
    if total <= ROW_MAX:
        return [path]
    target = total / math.ceil(total / ROW_MAX) * 1.05
    rows: List[Seq] = []
    cur: List = []
    width = 0.0
    for k, (item, w) in enumerate(zip(path.items, widths)):
        small_last = k == len(widths) - 1 and w < 200
        if cur and width + GAP + w > target and not small_last:
            rows.append(Seq(cur))
            cur, width = [], 0.0
        width += (GAP if cur else 0.0) + w
        cur.append(item)
    rows.append(Seq(cur))
    return rows


def layout(pic: Picture) -> Layout:
    out = Layout(0.0, 0.0)
    # measure the rows first: the pools' height fixes where the path goes
    pool_h = max([text_size([r.name] + r.detail + ["x"] * sum(
        1 for rel in pic.relations if rel.src == r.key and rel.label != "spill"))[1]
        for r in pic.resources if r.kind == "pool"] + [0.0])
    pools_y = TITLE_H + MARGIN
    placer = _Placer(out)
    rows = _wrap(pic.path, placer.memo)
    pw = max(_measure(r, placer.memo)[0] for r in rows)
    axis = pools_y + pool_h + (ROW_GAP if pool_h else 0) + 20
    prev = None
    for r in rows:
        _, up, down = _measure(r, placer.memo)
        axis += up
        a, b = placer.place(r, MARGIN, axis)
        if prev is not None:
            # from the end of the row above, down and back to the left
            pb, pa, pdown = prev
            turn_y = pa + pdown + WRAP_GAP / 2
            out.lines.append(Line([(pb, pa), (pb + 14, pa), (pb + 14, turn_y),
                                   (MARGIN - 12, turn_y), (MARGIN - 12, axis), (a, axis)]))
        prev = (b, axis, down)
        axis += down + WRAP_GAP
    stages_y = axis - WRAP_GAP + ROW_GAP
    placed: Dict[str, Box] = {}
    _row(pic, "pool", placer.step_box, pools_y, placed, out)
    # pools sit on a row whose boxes may differ in height: align their bottoms
    pool_boxes = [b for b in out.boxes if b.key.startswith("pool:")]
    bottom = max([b.y + b.h for b in pool_boxes] + [pools_y])
    for b in pool_boxes:
        b.y = bottom - b.h
    stage_h = _row(pic, "stage", placer.step_box, stages_y, placed, out)
    # lines from each step to the resources it uses
    slots: Dict[str, List[Tuple[float, str, str]]] = {}
    for s in steps(pic.path):
        sb = placer.step_box.get(s.id)
        for u in s.uses:
            if sb is not None and u.resource in placed:
                slots.setdefault(u.resource, []).append((sb.x + sb.w / 2, "step:%d" % s.id, u.how))
    notes = list(pic.notes)
    n_uses = sum(len(u) for u in slots.values())
    if len(rows) > 1 or n_uses > MAX_USE_LINES:
        # too many lines to follow: each step names its pool or stage instead
        slots = {}
        notes.insert(0, "lines from the path to pools and stages left out (%d uses); each "
                         "step names the pool or stage it uses" % n_uses)
    for key, uses in slots.items():
        rb = placed[key]
        uses.sort()
        n = len(uses)
        for i, (sx, sid, how) in enumerate(uses):
            sb = next(b for b in out.boxes if b.key == sid)
            ax = rb.x + rb.w * (i + 1) / (n + 1)
            color, dashed = USE_STYLE.get(how, ("#9e9e9e", True))
            if key.startswith("pool:"):
                p0 = (sx, sb.y)
                p3 = (ax, rb.y + rb.h)
            else:
                p0 = (sx, sb.y + sb.h)
                p3 = (ax, rb.y)
            mid = (p0[1] + p3[1]) / 2
            out.lines.append(Line([p0, (p0[0], mid), (p3[0], mid), p3], color, dashed,
                                  True, True, 1.2))
    # spill relations between pools: an arc above the row
    for rel in pic.relations:
        if rel.label == "spill" and rel.src in placed and rel.dst in placed:
            a, b = placed[rel.src], placed[rel.dst]
            ax, bx = a.x + a.w / 2, b.x + b.w / 2
            top = min(a.y, b.y) - 26
            out.lines.append(Line([(ax, a.y), (ax, top), (bx, top), (bx, b.y)],
                                  "#2e7d32", True, True, True, 1.2))
            out.labels.append(Label((ax + bx) / 2, top + 4, "spill", "#2e7d32", 10, "middle",
                                    italic=True))
    # the title, the legend and the notes
    out.labels.append(Label(MARGIN, MARGIN + 4, pic.title, "#212121", 15, bold=True))
    right = max([b.x + b.w for b in out.boxes] + [MARGIN + pw])
    y = max([b.y + b.h for b in out.boxes] + [stages_y + stage_h]) + 30
    y = _legend(out, y)
    for note in notes:
        out.labels.append(Label(MARGIN, y, note, "#424242", 11))
        y += 16
    out.width = max(right, MARGIN + 720) + MARGIN
    out.height = y + MARGIN
    return out


def _legend(out: Layout, y: float) -> float:
    x = MARGIN
    out.labels.append(Label(x, y, "legend", "#212121", 11.5, bold=True))
    y += 12
    items = [("box", "pool", "pool (family ×N)"), ("box", "stage", "stage (family ×N)"),
             ("box", "step", "request path step")]
    for kind, style, text in items:
        stroke = STROKE.get(style, "#424242")
        fill = FILL.get(style, "#ffffff")
        out.boxes.append(Box(x, y, 18, 12, [], stroke, fill, "rect", False))
        out.labels.append(Label(x + 24, y + 10, text, "#424242", 10.5))
        x += 24 + len(text) * 6.4 + 24
    x = MARGIN
    y += 22
    for how, text in (("hold", "holds"), ("release", "releases / caches"), ("grow", "grows"),
                      ("run", "runs on"), ("transfer", "transfer lands in")):
        color, dashed = USE_STYLE[how]
        out.lines.append(Line([(x, y), (x + 30, y)], color, dashed, True, False, 1.4))
        out.labels.append(Label(x + 36, y + 4, text, "#424242", 10.5))
        x += 36 + len(text) * 6.4 + 24
    out.lines.append(Line([(x, y), (x + 30, y)], "#424242", False, True))
    out.labels.append(Label(x + 36, y + 4, "path", "#424242", 10.5))
    return y + 26
