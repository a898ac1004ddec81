"""``evaluate``: index the corpus with each system, run every question, score.

Everything here is system-agnostic: systems only score units and expand hits; ranking
(ties broken by corpus order), gold-sentence ranks (ties counted against the gold),
recall/MRR and the budgeted coverage are computed the same way for all of them.
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

from landmark_rag.datasets import Article, parse_squad, read_squad
from landmark_rag.evaluation.context import Passage, contexts_by_budget
from landmark_rag.evaluation.corpus import Corpus, build_corpus
from landmark_rag.evaluation.data import _EvalSet, choose_articles
from landmark_rag.evaluation.metrics import answer_in_context, gold_rank, mrr_at, rank_order, recall_at
from landmark_rag.evaluation.systems import SYSTEMS, System, Workspace, choose_systems

logger = logging.getLogger(__name__)

DEFAULT_BUDGETS: tuple[int, ...] = (64, 128, 256, 512)
RECALL_KS: tuple[int, ...] = (1, 5, 10)
MRR_K = 10
#: Units sorted per question before falling back to a full sort (enough for 512 tokens
#: of sentences many times over).
_TOP = 256
_QUERY_BATCH = 512


def _run_articles(
    data: str | os.PathLike[str] | Sequence[Article] | dict[str, Any],
    select_spec: str | None,
    titles: Sequence[str] | None,
    max_articles: int | None,
    max_questions: int | None,
) -> tuple[str, list[Article]]:
    """Where the data came from (the result's ``"data"``) and the articles the run uses."""
    if isinstance(data, str | os.PathLike):
        source, articles = os.fspath(data), read_squad(data)
    elif isinstance(data, _EvalSet):
        source, articles = data.source, data.articles
    elif isinstance(data, dict):
        source, articles = "<squad json>", parse_squad(data)
    else:
        source, articles = "<articles>", list(data)
    chosen = choose_articles(
        articles, select_spec=select_spec, titles=titles, max_articles=max_articles, max_questions=max_questions
    )
    return source, chosen


def _passages(system: System, corpus: Corpus, order: np.ndarray, scores: np.ndarray) -> Iterator[Passage]:
    """Passages in rank order: the pre-sorted top units, then (rarely) the rest.

    A system with ``passage_for(unit, scores)`` (query-dependent expansion) gets the
    question's scores too. A sentence-unit system's passage grew from its hit, the ranked
    sentence, so it carries where that sentence ends (a budget's cut keeps the hit)."""
    for_query = getattr(system, "passage_for", None)

    def one(u: int) -> Passage:
        doc, start, end = for_query(u, scores) if for_query is not None else system.passage(u)
        return Passage(doc, start, end, int(corpus.sent_end[u]) if system.sentence_units else None)

    for u in order:
        yield one(int(u))
    if len(order) < scores.shape[0]:
        rest = rank_order(scores)[len(order) :]
        for u in rest:
            yield one(int(u))


def evaluate_system(
    system: System, corpus: Corpus, workspace: Workspace, budgets: Sequence[int], *, show_progress: bool = False
) -> dict[str, float]:
    """Build ``system`` over ``corpus`` and score it on the corpus's questions."""
    stats = system.build(corpus, workspace)
    budgets = sorted({int(b) for b in budgets})
    n = len(corpus.questions)
    covered = {b: 0 for b in budgets}
    ranks: list[int] = []
    texts = [q.question for q in corpus.questions]
    # a system whose passages depend on the budget (Evidence's lead) forms them per budget
    per_budget = getattr(system, "budgeted", None) if getattr(system, "budget_dependent", False) else None
    everything = np.arange(corpus.n_sentences, dtype=np.int64)
    bar = tqdm(total=n, desc=f"{system.name}: questions", unit="q", disable=not show_progress)
    for lo in range(0, n, _QUERY_BATCH):
        batch_scores = system.scores(texts[lo : lo + _QUERY_BATCH])
        for j in range(batch_scores.shape[0]):
            q = lo + j
            row = batch_scores[j]
            if system.sentence_units:
                ranks.append(gold_rank(row, corpus.gold[q]))
            answers = corpus.questions[q].answers
            if per_budget is not None:  # passages that depend on the budget: one search per budget
                ctxs = contexts_by_budget(budgets, corpus.tokens, per_budget=partial(per_budget, everything, row))
            else:
                order = rank_order(row, top=min(_TOP, row.shape[0]))
                ctxs = contexts_by_budget(budgets, corpus.tokens, ranking=_passages(system, corpus, order, row))
            for b, ctx in ctxs.items():
                covered[b] += answer_in_context(answers, ctx.texts(corpus.texts))
        bar.update(batch_scores.shape[0])
    bar.close()
    out: dict[str, float] = {}
    if system.sentence_units and ranks:
        for k in RECALL_KS:
            out[f"recall@{k}"] = recall_at(ranks, k)
        out[f"mrr@{MRR_K}"] = mrr_at(ranks, MRR_K)
    for b in budgets:
        out[f"coverage@{b}"] = covered[b] / n if n else 0.0
    out.update(stats.cost_metrics(n, system.query_seconds))
    if stats.shared_with:
        logger.info("%s reused the %s encoding; its indexing figures are %s's", system.name, stats.shared_with,
                    stats.shared_with)
    return out


def evaluate(
    data: str | os.PathLike[str] | Sequence[Article] | dict[str, Any],
    systems: Sequence[str] | None = None,
    budgets: Sequence[int] = DEFAULT_BUDGETS,
    model: str | None = None,
    *,
    base_model: str | None = None,
    select: str | None = None,
    titles: Sequence[str] | None = None,
    max_articles: int | None = None,
    max_questions: int | None = None,
    device: str | None = None,
    batch_size: int = 32,
    show_progress: bool = False,
    expansions: Sequence[str] | None = None,
) -> dict[str, Any]:
    """Evaluate retrieval systems on SQuAD-format data; returns the JSON-ready result.

    ``data``: a path to any SQuAD-format file, parsed SQuAD JSON, or a list of
    :class:`~landmark_rag.datasets.Article`. ``select`` (the selection spec of
    :func:`landmark_rag.datasets.select`, as in a training config: ``"13:16"``,
    ``"@held-out.txt"``) and ``titles`` (whole titles) restrict the run to those articles,
    kept in the data's order (held-out evaluation); ``max_articles``/``max_questions`` make
    quick runs.
    All selected articles form one corpus: every question is answered against all of them.
    ``expansions`` (e.g. ``["front", "surround", "evidence"]``) evaluates the landmark and
    hybrid systems once per boundary expansion (rows ``landmark-front``, ``hybrid-front``
    ...) instead of with the model's own.
    ``model``: the landmark model (``None``: the package default); ``base_model``: the
    model of the baselines (default: the landmark model's base, else the model itself).

    Returns ``{"data", "questions", "systems": {name: {metric: value}}, ...}``; metrics a
    system does not have (recall for chunk systems, vectors for BM25) are absent.
    """
    names = list(systems) if systems else list(SYSTEMS)
    chosen = choose_systems(names, expansions)
    if not budgets or any(int(b) <= 0 for b in budgets):
        raise ValueError("budgets must be positive token counts")
    source, articles = _run_articles(data, select, titles, max_articles, max_questions)
    if not articles:
        raise ValueError("no articles selected")
    t0 = time.perf_counter()
    workspace = Workspace(model=model, base_model=base_model, device=device, batch_size=batch_size,
                          show_progress=show_progress)
    base = workspace.base_encoder()
    corpus = build_corpus(articles, base, show_progress=show_progress)
    if not corpus.questions:
        raise ValueError("the selected articles have no answerable questions")
    results: dict[str, dict[str, float]] = {}
    for system in chosen:
        results[system.name] = evaluate_system(system, corpus, workspace, budgets, show_progress=show_progress)
    return {
        "data": source,
        "questions": len(corpus.questions),
        "articles": len(corpus.texts),
        "sentences": corpus.n_sentences,
        "tokens": corpus.n_tokens,
        "model": workspace.landmark_encoder().model_name,
        "base_model": base.model_name,
        "budgets": sorted({int(b) for b in budgets}),
        "elapsed_s": time.perf_counter() - t0,
        "systems": results,
    }
