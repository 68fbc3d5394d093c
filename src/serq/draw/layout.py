"""Where everything goes: a ``Picture`` to a list of shapes with coordinates.

A layered layout, no Graphviz needed.  Three layers, top to bottom: the pool
families, the request path, the stage families (a family is one box, drawn
as a stack).  The path runs left to right and wraps into rows of at most
ROW_MAX points, at any depth: a branch or fork stacks its lanes under the
path's line and joins them again, a loop frames its body, and a lane or a
body too long for its room wraps inside it.  Each pool and stage is placed
under (over) the steps that use it, pushed right to avoid overlap and onto a
new row past ROW_MAX.  A line goes from each step to each resource it uses
when there are few and all go straight out of the path; otherwise each
resource has one line, from its nearest use through a gap between the
path's boxes, labelled with its count of uses.  The shapes (``Box``,
``Label``, ``Line``, ``Frame``) are plain data; ``svg`` and ``tikz`` only
translate them.  Coordinates are points, y growing downwards.
"""
import math
from dataclasses import dataclass, field
from typing import Dict, List, Tuple

from .model import Picture, Seq, Split, Step, steps

LABEL_CHAR_W = 6.4  # width of a character of the 10.5 pt labels
LANE_CHAR_W = 5.9   # and of the 9.5 pt names of a branch's lanes
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
FRAME_PAD = 24.0
STACK = 4.0       # offset of the outlines behind a family's box
MAX_USE_LINES = 24  # more (or a path in several rows): one line a pool or stage
ROW_MAX = 1480.0  # the path and the rows of pools and stages wrap at this width
MIN_ROW = 320.0   # a branch lane or loop body is given at least this width
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
    """Room for the diamond, its label (written above it, from its left) and
    the first lane's name (`then`, `forked`, right of the diamond)."""
    first = "then" if node.kind == "branch" else "forked"
    return max(DIAMOND, len(_split_label(node)) * LABEL_CHAR_W + 4 - GAP / 2,
               DIAMOND + 9 + len(first) * LANE_CHAR_W - GAP)


# A measured node: (width, extent above its axis, extent below it, where its
# path leaves it below the axis: 0 unless a sequence wrapped into rows).
Size = Tuple[float, float, float, float]


class _Measure(object):
    """Sizes of nodes laid out within a width; a sequence wider than its
    width wraps into rows (the path goes on at the left of the next row), so
    a long branch lane or loop body wraps inside its branch or frame."""

    def __init__(self):
        self.sizes: Dict[Tuple[int, float], Size] = {}
        self.rows: Dict[Tuple[int, float], List[List]] = {}

    def lane_limit(self, node: Split, limit: float) -> float:
        return max(MIN_ROW, limit - _split_head(node) - 2 * GAP - MERGE)

    def body_limit(self, limit: float) -> float:
        return max(MIN_ROW, limit - 2 * FRAME_PAD - GAP)

    def size(self, node, limit: float) -> Size:
        key = (id(node), limit)
        got = self.sizes.get(key)
        if got is not None:
            return got
        t = type(node)
        if t is Step:
            w, h = text_size(node.lines)
            r = (w, h / 2, h / 2, 0.0)
        elif t is Seq:
            r = self._seq(node, limit, key)
        elif t is Split:
            inner = self.lane_limit(node, limit)
            ms = [self.size(x, inner) for x in node.lanes]
            width = max([m[0] for m in ms] + [40.0])
            up = max(ms[0][1], DIAMOND / 2 + 18)
            down = ms[0][2]
            for m in ms[1:]:
                down += LANE_GAP + m[1] + m[2]
            r = (_split_head(node) + GAP + width + GAP + MERGE, up, max(down, DIAMOND / 2), 0.0)
        else:  # Repeat
            w, up, down, exit_dy = self.size(node.body, self.body_limit(limit))
            r = (max(w, 40.0) + 2 * FRAME_PAD + GAP, up + FRAME_PAD + 14,
                 down + FRAME_PAD + 14, exit_dy)
        self.sizes[key] = r
        return r

    def _seq(self, node: Seq, limit: float, key) -> Size:
        if not node.items:
            self.rows[key] = []
            return (0.0, 8.0, 8.0, 0.0)
        ms = [self.size(x, limit) for x in node.items]
        total = sum(m[0] for m in ms) + GAP * (len(ms) - 1)
        rows: List[List[int]] = []
        if total <= limit:
            rows = [list(range(len(ms)))]
        else:
            # rows of about equal width, as few as keep each within the limit;
            # a small last item (`done`) never sits alone
            target = min(limit, total / math.ceil(total / limit) * 1.05)
            cur: List[int] = []
            width = 0.0
            for k, m in enumerate(ms):
                small_last = k == len(ms) - 1 and m[0] < 200 and width + GAP + m[0] <= limit
                if cur and width + GAP + m[0] > target and not small_last:
                    rows.append(cur)
                    cur, width = [], 0.0
                width += (GAP if cur else 0.0) + m[0]
                cur.append(k)
            rows.append(cur)
        self.rows[key] = [[node.items[k] for k in row] for row in rows]
        widths, ups, downs = [], [], []
        for row in rows:
            widths.append(sum(ms[k][0] for k in row) + GAP * (len(row) - 1))
            ups.append(max(ms[k][1] for k in row))
            downs.append(max(ms[k][2] for k in row))
        down = downs[0]
        exit_dy = ms[rows[0][-1]][3]
        for i in range(1, len(rows)):
            down += WRAP_GAP + ups[i]
            exit_dy = down + ms[rows[i][-1]][3]
            down += downs[i]
        return (max(widths), ups[0], down, exit_dy)


class _Placer(object):
    def __init__(self, out: Layout):
        self.out = out
        self.m = _Measure()
        self.step_box: Dict[int, Box] = {}

    def link(self, a: Tuple[float, float], b: Tuple[float, float]) -> None:
        """The path from ``a`` to ``b`` (``b`` right of ``a``, maybe higher)."""
        if abs(a[1] - b[1]) < 0.5:
            self.out.lines.append(Line([a, (b[0], a[1])]))
        else:
            mid = min(a[0] + GAP / 2, (a[0] + b[0]) / 2)
            self.out.lines.append(Line([a, (mid, a[1]), (mid, b[1]), b]))

    def place(self, node, x: float, axis: float, limit: float) -> Tuple[float, float, float]:
        """Place ``node`` with its left end at ``x`` on the line ``axis``;
        return where the path enters it (x on the axis) and leaves it (x, y)."""
        t = type(node)
        w, up, down, exit_dy = self.m.size(node, limit)
        if t is Step:
            _, h = text_size(node.lines)
            shape = "round" if node.kind in ("start", "done") else "rect"
            b = Box(x, axis - h / 2, w, h, node.lines, STROKE.get(node.kind, "#424242"),
                    FILL.get(node.kind, "#ffffff"), shape, node.kind not in ("done",),
                    "step:%d" % node.id, node.tip)
            self.out.boxes.append(b)
            self.step_box[node.id] = b
            return x, x + w, axis
        if t is Seq:
            return self._seq(node, x, axis, limit)
        if t is Split:
            return self._split(node, x, axis, limit, w)
        return self._repeat(node, x, axis, limit, w)

    def _seq(self, node: Seq, x: float, axis: float, limit: float):
        if not node.items:
            return x, x, axis
        rows = self.m.rows[(id(node), limit)]
        first = None
        prev: Tuple[float, float] = (x, axis)
        row_axis = axis
        prev_down = 0.0
        for i, row in enumerate(rows):
            if i:
                row_axis += prev_down + WRAP_GAP + max(self.m.size(it, limit)[1] for it in row)
            cx = x
            for j, item in enumerate(row):
                a, b, by = self.place(item, cx, row_axis, limit)
                if first is None:
                    first = a
                elif j == 0:
                    # from the end of the row above, down and back to the left
                    turn = row_axis - max(self.m.size(it, limit)[1] for it in row) - WRAP_GAP / 2
                    self.out.lines.append(Line([prev, (prev[0] + 14, prev[1]),
                                                (prev[0] + 14, turn), (x - 12, turn),
                                                (x - 12, row_axis), (a, row_axis)]))
                else:
                    self.link(prev, (a, row_axis))
                prev = (b, by)
                cx += self.m.size(item, limit)[0] + GAP
            prev_down = max(self.m.size(it, limit)[2] for it in row)
        return first, prev[0], prev[1]

    def _split(self, node: Split, x: float, axis: float, limit: float, w: float):
        out = self.out
        out.boxes.append(Box(x, axis - DIAMOND / 2, DIAMOND, DIAMOND, [], STROKE["split"],
                             "#fafafa", "diamond", False))
        out.labels.append(Label(x, axis - DIAMOND / 2 - 5, _split_label(node), "#616161", 10.5,
                                "start", italic=True))
        head = _split_head(node)
        mx = x + w - MERGE
        out.boxes.append(Box(mx, axis - MERGE / 2, MERGE, MERGE, [], STROKE["split"],
                             "#616161", "circle", False))
        inner = self.m.lane_limit(node, limit)
        names = ("then", "else") if node.kind == "branch" else ("forked", "goes on")
        ms = [self.m.size(ln, inner) for ln in node.lanes]
        lane_axis = axis
        for i, lane in enumerate(node.lanes):
            if i > 0:
                lane_axis += ms[i - 1][2] + LANE_GAP + ms[i][1]
            sx = x + DIAMOND / 2 if i else x + DIAMOND
            sy = axis + DIAMOND / 2 if i else axis
            into = (mx + MERGE / 2, axis + MERGE / 2)
            if lane.items:
                a, b, by = self.place(lane, x + head + GAP, lane_axis, inner)
                out.lines.append(Line([(sx, sy), (sx, lane_axis), (a, lane_axis)]
                                      if i else [(sx, sy), (a, lane_axis)]))
                if i == 0 and abs(by - axis) < 0.5:
                    out.lines.append(Line([(b, by), (mx, axis)]))
                else:
                    out.lines.append(Line([(b, by), (into[0], by), into]))
            else:
                pts = [(sx, sy), (sx, lane_axis), (into[0], lane_axis), into] if i else \
                    [(sx, sy), (mx, axis)]
                out.lines.append(Line(pts))
            out.labels.append(Label(sx + 5, lane_axis - 4, names[min(i, 1)], "#757575", 9.5,
                                    italic=True))
        return x, mx + MERGE, axis

    def _repeat(self, node, x: float, axis: float, limit: float, w: float):
        """A frame around the body, a line back from its end to its start."""
        inner = self.m.body_limit(limit)
        bw, bup, bdown, _ = self.m.size(node.body, inner)
        fx = x + GAP / 2
        fy = axis - bup - FRAME_PAD - 14
        fw = w - GAP
        fh = bup + bdown + 2 * FRAME_PAD + 28
        self.out.frames.append(Frame(fx, fy, fw, fh))
        self.out.labels.append(Label(fx + 6, fy + 12, node.label, "#616161", 10.5, italic=True))
        if node.body.items:
            a, b, by = self.place(node.body, fx + FRAME_PAD, axis, inner)
        else:
            a = b = fx + FRAME_PAD
            by = axis
        self.out.lines.append(Line([(x, axis), (a, axis)]))
        back_y = axis + bdown + FRAME_PAD
        left = fx + 6  # inside the frame, left of where a wrapped row comes back
        self.out.lines.append(Line([(b, by), (b + 6, by), (b + 6, back_y), (left, back_y),
                                    (left, axis), (a, axis)], "#757575", True))
        self.out.lines.append(Line([(b, by), (x + w, by)], arrow=False))
        return x, x + w, by


# -------------------------------------------------------------- resources

def _uses(pic: Picture, step_box: Dict[int, Box]) -> List[Tuple[str, Box, str]]:
    """(resource key, the step's box, how) of every use, in path order."""
    out = []
    for s in steps(pic.path):
        b = step_box.get(s.id)
        if b is not None:
            for u in s.uses:
                out.append((u.resource, b, u.how))
    return out


def _nearest(kind: str, boxes: List[Box]) -> Box:
    """The step a bundled line goes to: the highest one for a pool (the pools
    are above the path), the lowest one for a stage; the first of those."""
    if kind == "pool":
        return min(boxes, key=lambda b: (round(b.y), b.x))
    return min(boxes, key=lambda b: (-round(b.y + b.h), b.x))


def _row(pic: Picture, kind: str, want: Dict[str, float], y: float,
         placed: Dict[str, Box], out: Layout) -> float:
    """Place one kind of resource in rows from ``y``, each as near the x it
    wants (the steps that use it) as the others allow (a new row when one
    would pass ROW_MAX); return their height."""
    res = [r for r in pic.resources if r.kind == kind]
    wanted = []
    for order, r in enumerate(res):
        x = want.get(r.key)
        if x is None:
            # one it is related to, else after everything
            for rel in pic.relations:
                other = rel.dst if rel.src == r.key else rel.src if rel.dst == r.key else None
                if other in placed:
                    x = placed[other].x + placed[other].w / 2
                    break
        wanted.append((x if x is not None else 1e9 + order, order, r))
    wanted.sort(key=lambda t: (t[0], t[1]))
    x_next = MARGIN
    row_y = y
    row_h = 0.0
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
        if x + w > MARGIN + ROW_MAX and x_next > MARGIN:
            # no room left on this row: the next one
            row_y += row_h + RES_GAP + STACK * 2
            x_next, row_h = MARGIN, 0.0
            x = max(x_next, min((want - w / 2) if want < 1e8 else x_next, MARGIN + ROW_MAX - w))
        b = Box(x, row_y, w, h, lines, STROKE[kind], FILL[kind], "rect", True, r.key, r.tip,
                r.count)
        out.boxes.append(b)
        placed[r.key] = b
        x_next = x + w + RES_GAP
        row_h = max(row_h, h)
    return row_y + row_h - y if wanted else 0.0


def _shift(out: Layout, start: Tuple[int, int, int, int], dy: float) -> None:
    """Move the shapes placed since ``start`` (counts of boxes, labels, lines
    and frames) down by ``dy``."""
    for b in out.boxes[start[0]:]:
        b.y += dy
    for lb in out.labels[start[1]:]:
        lb.y += dy
    for ln in out.lines[start[2]:]:
        ln.points = [(px, py + dy) for px, py in ln.points]
    for f in out.frames[start[3]:]:
        f.y += dy


def _hits(boxes: List[Box], x0: float, y0: float, x1: float, y1: float) -> bool:
    """Whether the segment (x0, y0)-(x1, y1) (level or upright) passes
    through one of ``boxes`` (with a small margin)."""
    lx, hx = min(x0, x1) - 3, max(x0, x1) + 3
    ly, hy = min(y0, y1) - 3, max(y0, y1) + 3
    for b in boxes:
        if b.x < hx and lx < b.x + b.w and b.y < hy and ly < b.y + b.h:
            return True
    return False


def _route(sb: Box, up: bool, edge: float, boxes: List[Box], right: float) -> List[Tuple[float, float]]:
    """From the middle of step ``sb``'s top (``up``) or bottom to the path's
    top or bottom edge ``edge``, through a channel between the path's boxes:
    straight when nothing is in the way, else out a little, across to the
    nearest free gap and on from there."""
    sx = sb.x + sb.w / 2
    y0 = sb.y if up else sb.y + sb.h
    others = [b for b in boxes if b is not sb]
    if not _hits(others, sx, y0, sx, edge):
        return [(sx, y0), (sx, edge)]
    xs = set()
    for b in others:
        xs.add(b.x - GAP / 2)
        xs.add(b.x + b.w + GAP / 2)
    xs = sorted((x for x in xs if MARGIN / 2 < x < right), key=lambda x: abs(x - sx))
    for step in (10.0, 18.0, 26.0):
        yh = y0 - step if up else y0 + step
        if _hits(others, sx, y0, sx, yh):
            break
        for cx in xs:
            if not _hits(others, sx, yh, cx, yh) and not _hits(others, cx, yh, cx, edge):
                return [(sx, y0), (sx, yh), (cx, yh), (cx, edge)]
    return [(sx, y0), (sx, edge)]


def _use_line(sb: Box, sx: float, rb: Box, ax: float, color: str, dashed: bool,
              width: float = 1.2) -> Line:
    if rb.key.startswith("pool:"):
        p0, p3 = (sx, sb.y), (ax, rb.y + rb.h)
    else:
        p0, p3 = (sx, sb.y + sb.h), (ax, rb.y - (STACK * 2 if rb.stack > 1 else 0))
    mid = (p0[1] + p3[1]) / 2
    return Line([p0, (p0[0], mid), (p3[0], mid), p3], color, dashed, True, True, width)


def layout(pic: Picture) -> Layout:
    out = Layout(0.0, 0.0)
    placer = _Placer(out)
    pw, up, down, _ = placer.m.size(pic.path, ROW_MAX)
    single_row = len(placer.m.rows[(id(pic.path), ROW_MAX)]) <= 1
    # the path first, its top at y = 0 (its steps' x place the pools above
    # and the stages below it), then moved down under the pools
    placer.place(pic.path, MARGIN, up, ROW_MAX)
    path_boxes = list(out.boxes)
    path_bottom = up + down
    uses = _uses(pic, placer.step_box)
    users: Dict[str, List[Box]] = {}
    for key, b, _ in uses:
        users.setdefault(key, []).append(b)
    # every use as a line when they are few and each goes straight from its
    # step out of the path; else one line a pool or stage, from its nearest
    # use through a channel between the path's boxes, labelled with the
    # count of its uses
    def clear(key: str, b: Box) -> bool:
        pool = key.startswith("pool:")
        x = b.x + b.w / 2
        y0, y1 = (b.y, 0.0) if pool else (b.y + b.h, path_bottom)
        return not _hits([o for o in path_boxes if o is not b], x, y0, x, y1)
    bundled = len(uses) > MAX_USE_LINES or not single_row or \
        not all(clear(key, b) for key, b, _ in uses)
    want: Dict[str, float] = {}
    routes: Dict[str, List[Tuple[float, float]]] = {}
    right = MARGIN + pw + GAP
    for key, boxes in users.items():
        if bundled:
            pool = key.startswith("pool:")
            sb = _nearest("pool" if pool else "stage", boxes)
            routes[key] = _route(sb, pool, 0.0 if pool else path_bottom, path_boxes, right)
            want[key] = routes[key][-1][0]
        else:
            want[key] = sum(b.x + b.w / 2 for b in boxes) / len(boxes)
    path_shapes = (out.boxes[:], out.labels[:], out.lines[:], out.frames[:])
    out.boxes, out.labels, out.lines, out.frames = [], [], [], []
    placed: Dict[str, Box] = {}
    pools_y = TITLE_H + MARGIN + STACK * 2
    pool_h = _row(pic, "pool", want, pools_y, placed, out)
    # pools on one row may differ in height: align their bottoms
    for ry in sorted({b.y for b in out.boxes}):
        same = [b for b in out.boxes if b.y == ry]
        bottom = max(b.y + b.h for b in same)
        for b in same:
            b.y = bottom - b.h
    top = pools_y + pool_h + (ROW_GAP if pool_h else 0) + 20
    mark = (len(out.boxes), len(out.labels), len(out.lines), len(out.frames))
    out.boxes += path_shapes[0]
    out.labels += path_shapes[1]
    out.lines += path_shapes[2]
    out.frames += path_shapes[3]
    _shift(out, mark, top)
    stages_y = top + path_bottom + ROW_GAP + STACK * 2
    stage_h = _row(pic, "stage", want, stages_y, placed, out)
    drawn = set()
    if not bundled:
        slots: Dict[str, List[Tuple[float, Box, str]]] = {}
        for key, sb, how in uses:
            if key in placed:
                slots.setdefault(key, []).append((sb.x + sb.w / 2, sb, how))
        for key, row in slots.items():
            rb = placed[key]
            row.sort(key=lambda t: (t[0], t[1].y))
            for i, (sx, sb, how) in enumerate(row):
                color, dashed = USE_STYLE.get(how, ("#9e9e9e", True))
                drawn.add(how)
                out.lines.append(_use_line(sb, sx, rb, rb.x + rb.w * (i + 1) / (len(row) + 1),
                                           color, dashed))
    # the lines that bend between the path and a row of resources, each at
    # its own height (left to right, top to bottom for the pools)
    bends: Dict[str, List[str]] = {"pool": [], "stage": []}
    ends: Dict[str, Tuple[float, float]] = {}
    for key, pts in sorted(routes.items(), key=lambda kv: kv[1][-1][0]):
        rb = placed.get(key)
        if rb is None:
            continue
        pool = key.startswith("pool:")
        ex = pts[-1][0]
        ax = min(max(ex, rb.x + 14), rb.x + rb.w - 14)
        end_y = rb.y + rb.h if pool else rb.y - (STACK * 2 if rb.stack > 1 else 0)
        ends[key] = (ax, end_y)
        if abs(ax - ex) > 0.5:
            bends["pool" if pool else "stage"].append(key)
    for key, pts in routes.items():
        if key not in ends:
            continue
        rb = placed[key]
        pool = key.startswith("pool:")
        kind = "pool" if pool else "stage"
        pts = [(px, py + top) for px, py in pts]
        ex, ey = pts[-1]
        ax, end_y = ends[key]
        if key in bends[kind]:
            order = bends[kind]
            k = order.index(key) if not pool else len(order) - 1 - order.index(key)
            mid = ey + (end_y - ey) * (k + 1) / (len(order) + 1)
            pts += [(ex, mid), (ax, mid)]
        pts.append((ax, end_y))
        drawn.add(kind + "s")
        out.lines.append(Line(pts, STROKE[kind], False, True, False, 1.6))
        n = len(users[key])
        ly = end_y + 13 if pool else end_y - 5
        out.labels.append(Label(ax + 5, ly, "%d use%s" % (n, "" if n == 1 else "s"),
                                STROKE[kind], 10, "start", italic=True))
    # spill relations between pools: an arc above the row
    for rel in pic.relations:
        if rel.label == "spill" and rel.src in placed and rel.dst in placed:
            a, b = placed[rel.src], placed[rel.dst]
            ax, bx = a.x + a.w / 2, b.x + b.w / 2
            arc = min(a.y, b.y) - 26
            out.lines.append(Line([(ax, a.y), (ax, arc), (bx, arc), (bx, b.y)],
                                  "#2e7d32", True, True, True, 1.2))
            out.labels.append(Label((ax + bx) / 2, arc + 4, "spill", "#2e7d32", 10, "middle",
                                    italic=True))
    # the title, the legend and the notes
    out.labels.append(Label(MARGIN, MARGIN + 4, pic.title, "#212121", 15, bold=True))
    right = max([b.x + b.w + (STACK * 2 if b.stack > 1 else 0) for b in out.boxes] +
                [MARGIN + pw])
    y = max([b.y + b.h for b in out.boxes] + [stages_y + stage_h]) + 30
    y = _legend(out, y, drawn)
    notes = list(pic.notes)
    if bundled and uses:
        notes.insert(0, "%d uses of pools and stages, drawn as one line a pool or stage (from "
                        "its nearest use); each step names the pool or stage it uses" % len(uses))
    for note in notes:
        out.labels.append(Label(MARGIN, y, note, "#424242", 11))
        y += 16
    out.width = max(right, MARGIN + 720) + MARGIN
    out.height = y + MARGIN
    return out


def _legend(out: Layout, y: float, drawn) -> float:
    """The legend of what the picture draws (no line kind that is not in it)."""
    x = MARGIN
    out.labels.append(Label(x, y, "legend", "#212121", 11.5, bold=True))
    y += 12
    items = [("box", "pool", "pool (a family: a stack, ×N)"),
             ("box", "stage", "stage (a family: a stack, ×N)"),
             ("box", "step", "request path step")]
    for kind, style, text in items:
        stroke = STROKE.get(style, "#424242")
        fill = FILL.get(style, "#ffffff")
        out.boxes.append(Box(x, y, 18, 12, [], stroke, fill, "rect", False))
        out.labels.append(Label(x + 24, y + 10, text, "#424242", 10.5))
        x += 24 + len(text) * LABEL_CHAR_W + 24
    x = MARGIN
    y += 22
    kinds = [(how, text) + USE_STYLE[how] for how, text in (
        ("hold", "holds"), ("release", "releases / caches"), ("grow", "grows"),
        ("run", "runs on"), ("transfer", "transfer lands in"), ("query", "reads"))]
    kinds += [("pools", "uses of a pool", STROKE["pool"], False),
              ("stages", "uses of a stage", STROKE["stage"], False)]
    for how, text, color, dashed in kinds:
        if how not in drawn:
            continue
        out.lines.append(Line([(x, y), (x + 30, y)], color, dashed, True, False, 1.4))
        out.labels.append(Label(x + 36, y + 4, text, "#424242", 10.5))
        x += 36 + len(text) * LABEL_CHAR_W + 24
    out.lines.append(Line([(x, y), (x + 30, y)], "#424242", False, True))
    out.labels.append(Label(x + 36, y + 4, "path", "#424242", 10.5))
    return y + 26
