"""Cold start of the ``landmark-rag`` command: import time, ``info``, a cold query, an unchanged re-index.

Every figure is a fresh process (nothing cached in memory), exactly what a user pays per
command. To compare two source trees side by side on a noisy machine, give several
``--src`` folders: their runs are interleaved round by round and the best of ``--rounds``
is kept, so the ratio between them holds even when the absolute times do not.

    # a 5-article store first (kept in --workdir between runs)
    python benchmarks/cli_startup.py --articles 5
    # before/after: the tree of an older commit next to this one
    git archive 88918f3 src | tar -x -C /tmp/base
    python benchmarks/cli_startup.py --src /tmp/base/src --src src --rounds 3

Prints a JSON object: per tree and command, the best wall and user+sys CPU seconds, and
``import_s`` (self-reported by ``python -X importtime`` for ``import landmark_rag.cli``).
Data: data/squad-v1.1-dev-part-a.json (CC BY-SA 4.0).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))

from cli_squad import DEFAULT_DATA, write_articles

QUESTION = "Who won Super Bowl 50?"


def run(cmd: list[str], src: Path, cwd: Path) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds of the child, stdout) of one fresh process."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}): {out.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out.stdout + out.stderr


def import_seconds(src: Path, cwd: Path) -> tuple[float, list[str]]:
    """Total import time of ``landmark_rag.cli`` and the heavy packages it pulled in."""
    code = "import sys, landmark_rag.cli as c; c._register(); print(','.join(sorted(m for m in sys.modules if '.' not in m)))"
    env = {**os.environ, "PYTHONPATH": str(src)}
    out = subprocess.run([sys.executable, "-X", "importtime", "-c", code], env=env, cwd=cwd, capture_output=True,
                         text=True, check=True)
    total = 0
    for line in out.stderr.splitlines():
        m = re.match(r"import time:\s+\d+ \|\s+(\d+) \| (\S.*)$", line)
        if m:  # a top-level import (no indentation): its cumulative time counts once
            total += int(m.group(1))
    mods = out.stdout.strip().splitlines()[-1].split(",")
    heavy = sorted(set(mods) & {"torch", "transformers", "chromadb", "peft", "bm25s", "sentence_transformers"})
    return total / 1e6, heavy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--src", action="append", type=Path, help="source trees to compare (default: ./src)")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--articles", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workdir", type=Path, default=Path("/tmp/landmark_cli_startup"))
    args = ap.parse_args()
    srcs = [p.resolve() for p in (args.src or [REPO / "src"])]
    exe = str(Path(sys.executable).with_name("landmark-rag"))
    work = args.workdir
    folder, db = work / "articles", work / "db"
    if not db.is_dir():
        folder.mkdir(parents=True, exist_ok=True)
        write_articles(args.data, folder, args.articles)
        print(f"indexing {args.articles} articles into {db} (once)", file=sys.stderr)
        run([exe, "index", str(folder), "--db", str(db), "--quiet"], srcs[-1], work)
    commands = {
        "info": [exe, "info", "--db", str(db)],
        "query": [exe, "query", QUESTION, "--db", str(db), "-k", "3", "--json"],
        "index_unchanged": [exe, "index", str(folder), "--db", str(db), "--quiet"],
    }
    best: dict[str, dict[str, dict[str, float]]] = {str(s): {} for s in srcs}
    for r in range(args.rounds):
        for src in srcs:
            rows = best[str(src)]
            imp, heavy = import_seconds(src, work)
            rows.setdefault("import", {"import_s": imp, "heavy_modules": heavy})
            rows["import"]["import_s"] = min(rows["import"]["import_s"], imp)
            for name, cmd in commands.items():
                wall, cpu, _ = run(cmd, src, work)
                cur = rows.setdefault(name, {"wall_s": wall, "cpu_s": cpu})
                cur["wall_s"], cur["cpu_s"] = min(cur["wall_s"], wall), min(cur["cpu_s"], cpu)
        print(f"round {r + 1}/{args.rounds} done", file=sys.stderr)
    load = os.getloadavg()
    result = {"load_avg_1_5_15": [round(x, 1) for x in load], "cores": os.cpu_count(), "rounds": args.rounds,
              "trees": {s: {k: {kk: (round(vv, 3) if isinstance(vv, float) else vv) for kk, vv in v.items()}
                            for k, v in rows.items()} for s, rows in best.items()}}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
