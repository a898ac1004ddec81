"""Seconds per training step on this machine under each of glibc's memory policies (and with the
distillation target's inputs batched as before).

Runs the first ``--steps`` steps of a training config (default: landmark-mpnet's recipe; its
prepared data must be in place: ``landmark-rag train --prepare data/training/general-v1.json
...``) in a fresh process per policy, the policies alternated over ``--rounds``, with no
validation and no checkpoints, and prints per policy the seconds a step, the process's user
and kernel CPU seconds, its minor page faults and its peak memory, and the losses (the same
in every policy: the allocator does not change the arithmetic; the batching of the lone units
changes it only at float rounding):

- ``kept`` (the trainer's default on a CPU): no block gets a mapping of its own and freed
  memory stays in the heap for the next step (``encode/runtime/malloc.py``,
  ``keep_freed_memory``);
- ``pinned``: the encoder's own policy alone, every block of 128 KiB or more its own mapping
  (what training ran with before);
- ``glibc``: glibc's defaults (``LANDMARK_RAG_MALLOPT=0``);
- ``one-batch``: memory kept, and the distillation target's lone units of a step in one batch
  padded to the longest (what training did before ``train.forward.pool_standalone`` sorted them
  into batches of a token budget);
- ``no-dropout``: memory kept, the base model's dropout off (``model_dropout`` 0; a recipe
  change, so its losses differ);
- ``no-cache``: every unit, standalone unit and query tokenised again each time a step needs it
  (``train.forward.TokenCache`` keeps nothing), as training did before it cached ids (a new unit's
  standalone ids are then tokenised twice in a step: once for the step, once for its target);
- ``no-prefetch``: each step's batch laid out on the step's own thread, after the previous
  step (the config's ``prefetch`` 0);
- ``before``: both of the last two, the trainer's host side as it was before either;
- ``bf16``: memory kept, ``mixed_precision`` bf16 (CPU autocast; the losses differ by rounding).

    python benchmarks/train_steps.py                       # mpnet recipe, 6 steps, 2 rounds
    python benchmarks/train_steps.py -c docs/experiments/runs/minilm-general-v1-2800.json --steps 10
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
POLICIES = ("kept", "pinned", "glibc", "one-batch", "no-dropout", "no-cache", "no-prefetch", "before", "bf16")

CHILD = r"""
import json, resource, sys
from landmark_rag.train import trainer as trainer_module
from landmark_rag.train.config import TrainConfig

policy, config_path, steps, threads, out_dir = sys.argv[1:6]
if policy == "pinned":
    trainer_module.keep_freed_memory = lambda: False
if policy == "one-batch":
    from landmark_rag.train import forward
    forward.STANDALONE_BATCH_TOKENS, forward.STANDALONE_WIDTH_GROWTH = 1 << 40, float("inf")
if policy in ("no-cache", "before"):
    # every lookup tokenised afresh, nothing kept (under the cache's lock: the prefetch thread
    # shares the tokenizer)
    from landmark_rag.segment.tokens import text_tokenizer
    from landmark_rag.train import forward
    def fresh_ids(self, pieces):
        with self._lock:
            self.tokenised += len(pieces)
            return text_tokenizer(self.layout.tokenizer).ids(list(pieces))
    def fresh_queries(self, texts):
        # one call lays the queries out with their own row numbers, as the cache re-numbers them
        with self._lock:
            self.tokenised += len(texts)
            return self.layout.query_jobs(list(texts))
    forward.TokenCache._lookup = fresh_ids
    forward.TokenCache.query_jobs = fresh_queries
cfg = TrainConfig.load(config_path).to_dict()
if policy in ("no-prefetch", "before"):
    cfg["prefetch"] = 0
# no validation: only the training steps are timed (a source only validated on goes)
cfg["data"] = [d if not isinstance(d, dict) else {**d, "val": ""} for d in cfg["data"]
               if not isinstance(d, dict) or d.get("train") != ""]
cfg["stages"] = [{**cfg["stages"][0], "steps": int(steps)}]  # the first stage's first steps
if policy == "no-dropout":
    cfg["model_dropout"] = 0.0
cfg.update(eval_every=0, save_every=0, threads=int(threads), output_dir=out_dir, device="cpu",
           mixed_precision="bf16" if policy == "bf16" else "no")
_, history = trainer_module.train(TrainConfig.from_dict(cfg))
usage = resource.getrusage(resource.RUSAGE_SELF)
print("RESULT " + json.dumps({
    "train_seconds": next(h["train_seconds"] for h in history if "train_seconds" in h),
    "losses": [h["loss"] for h in history if "loss" in h],
    "user": usage.ru_utime, "sys": usage.ru_stime, "minflt": usage.ru_minflt, "maxrss_mb": usage.ru_maxrss // 1024,
}))
"""


def run(policy: str, config: Path, steps: int, threads: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}
    if policy == "glibc":
        env["LANDMARK_RAG_MALLOPT"] = "0"
    else:
        env.pop("LANDMARK_RAG_MALLOPT", None)
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            [sys.executable, "-c", CHILD, policy, str(config), str(steps), str(threads), tmp],
            capture_output=True, text=True, env=env, cwd=REPO,
        )
    if out.returncode != 0:
        sys.exit(f"{policy}: training failed:\n{out.stderr[-3000:]}")
    line = next(ln for ln in out.stdout.splitlines() if ln.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-c", "--config", type=Path, default=REPO / "docs/experiments/runs/mpnet-general-v1-2800.json")
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--policies", default="kept,pinned,glibc", help=f"comma list of {', '.join(POLICIES)}")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    unknown = sorted(set(policies) - set(POLICIES))
    if unknown:
        ap.error(f"unknown policies {unknown}; known: {', '.join(POLICIES)}")
    results: dict[str, list[dict]] = {p: [] for p in policies}
    for r in range(args.rounds):
        for policy in policies if r % 2 == 0 else policies[::-1]:
            res = run(policy, args.config, args.steps, args.threads)
            results[policy].append(res)
            print(f"round {r + 1} {policy}: {res['train_seconds'] / args.steps:.2f} s/step, "
                  f"sys {res['sys']:.1f} s, {res['minflt']:,} page faults", file=sys.stderr, flush=True)
    print(f"\n{args.config.name}, {args.steps} steps, {args.threads} threads, best of {args.rounds} rounds\n")
    print("| policy | s / step | user CPU s | kernel CPU s | minor page faults | peak RSS (MB) | same losses as the first |")
    print("|---|---:|---:|---:|---:|---:|---|")
    first = results[policies[0]][0]["losses"]
    for policy, runs in results.items():
        best = min(runs, key=lambda x: x["train_seconds"])
        diff = max(abs(a - b) for x in runs for a, b in zip(x["losses"], first, strict=True))
        same = "yes" if diff == 0 else f"within {diff:.1e}"
        print(f"| {policy} | {best['train_seconds'] / args.steps:.2f} | {best['user']:.1f} | {best['sys']:.1f} | "
              f"{best['minflt']:,} | {best['maxrss_mb']:,} | {same} |")
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    return results


if __name__ == "__main__":
    main()
