"""The long-evidence benchmark: every system side by side, one run.

Questions whose gold evidence spans several sentences of a long document (every set in
data/long-evidence/, see its README: FairytaleQA stories and LooGLE's Wikipedia articles),
each set reported on its own. For each budget of 256, 512 and
1,024 tokens the ranked passages of each system are read in rank order within the question's
document, the last cut at the budget; printed per system: R@1 (top sentence overlaps the
evidence), found@B (some evidence read) and recall@B (share of evidence characters read),
and answer coverage at 256 tokens. Same figures as
``landmark-rag eval --data data/long-evidence/long-evidence-v1.json``.

    python benchmarks/long_evidence.py                      # validation split, all systems
    python benchmarks/long_evidence.py --split heldout      # the reported figures
    python benchmarks/long_evidence.py --docs 3 --per-doc 10   # a quick look
    python benchmarks/long_evidence.py --data data/long-evidence/loogle-v1.json   # one set
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = [ROOT / "data" / "long-evidence" / name for name in ("long-evidence-v1.json", "loogle-v1.json")]


def main(argv: list[str] | None = None) -> int:
    from landmark_rag.evaluation.longevidence import DEFAULT_SYSTEMS, evaluate_long_evidence, markdown_tables

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, nargs="+", default=DATA, help="long-evidence files (default: both sets)")
    ap.add_argument("--split", default="validation", choices=["validation", "heldout", "all"])
    ap.add_argument("--systems", default=",".join(DEFAULT_SYSTEMS))
    ap.add_argument("--budgets", default="256,512,1024")
    ap.add_argument("--model", default=None, help="landmark model (default: the package's)")
    ap.add_argument("--docs", type=int, default=None, help="only the first N documents")
    ap.add_argument("--per-doc", type=int, default=None, help="only each document's first N questions")
    ap.add_argument("--json", type=Path, default=None, help="also write the full results here, one per file")
    args = ap.parse_args(argv)

    results = {}
    for path in args.data:
        result = evaluate_long_evidence(
            path,
            [s.strip() for s in args.systems.split(",") if s.strip()],
            [int(b) for b in args.budgets.split(",")],
            args.model,
            split=None if args.split == "all" else args.split,
            max_documents=args.docs,
            max_questions_per_doc=args.per_doc,
            show_progress=sys.stderr.isatty(),
        )
        results[path.name] = result
        print(f"{path.name}: {result['split']} split, {result['questions']} questions, model {result['model']}, "
              f"base {result['base_model']}, {result['elapsed_s']:.0f} s\n")
        print(markdown_tables(result) + "\n")
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
