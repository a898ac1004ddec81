"""Which files an ``index`` run looks at, and the stable document id of each.

A document id is the file's path relative to the root it was found under (POSIX
separators), so re-indexing the same folder from anywhere finds the same ids and replaces
or skips instead of duplicating. Hidden files and folders (``.git``, ``.venv``) and the
store's own folder are never indexed: they are tooling, not documents.

Entries that cannot be documents (symbolic link loops, links to nothing, links to folders,
which are not followed so a link cannot make the walk revisit a folder, FIFOs, sockets,
devices) are never opened (reading a FIFO would block forever) and are reported with a
reason instead of vanishing silently.
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from landmark_rag.errors import LandmarkRagError


@dataclass(frozen=True)
class SourceFile:
    """A file to index: where it is, the root it was found under, and its document id."""

    path: Path  # absolute
    root: Path  # absolute; the folder the id is relative to
    doc_id: str


@dataclass(frozen=True)
class SkippedPath:
    """An entry found under a folder that is not a readable regular file, and why."""

    path: Path
    reason: str


class UnusablePathError(LandmarkRagError, OSError):
    """A path given directly that exists as a name but can never be a document."""


@dataclass(frozen=True)
class FileSet:
    """What :func:`find_files` found: the files, the entries it could not use, and the roots."""

    files: list[SourceFile]
    skipped: list[SkippedPath] = field(default_factory=list)
    #: every folder a document id is relative to, and every folder given (``--prune`` looks
    #: for deleted files under these)
    roots: frozenset[Path] = frozenset()


def find_files(
    paths: Iterable[str | os.PathLike[str]],
    *,
    glob: str | None = None,
    exclude: Iterable[str | os.PathLike[str]] = (),
) -> FileSet:
    """:func:`discover_files` with the unusable entries and the roots kept alongside."""
    paths = list(paths)
    skipped: list[SkippedPath] = []
    files = discover_files(paths, glob=glob, exclude=exclude, skipped=skipped)
    roots = {f.root for f in files} | {Path(p).expanduser().resolve() for p in paths if Path(p).expanduser().is_dir()}
    return FileSet(files, skipped, frozenset(roots))


def discover_files(
    paths: Iterable[str | os.PathLike[str]],
    *,
    glob: str | None = None,
    exclude: Iterable[str | os.PathLike[str]] = (),
    skipped: list[SkippedPath] | None = None,
) -> list[SourceFile]:
    """All files under ``paths`` (recursively), sorted by document id per root.

    A directory argument is a root; a file argument is its own document whose root is its
    parent folder (so its id is its file name). ``glob`` (e.g. ``*.md`` or ``notes/**/*.txt``)
    keeps only files whose relative path or name matches. Paths inside ``exclude`` (the
    store's directory) are skipped. A missing path raises ``FileNotFoundError``: a typo must
    not look like an empty folder; a path given directly that can never be a document (a link
    loop, a FIFO) raises :class:`UnusablePathError`. Unusable entries inside a folder are
    appended to ``skipped`` (when given) with their reason.
    """
    excluded = [Path(p).resolve() for p in exclude]
    out: list[SourceFile] = []
    for raw in paths:
        given = Path(raw).expanduser()
        problem = _unusable(given)
        if problem is not None:
            if problem.startswith("no such"):
                raise FileNotFoundError(f"no such file or directory: {os.fspath(raw)}")
            raise UnusablePathError(f"{os.fspath(raw)}: {problem}")
        path = given.resolve()
        if path.is_file():
            if not _inside(path, excluded):
                out.append(SourceFile(path, path.parent, path.name))
            continue
        found = [
            SourceFile(f, path, f.relative_to(path).as_posix())
            for f in _walk(path, excluded, skipped)
            if glob is None or _matches(f.relative_to(path).as_posix(), glob)
        ]
        out.extend(sorted(found, key=lambda s: s.doc_id))
    return out


def _walk(root: Path, excluded: list[Path], skipped: list[SkippedPath] | None) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        here = Path(dirpath)
        # prune in place: hidden folders and the store are never descended into; os.walk does
        # not follow links to folders (a link could point back up and never end)
        keep = []
        for d in sorted(dirnames):
            if d.startswith(".") or _inside(here / d, excluded):
                continue
            if (here / d).is_symlink():
                if skipped is not None:
                    skipped.append(SkippedPath(here / d, "symbolic link to a folder (not followed)"))
                continue
            keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            if name.startswith("."):
                continue
            f = here / name
            if _inside(f, excluded):
                continue
            problem = _unusable(f)
            if problem is None:
                yield f
            elif skipped is not None:
                skipped.append(SkippedPath(f, problem))


def _unusable(path: Path) -> str | None:
    """Why ``path`` cannot be indexed (``None``: a regular file or a folder)."""
    try:
        mode = path.stat().st_mode  # follows links
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "symbolic link loop"
        if path.is_symlink():
            return f"dangling symbolic link (to {os.readlink(path)})"
        if exc.errno == errno.ENOENT:
            return "no such file or directory"
        return f"unreadable: {exc.strerror or exc}"
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    if stat.S_ISFIFO(mode):
        return "not a regular file (named pipe)"
    if stat.S_ISSOCK(mode):
        return "not a regular file (socket)"
    return "not a regular file (device)"


def _matches(relative: str, pattern: str) -> bool:
    # fnmatch's "*" crosses "/" already; also try the bare name so "*.md" works at any depth
    # and "**/" prefixes match files at the root too.
    name = relative.rsplit("/", 1)[-1]
    if fnmatch.fnmatch(relative, pattern) or fnmatch.fnmatch(name, pattern):
        return True
    return pattern.startswith("**/") and fnmatch.fnmatch(relative, pattern[3:])


def _inside(path: Path, parents: list[Path]) -> bool:
    return any(path == p or p in path.parents for p in parents)
