"""``landmark-rag eval``: retrieval quality of landmark-rag and its baselines on SQuAD-format data,
or on the long-evidence benchmark when ``--data`` is a long-evidence file."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from landmark_rag.cli import app


def _split(value: str | None) -> list[str] | None:
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    return items or None


@app.command("eval")
def eval_command(
    data: Path = typer.Option(
        Path("data/squad-v1.1-dev-part-a.json"),
        "--data",
        exists=True,
        dir_okay=False,
        help="Any SQuAD-format JSON file (default: the repository's copy, when run from a clone's root), or a "
        "long-evidence file (data/long-evidence/long-evidence-v1.json): the long-evidence benchmark.",
    ),
    split: str = typer.Option(
        "validation", "--split", help="Long-evidence data only: validation (tune here), heldout (report here) or all."
    ),
    per_doc: int | None = typer.Option(
        None, "--questions-per-doc", min=1, help="Long-evidence data only: each document's first N questions."
    ),
    systems: str | None = typer.Option(
        None,
        "--systems",
        help="Comma-separated: landmark,sentence,chunk200,chunk256,chunk512,sentence-window,late-chunking,bm25,hybrid "
        "(default: all but chunk512; long-evidence data: hybrid,landmark,bm25,chunk256,chunk512,late-chunking,"
        "sentence-window).",
    ),
    budgets: str | None = typer.Option(
        None, "--budgets", help="Comma-separated context budgets in tokens (default 64,128,256,512; long-evidence "
        "data: 256,512,1024)."
    ),
    expansion: str | None = typer.Option(
        None,
        "--expansion",
        help="Comma-separated front,surround,adaptive,evidence: the landmark and hybrid systems once per "
        "boundary expansion (default: the model's own).",
    ),
    model: str | None = typer.Option(None, "--model", help="Landmark model (alias, directory); default: the package's."),
    base_model: str | None = typer.Option(
        None, "--base-model", help="Model of the baselines (default: the landmark model's base, else --model)."
    ),
    select: str | None = typer.Option(
        None,
        "--select",
        help="Articles by the selection spec of `landmark-rag train --val-articles`: slice 'a:b', comma list of "
        "indices and titles, @FILE of titles (kept in the data's order).",
    ),
    titles: list[str] | None = typer.Option(
        None,
        "--title",
        help="Evaluate on this article only (title or doc id, any case; repeat for more; titles may contain commas).",
    ),
    titles_file: Path | None = typer.Option(
        None, "--titles-file", exists=True, dir_okay=False, help="File with one article title per line (held-out sets)."
    ),
    articles: int | None = typer.Option(None, "--articles", min=1, help="Use only the first N articles."),
    max_questions: int | None = typer.Option(
        None, "--max-questions", min=1, help="Evaluate at most N questions (spread over the articles)."
    ),
    device: str | None = typer.Option(None, "--device", help="cpu, cuda, mps (default: best available)."),
    batch_size: int = typer.Option(32, "--batch-size", min=1, help="Encoder windows per batch on a CPU (on CUDA batches are sized by padded tokens from free memory)."),
    as_json: bool = typer.Option(False, "--json", help="Print exactly one JSON object on stdout."),
    plot: Path | None = typer.Option(None, "--plot", dir_okay=False, help="Write a PNG of coverage against budget."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bars."),
) -> None:
    """Compare landmark retrieval with sentence, chunk, window, late-chunking and BM25 baselines.

    All selected articles form one corpus. Reports gold-sentence recall@1/5/10 and MRR@10
    for sentence-unit systems, answer coverage at each token budget for every system, and
    indexing speed and size. Progress goes to stderr.
    """
    from landmark_rag.datasets.longevidence import is_long_evidence_path
    from landmark_rag.evaluation import evaluate
    from landmark_rag.evaluation.report import plot_coverage, to_json

    long_evidence = is_long_evidence_path(data)
    try:
        budget_list = [int(b) for b in _split(budgets or ("256,512,1024" if long_evidence else "64,128,256,512")) or []]
    except ValueError:
        raise typer.BadParameter("budgets must be comma-separated integers", param_hint="--budgets") from None
    if long_evidence:
        unsupported = {"--select": select, "--title": titles, "--titles-file": titles_file,
                       "--max-questions": max_questions, "--plot": plot}
        given = [k for k, v in unsupported.items() if v]
        if given:
            typer.echo(f"error: {', '.join(given)} do not apply to long-evidence data "
                       "(use --split, --articles, --questions-per-doc)", err=True)
            raise typer.Exit(2)
        _long_evidence(data, split, _split(systems), budget_list, model, base_model, articles, per_doc, device,
                       batch_size, as_json, quiet, _split(expansion))
        return
    try:
        result = evaluate(
            data,
            _split(systems),
            budget_list,
            model,
            base_model=base_model,
            select=select,
            titles=_titles(titles, titles_file),
            max_articles=articles,
            max_questions=max_questions,
            device=device,
            batch_size=batch_size,
            show_progress=not quiet,
            expansions=_split(expansion),
        )
    except ValueError as exc:
        from landmark_rag.render.terminal import sanitize

        typer.echo(f"error: {sanitize(str(exc))}", err=True)
        raise typer.Exit(2) from None
    if plot is not None:
        plot.parent.mkdir(parents=True, exist_ok=True)
        plot_coverage(result, plot)
    if as_json:
        sys.stdout.write(to_json(result) + "\n")
        sys.stdout.flush()
    else:
        _print_tables(result, plot)


def _long_evidence(
    data: Path, split: str, systems: list[str] | None, budgets: list[int], model: str | None,
    base_model: str | None, articles: int | None, per_doc: int | None, device: str | None, batch_size: int,
    as_json: bool, quiet: bool, expansions: list[str] | None = None,
) -> None:
    """The long-evidence benchmark (``landmark_rag.evaluation.longevidence``): its JSON or tables."""
    from landmark_rag.evaluation.longevidence import evaluate_long_evidence, render_tables
    from landmark_rag.evaluation.report import to_json
    from landmark_rag.render.terminal import TerminalConsole, sanitize

    if split not in ("validation", "heldout", "all"):
        raise typer.BadParameter("expected validation, heldout or all", param_hint="--split")
    try:
        result = evaluate_long_evidence(
            data, systems, budgets, model, split=None if split == "all" else split, max_documents=articles,
            max_questions_per_doc=per_doc, base_model=base_model, device=device, batch_size=batch_size,
            show_progress=not quiet, expansions=expansions,
        )
    except ValueError as exc:
        typer.echo(f"error: {sanitize(str(exc))}", err=True)
        raise typer.Exit(2) from None
    if as_json:
        sys.stdout.write(to_json(result) + "\n")
        sys.stdout.flush()
        return
    console = TerminalConsole() if sys.stdout.isatty() else TerminalConsole(width=140)
    for table in render_tables(result):
        console.print(table)


def _titles(titles: list[str] | None, titles_file: Path | None) -> list[str] | None:
    """The --title articles and those listed in --titles-file (``None``: no titles given)."""
    from landmark_rag.datasets import read_titles

    selected = list(titles or [])
    if titles_file is not None:
        selected += read_titles(titles_file)
    return selected or None


def _print_tables(result: dict, plot: Path | None) -> None:
    """The result tables on stdout; the plot's path, when one was written, on stderr."""
    from landmark_rag.evaluation.report import render_tables
    from landmark_rag.render.terminal import TerminalConsole

    # piped output gets a fixed, wide-enough width instead of rich's 80-column fallback
    console = TerminalConsole() if sys.stdout.isatty() else TerminalConsole(width=120)
    for table in render_tables(result):
        console.print(table)
    if plot is not None:
        TerminalConsole(stderr=True).print(f"coverage plot: {plot}", markup=False)
