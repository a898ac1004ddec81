"""``landmark-rag query "QUESTION"``: the k best passages, or those that fill a token budget,
expanded from sentence hits."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import typer

from landmark_rag.cli import app
from landmark_rag.cli._common import (
    CollectionOption,
    DbOption,
    DeviceOption,
    check_choice,
    console,
    export_for_queries,
    open_query_index,
)

STRATEGIES = ("front", "surround", "adaptive", "evidence")
MODES = ("hybrid", "dense", "lexical")


@app.command("query")
def query_command(
    question: str | None = typer.Argument(None, help="The question (or use --questions FILE)."),
    db: str = DbOption,
    k: int | None = typer.Option(
        None, "-k", "--k", min=1, help="Number of passages (default 3; with --max-tokens: at most this many)."
    ),
    max_tokens: int | None = typer.Option(
        None, "--max-tokens", min=1,
        help="Token budget: the passages, in rank order, add up to at most this many tokens of the model's "
        "tokenizer (a passage that does not fit whole is cut between sentences, around its hit; never less "
        "than one sentence).",
    ),
    strategy: str | None = typer.Option(
        None, "--strategy",
        help="Expansion: front, surround, adaptive or evidence (default: what the model's config names).",
    ),
    mode: str | None = typer.Option(
        None, "--mode",
        help="hybrid (vectors fused with sentence BM25), dense or lexical (default: what the model's config names; "
        "the lexical index is built from the stored sentences on first use, vectors are not re-indexed).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print JSON on stdout instead of text."),
    html_file: Path | None = typer.Option(None, "--html", dir_okay=False, help="Also write an HTML page here."),
    questions_file: Path | None = typer.Option(
        None, "--questions", exists=True, dir_okay=False,
        help="Many questions: a text file (one a line) or a JSON list of strings.",
    ),
    collection: str = CollectionOption,
    model: str | None = typer.Option(None, "--model", help="Model to query with (default: the one the store records)."),
    device: str | None = DeviceOption,
) -> None:
    """Retrieve passages for a question.

    Prints each passage with its source file, character span, score and the hit sentence
    highlighted. ``--json``: a list of objects with source, doc_id, start, end, text, score
    (ranks this question's passages), cosine (query to the best hit's vector: comparable
    across questions), first_sentence, last_sentence, hit_sentences; with ``--questions`` a list of
    {"question", "passages"} objects. The model recorded in the store is used unless
    ``--model`` says otherwise (a different model is refused, exit code 3).
    """
    check_choice(strategy, STRATEGIES, "--strategy")
    check_choice(mode, MODES, "--mode")
    if question is not None and questions_file is None:
        if not question.strip():
            raise typer.BadParameter("the question is blank", param_hint="QUESTION")
        questions = [question]
    elif question is None and questions_file is not None:
        questions = _read_questions(questions_file)
    else:
        raise typer.BadParameter("give either a QUESTION or --questions FILE", param_hint="QUESTION")
    if html_file is not None and len(questions) != 1:
        raise typer.BadParameter("--html writes the page of a single question", param_hint="--html")

    from landmark_rag.expand.strategies import strategy_name

    index = open_query_index(db, collection, model=model, device=device)
    strat = index.resolve_strategy(strategy_name(strategy) if strategy is not None else None)
    strategy = type(strat).__name__.lower()
    mode = index.resolve_mode(mode.lower() if mode is not None else None)
    if k is None and max_tokens is None:
        k = 3
    found = index.search_many(
        questions, k, max_tokens=max_tokens, strategy=strat, show_progress=len(questions) > 64, mode=mode
    )
    results = [(q, passages, _hits(index.sentence_store, passages)) for q, passages in zip(questions, found, strict=True)]
    if model is None:  # the store's own model, loaded the slow way: the next cold query need not
        export_for_queries(index.encoder)

    if html_file is not None:
        _write_html(html_file, index, results[0], subtitle=f"{index.encoder.model_name} · {_limit(k, max_tokens)} · {strategy} · {mode} · {db}")
    if as_json:
        rows = [[_passage_json(p, hs, r) for r, (p, hs) in enumerate(zip(ps, hits), 1)] for _, ps, hits in results]
        payload: Any = rows[0] if question is not None else [
            {"question": q, "passages": row} for (q, *_), row in zip(results, rows, strict=True)
        ]
        from landmark_rag.render import json_dumps

        sys.stdout.write(json_dumps(payload, indent=1) + "\n")
        return
    for q, passages, hits in results:
        _print_passages(q, passages, hits, show_question=len(results) > 1)
    if html_file is not None:
        console.print(f"wrote {html_file}", markup=False)


def _limit(k: int | None, max_tokens: int | None) -> str:
    """How many passages were asked for, as the page's subtitle says it."""
    parts = ([f"k={k}"] if k is not None else []) + ([f"≤{max_tokens} tokens"] if max_tokens is not None else [])
    return " · ".join(parts)


def _read_questions(path: Path) -> list[str]:
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() == ".json":
        data = json.loads(text)
        if not isinstance(data, list) or not all(isinstance(x, str) for x in data):
            raise typer.BadParameter("a JSON questions file must hold a list of strings", param_hint="--questions")
        items = data
    else:
        items = text.splitlines()
    questions = [q.strip() for q in items if q.strip()]
    if not questions:
        raise typer.BadParameter("the questions file is empty", param_hint="--questions")
    return questions


def _hits(store, passages):
    from landmark_rag.render import passage_hits

    return passage_hits(store, passages)


def _passage_json(p, hits, rank: int) -> dict[str, Any]:
    from landmark_rag.render import passage_source

    return {
        "rank": rank,
        "source": passage_source(p),
        "doc_id": p.doc_id,
        "start": p.start,
        "end": p.end,
        "first_sentence": p.first_index,
        "last_sentence": p.last_index,
        "score": round(float(p.score), 6),
        "cosine": None if p.cosine is None else round(float(p.cosine), 6),
        "pages": p.pages,
        "heading": p.heading,
        "text": p.text,
        "hit_sentences": [
            {"index": s.index, "start": s.start, "end": s.end, "page": s.page, "heading": s.heading, "text": s.text}
            for s in hits
        ],
    }


def _print_passages(question: str, passages, hits, *, show_question: bool) -> None:
    from rich.text import Text

    from landmark_rag.render import hit_segments, passage_location, passage_source, sanitize

    if show_question:
        console.print(Text(f"\n? {question}", style="bold"))
    if not passages:
        # an empty store, or a lexical search where no sentence shares a word with the question
        console.print("no passages: no stored sentence matches the question", markup=False)
        return
    for rank, (p, hs) in enumerate(zip(passages, hits, strict=True), start=1):
        head = Text()
        head.append(f"#{rank} ", style="bold blue")
        head.append(sanitize(passage_source(p)), style="bold")
        if where := passage_location(p):
            head.append(f"  {sanitize(where)}", style="bold")
        cosine = "" if p.cosine is None else f"  cosine {p.cosine:.3f}"
        head.append(f"  chars {p.start}-{p.end}  sentences {p.first_index}-{p.last_index}  score {p.score:.3f}{cosine}",
                    style="dim")
        body = Text()
        for piece, is_hit in hit_segments(p, hs):
            body.append(sanitize(piece), style="bold black on yellow" if is_hit else None)
        console.print(head)
        console.print(body)
        console.print()


def _write_html(path: Path, index, result, *, subtitle: str) -> None:
    from landmark_rag.render import document_views, passage_source, render_page

    question, passages, hits = result
    page = render_page(
        question, passages, hits, document_views(index.sentence_store, passages, index.encode_query(question)),
        sources=[passage_source(p) for p in passages], subtitle=subtitle,
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(page, encoding="utf-8")
