"""Checks shared by the tests of the models shipped inside the package."""

from __future__ import annotations


def trains_on_no_evaluation_article(train_cfg: dict) -> bool:
    """The evaluation file is only ever a validation source (``train: ""``); every other
    source is a prepared set, whose preparation drops evaluation titles (tests/train/test_prepare.py)."""
    for entry in train_cfg["data"]:
        path = entry["path"] if isinstance(entry, dict) else entry
        if "squad-v1.1-dev" in path and not (isinstance(entry, dict) and entry.get("train") == ""):
            return False
        if not isinstance(entry, dict) and not path.startswith("prepared:"):
            return False
    return train_cfg.get("train_articles") is None
