"""Pack what the training runs on a GPU host leave into a few archives of at most 15 MiB each.

Per run: its log and latest history; the finished model (adapter and configs) when the run
ended; the checkpoint with the best validation R@1 (weights only; left out when it is the
finished model or the latest checkpoint: ``best_in`` in summary.json says where); and, when the run did not end, its latest checkpoint with the optimiser
state, to continue with ``--resume``. An archive over 15 MiB (landmark-mpnet's adapter alone is
10 MiB, its optimiser state twice that) is cut into ``NAME.tgz.00``, ``NAME.tgz.01``, ...:
``cat NAME.tgz.?? > NAME.tgz`` joins them again.

    python scripts/gpu/pack_runs.py RUNS_DIR OUT_DIR NAME[=...] ...
"""

from __future__ import annotations

import filecmp
import json
import sys
import tarfile
from pathlib import Path


def steps_of(ckpts: Path) -> list[Path]:
    return sorted(ckpts.glob("step-*"), key=lambda p: int(p.name.split("-")[1])) if ckpts.is_dir() else []


#: the largest file written: archives over it are cut into pieces that are easy to copy back
LIMIT = 15 * 2**20


def split_large(path: Path) -> list[str]:
    """``path`` cut into ``path.00``, ``path.01``, ... when it is over LIMIT; the names that come back."""
    if path.stat().st_size <= LIMIT:
        return [path.name]
    names = []
    with path.open("rb") as f:
        for i, block in enumerate(iter(lambda: f.read(LIMIT), b"")):
            chunk = path.with_name(f"{path.name}.{i:02d}")
            chunk.write_bytes(block)
            names.append(chunk.name)
    path.unlink()
    return names


def same_weights(a: Path, b: Path) -> bool:
    files = [f.name for f in a.iterdir() if f.is_file() and f.suffix == ".safetensors"]
    return bool(files) and all((b / n).is_file() and filecmp.cmp(a / n, b / n, shallow=False) for n in files)


def best_step(history: list[dict]) -> int | None:
    vals = [(r["validation"].get("R@1", 0.0), r["step"]) for r in history if "validation" in r and r.get("step")]
    return max(vals)[1] if vals else None


def main(runs: Path, out: Path, names: list[str]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    summary = {}
    for name in (n.split("=")[0] for n in names):
        run = runs / name
        ckpts = steps_of(run / "checkpoints")
        finished = (run / "adapter_model.safetensors").is_file() or (run / "model.safetensors").is_file()
        hist_file = run / "train_history.json" if finished else (ckpts[-1] / "train_history.json" if ckpts else None)
        history = json.loads(hist_file.read_text()) if hist_file and hist_file.is_file() else []
        best = best_step(history)
        with tarfile.open(out / f"{name}.tgz", "w:gz") as tar:
            log = runs / f"{name}.log"
            if log.is_file():
                tar.add(log, arcname=f"{name}/train.log")
            if finished:
                for f in run.iterdir():
                    if f.is_file():
                        tar.add(f, arcname=f"{name}/final/{f.name}")
            # where the best checkpoint's weights travel: on their own, or as the finished model or
            # the latest checkpoint when they are those
            best_in = None
            for c in ckpts:
                if best is None or c.name != f"step-{best}":
                    continue
                if finished and same_weights(c, run):
                    best_in = "final"
                elif not finished and c == ckpts[-1]:
                    best_in = "latest"
                else:
                    best_in = "best"
                    for f in c.iterdir():
                        if f.is_file() and f.name != "trainer_state.pt":
                            tar.add(f, arcname=f"{name}/best/{f.name}")
            if ckpts and not finished:
                tar.add(ckpts[-1], arcname=f"{name}/latest/{ckpts[-1].name}")
        summary[name] = {
            "files": split_large(out / f"{name}.tgz"),
            "finished": finished, "last_checkpoint": ckpts[-1].name if ckpts else None, "best_step": best,
            "best_in": best_in,
            "validation": [(r["step"], r["validation"].get("R@1")) for r in history if "validation" in r],
            "train_seconds": next((r["train_seconds"] for r in history if "train_seconds" in r), None),
        }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
