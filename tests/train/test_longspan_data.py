"""Multi-sentence answer spans: the FairytaleQA converter, the benchmark exclusion, the span the
trainer derives, and the shipped longspan-v1 recipe.

The converter runs on a hand-written sample in FairytaleQA's file layout
(tests/data/longspan-sample) with a stand-in long-evidence benchmark; the real recipe
(data/training/longspan-v1.json) is checked against the real benchmark file without its raw
files. Why these checks: the training set must never hold a benchmark story (under any file
name), and the trainer must see each question's whole cited section run as its span, with the
last sentence of the last cited section as the sentence the query should land on.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from landmark_rag.datasets import read_longdocs
from landmark_rag.datasets.longevidence import load_long_evidence
from landmark_rag.train.data_longdoc import LongDocBuilder
from landmark_rag.train.documents import resolve_data_path, segment_articles
from landmark_rag.train.prepare import DOCUMENTS_FILE, MANIFEST_FILE, load_recipe, prepare
from landmark_rag.train.prepare.exclude import exclusion_reason
from landmark_rag.train.prepare.overlap import is_copy, shingles
from landmark_rag.train.prepare.recipe import normalise_title
from landmark_rag.train.prepare.sources import fairytale_title, fairytaleqa_documents

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "longspan-sample"
RAW = SAMPLE / "raw" / "fairytale-sample"
RECIPE = ROOT / "data" / "training" / "longspan-v1.json"
BENCHMARK = ROOT / "data" / "long-evidence" / "long-evidence-v1.json"


def _sample_documents():
    return {d.title: d for d in fairytaleqa_documents(sorted(RAW.rglob("*.csv")), "fts", "fiction")}


def _sections(name: str) -> dict[int, str]:
    import csv

    with (RAW / "section-stories" / "train" / f"{name}-story.csv").open(encoding="utf-8", newline="") as f:
        return {int(r["section"]): r["text"] for r in csv.DictReader(f)}


@pytest.fixture(scope="module")
def prepared(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("longspan")
    prepare(SAMPLE / "longspan-sample.json", SAMPLE / "raw", out, show_progress=False)
    return out


def test_a_question_s_answer_is_exactly_the_run_of_sections_it_cites():
    doc = _sample_documents()["Lantern Keeper"]
    sections = _sections("lantern-keeper")
    assert doc.text == "\n\n".join(sections[n] for n in sorted(sections))
    by_id = {q.qid: q for q in doc.questions}
    # cites 1,3 (not one run) and 5 (no such section): left out
    assert sorted(by_id) == ["lantern-keeper:1", "lantern-keeper:2", "lantern-keeper:5"]
    assert by_id["lantern-keeper:1"].answer == sections[1]
    # two cited sections: the span runs from the first one's start to the second one's end
    two = by_id["lantern-keeper:2"]
    assert two.answer == sections[2] + "\n\n" + sections[3].rstrip()
    assert doc.text[two.answer_start : two.answer_end] == two.answer
    # trailing blanks of a section stay out of the span (and out of its paragraph)
    assert by_id["lantern-keeper:5"].answer == sections[3].rstrip()
    assert [doc.text[s:e] for s, e in doc.paragraphs] == [sections[1], sections[2], sections[3].rstrip()]
    assert doc.title == fairytale_title("lantern-keeper") == "Lantern Keeper"


def test_preparation_keeps_benchmark_stories_out_by_title_and_by_text(prepared):
    docs = read_longdocs(prepared / DOCUMENTS_FILE)
    assert [d.title for d in docs] == ["Lantern Keeper"]
    manifest = json.loads((prepared / MANIFEST_FILE).read_text())
    entry = manifest["sources"]["fairytale-sample"]
    # "The Glass Hill" by its title (its text differs); "Bell Of Truth" is the benchmark's
    # "The Silver Bell" under another name, caught by its text
    assert entry["excluded"] == {"benchmark document (text)": 1, "benchmark document (title)": 1}
    assert entry["questions"] == 3
    bench = load_long_evidence(SAMPLE / "long-evidence.json")
    for d in docs:
        assert normalise_title(d.title) not in {normalise_title(b.title) for b in bench.documents}
        assert not any(shingles(d.text) & shingles(b.text) for b in bench.documents)


def test_preparation_is_byte_reproducible(prepared, tmp_path):
    prepare(SAMPLE / "longspan-sample.json", SAMPLE / "raw", tmp_path, show_progress=False)
    for name in (DOCUMENTS_FILE, MANIFEST_FILE):
        assert (tmp_path / name).read_bytes() == (prepared / name).read_bytes(), name


def test_shingles_ignore_case_punctuation_and_spacing_but_not_other_words():
    text = "One two three four five six seven eight nine ten eleven twelve thirteen fourteen"
    assert shingles(text) == shingles(text.upper().replace(" ", ",\n  "))
    assert len(shingles(text)) == 3 and not shingles("too short to hold twelve words")
    assert shingles(text) != shingles(text.replace("seven", "7"))
    assert not is_copy(text, frozenset())


def _segmented(prepared: Path):
    from landmark_rag.segment import segment_sentences

    docs = read_longdocs(prepared / DOCUMENTS_FILE)
    return segment_articles(docs, lambda text, title: segment_sentences(text, doc_id=title))


def test_the_trainer_s_span_is_every_sentence_of_the_cited_sections_ending_at_the_last(prepared):
    (art,) = _segmented(prepared)
    sentences = art.sentences
    for q in art.article.questions:
        span = art.answer_span(q)
        inside = [i for i, s in enumerate(sentences) if q.answer_start <= s.start < q.answer_end]
        assert span == inside and len(span) >= 2  # several sentences, none outside the sections
        assert sentences[span[0]].start == q.answer_start
        # z: the last sentence of the last cited section
        assert sentences[span[-1]].text.rstrip().endswith(q.answer.rstrip()[-20:])
    two = next(q for q in art.article.questions if q.qid == "lantern-keeper:2")
    assert [sentences[i].text.split()[0] for i in art.answer_span(two)] == ["One", "The", "So", "That", "The"]


def test_windows_carry_the_whole_span_with_the_paper_s_weights_anchored_at_its_end(prepared):
    import torch
    import torch.nn.functional as F

    from landmark_rag.train.loss import position_aware_contrastive_loss

    (art,) = _segmented(prepared)
    lengths = [[len(s.text.split()) + 1 for s in art.sentences]]
    builder = LongDocBuilder([art], lengths, 200, examples_per_batch=1, queries_per_example=8, landmark_tokens=1)
    spans = {q.question: art.answer_span(q) for q in art.article.questions}
    ex = builder.example(0, random.Random(0))
    lo = int(ex.doc_id.split("[")[1].split(":")[0])
    assert len(ex.queries) == 3
    for query, span in zip(ex.queries, ex.spans, strict=True):
        assert [lo + i for i in span] == spans[query]  # the whole span (the window holds the story)
    # w_i = exp(-alpha * i), i counted back from the span's LAST sentence z
    gen = torch.Generator().manual_seed(0)
    units = F.normalize(torch.randn(len(ex.units), 8, generator=gen), dim=-1)
    queries = F.normalize(torch.randn(len(ex.queries), 8, generator=gen), dim=-1)
    logp = F.log_softmax(queries @ units.T / 0.05, dim=-1)
    want = torch.stack([
        -sum(torch.exp(torch.tensor(-0.08 * (span[-1] - u))) * logp[j, u] for u in span) for j, span in enumerate(ex.spans)
    ]).mean()
    got = position_aware_contrastive_loss(queries, units, ex.spans, temperature=0.05, alpha=0.08)
    assert got.item() == pytest.approx(want.item(), rel=1e-5)


def test_the_shipped_recipe_reads_only_training_stories_and_excludes_every_benchmark_story():
    recipe = load_recipe(RECIPE)
    bench = load_long_evidence(BENCHMARK)
    (source,) = recipe.sources
    assert source.repo == "uci-soe/FairytaleQAData" and len(source.commit) == 40 and source.licence
    files = recipe.files[source.name]
    # FairytaleQA's train split only: never its val/test stories, which the benchmark is built from
    assert files and all(f.startswith(("section-stories/train/", "questions/train/")) for f in files)
    assert all(len(recipe.checksums[f"{source.name}/{f}"]) == 64 for f in files)
    assert source.url(files[0]) == (
        f"https://raw.githubusercontent.com/uci-soe/FairytaleQAData/{source.commit}/data-by-train-split/{files[0]}"
    )
    stems = {Path(f).name.removesuffix("-story.csv").removesuffix("-questions.csv") for f in files}
    bench_names = {d.doc_id.removeprefix("fairytaleqa:") for d in bench.documents}
    assert len(bench_names) == 37 and not stems & bench_names
    assert not {normalise_title(fairytale_title(s)) for s in stems} & recipe.benchmark_titles
    # every benchmark story is refused by its title, and by its text under any other title
    assert recipe.benchmark_titles == {normalise_title(d.title) for d in bench.documents}
    for d in bench.documents:
        assert exclusion_reason(recipe, d.title) == "benchmark document (title)"
        assert exclusion_reason(recipe, "Renamed " + d.title, d.text) == "benchmark document (text)"
        assert exclusion_reason(recipe, "Renamed " + d.title, d.text[: len(d.text) // 3]) == "benchmark document (text)"
    # and the SQuAD development articles, as in every recipe
    assert exclusion_reason(recipe, "Prime_number") == "evaluation article"


@pytest.mark.slow  # needs the set prepared from its source files (`landmark-rag train --prepare`), not in a clone
def test_the_prepared_longspan_set_holds_no_benchmark_story():
    """Runs where longspan-v1 has been prepared into the cache (skipped elsewhere)."""
    from landmark_rag.train.config import TrainingInputError

    try:
        folder = Path(resolve_data_path("prepared:longspan-v1"))
    except TrainingInputError:
        pytest.skip("longspan-v1 is not prepared on this machine")
    recipe = load_recipe(RECIPE)
    docs = read_longdocs(folder)
    assert len(docs) == 232 and sum(len(d.questions) for d in docs) == 8379
    for d in docs:
        assert exclusion_reason(recipe, d.title, d.text) is None
