"""A ``Layout`` as a self-contained SVG document (no scripts, no external
fonts or images)."""
from typing import List

from .layout import LINE_H, PAD_X, PAD_Y, STACK, Box, Layout, Line

FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"


def _esc(s: str) -> str:
    return (s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def _n(x: float) -> str:
    s = "%.1f" % x
    return s[:-2] if s.endswith(".0") else s


def _marker_id(color: str) -> str:
    return "arrow-" + color.lstrip("#")


def _box(b: Box) -> List[str]:
    out = []
    if b.tip:
        out.append("<g><title>%s</title>" % _esc(b.tip))
    if b.stack > 1:
        # a family: the outlines of two more members behind the box
        for k in (2, 1):
            d = STACK * k
            out.append('<path d="M%s %s L%s %s L%s %s" fill="none" stroke="%s" '
                       'stroke-width="1.2"/>' % (
                           _n(b.x + d), _n(b.y - d), _n(b.x + b.w + d), _n(b.y - d),
                           _n(b.x + b.w + d), _n(b.y + b.h - d), b.stroke))
    common = 'fill="%s" stroke="%s" stroke-width="1.5"' % (b.fill, b.stroke)
    if b.shape == "diamond":
        cx, cy = b.x + b.w / 2, b.y + b.h / 2
        out.append('<polygon points="%s,%s %s,%s %s,%s %s,%s" %s/>' % (
            _n(cx), _n(b.y), _n(b.x + b.w), _n(cy), _n(cx), _n(b.y + b.h), _n(b.x), _n(cy), common))
    elif b.shape == "circle":
        out.append('<circle cx="%s" cy="%s" r="%s" %s/>' % (
            _n(b.x + b.w / 2), _n(b.y + b.h / 2), _n(b.w / 2), common))
    else:
        r = 12 if b.shape == "round" else 3
        out.append('<rect x="%s" y="%s" width="%s" height="%s" rx="%d" %s/>' % (
            _n(b.x), _n(b.y), _n(b.w), _n(b.h), r, common))
    for i, line in enumerate(b.lines):
        weight = ' font-weight="bold"' if i == 0 and b.bold_first else ""
        out.append('<text x="%s" y="%s"%s>%s</text>' % (
            _n(b.x + PAD_X), _n(b.y + PAD_Y + LINE_H * i + 11.5), weight, _esc(line)))
    if b.tip:
        out.append("</g>")
    return out


def _line(ln: Line) -> str:
    p = ln.points
    if ln.curve and len(p) == 4:
        d = "M%s %s C%s %s %s %s %s %s" % tuple(_n(v) for pt in p for v in pt)
    else:
        d = "M" + " L".join("%s %s" % (_n(x), _n(y)) for x, y in p)
    extra = ' stroke-dasharray="5 3"' if ln.dashed else ""
    if ln.arrow:
        extra += ' marker-end="url(#%s)"' % _marker_id(ln.color)
    return '<path d="%s" fill="none" stroke="%s" stroke-width="%s"%s/>' % (
        d, ln.color, _n(ln.width), extra)


def render(lay: Layout, title: str = "") -> str:
    colors = sorted({ln.color for ln in lay.lines if ln.arrow})
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" '
           'font-family="%s" font-size="12" xml:space="preserve">' % (_n(lay.width), _n(lay.height), _n(lay.width),
                                                 _n(lay.height), FONT),
           "<title>%s</title>" % _esc("serq draw: " + title if title else "serq draw"),
           "<defs>"]
    for c in colors:
        out.append('<marker id="%s" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" '
                   'markerHeight="7" orient="auto-start-reverse"><path d="M0 0 L10 5 L0 10 z" '
                   'fill="%s"/></marker>' % (_marker_id(c), c))
    out.append("</defs>")
    out.append('<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>'
               % (_n(lay.width), _n(lay.height)))
    for f in lay.frames:
        out.append('<rect x="%s" y="%s" width="%s" height="%s" rx="8" fill="none" stroke="%s" '
                   'stroke-dasharray="4 3"/>' % (_n(f.x), _n(f.y), _n(f.w), _n(f.h), f.color))
    for ln in lay.lines:
        out.append(_line(ln))
    for b in lay.boxes:
        out.extend(_box(b))
    for lb in lay.labels:
        style = ""
        if lb.bold:
            style += ' font-weight="bold"'
        if lb.italic:
            style += ' font-style="italic"'
        out.append('<text x="%s" y="%s" fill="%s" font-size="%s" text-anchor="%s"%s>%s</text>' % (
            _n(lb.x), _n(lb.y), lb.color, _n(lb.size), lb.anchor, style, _esc(lb.text)))
    out.append("</svg>")
    return "\n".join(out) + "\n"
