"""Average LoRA checkpoints of one training run into one adapter (a uniform "model soup").

An experiment tool, not part of the package: checkpoints along one run's trajectory are
averaged as weight deltas (the mean of every checkpoint's ``B @ A * scaling``), which is what
averaging the merged models would give, and the mean is refactored to the run's rank by peft's
SVD merge (``add_weighted_adapter(combination_type="svd")``), or with ``--exact`` kept exact by
stacking the factors (``combination_type="cat"``: rank r times the number of checkpoints, the
way to average checkpoints of different runs, whose factors share no basis). Averaging the A and
B factors separately would not be the mean of the models. The relative error of the average
against the exact mean is printed per run.

The model folder it writes is loadable like any trained model: the adapter, plus the
``landmark_config.json`` (and training records) of ``--meta``, a model folder whose search
settings the average should use, and ``soup.json`` naming the checkpoints.

    python scripts/average_adapters.py OUT CKPT [CKPT ...] [--rank 16 | --exact] --meta MODEL_DIR
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import torch
from peft import PeftModel
from transformers import AutoModel

from landmark_rag.encode.models.registry import resolve


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("checkpoints", nargs="+", type=Path)
    parser.add_argument("--rank", type=int, default=None, help="the average's rank (default: the checkpoints')")
    parser.add_argument("--exact", action="store_true", help="stack the factors (rank r x n) instead of an SVD")
    parser.add_argument("--meta", type=Path, required=True, help="model folder whose landmark_config.json to copy")
    args = parser.parse_args()
    if args.exact and args.rank is not None:
        parser.error("--exact keeps every checkpoint's rank; give --rank or --exact")

    base_name = json.loads((args.checkpoints[0] / "adapter_config.json").read_text())["base_model_name_or_path"]
    base = AutoModel.from_pretrained(resolve(base_name).path, dtype=torch.float32)
    model = PeftModel.from_pretrained(base, str(args.checkpoints[0]), adapter_name="a0")
    names = ["a0"]
    for i, checkpoint in enumerate(args.checkpoints[1:], 1):
        model.load_adapter(str(checkpoint), adapter_name=f"a{i}")
        names.append(f"a{i}")
    weights = [1.0 / len(names)] * len(names)
    if args.exact:
        model.base_model.add_weighted_adapter(names, weights, "average", combination_type="cat")
    else:
        model.base_model.add_weighted_adapter(
            names, weights, "average", combination_type="svd", svd_rank=args.rank, svd_full_matrices=False
        )

    errors = []
    for module in model.modules():
        lora_a = getattr(module, "lora_A", None)
        if lora_a is None or "average" not in lora_a:
            continue
        exact = sum(module.get_delta_weight(n) for n in names) / len(names)
        if float(exact.norm()) > 0:  # a module no checkpoint moved has nothing to compare
            errors.append(float((module.get_delta_weight("average") - exact).norm() / exact.norm()))
    print(
        f"{len(errors)} modules; relative error of the {'stacked' if args.exact else 'rank-r'} average: "
        f"mean {sum(errors) / len(errors):.4f}, max {max(errors):.4f}"
    )

    staging = args.out.with_name(args.out.name + ".tmp")
    shutil.rmtree(staging, ignore_errors=True)
    model.save_pretrained(str(staging), selected_adapters=["average"])
    args.out.mkdir(parents=True, exist_ok=True)
    for f in (staging / "average").iterdir():  # peft keeps a named adapter in a subfolder
        shutil.copy(f, args.out / f.name)
    shutil.rmtree(staging)
    for name in ("landmark_config.json", "train_config.json", "train_history.json"):
        if (args.meta / name).exists():
            shutil.copy(args.meta / name, args.out / name)
    (args.out / "soup.json").write_text(
        json.dumps({"checkpoints": [str(c) for c in args.checkpoints], "weights": weights,
                    "rank": args.rank, "exact": args.exact}, indent=1)
    )
    print("wrote", args.out)


if __name__ == "__main__":
    main()
