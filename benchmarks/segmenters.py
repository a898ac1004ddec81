"""Compare candidate sentence segmenters for speed and quality on SQuAD articles.

Quality has two parts:
- a small hand-labelled suite of hard cases (abbreviations, decimals, quotes, lists,
  paragraph breaks, no punctuation), scored as exact boundary match;
- on data/squad-v1.1-dev-part-a.json: the fraction of SQuAD answers that straddle a sentence boundary
  (lower is better) together with the mean sentence length (over-merging also lowers the
  straddle rate, so both are shown).

Run: python benchmarks/segmenters.py [--data data/squad-v1.1-dev-part-a.json]
"""

from __future__ import annotations

import argparse
import json
import re
import time
from collections.abc import Callable
from pathlib import Path

Spans = list[tuple[int, int]]


def _strip(text: str, spans: Spans) -> Spans:
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


def seg_sentencex(text: str) -> Spans:
    import sentencex

    return _strip(text, [(b["start_index"], b["end_index"]) for b in sentencex.get_sentence_boundaries("en", text)])


def seg_blingfire(text: str) -> Spans:
    import blingfire

    return _strip(text, list(blingfire.text_to_sentences_and_offsets(text)[1]))


_PYSBD = None


def seg_pysbd(text: str) -> Spans:
    global _PYSBD
    import pysbd

    if _PYSBD is None:
        _PYSBD = pysbd.Segmenter(language="en", clean=False, char_span=True)
    return _strip(text, [(s.start, s.end) for s in _PYSBD.segment(text)])


def seg_syntok(text: str) -> Spans:
    import syntok.segmenter as sg

    spans = []
    for para in sg.analyze(text):
        for sent in para:
            spans.append((sent[0].offset, sent[-1].offset + len(sent[-1].value)))
    return _strip(text, spans)


def seg_punkt_untrained(text: str) -> Spans:
    # The pretrained English punkt model needs a download (no hub here); this is punkt
    # with its default, untrained parameters, which is what an offline user gets.
    from nltk.tokenize.punkt import PunktSentenceTokenizer

    return _strip(text, list(PunktSentenceTokenizer().span_tokenize(text)))


def seg_regex(text: str) -> Spans:
    spans, start = [], 0
    for m in re.finditer(r"(?<=[.!?])\s+(?=[A-Z\"'(])|\n\s*\n", text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    return _strip(text, spans)


CANDIDATES: dict[str, Callable[[str], Spans]] = {
    "sentencex": seg_sentencex,
    "blingfire": seg_blingfire,
    "pysbd": seg_pysbd,
    "syntok": seg_syntok,
    "punkt(untrained)": seg_punkt_untrained,
    "regex": seg_regex,
}

# (text, expected sentences). Written for this benchmark.
HARD_CASES: list[tuple[str, list[str]]] = [
    ("Dr. Smith arrived at 5 p.m. on Monday. He left early.", ["Dr. Smith arrived at 5 p.m. on Monday.", "He left early."]),
    ("The price rose 3.5 percent in 2015. Analysts, e.g. Mr. Lee, were surprised.",
     ["The price rose 3.5 percent in 2015.", "Analysts, e.g. Mr. Lee, were surprised."]),
    ('"Is it over?" she asked. "Yes," he said.', ['"Is it over?" she asked.', '"Yes," he said.']),
    ("Shopping list:\n- apples\n- pears\n- plums", ["Shopping list:", "- apples", "- pears", "- plums"]),
    ("First paragraph without a stop\n\nSecond paragraph. It has two sentences.",
     ["First paragraph without a stop", "Second paragraph.", "It has two sentences."]),
    ("no punctuation at all just words flowing on", ["no punctuation at all just words flowing on"]),
    ("The U.S. Army won. Then it rained!", ["The U.S. Army won.", "Then it rained!"]),
    ("See section 4.2. It explains the rule (see Fig. 3). Done.",
     ["See section 4.2.", "It explains the rule (see Fig. 3).", "Done."]),
    ("1. Install it.\n2. Run it.\n3. Enjoy.", ["1. Install it.", "2. Run it.", "3. Enjoy."]),
    ("He said: \"Stop.\" Then he went home.", ['He said: "Stop."', "Then he went home."]),
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="data/squad-v1.1-dev-part-a.json")
    args = ap.parse_args()
    data = json.loads(Path(args.data).read_text(encoding="utf-8"))["data"]
    docs = []
    answers = []  # (doc index, start, end)
    for a in data:
        offset = 0
        parts = []
        for p in a["paragraphs"]:
            for qa in p["qas"]:
                for ans in qa["answers"][:1]:
                    s = offset + ans["answer_start"]
                    answers.append((len(docs), s, s + len(ans["text"])))
            parts.append(p["context"])
            offset += len(p["context"]) + 2
        docs.append("\n\n".join(parts))
    total_chars = sum(len(d) for d in docs)
    print(f"{len(docs)} articles, {total_chars:,} characters, {len(answers)} answers")
    print(f"{'segmenter':18} {'hard cases':>10} {'straddle %':>10} {'sents':>7} {'chars/sent':>10} {'MB/s':>7}")
    for name, fn in CANDIDATES.items():
        try:
            fn("Warm up. Two.")
        except Exception as e:  # noqa: BLE001 - a candidate that cannot run here is reported, not fatal
            print(f"{name:18} unavailable: {e}")
            continue
        hard = sum(
            [text[s:e] for s, e in fn(text)] == expected for text, expected in HARD_CASES
        )
        t0 = time.perf_counter()
        spans_per_doc = [fn(d) for d in docs]
        dt = time.perf_counter() - t0
        straddle = 0
        for di, s, e in answers:
            inside = any(a <= s and e <= b for a, b in spans_per_doc[di])
            straddle += not inside
        n = sum(len(x) for x in spans_per_doc)
        print(
            f"{name:18} {hard:>6}/{len(HARD_CASES):<3} {100 * straddle / len(answers):>10.2f} {n:>7} "
            f"{total_chars / n:>10.1f} {total_chars / dt / 1e6:>7.2f}"
        )


if __name__ == "__main__":
    main()
