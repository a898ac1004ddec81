"""The one record of every data source: an article (one long document) with its questions.

Training, evaluation and training-set preparation all work on the same idea: a whole document
and the exact character offsets of each question's answers in it. Whatever a source's own
format (SQuAD JSON, the long-document JSON lines, plain text), its loader returns these, so
an offset is computed once, in the loader, and every consumer reads the same fields.

Both types are frozen: a loaded article is shared by selections, stages and corpora, and
none of them may change what another sees. Derive a changed copy with
:func:`dataclasses.replace`.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Question:
    """A question with its gold answers, each located exactly in its article's text.

    ``answers[i]`` is ``article.text[answer_starts[i] : answer_starts[i] + len(answers[i])]``.
    """

    #: Stable id (SQuAD's question id, a dataset's example id): names a question in reports
    #: and keeps a capped evaluation's choice of questions reproducible.
    qid: str
    #: The question text: the query retrieval is asked and training encodes.
    question: str
    #: Every reference answer: evaluation counts a hit on any of them; training uses the first.
    answers: tuple[str, ...]
    #: Where each answer starts in the article's text (not in a paragraph): gold sentences are
    #: found from these with whatever segmentation reads the document.
    answer_starts: tuple[int, ...]

    def __post_init__(self) -> None:
        # tuples, whatever sequence a caller passed: a record stays immutable and hashable
        object.__setattr__(self, "answers", tuple(self.answers))
        object.__setattr__(self, "answer_starts", tuple(int(s) for s in self.answer_starts))
        if not self.answers or len(self.answers) != len(self.answer_starts):
            # a question without an answer has no gold sentence to train or score on
            raise ValueError(f"question {self.qid!r} needs one start per answer and at least one answer")

    @property
    def answer(self) -> str:
        """The first gold answer (SQuAD's training answer)."""
        return self.answers[0]

    @property
    def answer_start(self) -> int:
        """Where the first answer starts in the article's text."""
        return self.answer_starts[0]

    @property
    def answer_end(self) -> int:
        """Where the first answer ends (exclusive) in the article's text."""
        return self.answer_starts[0] + len(self.answers[0])


@dataclass(frozen=True, slots=True)
class Article:
    """One long document with its paragraphs and questions."""

    #: Unique id within its source. SQuAD ids are made from the title with no ``:`` (they end
    #: up in sentence ids ``f"{doc_id}:{index}"``); a long-document file stores its own.
    doc_id: str
    #: The title: what selections and titles files name, and training's document name.
    title: str
    #: The whole document; every offset of the record points into it.
    text: str
    #: Character span ``(start, end)`` of each paragraph in ``text``, in order: the pairwise
    #: and pseudo-document training stages are built from paragraphs, and positive context
    #: never crosses one.
    paragraphs: tuple[tuple[int, int], ...] = ()
    #: The answerable questions asked about this document (none for plain text).
    questions: tuple[Question, ...] = ()
    #: The dataset the document came from (a prepared set's provenance; ``""`` when unknown).
    source: str = ""
    #: The kind of text (``"wikipedia"``, ``"pseudo"``...), recorded by preparation recipes.
    domain: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "paragraphs", tuple((int(s), int(e)) for s, e in self.paragraphs))
        object.__setattr__(self, "questions", tuple(self.questions))

    def paragraph_of(self, offset: int) -> int:
        """Index of the paragraph holding character ``offset`` (``-1`` when between paragraphs)."""
        for i, (s, e) in enumerate(self.paragraphs):
            if s <= offset < e:
                return i
        return -1


__all__ = ["Article", "Question"]
