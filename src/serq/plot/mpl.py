"""Sections (figure.py) drawn with matplotlib, loaded on demand (the
``plot`` extra): one PNG, the sections one above the other."""
import io
from typing import Dict, List, Sequence

from ..errors import UsageError
from .figure import CI_LABEL, Panel, Section, stacked

DPI = 110
DASH = {"dot": ":", "dash": "--", None: "-"}


def pyplot():
    """``matplotlib.pyplot`` on the Agg backend (no display needed)."""
    try:
        import matplotlib
    except ImportError:
        raise UsageError("serq plot needs matplotlib: pip install 'serq[plot]'") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt
    return plt


def _panel(ax, p: Panel) -> None:
    stack = [t for t in p.traces if t.shape == "stack"]
    if stack:
        xs, layers = stacked(stack)
        ax.stackplot(xs, layers, step="post", labels=[t.name for t in stack],
                     colors=[t.color for t in stack], alpha=0.85, lw=0)
    for t in p.traces:
        if t.shape == "stack":
            continue
        kw = dict(lw=1.4, label=t.name, ls=DASH.get(t.dash, "-"))
        if t.color:
            kw["color"] = t.color
        if t.shape == "points":
            _points(ax, t, kw)
            continue
        if t.shape == "step":
            line, = ax.step(t.xs, t.ys, where="post", **kw)
        else:
            line, = ax.plot(t.xs, t.ys, marker="o" if t.markers else None, ms=3.5, **kw)
        if t.lo is not None and t.hi is not None:
            ax.fill_between(t.xs, t.lo, t.hi, color=line.get_color(), alpha=0.2, lw=0)
    for m in p.marks:
        line = ax.axvline if m.axis == "x" else ax.axhline
        line(m.at, color=m.color, ls=DASH.get(m.dash, ":"), lw=1, label=m.label)
    if p.bars:
        row = {lane: i for i, lane in enumerate(p.lanes)}
        groups: Dict[str, List] = {}
        for b in p.bars:
            groups.setdefault(b.group, []).append(b)
        for group, bars in groups.items():
            lanes: Dict[str, List] = {}
            for b in bars:
                lanes.setdefault(b.lane, []).append((b.start, b.width))
            for i, (lane, spans) in enumerate(lanes.items()):
                ax.broken_barh(spans, (row[lane] - 0.4, 0.8), facecolors=bars[0].color,
                               edgecolor="white", lw=0.3 if len(p.bars) < 300 else 0,
                               label=group if i == 0 else None)  # (dense: no edges)
        errs = [b for b in p.bars if b.ci is not None]
        if errs:
            xs = [b.ci[0] for b in errs]
            ax.errorbar(xs, [row[b.lane] for b in errs], fmt="none", ecolor="#222222",
                        elinewidth=1, capsize=3, label=CI_LABEL,
                        xerr=[[x - b.ci[1] for x, b in zip(xs, errs)],
                              [b.ci[2] - x for x, b in zip(xs, errs)]])
        ax.set_yticks(range(len(p.lanes)), p.lanes, fontsize=7 if len(p.lanes) > 8 else 9)
        ax.set_ylim(-0.6, max(len(p.lanes), 1) - 0.4)
        ax.invert_yaxis()
    if p.band is not None:
        a, b, label = p.band
        ax.axvspan(a, b, color=p.band_color, alpha=0.35, lw=0, label=label)
        ax.text(a + 0.5 * (b - a), 0.97, p.band_text, transform=ax.get_xaxis_transform(),
                ha="center", va="top", fontsize=8, color="#444444")
    if p.xlog:
        ax.set_xscale("log")
    if p.ylog:
        ax.set_yscale("log")
    if p.ylim is not None:
        ax.set_ylim(*p.ylim)
    if p.xlim is not None:
        ax.set_xlim(*p.xlim)
    ax.set_title(p.title, fontsize=10)
    ax.set_xlabel(p.xlabel)
    ax.set_ylabel(p.ylabel)
    ax.grid(alpha=0.3)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8, loc="upper right" if p.band and p.band_text == "warm-up"
                  else "best",
                  ncol=2 if len(p.traces) > 4 else 1)


def _points(ax, t, kw) -> None:
    """Markers, each with its interval as an error bar where it has one."""
    if not t.xs:
        return
    kw = dict(kw)
    kw.pop("ls", None)
    los = [y if lo is None else lo for y, lo in zip(t.ys, t.lo or t.ys)]
    his = [y if hi is None else hi for y, hi in zip(t.ys, t.hi or t.ys)]
    ax.errorbar(t.xs, t.ys, yerr=[[y - lo for y, lo in zip(t.ys, los)],
                                  [hi - y for y, hi in zip(t.ys, his)]],
                fmt="o", ms=5, capsize=4, elinewidth=1.4, **kw)


def draw(plt, s: Section):
    """A matplotlib Figure of the section."""
    n = len(s.panels)
    ncols = max(1, min(s.ncols, n))
    nrows = (n + ncols - 1) // ncols
    if ncols == 1:
        heights = [max(2.6, 0.9 + 0.2 * len(p.lanes)) for p in s.panels]
        fig, axes = plt.subplots(nrows, 1, figsize=(10.4, sum(heights)), squeeze=False,
                                 sharex=s.sharex, layout="constrained",
                                 gridspec_kw={"height_ratios": heights})
    else:
        fig, axes = plt.subplots(nrows, ncols, figsize=(5.2 * ncols, 3.1 * nrows),
                                 squeeze=False, layout="constrained")
    flat = [ax for row in axes for ax in row]
    for ax in flat[n:]:
        ax.set_visible(False)
    for ax, p in zip(flat, s.panels):
        _panel(ax, p)
    fig.suptitle(s.title, fontsize=11)
    return fig


def png_bytes(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    return buf.getvalue()


def write_png(sections: Sequence[Section], path: str) -> None:
    """One image: the sections' figures one above the other."""
    from ..atomic import write_bytes
    plt = pyplot()
    figs = [draw(plt, s) for s in sections]
    if len(figs) == 1:
        data = png_bytes(figs[0])
    else:
        import numpy as np
        from matplotlib import image
        arrays = [image.imread(io.BytesIO(png_bytes(f)), format="png") for f in figs]
        width = max(a.shape[1] for a in arrays)
        padded = []
        for a in arrays:
            pad = np.ones((a.shape[0], width, a.shape[2]), dtype=a.dtype)
            pad[:, :a.shape[1]] = a
            padded.append(pad)
        buf = io.BytesIO()
        image.imsave(buf, np.concatenate(padded, axis=0), format="png")
        data = buf.getvalue()
    for f in figs:
        plt.close(f)
    write_bytes(path, data)
