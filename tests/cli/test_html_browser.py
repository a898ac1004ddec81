"""``landmark-rag query --html`` in a real browser: headless Chromium renders the page.

The string checks in test_cli.py show what the page *says*; this shows what a reader *gets*:
Chromium parses the file (``--dump-dom``: the DOM after parsing, so markup smuggled in
through a document's text or a file name would show up as elements or attributes), and a
screenshot proves the highlighted hit is drawn on screen in the highlight colour.

Chromium is Debian's ``chromium`` package. Where it is missing and the tests run as root
with apt-get (this project's machines and CI), the session fixture installs it; elsewhere
the tests skip and say why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from html.parser import HTMLParser
from pathlib import Path

import pytest
from typer.testing import CliRunner

from landmark_rag.cli import _register, app

_register()

# flags that let headless Chromium run here: as root (no sandbox), no GPU, nothing phoning home
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]
HIT_RGB = (0xFF, 0xD5, 0x4A)  # mark.hit background in render/html.py

SCRIPT_TEXT = 'The vault note reads <script>document.title="pwned"</script> and nothing else.'
QUOTED_NAME = """notes "quoted" & 'single'.txt"""
DOCS = {
    "lighthouse.txt": (
        "The old lighthouse stands on the northern cape. It was built of granite in 1894. "
        "Its lamp could be seen twenty miles out at sea. The keeper lived in a cottage beside it."
    ),
    QUOTED_NAME: (
        "The vault is in the cellar of the town hall. " + SCRIPT_TEXT + " The vault door is made of steel."
    ),
}


def _install_chromium() -> str | None:
    """Install Debian's chromium where we are root with apt-get; the reason it failed otherwise."""
    if shutil.which("apt-get") is None:
        return "chromium is not installed and there is no apt-get to install it (Debian's `chromium` package)"
    if os.geteuid() != 0:
        return "chromium is not installed and installing it needs root (`apt-get install chromium`)"
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "-qq", "chromium"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200, check=False)
    if proc.returncode != 0:  # a fresh machine may have no package lists yet
        subprocess.run(["apt-get", "update", "-qq"], capture_output=True, env=env, timeout=600, check=False)
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1200, check=False)
    if proc.returncode != 0:
        return f"`apt-get install chromium` failed: {(proc.stderr or proc.stdout)[-400:]}"
    return None


@pytest.fixture(scope="session")
def chromium() -> str:
    exe = shutil.which("chromium")
    if exe is None:
        reason = _install_chromium()
        exe = shutil.which("chromium")
        if exe is None:
            pytest.skip(reason or "chromium was installed but is not on PATH")
    return exe


def _browser(exe: str, *args: str) -> subprocess.CompletedProcess:
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        return subprocess.run(
            [exe, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
            capture_output=True,
            text=True,
            timeout=180,
            check=False,
        )


class _Elements(HTMLParser):
    """Every element of a serialised DOM, with its attributes and the text inside it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.marks: list[str] = []
        self.texts: list[str] = []
        self._in_mark = 0

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag == "mark":
            self._in_mark += 1
            self.marks.append("")

    def handle_endtag(self, tag):
        if tag == "mark":
            self._in_mark -= 1

    def handle_data(self, data):
        self.texts.append(data)
        if self._in_mark:
            self.marks[-1] += data


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("html-browser")
    docs = root / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    db, out = root / "db", root / "page.html"
    runner = CliRunner()
    got = runner.invoke(app, ["index", str(docs), "--db", str(db), "-q"])
    assert got.exit_code == 0, got.output
    got = runner.invoke(app, ["query", "What is the vault door made of?", "--db", str(db), "-k", "2", "--html", str(out)])
    assert got.exit_code == 0, got.output
    return out


def test_page_parses_to_escaped_text_with_highlighted_hits(chromium: str, page: Path) -> None:
    proc = _browser(chromium, "--dump-dom", page.as_uri())
    assert proc.returncode == 0 and "<html" in proc.stdout, proc.stderr[-2000:]
    dom = _Elements()
    dom.feed(proc.stdout)
    tags = {tag for tag, _ in dom.elements}
    assert "script" not in tags, "text from a document became a <script> element"
    allowed = {"lang", "charset", "name", "content", "class", "href", "id", "style", "title"}
    extra = {a for _, attrs in dom.elements for a in attrs} - allowed
    assert not extra, f"a file name or text broke out into attributes: {extra}"
    text = "".join(dom.texts)
    assert SCRIPT_TEXT in text  # shown to the reader as the text it is
    assert QUOTED_NAME in text  # the file name with both kinds of quote, intact
    titles = [t for tag, attrs in dom.elements for t in [attrs.get("title")] if tag == "title" or t]
    assert not any("pwned" in (t or "") for t in titles)
    # the hits: the sentence that answers the question is marked in its passage
    assert any("made of steel" in m for m in dom.marks), dom.marks
    assert sum(1 for tag, a in dom.elements if tag == "li") == 2
    assert any(tag == "span" and "hit" in (a.get("class") or "").split() for tag, a in dom.elements)


def test_highlight_is_drawn_on_screen(chromium: str, page: Path, tmp_path: Path) -> None:
    from PIL import Image

    shot = tmp_path / "page.png"
    proc = _browser(chromium, f"--screenshot={shot}", "--window-size=1000,900", page.as_uri())
    assert shot.is_file(), proc.stderr[-2000:]
    img = Image.open(shot).convert("RGB")
    near = sum(
        1
        for r, g, b in img.getdata()
        if abs(r - HIT_RGB[0]) <= 8 and abs(g - HIT_RGB[1]) <= 8 and abs(b - HIT_RGB[2]) <= 8
    )
    # a highlighted sentence of ~30 characters at 15 px covers thousands of pixels; an
    # invisible (display:none, zero-size, transparent) highlight would cover none
    assert near > 1500, f"only {near} pixels in the highlight colour"
