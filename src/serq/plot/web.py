"""Sections (figure.py) as one interactive HTML page drawn by plotly,
loaded on demand: every figure a plotly graph (hover values, zoom, pan),
plotly.js inlined once in the page so that it needs no network, then the
report's numbers as tables and its text."""
import html
import math
from typing import List, Optional, Sequence

from ..errors import UsageError
from .figure import CI_LABEL, Panel, Section, stacked
from .tables import Table

DASH = {"dot": "dot", "dash": "dash", None: "solid"}


def _plotly():
    try:
        import plotly.graph_objects as go
        from plotly.subplots import make_subplots
    except ImportError:
        raise UsageError("serq plot -o OUT.html needs plotly: pip install 'serq[plot]'") \
            from None
    return go, make_subplots


def _traces(go, fig, p: Panel, row: int, col: int, seen: set) -> None:
    def legend(name):
        show = name not in seen
        seen.add(name)
        return dict(name=name, legendgroup=name, showlegend=show)

    stack = [t for t in p.traces if t.shape == "stack"]
    if stack:
        xs, layers = stacked(stack)
        for t, ys in zip(stack, layers):
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", line_shape="hv",
                                     stackgroup="s%d_%d" % (row, col), line=dict(width=0.5),
                                     fillcolor=t.color, marker_color=t.color,
                                     hovertemplate="%%{y:.6g} %s at %%{x:.6g}<extra>%s</extra>"
                                     % (t.hover or "", t.name), **legend(t.name)),
                          row=row, col=col)
    for t in p.traces:
        if t.shape == "stack":
            continue
        if t.shape == "points":
            fig.add_trace(_points(go, t, legend(t.name)), row=row, col=col)
            continue
        if t.lo is not None and t.hi is not None:
            fig.add_trace(go.Scatter(x=list(t.xs) + list(t.xs)[::-1],
                                     y=list(t.hi) + list(t.lo)[::-1], fill="toself",
                                     mode="lines", line=dict(width=0), opacity=0.25,
                                     fillcolor=t.color, hoverinfo="skip", showlegend=False,
                                     legendgroup=t.name), row=row, col=col)
        fig.add_trace(go.Scatter(x=t.xs, y=t.ys, mode="lines+markers" if t.markers else "lines",
                                 line=dict(color=t.color, dash=DASH.get(t.dash, "solid"),
                                           width=1.6),
                                 line_shape="hv" if t.shape == "step" else "linear",
                                 hovertemplate="%%{y:.6g} %s at %%{x:.6g}<extra>%s</extra>"
                                 % (t.hover or "", t.name), **legend(t.name)),
                      row=row, col=col)
    for i, m in enumerate(p.marks):
        kw = dict(line_color=m.color, line_dash=DASH.get(m.dash, "dot"), line_width=1,
                  row=row, col=col)
        # (an annotation on a log axis is placed by the exponent, a shape by the value)
        if m.axis == "x":
            fig.add_vline(x=m.at, **kw)
            x = math.log10(m.at) if p.xlog and m.at > 0 else m.at
            fig.add_annotation(x=x, y=1.0 - 0.09 * i, yref="y domain", text=m.label,
                               showarrow=False, xanchor="left", font=dict(size=10, color=m.color),
                               bgcolor="rgba(255,255,255,0.7)", row=row, col=col)
        else:
            fig.add_hline(y=m.at, annotation_text=m.label, annotation_font_size=10,
                          annotation_position="top right", **kw)
    groups = {}
    for b in p.bars:
        groups.setdefault(b.group, []).append(b)
    for group, bars in groups.items():
        fig.add_trace(go.Bar(orientation="h", base=[b.start for b in bars],
                             x=[b.width for b in bars], y=[b.lane for b in bars],
                             marker_color=bars[0].color, marker_line_width=0,
                             hovertext=[b.hover for b in bars], hoverinfo="text",
                             **legend(group)), row=row, col=col)
    errs = [b for b in p.bars if b.ci is not None]
    if errs:
        fig.add_trace(go.Scatter(x=[b.ci[0] for b in errs], y=[b.lane for b in errs],
                                 mode="markers", marker=dict(size=1, color="#222222"),
                                 error_x=dict(type="data", symmetric=False, color="#222222",
                                              thickness=1.2, width=4,
                                              array=[b.ci[2] - b.ci[0] for b in errs],
                                              arrayminus=[b.ci[0] - b.ci[1] for b in errs]),
                                 hoverinfo="skip", **legend(CI_LABEL)), row=row, col=col)
    if p.band is not None:
        a, b, label = p.band
        fig.add_vrect(x0=a, x1=b, fillcolor=p.band_color, opacity=0.3, line_width=0,
                      annotation_text=label, annotation_position="top left",
                      annotation_font_size=10, row=row, col=col)
    fig.update_xaxes(title_text=p.xlabel, type="log" if p.xlog else None,
                     range=list(p.xlim) if p.xlim else None, row=row, col=col)
    fig.update_yaxes(title_text=p.ylabel, type="log" if p.ylog else None,
                     range=list(p.ylim) if p.ylim else None, row=row, col=col)
    if p.lanes:
        fig.update_yaxes(type="category", categoryorder="array", categoryarray=p.lanes,
                         autorange="reversed", row=row, col=col)


def _points(go, t, legend: dict):
    """Markers, each with its interval as an error bar where it has one."""
    ys = list(t.ys)
    up = [0.0 if h is None else h - y for y, h in zip(ys, t.hi or ys)]
    down = [0.0 if lo is None else y - lo for y, lo in zip(ys, t.lo or ys)]
    kw = {}
    if t.texts is not None:
        kw = dict(text=list(t.texts), hovertemplate="%{text}<extra></extra>")
    else:
        kw = dict(hovertemplate="%%{y:.6g} %s at %%{x:.6g}<extra>%s</extra>"
                  % (t.hover or "", t.name))
    return go.Scatter(x=list(t.xs), y=ys, mode="markers",
                      marker=dict(color=t.color, size=9, line=dict(width=0.5, color="#ffffff")),
                      error_y=dict(type="data", symmetric=False, array=up, arrayminus=down,
                                   color=t.color, thickness=1.6, width=5),
                      **kw, **legend)


def figure(s: Section):
    """The plotly Figure of a section."""
    go, make_subplots = _plotly()
    n = len(s.panels)
    ncols = max(1, min(s.ncols, n))
    nrows = (n + ncols - 1) // ncols
    heights = [max(280, 120 + 16 * len(p.lanes)) for p in s.panels]
    row_heights = [max(heights[r * ncols:(r + 1) * ncols]) for r in range(nrows)]
    fig = make_subplots(rows=nrows, cols=ncols, subplot_titles=[p.title for p in s.panels],
                        shared_xaxes=s.sharex and ncols == 1, row_heights=row_heights,
                        vertical_spacing=min(0.12, 0.35 / nrows) if nrows > 1 else 0.1)
    seen: set = set()
    for i, p in enumerate(s.panels):
        _traces(go, fig, p, i // ncols + 1, i % ncols + 1, seen)
    if s.sharex and ncols == 1:
        fig.update_xaxes(showticklabels=True)
    fig.update_layout(height=sum(row_heights) + 120, barmode="overlay", template="plotly_white",
                      hovermode="closest", margin=dict(l=70, r=30, t=60, b=50),
                      legend=dict(orientation="h", y=-0.06 if nrows > 1 else -0.2))
    fig.update_annotations(font_size=11)
    return fig


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
figcaption, .note { color: #555; font-size: 0.9em; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; font-size: 0.85em; }
table.serq-numbers { border-collapse: collapse; font-size: 0.88em; margin: 0.5em 0 1.2em; }
table.serq-numbers th, table.serq-numbers td { padding: 0.25em 0.7em; border-bottom: 1px solid #e4e4e4; }
table.serq-numbers th { text-align: left; background: #f3f5f8; }
table.serq-numbers td { text-align: right; font-variant-numeric: tabular-nums; }
table.serq-numbers td:first-child { text-align: left; }
"""


def _table(t: Table) -> str:
    title, header, rows = t
    out = ["<h3>%s</h3>" % html.escape(title), '<table class="serq-numbers">', "<thead><tr>"]
    out += ["<th>%s</th>" % html.escape(h) for h in header]
    out.append("</tr></thead><tbody>")
    for r in rows:
        out.append("<tr>" + "".join("<td>%s</td>" % html.escape(c) for c in r) + "</tr>")
    out.append("</tbody></table>")
    return "\n".join(out)


def html_page(sections: Sequence[Section], title: str, notes: Sequence[str],
              tables: Sequence[Table] = (), report_text: Optional[str] = None) -> str:
    _plotly()
    from plotly.offline import get_plotlyjs
    parts: List[str] = ["<!DOCTYPE html>", '<html lang="en">', "<head>",
                        '<meta charset="utf-8">', "<title>%s</title>" % html.escape(title),
                        "<style>%s</style>" % _STYLE,
                        '<script type="text/javascript">%s</script>' % get_plotlyjs(),
                        "</head>", "<body>", "<h1>%s</h1>" % html.escape(title)]
    for note in notes:
        parts.append('<p class="note">%s</p>' % html.escape(note))
    for i, s in enumerate(sections):
        parts.append('<section id="figure-%d">' % (i + 1))
        parts.append("<h2>%s</h2>" % html.escape(s.title))
        parts.append(figure(s).to_html(full_html=False, include_plotlyjs=False,
                                       div_id="serq-figure-%d" % (i + 1),
                                       config={"displaylogo": False, "responsive": True}))
        if s.caption:
            parts.append("<figcaption>%s</figcaption>" % html.escape(s.caption))
        parts.append("</section>")
    if tables:
        parts.append('<section id="numbers"><h2>Numbers</h2>')
        parts.extend(_table(t) for t in tables)
        parts.append("</section>")
    if report_text:
        parts.append("<h2>Report</h2>")
        parts.append("<pre>%s</pre>" % html.escape(report_text))
    parts.extend(["</body>", "</html>", ""])
    return "\n".join(parts)


def write_html(sections: Sequence[Section], path: str, title: str, notes: Sequence[str],
               tables: Sequence[Table] = (), report_text: Optional[str] = None) -> None:
    from ..atomic import write_bytes
    write_bytes(path, html_page(sections, title, notes, tables, report_text).encode("utf-8"))
