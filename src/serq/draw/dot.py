"""A ``Picture`` as Graphviz DOT text (``dot -Tsvg``): Graphviz lays it out."""
from typing import List

from .model import Picture, Seq, Split, Step
from .layout import FILL, STROKE, USE_STYLE


def _esc(s: str) -> str:
    return s.replace("\\", "\\\\").replace('"', '\\"')


def _q(s: str) -> str:
    return '"%s"' % _esc(s)


def _label(lines: List[str]) -> str:
    """Lines of a node's label, each left-aligned."""
    return '"%s\\l"' % "\\l".join(_esc(s) for s in lines)


class _Dot(object):
    def __init__(self):
        self.out: List[str] = []
        self.n = 0
        self.lane_label = None

    def point(self, shape: str, label: str = "") -> str:
        self.n += 1
        name = "x%d" % self.n
        self.out.append('  %s [shape=%s, label=%s, width=0.25, height=0.25, fixedsize=%s, '
                        'style=filled, fillcolor="#fafafa", color="#616161"];'
                        % (name, shape, _q(label), "false" if label else "true"))
        return name

    def seq(self, seq: Seq, prev: str) -> str:
        """Draw ``seq`` after node ``prev``; return its last node."""
        for item in seq.items:
            prev = self.node(item, prev)
        return prev

    def node(self, item, prev: str) -> str:
        t = type(item)
        if t is Step:
            name = "s%d" % item.id
            shape = "box, style=\"rounded,filled\"" if item.kind in ("start", "done") else \
                "box, style=filled"
            self.out.append('  %s [shape=%s, fillcolor="%s", color="%s", label=%s];' % (
                name, shape, FILL.get(item.kind, "#ffffff"), STROKE.get(item.kind, "#424242"),
                _label(item.lines)))
            self.edge(prev, name)
            return name
        if t is Split:
            d = self.point("diamond", ("if " if item.kind == "branch" else "") + item.label)
            self.edge(prev, d)
            m = self.point("circle")
            names = ("then", "else") if item.kind == "branch" else ("forked", "goes on")
            for i, lane in enumerate(item.lanes):
                if lane.items:
                    self.lane_label = names[min(i, 1)]  # on the lane's first edge
                    end = self.seq(lane, d)
                    self.edge(end, m)
                else:
                    self.out.append("  %s -> %s [label=%s];" % (d, m, _q(names[min(i, 1)])))
            return m
        # Repeat
        a = self.point("box", "loop")
        self.edge(prev, a)
        end = self.seq(item.body, a)
        self.out.append('  %s -> %s [style=dashed, color="#757575", constraint=false, '
                        'label="again"];' % (end, a))
        return end

    def edge(self, a: str, b: str) -> None:
        if a:
            label = "" if self.lane_label is None else "label=%s" % _q(self.lane_label)
            self.out.append("  %s -> %s [%s];" % (a, b, label))
        self.lane_label = None


def render(pic: Picture) -> str:
    d = _Dot()
    d.out = ["digraph serq {", "  rankdir=LR;", "  labelloc=t;", "  label=%s;" % _q(pic.title),
             '  node [fontname="monospace", fontsize=10];',
             '  edge [fontname="monospace", fontsize=9];']
    for kind, title in (("pool", "pools"), ("stage", "stages")):
        members = [r for r in pic.resources if r.kind == kind]
        if not members:
            continue
        d.out.append("  subgraph cluster_%ss {" % kind)
        d.out.append("    label=%s; style=dashed; color=\"#bdbdbd\";" % _q(title))
        for r in members:
            lines = [r.name + (" x%d" % r.count if r.count > 1 else "")] + r.detail
            d.out.append('    %s [shape=box, style=filled, fillcolor="%s", color="%s", label=%s];'
                         % (_q(r.key), FILL[kind], STROKE[kind], _label(lines)))
        d.out.append("  }")
    d.seq(pic.path, "")
    from .model import steps
    for s in steps(pic.path):
        for u in s.uses:
            color, dashed = USE_STYLE.get(u.how, ("#9e9e9e", True))
            d.out.append('  s%d -> %s [color="%s", style=%s, label=%s, constraint=false];' % (
                s.id, _q(u.resource), color, "dashed" if dashed else "solid", _q(u.how)))
    for rel in pic.relations:
        d.out.append('  %s -> %s [color="#9e9e9e", style=dotted, label=%s];' % (
            _q(rel.src), _q(rel.dst), _q(rel.label)))
    if pic.notes:
        d.out.append('  notes [shape=note, fontsize=9, label=%s];' % _label(pic.notes))
    d.out.append("}")
    return "\n".join(d.out) + "\n"
