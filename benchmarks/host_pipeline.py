"""Host-side speed of ``encode_documents``: tokens/s next to the tokenizer alone.

The model is a randomly initialised 1-layer, 32-wide BERT with all-MiniLM-L6-v2's
tokenizer, so the forward pass costs next to nothing and what is measured is the host
pipeline (segmentation, tokenisation, window planning, padding, pooling). The reference
is one pass of the tokenizer's backend ``encode_batch`` over the same texts (whole
articles); the ratio is the share of the bare tokenizer's rate that indexing keeps.

    python benchmarks/host_pipeline.py [--articles N] [--repeat R] [--device cpu] [--free-forward]

``--free-forward`` replaces the model by one that returns zeros at once: what remains is the
host pipeline alone, as a device much faster than the host would see it (the ratio a GPU
run could reach at best).
"""

from __future__ import annotations

import argparse
import copy
import tempfile
import time
from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO / "data" / "squad-v1.1-dev-part-a.json"


def tiny_model(directory: Path) -> Path:
    from transformers import AutoTokenizer, BertConfig, BertModel

    from landmark_rag.encode.models.registry import resolve

    tokenizer = AutoTokenizer.from_pretrained(resolve("all-MiniLM-L6-v2").path)
    config = BertConfig(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
        intermediate_size=64, max_position_embeddings=512,
    )
    torch.manual_seed(0)
    BertModel(config).save_pretrained(directory, safe_serialization=True)
    tokenizer.save_pretrained(directory)
    return directory


class FreeForward(torch.nn.Module):
    """Zeros of the model's output shape, computed by nothing."""

    def __init__(self, model: torch.nn.Module) -> None:
        super().__init__()
        self.config = model.config
        self.anchor = torch.nn.Parameter(torch.zeros(1, device=next(model.parameters()).device))

    def forward(self, input_ids: torch.Tensor, **_: object) -> tuple[torch.Tensor]:
        return (self.anchor.new_zeros(*input_ids.shape, self.config.hidden_size) + 1.0,)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--articles", type=int, default=None, help="SQuAD articles (default: all in the file)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--device", default=None)
    parser.add_argument("--pooling", default="landmark")
    parser.add_argument("--free-forward", action="store_true", help="a model that costs nothing (host work only)")
    parser.add_argument("--model", default=None, help="a real model instead of the tiny random BERT")
    args = parser.parse_args()

    from landmark_rag.datasets import read_squad
    from landmark_rag.encode import LandmarkEncoder

    texts = [a.text for a in read_squad(SQUAD, args.articles)]
    with tempfile.TemporaryDirectory() as tmp:
        model = args.model or tiny_model(Path(tmp))
        encoder = LandmarkEncoder.from_pretrained(model, device=args.device, pooling=args.pooling)
    if args.free_forward:
        encoder.model = FreeForward(encoder.model)
    backend = copy.deepcopy(encoder.tokenizer.backend_tokenizer)
    backend.no_truncation()
    backend.no_padding()
    tokens = sum(len(e.ids) for e in backend.encode_batch(texts, add_special_tokens=False))

    def best(fn) -> float:
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            fn()
            if encoder.device.type == "cuda":
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        return min(times)

    encoder.encode_documents(texts[:2])  # warm-up
    t_tok = best(lambda: backend.encode_batch(texts, add_special_tokens=False))
    t_enc = best(lambda: encoder.encode_documents(texts))
    print(f"device {encoder.device}, {len(texts)} articles, {tokens:,} tokens, torch threads {torch.get_num_threads()}")
    print(f"tokenizer encode_batch: {tokens / t_tok:12,.0f} tokens/s ({t_tok:.3f} s)")
    print(f"encode_documents:       {tokens / t_enc:12,.0f} tokens/s ({t_enc:.3f} s)")
    print(f"ratio: {t_tok / t_enc:.3f}")


if __name__ == "__main__":
    main()
