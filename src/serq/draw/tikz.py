"""A ``Layout`` as a TikZ picture (``\\usepackage{tikz}``; put it in a
``figure``, or compile it alone with the ``standalone`` class)."""
from .layout import LINE_H, PAD_X, PAD_Y, STACK, Layout

_SPECIAL = {"\\": r"\textbackslash{}", "{": r"\{", "}": r"\}", "$": r"\$", "&": r"\&",
            "#": r"\#", "_": r"\_", "%": r"\%", "~": r"\textasciitilde{}",
            "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
            "|": r"\textbar{}", "…": r"\ldots{}", "×": r"$\times$"}


def escape(s: str) -> str:
    return "".join(_SPECIAL.get(ch, ch) for ch in s)


def _text(s: str) -> str:
    """A line of a box: leading spaces kept (TeX would drop them)."""
    stripped = s.lstrip(" ")
    return "\\ " * (len(s) - len(stripped)) + escape(stripped)


def _size(pt: float) -> str:
    return "\\fontsize{%s}{%s}\\selectfont" % (_n(pt), _n(pt + 2))


def _n(x: float) -> str:
    s = "%.1f" % x
    return s[:-2] if s.endswith(".0") else s


def _pt(x: float, y: float) -> str:
    return "(%s,%s)" % (_n(x), _n(-y))


def _color(c: str) -> str:
    return "c" + c.lstrip("#").upper()


def render(lay: Layout) -> str:
    colors = set()
    for b in lay.boxes:
        colors.update((b.stroke, b.fill))
    colors.update(ln.color for ln in lay.lines)
    colors.update(lb.color for lb in lay.labels)
    colors.update(f.color for f in lay.frames)
    out = ["% serq draw: needs \\usepackage{tikz} and \\usetikzlibrary{arrows.meta}; one unit is",
           "% 1pt, so scale the picture to a page with \\resizebox{\\linewidth}{!}{...}"]
    for c in sorted(colors):
        out.append("\\definecolor{%s}{HTML}{%s}" % (_color(c), c.lstrip("#").upper()))
    out.append("\\begin{tikzpicture}[x=1pt,y=1pt,font=\\ttfamily\\frenchspacing" + _size(12) + ","
               "every node/.style={inner sep=0pt}]")
    out.append("\\fill[white] %s rectangle %s;" % (_pt(0, 0), _pt(lay.width, lay.height)))
    for f in lay.frames:
        out.append("\\draw[%s,dashed,rounded corners=8pt] %s rectangle %s;" % (
            _color(f.color), _pt(f.x, f.y), _pt(f.x + f.w, f.y + f.h)))
    for ln in lay.lines:
        opts = [_color(ln.color), "line width=%spt" % _n(ln.width * 0.75)]
        if ln.dashed:
            opts.append("dashed")
        if ln.arrow:
            opts.append("-{Stealth[length=5pt]}")
        p = ln.points
        if ln.curve and len(p) == 4:
            path = "%s .. controls %s and %s .. %s" % tuple(_pt(*q) for q in p)
        else:
            path = " -- ".join(_pt(*q) for q in p)
        out.append("\\draw[%s] %s;" % (",".join(opts), path))
    for b in lay.boxes:
        style = "draw=%s,fill=%s,line width=1.1pt" % (_color(b.stroke), _color(b.fill))
        for k in ((2, 1) if b.stack > 1 else ()):
            d = STACK * k  # a family: the outlines of two more members behind
            out.append("\\draw[%s,line width=0.9pt] %s -- %s -- %s;" % (
                _color(b.stroke), _pt(b.x + d, b.y - d), _pt(b.x + b.w + d, b.y - d),
                _pt(b.x + b.w + d, b.y + b.h - d)))
        if b.shape == "diamond":
            cx, cy = b.x + b.w / 2, b.y + b.h / 2
            out.append("\\filldraw[%s] %s -- %s -- %s -- %s -- cycle;" % (
                style, _pt(cx, b.y), _pt(b.x + b.w, cy), _pt(cx, b.y + b.h), _pt(b.x, cy)))
        elif b.shape == "circle":
            out.append("\\filldraw[%s] %s circle (%spt);" % (
                style, _pt(b.x + b.w / 2, b.y + b.h / 2), _n(b.w / 2)))
        else:
            rc = ",rounded corners=%dpt" % (10 if b.shape == "round" else 2)
            out.append("\\filldraw[%s%s] %s rectangle %s;" % (
                style, rc, _pt(b.x, b.y), _pt(b.x + b.w, b.y + b.h)))
        for i, line in enumerate(b.lines):
            text = _text(line)
            if i == 0 and b.bold_first:
                text = "\\textbf{%s}" % text
            out.append("\\node[anchor=base west] at %s {%s};" % (
                _pt(b.x + PAD_X, b.y + PAD_Y + LINE_H * i + 11.5), text))
    anchors = {"start": "base west", "middle": "base", "end": "base east"}
    for lb in lay.labels:
        text = escape(lb.text)
        if lb.bold:
            text = "\\textbf{%s}" % text
        if lb.italic:
            text = "\\textit{%s}" % text
        out.append("\\node[anchor=%s,text=%s,font=\\ttfamily%s] at %s {%s};" % (
            anchors[lb.anchor], _color(lb.color), _size(lb.size), _pt(lb.x, lb.y), text))
    out.append("\\end{tikzpicture}")
    return "\n".join(out) + "\n"
