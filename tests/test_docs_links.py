"""Every relative link in the repository's Markdown files resolves: the file exists and, when
the link names a section (``file.md#section``), the file has a heading with that anchor.

Docs move (history to docs/experiments/, run configs beside it); a link left behind is
found here rather than by a reader.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)|!\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def _markdown_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "--cached", "--others", "--exclude-standard", "*.md"],
            cwd=ROOT, capture_output=True, text=True, check=True,
        ).stdout
        files = [ROOT / line for line in out.splitlines() if line]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every .md outside hidden folders
        files = [p for p in ROOT.rglob("*.md") if not any(part.startswith(".") for part in p.parts)]
    return sorted(p for p in files if p.is_file())


def _prose(path: Path) -> list[str]:
    """The file's lines outside fenced code blocks (a link-like string in code is not a link)."""
    lines, fenced = [], False
    for line in path.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            fenced = not fenced
            continue
        lines.append("" if fenced else line)
    return lines


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"`|\*\*|__", "", heading.strip().lower())
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for line in _prose(path):
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if not m:
            continue
        slug = _slug(m.group(1))
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def _broken(path: Path) -> list[str]:
    bad = []
    for lineno, line in enumerate(_prose(path), 1):
        line = re.sub(r"`[^`]*`", "", line)  # inline code is not a link either
        for m in LINK.finditer(line):
            target = m.group(1) or m.group(2)
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):  # http:, https:, mailto:
                continue
            file_part, _, anchor = target.partition("#")
            dest = (path.parent / unquote(file_part)).resolve() if file_part else path
            where = f"{path.relative_to(ROOT)}:{lineno}: {target}"
            if not dest.exists():
                bad.append(f"{where} (no such file)")
            elif anchor and dest.suffix == ".md" and anchor.lower() not in _anchors(dest):
                bad.append(f"{where} (no such section)")
    return bad


FILES = _markdown_files()


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_relative_links_resolve(path: Path) -> None:
    assert _broken(path) == []


def test_docs_index_lists_every_doc() -> None:
    index = (ROOT / "docs" / "README.md").read_text(encoding="utf-8")
    missing = [p.name for p in sorted((ROOT / "docs").glob("*.md")) if p.name != "README.md" and f"({p.name}" not in index]
    assert missing == []
