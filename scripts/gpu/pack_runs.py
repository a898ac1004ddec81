"""Pack what a GPU session's training runs leave into a few archives under 16 MiB each.

Per run: its log and latest history; the finished model (adapter and configs) when the run
ended; the checkpoint with the best validation R@1 (weights only); and, when the run did not
end, its latest checkpoint with the optimiser state, to continue with ``--resume``.

    python scripts/gpu/pack_runs.py RUNS_DIR OUT_DIR NAME[=...] ...
"""

from __future__ import annotations

import json
import sys
import tarfile
from pathlib import Path


def steps_of(ckpts: Path) -> list[Path]:
    return sorted(ckpts.glob("step-*"), key=lambda p: int(p.name.split("-")[1])) if ckpts.is_dir() else []


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
            for c in ckpts:
                if best is not None and c.name == f"step-{best}":
                    for f in c.iterdir():
                        if f.is_file() and f.name != "trainer_state.pt":
                            tar.add(f, arcname=f"{name}/best/{f.name}")
            if ckpts and not finished:
                tar.add(ckpts[-1], arcname=f"{name}/latest/{ckpts[-1].name}")
        summary[name] = {
            "finished": finished, "last_checkpoint": ckpts[-1].name if ckpts else None, "best_step": best,
            "validation": [(r["step"], r["validation"].get("R@1")) for r in history if "validation" in r],
            "train_seconds": next((r["train_seconds"] for r in history if "train_seconds" in r), None),
        }
    (out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    print(json.dumps(summary, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
