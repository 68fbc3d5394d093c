"""A ``Picture`` as Graphviz DOT text (``dot -Tsvg``): Graphviz lays it out.

The request path runs top to bottom in a cluster of its own (a branch's
lanes side by side), with the pools and the stages in two clusters beside
it, each just below the step that first uses it.  Lines to pools and
stages: every use (labelled with how) when there are few, else one line a
pool or stage from its first use, labelled with its count of uses.
"""
from typing import Dict, List

from .layout import FILL, STROKE, USE_STYLE

MAX_USE_EDGES = 10  # more uses: one edge a pool or stage (Graphviz crosses them)
from .model import Picture, Seq, Split, Step, steps

FONT = "DejaVu Sans Mono"


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
        if label:
            self.out.append('    %s [shape=%s, label=%s, style=filled, fillcolor="#fafafa", '
                            'color="#616161", fontsize=10, margin="0.04,0.02"];'
                            % (name, shape, _q(label)))
        else:
            self.out.append('    %s [shape=%s, label="", width=0.16, height=0.16, fixedsize=true, '
                            'style=filled, fillcolor="#616161", color="#616161"];' % (name, shape))
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
            style = "rounded,filled" if item.kind in ("start", "done") else "filled"
            tip = ', tooltip=%s' % _q(item.tip) if item.tip else ""
            self.out.append('    %s [shape=box, style="%s", fillcolor="%s", color="%s", '
                            'label=%s%s];' % (name, style, FILL.get(item.kind, "#ffffff"),
                                              STROKE.get(item.kind, "#424242"),
                                              _label(item.lines), tip))
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
                    self.out.append("    %s -> %s [xlabel=%s];" % (d, m, _q(names[min(i, 1)])))
            return m
        # Repeat
        a = self.point("box", "loop")
        self.edge(prev, a)
        end = self.seq(item.body, a)
        self.out.append('    %s -> %s [style=dashed, color="#757575", constraint=false, '
                        'xlabel="again"];' % (end, a))
        return end

    def edge(self, a: str, b: str) -> None:
        if a:
            label = "" if self.lane_label is None else " [xlabel=%s]" % _q(self.lane_label)
            self.out.append("    %s -> %s%s;" % (a, b, label))
        self.lane_label = None


def render(pic: Picture) -> str:
    d = _Dot()
    d.out = ["digraph serq {",
             "  rankdir=TB; newrank=true; nodesep=0.3; ranksep=0.35; forcelabels=true;",
             "  labelloc=t; labeljust=l; fontname=%s; fontsize=14; label=%s;"
             % (_q(FONT), _q(pic.title)),
             '  node [fontname=%s, fontsize=10, margin="0.1,0.05"];' % _q(FONT),
             '  edge [fontname=%s, fontsize=9, color="#424242", arrowsize=0.7];' % _q(FONT)]
    d.out.append("  subgraph cluster_path {")
    d.out.append('    label="request path"; style=dashed; color="#bdbdbd"; fontsize=11;')
    d.seq(pic.path, "")
    if pic.notes:
        last = "s%d" % steps(pic.path)[-1].id
        d.out.append('    notes [shape=note, fontsize=9, color="#9e9e9e", label=%s];'
                     % _label(pic.notes))
        d.out.append("    %s -> notes [style=invis];" % last)
    d.out.append("  }")
    for kind, title in (("pool", "pools"), ("stage", "stages")):
        members = [r for r in pic.resources if r.kind == kind]
        if not members:
            continue
        d.out.append("  subgraph cluster_%ss {" % kind)
        d.out.append('    label=%s; style=dashed; color="#bdbdbd"; fontsize=11;' % _q(title))
        for r in members:
            lines = [r.name + (" ×%d" % r.count if r.count > 1 else "")] + r.detail
            # a family: a stack of boxes (a doubled outline)
            periph = ", peripheries=2" if r.count > 1 else ""
            tip = ', tooltip=%s' % _q(r.tip) if r.tip else ""
            d.out.append('    %s [shape=box, style=filled, fillcolor="%s", color="%s", label=%s%s%s];'
                         % (_q(r.key), FILL[kind], STROKE[kind], _label(lines), periph, tip))
        d.out.append("  }")
    uses = [(s, u) for s in steps(pic.path) for u in s.uses]
    first: Dict[str, int] = {}
    count: Dict[str, int] = {}
    for s, u in uses:
        first.setdefault(u.resource, s.id)
        count[u.resource] = count.get(u.resource, 0) + 1
    if len(uses) <= MAX_USE_EDGES:
        for s, u in uses:
            color, dashed = USE_STYLE.get(u.how, ("#9e9e9e", True))
            # the first use ranks the resource (just below its step)
            ranks = "weight=0" if first[u.resource] == s.id else "constraint=false"
            d.out.append('  s%d -> %s [color="%s", style=%s, xlabel=%s, fontcolor="%s", %s];'
                         % (s.id, _q(u.resource), color, "dashed" if dashed else "solid",
                            _q(u.how), color, ranks))
            if first[u.resource] == s.id:
                first[u.resource] = -1
    else:
        for key, sid in first.items():
            color = STROKE["pool" if key.startswith("pool:") else "stage"]
            d.out.append('  s%d -> %s [color="%s", penwidth=1.4, xlabel="%d use%s", '
                         'fontcolor="%s", weight=0];'
                         % (sid, _q(key), color, count[key], "" if count[key] == 1 else "s",
                            color))
    for rel in pic.relations:
        d.out.append('  %s -> %s [color="#9e9e9e", style=dotted, xlabel=%s, constraint=false];' % (
            _q(rel.src), _q(rel.dst), _q(rel.label)))
    d.out.append("}")
    return "\n".join(d.out) + "\n"
