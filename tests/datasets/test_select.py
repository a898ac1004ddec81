"""The selection spec shared by `landmark-rag train` and `landmark-rag eval`."""

from __future__ import annotations

import pytest

from landmark_rag.datasets import Article, SelectionError, read_titles, select


def _arts() -> list[Article]:
    titles = ["T0", "T1", "Jacksonville,_Florida", "First: one", "1945", "T1"]
    return [Article(f"id{i}", t, "x") for i, t in enumerate(titles)]


def _titles(arts: list[Article]) -> list[str]:
    return [a.doc_id for a in arts]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("1:3", ["id1", "id2"]),
        ("13:16", []),  # a slice past the end is shorter, as in Python
        (":", [f"id{i}" for i in range(6)]),
        ("-2:", ["id4", "id5"]),
        ("", []),
        ("0,3, 2", ["id0", "id3", "id2"]),  # the spec's order
        ("-1", ["id5"]),
        ("4", ["id4"]),  # digits are an index; a title of digits needs a titles file
        ("t0", ["id0"]),  # titles ignore case
        ("ID3", ["id3"]),  # ... and match doc ids too
        ("T1", ["id1", "id5"]),  # every article with that title
        ("First: one", ["id3"]),  # a title with a colon is no slice
        ("0:2, 4, T0", ["id0", "id1", "id4"]),  # slices, indices and titles mix; each article once
    ],
)
def test_spec_forms(spec, expected):
    assert _titles(select(_arts(), spec)) == expected


def test_titles_file_lines_are_whole_titles(tmp_path):
    path = tmp_path / "held-out.txt"
    path.write_text("Jacksonville,_Florida\n\n  1945  \nfirst: one\n")
    assert read_titles(path) == ["Jacksonville,_Florida", "1945", "first: one"]
    assert _titles(select(_arts(), f"@{path}")) == ["id2", "id4", "id3"]
    assert _titles(select(_arts(), f"0, @{path}")) == ["id0", "id2", "id4", "id3"]


def test_a_list_is_whole_titles():
    assert _titles(select(_arts(), ["Jacksonville,_Florida", "1945", " "])) == ["id2", "id4"]
    assert select(_arts(), []) == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("a:b", "'a:b' is not a slice 'a:b' of integers, nor a title"),
        ("1:2:3", "not a slice"),
        ("6", "article 6 does not exist: the data has 6 articles"),
        ("-7", "article -7 does not exist"),
        ("Nope, 0, Zilch", "no article titled 'Nope', 'Zilch' in the data"),  # every unknown title at once
        ("@/nonexistent/titles.txt", "titles file '/nonexistent/titles.txt' does not exist"),
        (["nope"], "no article titled 'nope'"),
    ],
)
def test_a_spec_naming_nothing_is_an_error(spec, message):
    with pytest.raises(SelectionError, match=message) as caught:
        select(_arts(), spec)
    assert isinstance(caught.value, ValueError)  # callers that catch ValueError keep working
