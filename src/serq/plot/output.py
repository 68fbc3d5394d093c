"""Figures to files: one PNG (the figures stacked), or one HTML page that
needs nothing else (each figure a PNG in a ``data:`` URI)."""
import base64
import html
import io
from typing import List, Optional, Sequence

from .figure import Section, pyplot

DPI = 110


def _png_bytes(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def _save(path: str, data: bytes) -> None:
    from ..atomic import write_bytes
    write_bytes(path, data)


def write_png(sections: Sequence[Section], path: str) -> None:
    """One image: the sections' figures one above the other."""
    plt = pyplot()
    if len(sections) == 1:
        data = _png_bytes(sections[0].fig)
    else:
        import numpy as np
        from matplotlib import image
        arrays = [image.imread(io.BytesIO(_png_bytes(s.fig)), format="png") for s in sections]
        width = max(a.shape[1] for a in arrays)
        padded = []
        for a in arrays:
            pad = np.ones((a.shape[0], width, a.shape[2]), dtype=a.dtype)
            pad[:, :a.shape[1]] = a
            padded.append(pad)
        buf = io.BytesIO()
        image.imsave(buf, np.concatenate(padded, axis=0), format="png")
        data = buf.getvalue()
    for s in sections:
        plt.close(s.fig)
    _save(path, data)


_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2em auto;
       max-width: 1200px; color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 1.6em; }
figure { margin: 0; } img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption, .note { color: #555; font-size: 0.9em; }
pre { background: #f7f7f7; padding: 1em; overflow-x: auto; font-size: 0.85em; }
"""


def html_page(sections: Sequence[Section], title: str, notes: Sequence[str],
              report_text: Optional[str] = None) -> str:
    plt = pyplot()
    parts: List[str] = ["<!DOCTYPE html>", '<html lang="en">', "<head>",
                        '<meta charset="utf-8">', "<title>%s</title>" % html.escape(title),
                        "<style>%s</style>" % _STYLE, "</head>", "<body>",
                        "<h1>%s</h1>" % html.escape(title)]
    for note in notes:
        parts.append('<p class="note">%s</p>' % html.escape(note))
    for i, s in enumerate(sections):
        png = base64.b64encode(_png_bytes(s.fig)).decode("ascii")
        plt.close(s.fig)
        parts.append('<section id="figure-%d">' % (i + 1))
        parts.append("<h2>%s</h2>" % html.escape(s.title))
        parts.append('<figure><img class="serq-figure" alt="%s" src="data:image/png;base64,%s">'
                     % (html.escape(s.title, quote=True), png))
        if s.caption:
            parts.append("<figcaption>%s</figcaption>" % html.escape(s.caption))
        parts.append("</figure></section>")
    if report_text:
        parts.append("<h2>Report</h2>")
        parts.append("<pre>%s</pre>" % html.escape(report_text))
    parts.extend(["</body>", "</html>", ""])
    return "\n".join(parts)


def write_html(sections: Sequence[Section], path: str, title: str, notes: Sequence[str],
               report_text: Optional[str] = None) -> None:
    _save(path, html_page(sections, title, notes, report_text).encode("utf-8"))
