"""``serq draw``: a deployment as a picture (SVG, TikZ or Graphviz DOT).

``draw(program, fmt, title)`` reads a compiled program's IR (``model``),
lays it out itself for SVG and TikZ (``layout``), and leaves the layout to
Graphviz for DOT.
"""
from ..ir import nodes as ir

FORMATS = ("svg", "tikz", "dot")


def draw(program: ir.Program, fmt: str = "svg", title: str = "") -> str:
    from .model import build
    if fmt not in FORMATS:
        raise ValueError("unknown format %r" % fmt)
    pic = build(program, title)
    if fmt == "dot":
        from .dot import render as dot_render
        return dot_render(pic)
    from .layout import layout
    lay = layout(pic)
    if fmt == "svg":
        from .svg import render as svg_render
        return svg_render(lay, title)
    from .tikz import render as tikz_render
    return tikz_render(lay)
