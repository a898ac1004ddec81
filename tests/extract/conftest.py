"""The document files of tests/extract/documents.py as session fixtures (built once)."""

from __future__ import annotations

import pytest

from tests.extract import documents


@pytest.fixture(scope="session")
def report_pdf() -> bytes:
    return documents.build_report_pdf()


@pytest.fixture(scope="session")
def hyphenated_pdf() -> bytes:
    return documents.build_hyphenated_pdf()


@pytest.fixture(scope="session")
def encrypted_pdf() -> bytes:
    return documents.build_encrypted_pdf()


@pytest.fixture(scope="session")
def owner_locked_pdf() -> bytes:
    return documents.build_owner_locked_pdf()


@pytest.fixture(scope="session")
def image_only_pdf() -> bytes:
    return documents.build_image_only_pdf()


@pytest.fixture(scope="session")
def manual_docx() -> bytes:
    return documents.build_manual_docx()


@pytest.fixture(scope="session")
def empty_docx() -> bytes:
    return documents.build_empty_docx()
