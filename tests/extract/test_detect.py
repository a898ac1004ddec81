"""Format detection: the bytes win where they prove a format, a name that promises a format
the bytes are not is refused with a reason, and everything else is text as before."""

from __future__ import annotations

import io
import subprocess
import sys
import zipfile

import pytest

from landmark_rag.extract import BadFileError, DocumentError, MissingExtraError, detect_format, extract


def _zip(names: list[str]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name in names:
            z.writestr(name, "<x/>")
    return buf.getvalue()


def test_magic_bytes_win_over_the_suffix(report_pdf, manual_docx):
    assert detect_format(report_pdf, suffix=".txt") == "pdf"
    assert detect_format(b"junk before the header\n" + report_pdf, suffix=None) == "pdf"
    assert detect_format(manual_docx, suffix=".bin") == "docx"
    assert extract(report_pdf, suffix="").format == "pdf"


def test_suffix_and_mime_pick_text_formats():
    assert detect_format(b"# Title\n", suffix=".MD") == "markdown"
    assert detect_format(b"<p>hi</p>", suffix=".htm") == "html"
    assert detect_format(b"<p>hi</p>", mime="text/html; charset=utf-8") == "html"
    assert detect_format(b"<!DOCTYPE html><html><body>x</body></html>", suffix="") == "html"
    # an HTML source file named .txt is what its name says
    assert detect_format(b"<!DOCTYPE html><html></html>", suffix=".txt") == "text"
    assert detect_format(b"plain words", suffix=".rst") == "text"


@pytest.mark.parametrize(
    ("data", "suffix", "reason"),
    [
        (b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64, ".doc", "unsupported format: legacy Office file"),
        (_zip(["xl/workbook.xml"]), ".xlsx", "unsupported format: a ZIP archive (not a .docx)"),
        (_zip(["xl/workbook.xml"]), ".docx", "corrupt DOCX: no word/document.xml"),
        (b"plain text pretending", ".docx", "corrupt DOCX: not a ZIP archive"),
        (b"\x00\x01 binary", ".pdf", "not a readable PDF: no PDF header"),
    ],
)
def test_files_that_are_not_what_they_claim_say_why(data, suffix, reason):
    with pytest.raises(DocumentError) as info:
        extract(data, suffix=suffix)
    assert info.value.reason.startswith(reason)
    assert "\n" not in info.value.reason


def test_paths_are_read_and_missing_ones_are_bad_files(tmp_path):
    with pytest.raises(BadFileError) as info:
        extract(tmp_path / "missing.pdf")
    assert info.value.reason.startswith("unreadable: ")
    (tmp_path / "empty.pdf").write_bytes(b"")
    with pytest.raises(DocumentError, match="empty file"):
        extract(tmp_path / "empty.pdf")


def test_a_missing_library_names_the_extra(report_pdf, monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdfium2", None)  # what `import` sees when it is absent
    with pytest.raises(MissingExtraError) as info:
        extract(report_pdf, suffix=".pdf")
    assert info.value.reason == (
        "needs the [documents] extra: pip install 'landmark-rag[documents]' (pypdfium2 is not installed)"
    )
    assert isinstance(info.value, BadFileError)


def test_importing_the_package_loads_no_document_library():
    code = (
        "import sys, landmark_rag.extract as e; "
        "e.extract(b'# t\\n', suffix='.md'); "
        "print([m for m in ('pypdfium2', 'docx', 'trafilatura', 'lxml') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
