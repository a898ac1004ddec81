"""Which files an ``index`` run looks at, and the stable document id of each.

A document id is the file's path relative to the root it was found under (POSIX
separators), so re-indexing the same folder from anywhere finds the same ids and replaces
or skips instead of duplicating. Hidden files and folders (``.git``, ``.venv``) and the
store's own folder are never indexed: they are tooling, not documents.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SourceFile:
    """A file to index: where it is, the root it was found under, and its document id."""

    path: Path  # absolute
    root: Path  # absolute; the folder the id is relative to
    doc_id: str


def discover_files(
    paths: Iterable[str | os.PathLike[str]],
    *,
    glob: str | None = None,
    exclude: Iterable[str | os.PathLike[str]] = (),
) -> list[SourceFile]:
    """All files under ``paths`` (recursively), sorted by document id per root.

    A directory argument is a root; a file argument is its own document whose root is its
    parent folder (so its id is its file name). ``glob`` (e.g. ``*.md`` or ``notes/**/*.txt``)
    keeps only files whose relative path or name matches. Paths inside ``exclude`` (the
    store's directory) are skipped. A missing path raises ``FileNotFoundError``: a typo must
    not look like an empty folder.
    """
    excluded = [Path(p).resolve() for p in exclude]
    out: list[SourceFile] = []
    for raw in paths:
        path = Path(raw).expanduser().resolve()
        if not path.exists():
            raise FileNotFoundError(f"no such file or directory: {os.fspath(raw)}")
        if path.is_file():
            if not _inside(path, excluded):
                out.append(SourceFile(path, path.parent, path.name))
            continue
        found = [
            SourceFile(f, path, f.relative_to(path).as_posix())
            for f in _walk(path, excluded)
            if glob is None or _matches(f.relative_to(path).as_posix(), glob)
        ]
        out.extend(sorted(found, key=lambda s: s.doc_id))
    return out


def _walk(root: Path, excluded: list[Path]) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        # prune in place: hidden folders and the store are never descended into
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and not _inside(here / d, excluded))
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            f = here / name
            if f.is_file() and not _inside(f, excluded):
                yield f


def _matches(relative: str, pattern: str) -> bool:
    # fnmatch's "*" crosses "/" already; also try the bare name so "*.md" works at any depth
    # and "**/" prefixes match files at the root too.
    name = relative.rsplit("/", 1)[-1]
    if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern):
        return True
    return pattern.startswith("**/") and fnmatch.fnmatch(relative, pattern[3:])


def _inside(path: Path, parents: list[Path]) -> bool:
    return any(path == p or p in path.parents for p in parents)
