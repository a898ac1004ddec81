"""Present an ``evaluate`` result: a rich table, the JSON line, a coverage plot."""

from __future__ import annotations

import json
import os
from typing import Any

#: Column order of the tables; other metrics follow in the order they appear.
_FIRST = ["recall@1", "recall@5", "recall@10", "mrr@10"]
_COST = ["tokens_per_s", "index_s", "units", "vectors", "index_bytes", "queries_per_s"]
_HEADERS = {
    "recall@1": "R@1",
    "recall@5": "R@5",
    "recall@10": "R@10",
    "mrr@10": "MRR@10",
    "tokens_per_s": "index tok/s",
    "index_s": "index s",
    "index_bytes": "index size",
    "queries_per_s": "queries/s",
}


def _header(key: str) -> str:
    return _HEADERS.get(key, key.replace("coverage@", "cov@"))


def metric_columns(result: dict[str, Any]) -> list[str]:
    """All metric names present in any system, in a stable, readable order: quality
    (recall, MRR, coverage by budget) first, then cost."""
    seen: list[str] = []
    for metrics in result["systems"].values():
        for k in metrics:
            if k not in seen:
                seen.append(k)
    cov = sorted((k for k in seen if k.startswith("coverage@")), key=lambda k: int(k.split("@")[1]))
    first = [k for k in _FIRST if k in seen]
    cost = [k for k in _COST if k in seen]
    rest = [k for k in seen if k not in first and k not in cov and k not in cost]
    return first + cov + rest + cost


def _fmt(key: str, value: float | None) -> str:
    if value is None:
        return "-"
    if key.startswith(("recall@", "mrr@", "coverage@")):
        return f"{value:.3f}"
    if key in ("units", "vectors"):
        return f"{int(value):,}"
    if key == "index_bytes":
        return f"{value / 2**20:.1f} MiB" if value >= 2**20 else f"{value / 2**10:.0f} KiB"
    return f"{value:,.1f}" if value < 100 else f"{value:,.0f}"


def render_tables(result: dict[str, Any]) -> list[Any]:
    """Two ``rich.table.Table``s, one row per system: quality, then cost (two narrow
    tables read better in an 80-column terminal than one wide one)."""
    from rich.table import Table

    cols = metric_columns(result)
    cost = [c for c in cols if c in _COST]
    quality = [c for c in cols if c not in _COST]
    title = (
        f"{result['data']}: {result['questions']} questions, {result.get('articles', '?')} articles, "
        f"model {result.get('model', '?')}"
    )
    tables = []
    for caption, group in ((title, quality), ("indexing and query cost", cost)):
        table = Table(title=caption)
        table.add_column("system", style="bold", no_wrap=True)
        for c in group:
            table.add_column(_header(c), justify="right", no_wrap=True)
        for name, metrics in result["systems"].items():
            table.add_row(name, *(_fmt(c, metrics.get(c)) for c in group))
        tables.append(table)
    return tables


def markdown_table(result: dict[str, Any], columns: list[str] | None = None) -> str:
    """One table as GitHub markdown (for docs/benchmarks.md)."""
    cols = columns or metric_columns(result)
    lines = [
        "| system | " + " | ".join(_header(c) for c in cols) + " |",
        "|---|" + "---:|" * len(cols),
    ]
    for name, metrics in result["systems"].items():
        lines.append(f"| {name} | " + " | ".join(_fmt(c, metrics.get(c)) for c in cols) + " |")
    return "\n".join(lines)


def to_json(result: dict[str, Any]) -> str:
    """One JSON object on one line (absent metrics are simply not keys)."""
    return json.dumps(result, sort_keys=False, allow_nan=False)


def plot_coverage(result: dict[str, Any], path: str | os.PathLike[str]) -> None:
    """PNG of coverage@B against budget B, one line per system (matplotlib, Agg)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=120)
    for name, metrics in result["systems"].items():
        pts = sorted((int(k.split("@")[1]), v) for k, v in metrics.items() if k.startswith("coverage@"))
        if pts:
            ax.plot([b for b, _ in pts], [v for _, v in pts], marker="o", label=name)
    ax.set_xscale("log", base=2)
    budgets = sorted({int(k.split("@")[1]) for m in result["systems"].values() for k in m if k.startswith("coverage@")})
    ax.set_xticks(budgets, [str(b) for b in budgets])
    ax.set_xlabel("context budget (tokens of the base model)")
    ax.set_ylabel("answer coverage")
    ax.set_ylim(0, 1)
    ax.grid(True, alpha=0.3)
    ax.set_title(f"Answer coverage vs budget ({result['questions']} questions)")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
