"""``landmark-rag demo``: the whole workflow on the bundled sample corpus, in a temporary store."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import typer

from landmark_rag.cli import app
from landmark_rag.cli._common import DEFAULT_COLLECTION, DeviceOption, console, err_console


@app.command("demo")
def demo_command(
    model: str | None = typer.Option(None, "--model", help="Model to demo (default: the package's)."),
    k: int = typer.Option(3, "-k", "--k", min=1, help="Passages per question."),
    strategy: str | None = typer.Option(
        None, "--strategy", help="Expansion: front, surround, adaptive or evidence (default: what the model's config names)."
    ),
    keep: Path | None = typer.Option(None, "--keep", file_okay=False, help="Keep the store in this folder."),
    device: str | None = DeviceOption,
) -> None:
    """Index the sample corpus shipped with the package and answer a few questions.

    Runs exactly what ``landmark-rag index`` and ``landmark-rag query`` run, against a
    temporary store that is deleted afterwards (unless ``--keep DIR``). Each passage is
    checked against the answer the question expects; the exit code is non-zero if the top
    passage misses the answer for most questions.
    """
    from rich.text import Text

    from landmark_rag.cli._common import check_choice, open_index
    from landmark_rag.cli.query import STRATEGIES

    check_choice(strategy, STRATEGIES, "--strategy")  # before minutes of indexing

    from landmark_rag.expand.strategies import strategy_name
    from landmark_rag.ingest import find_files
    from landmark_rag.render import hit_segments, passage_hits, sanitize
    from landmark_rag.samples import CORPUS_NOTE, corpus_dir, sample_questions

    tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="landmark-demo-"))
    try:
        files = find_files([corpus_dir()])
        console.print(Text(f"Sample corpus: {len(files.files)} documents in {corpus_dir()}", style="bold"))
        console.print(CORPUS_NOTE, markup=False)
        index = open_index(str(tmp), DEFAULT_COLLECTION, model=model, device=device, create=True)
        store = index.sentence_store
        report = index.add_files(files, show_progress=True)
        console.print(
            f"indexed {report.sentences} sentences with {index.encoder.model_name} in {report.seconds:.1f} s "
            f"({report.tokens_per_second:,.0f} tokens/s)\n",
            markup=False,
        )
        questions = sample_questions()
        strat = index.resolve_strategy(strategy_name(strategy) if strategy else None)
        found = index.search_many([q.question for q in questions], k, strategy=strat)
        found_top = found_k = 0
        for q, passages in zip(questions, found, strict=True):
            hits = passage_hits(store, passages)
            console.print(Text(f"? {q.question}", style="bold"))
            for rank, (p, hs) in enumerate(zip(passages, hits, strict=True), start=1):
                ok = q.answer in p.text
                head = Text(f"  #{rank} ", style="bold blue")
                head.append(f"{sanitize(p.doc_id)} [{p.start}:{p.end}] score {p.score:.3f}", style="dim")
                if ok:
                    head.append(f"  contains {q.answer!r}", style="green")
                console.print(head)
                body = Text("     ")
                for piece, is_hit in hit_segments(p, hs):
                    body.append(sanitize(piece), style="bold black on yellow" if is_hit else None)
                console.print(body)
            top_ok = bool(passages) and q.answer in passages[0].text
            found_top += top_ok
            found_k += any(q.answer in p.text for p in passages)
            console.print()
        console.print(
            Text(
                f"answer in the top passage for {found_top} of {len(questions)} questions, "
                f"in the top {k} for {found_k} of {len(questions)} (text the default model never saw)",
                style="bold",
            )
        )
        console.print(
            "Next: landmark-rag index YOUR_FOLDER, then landmark-rag query \"your question\" (--html page.html).",
            markup=False,
        )
        if keep:
            err_console.print(f"store kept in {tmp}", markup=False)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    if found_top * 2 < len(questions):  # the top passage missed for most questions
        raise typer.Exit(1)
