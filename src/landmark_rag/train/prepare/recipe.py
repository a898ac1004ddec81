"""A data recipe: which public files make a training set, pinned by commit and checksum.

Why a recipe file rather than a script: the model card must say exactly what a model was
trained on, and a user must be able to rebuild the same bytes. The recipe names each source's
repository, commit, licence and converter; a checksum list pins every raw file; exclusion rules
(evaluation titles, reserved domains) are data, so a reviewer reads them without reading code.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from landmark_rag.train.config import TrainingInputError

Role = Literal["documents", "passages"]


@dataclass(frozen=True)
class Source:
    """One public dataset the recipe reads.

    ``role``: ``documents`` sources give real long documents; ``passages`` sources give short
    passages that are assembled into pseudo long documents (the paper's second stage).
    """

    name: str
    format: str
    role: Role
    repo: str
    commit: str
    path: str
    licence: str
    domain: str
    citation: str = ""
    note: str = ""

    def url(self, filename: str) -> str | None:
        """Where a raw file can be downloaded (GitHub's raw-file address at the pinned commit);
        ``None`` for a source that is not a pinned GitHub commit (e.g. files in this repository)."""
        if not re.fullmatch(r"[0-9a-f]{40}", self.commit) or self.repo.count("/") != 1:
            return None
        inner = f"{self.path.strip('/')}/{filename}" if self.path.strip("/") else filename
        return f"https://raw.githubusercontent.com/{self.repo}/{self.commit}/{inner}"


@dataclass(frozen=True)
class PseudoSpec:
    """How pseudo long documents are assembled: positives carry questions, distractors do not."""

    positives: tuple[str, ...]
    distractors: tuple[str, ...]
    positives_per_document: tuple[int, int] = (2, 5)
    distractors_per_document: tuple[int, int] = (4, 10)


def normalise_title(title: str) -> str:
    """Case-, underscore-, percent-escape- and Unicode-form-insensitive form of a title: the
    form a recipe keeps its excluded and reserved titles in."""
    text = unicodedata.normalize("NFKC", unquote(title)).replace("_", " ")
    return " ".join(text.split()).casefold()


@dataclass(frozen=True)
class Recipe:
    name: str
    description: str
    seed: int
    sources: tuple[Source, ...]
    files: dict[str, tuple[str, ...]]  # source name -> raw file names
    checksums: dict[str, str]  # "source/file" -> sha256
    excluded_titles: frozenset[str]  # normalised evaluation titles
    domain_titles: frozenset[str]  # normalised titles of reserved domains
    domain_patterns: tuple[re.Pattern[str], ...]
    # documents of evaluation benchmarks (long-evidence files): kept out by normalised title and,
    # since a collection can hold the same text under another name, by shared word shingles
    benchmark_titles: frozenset[str] = frozenset()
    benchmark_shingles: frozenset[int] = frozenset()
    pseudo: PseudoSpec | None = None
    path: Path | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    def source(self, name: str) -> Source:
        for s in self.sources:
            if s.name == name:
                return s
        raise TrainingInputError(f"recipe {self.name!r} has no source {name!r}")


def load_recipe(path: str | os.PathLike[str]) -> Recipe:
    """Read a recipe JSON and the checksum and title files it names (paths relative to it)."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise TrainingInputError(f"no recipe at {path}")
    data = json.loads(path.read_text(encoding="utf-8"))
    try:
        sources = tuple(Source(**s) for s in data["sources"])
        checksums = _read_checksums(path.parent / data["checksums"])
    except (KeyError, TypeError) as exc:
        raise TrainingInputError(f"recipe {path}: {exc}") from exc
    names = {s.name for s in sources}
    files: dict[str, list[str]] = {n: [] for n in names}
    for key in checksums:
        source, _, name = key.partition("/")
        if source not in files:
            raise TrainingInputError(f"recipe {path}: checksum for unknown source {source!r}")
        files[source].append(name)
    exclude = data.get("exclude", {})
    titles: set[str] = set()
    for name in exclude.get("title_files", []):
        titles.update(_read_titles(path.parent / name))
    benchmark_titles, benchmark_shingles = _read_benchmarks([path.parent / n for n in exclude.get("benchmark_files", [])])
    pseudo = data.get("pseudo_documents")
    return Recipe(
        name=data["name"], description=data.get("description", ""), seed=int(data.get("seed", 0)),
        sources=sources, files={k: tuple(sorted(v)) for k, v in files.items()}, checksums=checksums,
        excluded_titles=frozenset(normalise_title(t) for t in titles),
        domain_titles=frozenset(normalise_title(t) for t in exclude.get("domain_titles", [])),
        domain_patterns=tuple(re.compile(p) for p in exclude.get("domain_title_patterns", [])),
        benchmark_titles=benchmark_titles, benchmark_shingles=benchmark_shingles,
        pseudo=PseudoSpec(
            positives=tuple(pseudo["positives"]), distractors=tuple(pseudo.get("distractors", [])),
            positives_per_document=tuple(pseudo.get("positives_per_document", (2, 5))),
            distractors_per_document=tuple(pseudo.get("distractors_per_document", (4, 10))),
        ) if pseudo else None,
        path=path, raw=data,
    )


def _read_checksums(path: Path) -> dict[str, str]:
    """``sha256sum``-style lines: ``<hex>  <source>/<file>``."""
    out = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            digest, name = line.split(maxsplit=1)
            out[name.strip()] = digest.lower()
    return out


def _read_titles(path: Path) -> list[str]:
    return [t.strip() for t in path.read_text(encoding="utf-8").splitlines() if t.strip() and not t.startswith("#")]


def _read_benchmarks(paths: list[Path]) -> tuple[frozenset[str], frozenset[int]]:
    """Normalised titles and text shingles of every document of these long-evidence files."""
    if not paths:
        return frozenset(), frozenset()
    from landmark_rag.datasets.longevidence import LongEvidenceFormatError, load_long_evidence
    from landmark_rag.train.prepare.overlap import shingles_of

    docs = []
    for p in paths:
        try:
            docs.extend(load_long_evidence(p).documents)
        except LongEvidenceFormatError as exc:
            raise TrainingInputError(f"benchmark file of the recipe: {exc}") from exc
    return frozenset(normalise_title(d.title) for d in docs), shingles_of(d.text for d in docs)
