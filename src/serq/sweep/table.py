"""The sweep's tidy table: one row per point and metric.

Columns: the swept constants (in ``--set`` order), then ``metric``,
``mean``, ``ci_low``, ``ci_high``, ``n_seeds``.  ``mean`` is the mean over
the seeds whose run gave the metric a value; ``ci_low``/``ci_high`` the
two-sided 95% Student-t interval of that mean,
``mean ∓ t(0.975, n-1) · s / sqrt(n)`` with ``s`` the sample standard
deviation over seeds (empty below two seeds); ``n_seeds`` how many seeds
gave a value.

Rows come in grid order (the first ``--set`` slowest), then in the report's
order of metrics.  The numbers are computed from the seeds' values in seed
order with ``math.fsum``, so the table is the same bytes whatever ran the
simulations (one process, a pool of them or a Ray cluster).

CSV numbers are the shortest text that reads back to the same float
(``0.7``, ``1000``); an empty cell is a missing value.  Parquet (``.parquet``
output, needs the ``parquet`` extra: pyarrow) has the same columns, with
nulls for missing values.
"""
import csv
import io
import math
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from ..errors import UsageError
from ..report.jsonfmt import format_float
from .tdist import t_quantile

COLUMNS = ("metric", "mean", "ci_low", "ci_high", "n_seeds")
LEVEL = 0.95


@dataclass
class Row:
    point: Tuple
    metric: str
    mean: Optional[float]
    ci_low: Optional[float]
    ci_high: Optional[float]
    n_seeds: int


@dataclass
class Table:
    params: List[str]
    rows: List[Row]
    #: None for a complete table, else what is missing ("incomplete: 3 of
    #: 8 points ..."): written as a first line ``# incomplete: ...`` in CSV,
    #: as the schema's ``serq.incomplete`` metadata in Parquet
    incomplete: Optional[str] = None


def summarize(values: Sequence[float]) -> Tuple[Optional[float], Optional[float],
                                                Optional[float], int]:
    """``(mean, ci_low, ci_high, n)`` of one metric's values over seeds
    (NaN and ``None`` values left out)."""
    xs = [float(v) for v in values if v is not None and v == v]
    n = len(xs)
    if n == 0:
        return None, None, None, 0
    if any(math.isinf(x) for x in xs):  # an unbounded wait: no interval
        mean = sum(xs) / n
        return (None if mean != mean else mean), None, None, n
    mean = math.fsum(xs) / n
    if n < 2:
        return mean, None, None, n
    var = math.fsum((x - mean) ** 2 for x in xs) / (n - 1)
    half = t_quantile(0.5 + LEVEL / 2, n - 1) * math.sqrt(var / n)
    return mean, mean - half, mean + half, n


def aggregate(params: List[str], points: Sequence[Tuple],
              results: Dict[Tuple[int, int], List[Tuple[str, Optional[float]]]],
              seeds: Sequence[int]) -> Table:
    """``results[(point index, seed)]`` -> the table (grid order, then the
    metrics in order of first appearance)."""
    rows: List[Row] = []
    for i, point in enumerate(points):
        order: List[str] = []
        values: Dict[str, List[Optional[float]]] = {}
        for seed in sorted(seeds):
            for metric, v in results[(i, seed)]:
                if metric not in values:
                    values[metric] = []
                    order.append(metric)
                values[metric].append(v)
        for metric in order:
            mean, lo, hi, n = summarize(values[metric])
            rows.append(Row(tuple(point), metric, mean, lo, hi, n))
    return Table(list(params), rows)


def cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, str):
        return v
    if isinstance(v, int):
        return str(v)
    if math.isnan(v):
        return ""
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return format_float(v)


def to_csv(table: Table) -> str:
    """The table as CSV; an incomplete one starts with a line ``# incomplete:
    ...`` (``read`` skips it and keeps it; pandas: ``comment="#"``)."""
    buf = io.StringIO()
    if table.incomplete:
        buf.write("# %s\n" % " ".join(table.incomplete.split()))
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(list(table.params) + list(COLUMNS))
    for r in table.rows:
        w.writerow([cell(v) for v in r.point] +
                   [r.metric, cell(r.mean), cell(r.ci_low), cell(r.ci_high), str(r.n_seeds)])
    return buf.getvalue()


def _pyarrow():
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise UsageError("Parquet output needs pyarrow: pip install 'serq[parquet]' "
                         "(or write the table as .csv)") from None
    return pyarrow


def write(table: Table, path: Optional[str]) -> None:
    """Write the table to ``path`` (``.parquet``: Parquet, else CSV; ``None``
    or ``-``: CSV on standard output)."""
    import sys
    if path is None or path == "-":
        sys.stdout.write(to_csv(table))
        return
    if path.endswith(".parquet"):
        pa = _pyarrow()
        cols = {}
        for j, name in enumerate(table.params):
            vals = [r.point[j] for r in table.rows]
            if all(isinstance(v, float) for v in vals):
                cols[name] = pa.array(vals, type=pa.float64())
            else:
                cols[name] = pa.array([cell(v) for v in vals], type=pa.string())
        cols["metric"] = pa.array([r.metric for r in table.rows], type=pa.string())
        for key in ("mean", "ci_low", "ci_high"):
            cols[key] = pa.array([getattr(r, key) for r in table.rows], type=pa.float64())
        cols["n_seeds"] = pa.array([r.n_seeds for r in table.rows], type=pa.int64())
        data = pa.table(cols)
        if table.incomplete:
            data = data.replace_schema_metadata({"serq.incomplete": table.incomplete})
        from ..atomic import write_with
        write_with(path, lambda f: pa.parquet.write_table(data, f))
        return
    from ..atomic import write_text
    write_text(path, to_csv(table))


def _float(text: str) -> Optional[float]:
    return None if text == "" else float(text)


def read(path: str) -> Table:
    """A table written by :func:`write` (CSV or Parquet); an incomplete
    one keeps its mark (``Table.incomplete``)."""
    incomplete: Optional[str] = None
    first = 0  # CSV: the comment lines before the header
    if path.endswith(".parquet"):
        pa = _pyarrow()
        try:
            t = pa.parquet.read_table(path)
        except (OSError, pa.ArrowException) as e:
            raise UsageError("cannot read %s: %s" % (path, e)) from None
        names = t.column_names
        meta = t.schema.metadata or {}
        mark = meta.get(b"serq.incomplete")
        incomplete = None if mark is None else mark.decode("utf-8", "replace")
        data = t.to_pydict()
        header = names
        raw = [[data[c][i] for c in names] for i in range(t.num_rows)]
        raw = [["" if v is None else (v if isinstance(v, str) else repr(v)) for v in row]
               for row in raw]
    else:
        try:
            with open(path, newline="") as f:
                lines = list(csv.reader(f))
        except OSError as e:
            raise UsageError("cannot read %s: %s" % (path, e.strerror or e)) from None
        except (UnicodeDecodeError, csv.Error) as e:
            raise UsageError("%s is not a sweep table (CSV): %s" % (path, e)) from None
        while first < len(lines) and lines[first] and lines[first][0].startswith("#"):
            text = ",".join(lines[first]).lstrip("#").strip()
            if text.startswith("incomplete"):
                incomplete = text
            first += 1
        lines = lines[first:]
        if not lines:
            raise UsageError("%s is empty, not a sweep table" % path)
        header, raw = lines[0], lines[1:]
    if tuple(header[-len(COLUMNS):]) != COLUMNS:
        raise UsageError("%s is not a sweep table: its last columns are not %s (write one with "
                         "`serq sweep`)" % (path, ", ".join(COLUMNS)))
    k = len(header) - len(COLUMNS)
    rows = []
    for lineno, cells in enumerate(raw, 2 + first):
        if len(cells) != len(header):
            raise UsageError("%s:%d: %d cells, the header has %d" % (path, lineno, len(cells),
                                                                   len(header)))
        try:
            point = tuple(_float(c) if _looks_numeric(c) else c for c in cells[:k])
            rows.append(Row(point, cells[k], _float(cells[k + 1]), _float(cells[k + 2]),
                            _float(cells[k + 3]), int(cells[k + 4])))
        except ValueError as e:
            raise UsageError("%s:%d: %s" % (path, lineno, e)) from None
    return Table(list(header[:k]), rows, incomplete)


def _looks_numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
