"""Reading evaluation and training data: the one SQuAD-format loader."""

from landmark_rag.datasets.squad import (
    PARAGRAPH_SEPARATOR,
    SquadArticle,
    SquadQuestion,
    parse_squad,
    read_squad,
)

__all__ = ["PARAGRAPH_SEPARATOR", "SquadArticle", "SquadQuestion", "parse_squad", "read_squad"]
