"""``landmark-rag train --prepare``: build a training set from a recipe of public datasets.

Raw files (pinned by commit and checksum, :mod:`.fetch`) -> each source's converter
(:mod:`.sources`) -> exclusion of evaluation articles and reserved domains (:mod:`.exclude`)
-> real long documents, plus pseudo long documents assembled from passages (:mod:`.pseudo`)
-> JSON-lines files in the long-document format (:mod:`landmark_rag.datasets.longdoc`) and a
``manifest.json`` recording sources, counts, exclusions and output checksums. The output folder
is what a training config's ``data`` names; it lives outside the repository (a cache folder),
while the recipe and its checksums live in it.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from landmark_rag.datasets import Article, write_longdocs
from landmark_rag.train.prepare.exclude import exclusion_reason
from landmark_rag.train.prepare.fetch import raw_files, sha256_of
from landmark_rag.train.prepare.pseudo import paragraphs_of, pseudo_documents
from landmark_rag.train.prepare.recipe import Recipe, Source, load_recipe, normalise_title
from landmark_rag.train.prepare.sources import CONVERTERS

#: Output files of a prepared set (read by the trainer in this order).
DOCUMENTS_FILE = "documents.jsonl.gz"
PSEUDO_FILE = "pseudo.jsonl.gz"
MANIFEST_FILE = "manifest.json"


def default_output(recipe: Recipe) -> Path:
    """``<cache>/data/<recipe name>``: large data stays out of the repository."""
    from landmark_rag.encode.models.loading import cache_dir

    return cache_dir() / "data" / recipe.name


def prepare(
    recipe_path: str | os.PathLike[str],
    raw_dir: str | os.PathLike[str],
    out_dir: str | os.PathLike[str] | None = None,
    *,
    download: bool = False,
    show_progress: bool = True,
) -> dict[str, Any]:
    """Build the recipe's training set into ``out_dir``; returns the manifest it wrote."""
    recipe = load_recipe(recipe_path)
    out = Path(out_dir).expanduser() if out_dir is not None else default_output(recipe)
    files = raw_files(recipe, Path(raw_dir).expanduser(), download=download, show_progress=show_progress)
    kept: dict[str, list[Article]] = {}
    report: dict[str, dict[str, Any]] = {}
    for source in recipe.sources:
        docs, excluded = _convert(recipe, source, files.get(source.name, []))
        kept[source.name] = docs
        report[source.name] = _source_entry(recipe, source, docs, excluded)
    documents = [d for s in recipe.sources if s.role == "documents" for d in kept[s.name]]
    pseudo = _pseudo(recipe, kept)
    outputs = {}
    for name, docs in ((DOCUMENTS_FILE, documents), (PSEUDO_FILE, pseudo)):
        if docs:
            write_longdocs(out / name, docs)
            outputs[name] = {
                "sha256": sha256_of(out / name), "documents": len(docs),
                "questions": sum(len(d.questions) for d in docs), "characters": sum(len(d.text) for d in docs),
            }
    manifest = {
        "format": "landmark-rag long-document QA (JSON lines), version 1",
        "recipe": recipe.name, "recipe_sha256": sha256_of(recipe.path) if recipe.path else None,
        "description": recipe.description, "seed": recipe.seed, "sources": report, "outputs": outputs,
    }
    (out / MANIFEST_FILE).write_text(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def _convert(recipe: Recipe, source: Source, paths: list[Path]) -> tuple[list[Article], Counter[str]]:
    """A source's documents minus the excluded ones (and minus repeats of a title already kept)."""
    convert = CONVERTERS[source.format]
    kept: list[Article] = []
    excluded: Counter[str] = Counter()
    seen: set[str] = set()
    for doc in convert(sorted(paths), source.name, source.domain):
        reason = exclusion_reason(recipe, doc.title, doc.text)
        if reason is None and source.role == "documents":
            key = normalise_title(doc.title)
            reason = "repeated title" if key in seen else None
            seen.add(key)
        if reason is not None:
            excluded[reason] += 1
            continue
        if doc.questions:
            kept.append(doc)
        else:
            excluded["no answerable question"] += 1
    return kept, excluded


def _pseudo(recipe: Recipe, kept: dict[str, list[Article]]) -> list[Article]:
    spec = recipe.pseudo
    if spec is None:
        return []
    positives = [
        p for name in spec.positives for d in kept[name] for p in paragraphs_of(d, with_questions=True) if p[1]
    ]
    distractors = [p for name in spec.distractors for d in kept[name] for p in paragraphs_of(d, with_questions=False)]
    return list(pseudo_documents(
        positives, distractors, seed=recipe.seed, positives_per_document=spec.positives_per_document,
        distractors_per_document=spec.distractors_per_document, name=f"{recipe.name}-pseudo",
    ))


def _source_entry(recipe: Recipe, source: Source, docs: list[Article], excluded: Counter[str]) -> dict[str, Any]:
    return {
        "repo": source.repo, "commit": source.commit, "path": source.path, "licence": source.licence,
        "domain": source.domain, "format": source.format, "role": source.role, "citation": source.citation,
        "files": len(recipe.files.get(source.name, ())), "documents": len(docs),
        "questions": sum(len(d.questions) for d in docs), "excluded": dict(sorted(excluded.items())),
    }


__all__ = ["DOCUMENTS_FILE", "MANIFEST_FILE", "PSEUDO_FILE", "default_output", "load_recipe", "prepare"]
