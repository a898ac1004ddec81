"""The long-evidence benchmark: how much of a multi-sentence gold evidence span a reader gets
within a token budget.

Why not the SQuAD harness's coverage: there the gold is a short answer inside one sentence, so
"the answer string is in the text read" says everything. Here the gold is a span of several
sentences (a story section, a passage), and a system that finds the right place but returns
a fragment of it should score lower than one that returns the whole span. So, per question
and budget ``B`` (tokens of the base model's tokenizer):

- the search runs within the question's own document (the equivalent of a
  ``where={"doc_id": ...}`` filter): all documents are indexed together, and each question
  ranks only its document's units;
- the passages are read in rank order and laid out by
  :func:`~landmark_rag.evaluation.context.assemble_context`, as the SQuAD harness does: text
  already read is not paid for twice, and the passage that crosses ``B`` is cut at the token
  where the budget ends (a passage grown from a hit sentence keeps the tokens that end at
  its hit, the harness's rule, so the cut never drops the sentence that was retrieved);
- ``found@B``: some gold evidence character is inside the text read;
- ``recall@B``: the share of gold evidence characters inside the text read (characters,
  not tokens: the gold is character spans and every system's passages are character spans,
  so no tokenizer decides what counts);
- ``R@1`` (sentence-unit systems): the top-ranked sentence overlaps the gold evidence;
- ``cov@B`` (the SQuAD harness's answer coverage): a reference answer occurs in the text read,
  over the questions whose answer occurs verbatim (normalised) in their evidence only,
  since for the others no text read could contain it.

Every system of the SQuAD harness is reused as it is (``landmark_rag.evaluation.systems``);
a system ranks all units of the question's document, so it can always fill the largest
budget (no fixed ``k``).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np
from tqdm.auto import tqdm

from landmark_rag.datasets import Article, Question
from landmark_rag.datasets.longevidence import LongEvidenceSet, load_long_evidence
from landmark_rag.evaluation.context import Passage, contexts_by_budget
from landmark_rag.evaluation.corpus import Corpus, build_corpus
from landmark_rag.evaluation.metrics import answer_in_context, rank_order
from landmark_rag.evaluation.systems import System, Workspace, choose_systems

logger = logging.getLogger(__name__)

#: the benchmark's budgets (tokens of the base model's tokenizer)
DEFAULT_BUDGETS: tuple[int, ...] = (256, 512, 1024)
#: the benchmark's systems: the package's default search (hybrid), its dense half alone
#: (landmark), lexical (bm25), 256- and 512-token chunks embedded alone, late chunking and
#: sentence windows
DEFAULT_SYSTEMS: tuple[str, ...] = (
    "hybrid", "landmark", "bm25", "chunk256", "chunk512", "late-chunking", "sentence-window",
)
#: the budget at which answer coverage is reported (the SQuAD harness's middle budget)
COVERAGE_BUDGET = 256
_QUERY_BATCH = 256


def overlap(spans: Sequence[tuple[int, int]], gold: Sequence[tuple[int, int]]) -> int:
    """Characters of the sorted, disjoint ``gold`` spans inside the union of ``spans``."""
    total = 0
    merged: list[list[int]] = []
    for s, e in sorted(spans):
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        elif e > s:
            merged.append([s, e])
    for gs, ge in gold:
        for s, e in merged:
            if e <= gs:
                continue
            if s >= ge:
                break
            total += min(e, ge) - max(s, gs)
    return total


def evidence_scores(spans: Sequence[tuple[int, int]], gold: Sequence[tuple[int, int]]) -> tuple[bool, float]:
    """``(found, recall)`` of the text read (``spans`` of the question's document) against its
    gold evidence: any gold character read, and the share of gold characters read."""
    n = sum(e - s for s, e in gold)
    hit = overlap(spans, gold)
    return hit > 0, (hit / n if n else 0.0)


def as_articles(data: LongEvidenceSet) -> list[Article]:
    """The documents as the harness's :class:`Article` records (so :func:`build_corpus`
    segments and tokenises them once). A question's "answers" are its evidence spans' texts,
    at their starts: the records need an exact answer, and the spans are exact."""
    out = []
    for d in data.documents:
        qs = tuple(Question(q.qid, q.question, tuple(d.text[s:e] for s, e in q.evidence),
                            tuple(s for s, _ in q.evidence)) for q in d.questions)
        out.append(Article(d.doc_id, d.title, d.text, questions=qs, source=d.source))
    return out


class _Units:
    """Which units of a system belong to which document, for searching within one document."""

    def __init__(self, system: System, n_units: int) -> None:
        docs = np.asarray([system.passage(u)[0] for u in range(n_units)], dtype=np.int64)
        self.order = np.argsort(docs, kind="stable")
        self.bounds = np.searchsorted(docs[self.order], np.arange(int(docs.max(initial=-1)) + 2))

    def of(self, doc: int) -> np.ndarray:
        if doc + 1 >= len(self.bounds):
            return np.zeros(0, dtype=np.int64)
        return self.order[self.bounds[doc] : self.bounds[doc + 1]]


def _ranked_passages(system: System, corpus: Corpus, units: np.ndarray, row: np.ndarray) -> Iterator[Passage]:
    """The passages of ``units`` (one document's) in rank order, lazily: a budget consumes
    only what it needs. Ties are broken by unit index (corpus order), as the harness does."""
    for_query = getattr(system, "passage_for", None)
    for i in rank_order(row[units]):
        u = int(units[int(i)])
        doc, start, end = for_query(u, row) if for_query is not None else system.passage(u)
        yield Passage(doc, start, end, int(corpus.sent_end[u]) if system.sentence_units else None)


def _sentence_overlaps(corpus: Corpus, unit: int, gold: Sequence[tuple[int, int]]) -> bool:
    s, e = int(corpus.sent_start[unit]), int(corpus.sent_end[unit])
    return overlap([(s, e)], gold) > 0


def evaluate_long_evidence_system(
    system: System,
    corpus: Corpus,
    workspace: Workspace,
    evidence: Sequence[Sequence[tuple[int, int]]],
    answers: Sequence[Sequence[str]],
    budgets: Sequence[int],
    *,
    show_progress: bool = False,
) -> dict[str, Any]:
    """Build ``system`` over ``corpus`` and score it; per-question values are kept for the
    per-source breakdown (``"per_question"``, popped by the caller)."""
    stats = system.build(corpus, workspace)
    budgets = sorted({int(b) for b in budgets})
    n = len(corpus.questions)
    n_units = stats.units
    units = _Units(system, n_units)
    found = np.zeros((len(budgets), n), dtype=bool)
    recall = np.zeros((len(budgets), n), dtype=np.float64)
    covered = np.zeros(n, dtype=bool)
    top1 = np.zeros(n, dtype=bool)
    texts = [q.question for q in corpus.questions]
    cov_b = COVERAGE_BUDGET if COVERAGE_BUDGET in budgets else budgets[0]
    # a system whose passages depend on the budget (Evidence's lead) forms them per budget
    per_budget = getattr(system, "budgeted", None) if getattr(system, "budget_dependent", False) else None
    bar = tqdm(total=n, desc=f"{system.name}: questions", unit="q", disable=not show_progress)
    for lo in range(0, n, _QUERY_BATCH):
        batch = system.scores(texts[lo : lo + _QUERY_BATCH])
        for j in range(batch.shape[0]):
            q = lo + j
            doc = int(corpus.question_doc[q])
            mine = units.of(doc)
            row = batch[j]
            if system.sentence_units and len(mine):
                best = int(mine[int(rank_order(row[mine], top=1)[0])])
                top1[q] = _sentence_overlaps(corpus, best, evidence[q])
            if per_budget is not None:  # passages that depend on the budget: one search per budget
                ctxs = contexts_by_budget(budgets, corpus.tokens, per_budget=partial(per_budget, mine, row))
            else:
                ctxs = contexts_by_budget(budgets, corpus.tokens, ranking=_ranked_passages(system, corpus, mine, row))
            for bi, b in enumerate(budgets):
                found[bi, q], recall[bi, q] = evidence_scores(ctxs[b].spans.get(doc, []), evidence[q])
                if b == cov_b and answers[q]:
                    covered[q] = answer_in_context(answers[q], ctxs[b].texts(corpus.texts))
        bar.update(batch.shape[0])
    bar.close()
    return {
        "found": found, "recall": recall, "top1": top1 if system.sentence_units else None,
        "covered": covered, "coverage_budget": cov_b, "stats": stats, "query_seconds": system.query_seconds,
    }


def _summary(raw: dict[str, Any], budgets: Sequence[int], mask: np.ndarray,
             answerable: np.ndarray) -> dict[str, float]:
    out: dict[str, float] = {}
    if not mask.any():
        return out
    if raw["top1"] is not None:
        out["recall@1"] = float(raw["top1"][mask].mean())
    for bi, b in enumerate(budgets):
        out[f"found@{b}"] = float(raw["found"][bi, mask].mean())
        out[f"evidence_recall@{b}"] = float(raw["recall"][bi, mask].mean())
    sel = mask & answerable
    if sel.any():
        out[f"coverage@{raw['coverage_budget']}"] = float(raw["covered"][sel].mean())
    return out


def evaluate_long_evidence(
    data: str | os.PathLike[str] | LongEvidenceSet,
    systems: Sequence[str] | None = None,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    model: str | None = None,
    *,
    split: str | None = "validation",
    sources: Sequence[str] | None = None,
    max_documents: int | None = None,
    max_questions_per_doc: int | None = None,
    base_model: str | None = None,
    device: str | None = None,
    batch_size: int = 32,
    show_progress: bool = False,
    expansions: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Evaluate retrieval systems on a long-evidence file; returns the JSON-ready result.

    ``expansions`` (e.g. ``["surround", "evidence"]``): the landmark and hybrid systems once
    per boundary expansion instead of with the model's own.

    ``split`` picks the benchmark split (``validation``: tune here; ``heldout``: report here;
    ``None``: both). ``max_documents`` / ``max_questions_per_doc`` make quicker runs (the
    first documents of the file, each document's first questions). Returns ``{"data",
    "split", "questions", "articles", "budgets", "systems": {name: {metric: value}},
    "by_source": {source: {name: {metric: value}}}, ...}``: metrics ``recall@1`` (sentence
    systems), ``found@B``, ``evidence_recall@B``, ``coverage@256`` and cost figures.
    """
    names = list(systems) if systems else list(DEFAULT_SYSTEMS)
    chosen = choose_systems(names, expansions)
    if not budgets or any(int(b) <= 0 for b in budgets):
        raise ValueError("budgets must be positive token counts")
    budgets = sorted({int(b) for b in budgets})
    if isinstance(data, LongEvidenceSet):
        where, loaded = "<long-evidence set>", data
        if split is not None:
            loaded = LongEvidenceSet([d for d in data.documents if d.split == split], data.sources)
    else:
        where = os.fspath(data)
        loaded = load_long_evidence(data, split=split, sources=sources, max_questions_per_doc=max_questions_per_doc)
    docs = loaded.documents
    if sources is not None:
        docs = [d for d in docs if d.source in sources]
    if max_documents is not None:
        docs = docs[: max(0, max_documents)]
    if max_questions_per_doc is not None:
        docs = [type(d)(d.doc_id, d.source, d.source_split, d.title, d.text, d.split,
                        d.questions[:max_questions_per_doc]) for d in docs]
    loaded = LongEvidenceSet([d for d in docs if d.questions], loaded.sources)
    if not loaded.documents:
        raise ValueError("no documents with questions selected")
    t0 = time.perf_counter()
    workspace = Workspace(model=model, base_model=base_model, device=device, batch_size=batch_size,
                          show_progress=show_progress)
    base = workspace.base_encoder()
    corpus = build_corpus(as_articles(loaded), base, show_progress=show_progress)
    by_id = {q.qid: (d, q) for d in loaded.documents for q in d.questions}
    evidence = [by_id[q.qid][1].evidence for q in corpus.questions]
    question_source = np.asarray([by_id[q.qid][0].source for q in corpus.questions])
    answers: list[tuple[str, ...]] = []
    for q in corpus.questions:
        d, eq = by_id[q.qid]
        gold_text = [d.text[s:e] for s, e in eq.evidence]
        # only answers the evidence holds verbatim can be covered by any text read
        answers.append(tuple(a for a in eq.answers if answer_in_context([a], gold_text)))
    answerable = np.asarray([bool(a) for a in answers])
    everyone = np.ones(len(corpus.questions), dtype=bool)
    results: dict[str, dict[str, float]] = {}
    per_source: dict[str, dict[str, dict[str, float]]] = {}
    source_names = sorted(set(question_source.tolist()))
    for system in chosen:
        raw = evaluate_long_evidence_system(system, corpus, workspace, evidence, answers, budgets,
                                            show_progress=show_progress)
        metrics = _summary(raw, budgets, everyone, answerable)
        stats = raw["stats"]
        metrics.update(stats.cost_metrics(len(corpus.questions), raw["query_seconds"]))
        results[system.name] = metrics
        for src in source_names:
            per_source.setdefault(src, {})[system.name] = _summary(raw, budgets, question_source == src, answerable)
    counts = {src: int((question_source == src).sum()) for src in source_names}
    return {
        "data": where,
        "benchmark": "long-evidence",
        "split": split or "all",
        "questions": len(corpus.questions),
        "questions_by_source": counts,
        "answer_coverage_questions": int(answerable.sum()),
        "articles": len(corpus.texts),
        "sentences": corpus.n_sentences,
        "tokens": corpus.n_tokens,
        "model": workspace.landmark_encoder().model_name,
        "base_model": base.model_name,
        "budgets": budgets,
        "search": "within the question's document",
        "recall_unit": "characters",
        "elapsed_s": time.perf_counter() - t0,
        "systems": results,
        "by_source": per_source,
    }


_HEADERS = {"recall@1": "R@1"}


def _header(key: str) -> str:
    if key in _HEADERS:
        return _HEADERS[key]
    if key.startswith("evidence_recall@"):
        return "recall@" + key.split("@")[1]
    return key.replace("coverage@", "cov@")


def quality_columns(result: dict[str, Any]) -> list[str]:
    """The quality columns in reading order: R@1, then found/recall per budget, then cov@B."""
    cols = ["recall@1"]
    for b in result["budgets"]:
        cols += [f"found@{b}", f"evidence_recall@{b}"]
    cols += sorted({k for m in result["systems"].values() for k in m if k.startswith("coverage@")})
    return cols


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def markdown_tables(result: dict[str, Any]) -> str:
    """The result as GitHub markdown: all questions, then one table per source set."""
    cols = quality_columns(result)

    def table(rows: dict[str, dict[str, float]]) -> list[str]:
        lines = ["| system | " + " | ".join(_header(c) for c in cols) + " |", "|---|" + "---:|" * len(cols)]
        for name, m in rows.items():
            lines.append(f"| {name} | " + " | ".join(_fmt(m.get(c)) for c in cols) + " |")
        return lines

    out = [f"All {result['questions']} questions ({result['articles']} documents):", "", *table(result["systems"])]
    for src, rows in result.get("by_source", {}).items():
        out += ["", f"{src} ({result['questions_by_source'][src]} questions):", "", *table(rows)]
    return "\n".join(out)


def render_tables(result: dict[str, Any]) -> list[Any]:
    """``rich.table.Table``s: quality over all questions, per source set when there are
    several, and indexing cost."""
    from rich.table import Table

    from landmark_rag.evaluation.report import render_tables as cost_tables

    cols = quality_columns(result)
    title = (f"long-evidence {result['split']}: {result['questions']} questions, {result['articles']} documents, "
             f"model {result['model']} (search within each question's document)")
    groups = [(title, result["systems"])]
    if len(result.get("by_source", {})) > 1:
        groups += [(f"{src}: {result['questions_by_source'][src]} questions", rows)
                   for src, rows in result["by_source"].items()]
    tables = []
    for caption, rows in groups:
        t = Table(title=caption)
        t.add_column("system", style="bold", no_wrap=True)
        for c in cols:
            t.add_column(_header(c), justify="right", no_wrap=True)
        for name, m in rows.items():
            t.add_row(name, *(_fmt(m.get(c)) for c in cols))
        tables.append(t)
    tables.append(cost_tables(result)[1])  # the SQuAD report's cost table reads the same keys
    return tables


__all__ = [
    "DEFAULT_BUDGETS",
    "DEFAULT_SYSTEMS",
    "as_articles",
    "evaluate_long_evidence",
    "evaluate_long_evidence_system",
    "evidence_scores",
    "markdown_tables",
    "overlap",
    "quality_columns",
    "render_tables",
]
