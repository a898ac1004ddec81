"""Indexing throughput on CPU or CUDA without any weights: where the time goes, end to end.

Speed does not depend on weight values, so this builds a *randomly initialised* model of
the shipped default's architecture (all-MiniLM-L6-v2's config and tokenizer, kept in
``benchmarks/assets/``; ``--arch mpnet`` for all-mpnet-base-v2's) and measures, over the
same SQuAD articles (joined per article, ``--copies`` times):

- ``landmark default``: ``LandmarkEncoder.from_pretrained(DIR).encode_documents`` with the
  default layout (mean pooling, 256-token windows, a quarter-window overlap) and every
  default of the device: segmentation, tokenisation, windows, forward, pooling, copy back
  (on an accelerator, with preparation worker processes: ``encode.runtime.process``);
- ``--workers 0,4,8``: the same call, and its host side with the forward skipped, with that
  many preparation workers each (0: the producer thread alone, the CPU's default);
- ``landmark default, host half alone`` / ``device half alone``: the same call's two halves,
  ``prepare_documents`` (segment, tokenise, lay out, pad) and ``encode_prepared`` (forward,
  pooling, copy back), timed one after the other: the slower one bounds the default;
  ``tokenizer, batch call over the sentences`` is the tokenising inside that host half (the
  fast tokenizer's batch call, every core, over the same sentences): the rest of the host half
  is Python in this process;
- ``landmark host side``: the same call with a 1-layer, 32-wide model of the same
  tokenizer, whose forward costs little (on a GPU; on a 2-core CPU it is most of the call);
- ``landmark host side, forward skipped``: the default's call with its model replaced by one
  that returns zeros at once (``host_pipeline.FreeForward``): segmentation, tokenisation,
  layout, padding, pooling, normalising and the copy back, all of the host's work and
  nothing else: what the host pipeline can feed a device that costs nothing;
- ``tokenizer, one thread``: one single-threaded pass of the fast tokenizer over the same
  texts (``tokenizers.Tokenizer.encode``), the yardstick for the host side;
- ``sentence-transformers per sentence``: ``SentenceTransformer.encode`` of the same
  sentences, each alone (tokenising included), the simplest peer;
- ``bare forward``: the model's forward alone over the layout's pre-tokenised windows,
  fp32 and in the device's half precision: the ceiling for any in-context method;
- ``index``: the write path (``ingest.write.write_documents``, what ``LandmarkIndex.add_texts``
  and ``landmark-rag index`` run) into a new embedded Chroma store, side by side: one
  ``encode_documents`` call per write group then its writes (``sequential``), the device's
  default (the next group prepared while this one encodes; on an accelerator also encoded
  while the last one is stored), and all three stages overlapped (``all three``, forced);
  with the default model and the 1-layer one (``--skip index`` leaves them out).

Tokens/s always divides the articles' own token count, so every figure is "document tokens
turned into vectors per second". Each system runs ``--rounds`` times after a warm-up and
keeps its best time. Nothing is downloaded: the model is built from a config, the data is
``data/squad-v1.1-dev-part-a.json`` (CC BY-SA 4.0).

    python benchmarks/gpu_throughput.py                       # CPU: 6 articles
    python benchmarks/gpu_throughput.py --device cuda         # all 24 articles x 4 copies
    python benchmarks/gpu_throughput.py --device cuda --workers 0,4,8,12 --skip st,bare,index
    python benchmarks/gpu_throughput.py --device cuda --arch mpnet --json out.json

Prints a Markdown table and a JSON object (``--json`` also writes it to a file).
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import landmark_rag  # noqa: F401 - first: OpenMP's passive wait is set before torch loads

# isort: split
import torch

REPO = Path(__file__).resolve().parents[1]
ASSETS = REPO / "benchmarks" / "assets"
ARCHS = {"minilm": "all-MiniLM-L6-v2", "mpnet": "all-mpnet-base-v2"}
DEFAULT_DATA = REPO / "data" / "squad-v1.1-dev-part-a.json"


def load_texts(path: Path, articles: int, copies: int) -> list[str]:
    data = json.loads(path.read_text(encoding="utf-8"))["data"][:articles]
    texts = ["\n\n".join(p["context"] for p in art["paragraphs"]) for art in data]
    return texts * copies


def build_model_dir(arch: str, out: Path, *, tiny: bool = False) -> Path:
    """A model directory ``LandmarkEncoder.from_pretrained`` loads: random weights of
    ``arch``'s config (or a 1-layer, 32-wide one), its tokenizer, the default's layout."""
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from landmark_rag.encode.config import LandmarkConfig

    src = ASSETS / ARCHS[arch]
    cfg = AutoConfig.from_pretrained(src)
    if tiny:
        cfg.num_hidden_layers, cfg.hidden_size, cfg.num_attention_heads, cfg.intermediate_size = 1, 32, 2, 64
    torch.manual_seed(0)
    AutoModel.from_config(cfg).save_pretrained(out, safe_serialization=True)
    AutoTokenizer.from_pretrained(src).save_pretrained(out)
    LandmarkConfig(
        model_name=f"random-{arch}{'-tiny' if tiny else ''}", pooling="mean", query_pooling="mean", max_length=256
    ).save(out)
    return out


def best_time(fn: Callable[[], object], rounds: int, device: torch.device) -> float:
    fn()  # warm-up: CUDA context, kernels, allocator, tokenizer caches
    best = float("inf")
    for _ in range(rounds):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        best = min(best, time.perf_counter() - t0)
    return best


def workers_ready(encoder: object, count: int, timeout: float = 60.0) -> None:
    """Start ``count`` preparation workers and wait until each has the encoder's tokenizer, so
    that no timed call prepares its first groups on the producer thread while they boot."""
    from landmark_rag.encode.runtime import process
    from landmark_rag.segment.tokens import text_tokenizer

    if count <= 0:
        return
    tt = text_tokenizer(encoder.tokenizer)
    deadline = time.monotonic() + timeout
    for worker in process.shared_workers(count):
        while worker.tokenizer_key(tt) is None and worker.alive and time.monotonic() < deadline:
            time.sleep(0.02)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def bare_forward(encoder: object, texts: list[str], dtype: torch.dtype, batch: int) -> Callable[[], None]:
    """The model's forward alone over the layout's windows of ``texts``, pre-tokenised and
    padded once, ``batch`` windows at a time, in ``dtype``."""
    from landmark_rag.encode.pooling import pad_batch

    layout = encoder.layout
    jobs = []
    for d, text in enumerate(texts):
        sents = encoder.segment(text)
        jobs.extend(layout.document_jobs(layout.tokenize_sentences([s.text for s in sents]), d))
    jobs.sort(key=lambda j: len(j.ids))
    device = encoder.device
    batches = [tuple(t.to(device) for t in pad_batch(jobs[i : i + batch], layout.pad_id))
               for i in range(0, len(jobs), batch)]
    model = encoder.model
    cast = device.type == "cuda" and dtype != next(model.parameters()).dtype
    if cast:
        import copy

        model = copy.deepcopy(model).to(dtype)
    autocast = device.type == "cpu" and dtype == torch.bfloat16

    @torch.inference_mode()
    def run() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
            for ids, mask in batches:
                model(input_ids=ids, attention_mask=mask)

    return run


def sentence_transformers_run(model_dir: Path, sentences: list[str], device: torch.device, batch: int) -> Callable[[], None]:
    from sentence_transformers import SentenceTransformer, models

    word = models.Transformer(str(model_dir), max_seq_length=256)
    st = SentenceTransformer(modules=[word, models.Pooling(word.get_word_embedding_dimension(), "mean")],
                             device=str(device))
    if device.type == "cuda":
        st = st.half()

    def run() -> None:
        st.encode(sentences, batch_size=batch, convert_to_numpy=True, show_progress_bar=False)

    return run


#: the write path's variants: how ``DocumentEncoder`` is given to ``write_documents``
INDEX_MODES = {
    "sequential": "one encode_documents call per group, then its writes",
    "default": "the default (next group prepared while this one encodes; on an accelerator also encoded while the last is stored)",
    "all three": "prepare, encode and store overlapped (the accelerator default, forced)",
}


def index_run(encoder: object, texts: list[str], root: Path, mode: str) -> Callable[[], None]:
    """The write path over ``texts`` into a new Chroma store per call (``INDEX_MODES``)."""
    from dataclasses import replace

    from landmark_rag.ingest import DocumentEncoder, SourceDocument, write_documents
    from landmark_rag.store import ChromaSentenceStore

    docs = [SourceDocument(f"doc-{i}", t) for i, t in enumerate(texts)]

    def encoder_of() -> DocumentEncoder:
        default = DocumentEncoder.of(encoder)
        if mode == "sequential":
            return DocumentEncoder(default.encode, default.count_tokens)
        return replace(default, overlap_store=True) if mode == "all three" else default

    def run() -> None:
        root.mkdir(parents=True, exist_ok=True)
        store = ChromaSentenceStore.open(Path(tempfile.mkdtemp(dir=root)), identity=encoder.config.identity())
        report = write_documents(store, docs, encoder_of, errors="raise")
        assert report.counts()["indexed"] == len(docs), report.counts()

    return run


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", help="cpu | cuda | cuda:N")
    ap.add_argument("--arch", choices=sorted(ARCHS), default="minilm")
    ap.add_argument("--data", type=Path, default=DEFAULT_DATA)
    ap.add_argument("--articles", type=int, default=None, help="articles of the file (default: 24 on CUDA, 6 on CPU)")
    ap.add_argument("--copies", type=int, default=None, help="times the articles repeat (default: 4 on CUDA, 1 on CPU)")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=None, help="windows per batch of the bare forward (128 CUDA / 16 CPU)")
    ap.add_argument("--st-batch", type=int, default=None, help="sentence-transformers batch (512 CUDA / 64 CPU)")
    ap.add_argument("--skip", default="", help="comma list of systems to skip: st, bare, host, e2e, halves, index")
    ap.add_argument("--workers", default="",
                    help="comma list of preparation worker counts to time the default and its host side with "
                         "(0: the producer thread alone); each count starts its own workers")
    ap.add_argument("--tasks-per-worker", default="",
                    help="comma list: the default again with each call cut into this many groups per worker "
                         "(larger groups: larger batches on the device, fewer groups to share)")
    ap.add_argument("--task-chars", default="",
                    help="comma list: the default again with groups of at most this many characters "
                         "(524,288 on CUDA, 131,072 elsewhere, by default), the call cut into one group per worker or more")
    ap.add_argument("--switch-interval", default="",
                    help="comma list of seconds: the default again with sys.setswitchinterval at each")
    ap.add_argument("--separate-groups", action="store_true",
                    help="also time the default with every prepared group run as its own passes (on an "
                         "accelerator the default joins groups prepared together into one pass)")
    ap.add_argument("--mask-reads", action="store_true",
                    help="also time the default with unpadded batches handing their all-ones mask to the model "
                         "(transformers reads it on the device every pass; the default hands none over)")
    ap.add_argument("--compiled", action="store_true",
                    help="also time the default with torch.compile (compiling takes a minute or more)")
    ap.add_argument("--compile-modes", default="default",
                    help="with --compiled: torch.compile modes to time, comma-separated (e.g. "
                         "default,reduce-overhead: the latter replays CUDA graphs, one launch a pass)")
    ap.add_argument("--json", type=Path, default=None)
    args = ap.parse_args(argv)
    device = torch.device(args.device)
    cuda = device.type == "cuda"
    if cuda and not torch.cuda.is_available():
        sys.exit("--device cuda: no CUDA device is visible")
    texts = load_texts(args.data, args.articles or (24 if cuda else 6), args.copies or (4 if cuda else 1))
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}

    from host_pipeline import FreeForward

    from landmark_rag.encode.encoder import LandmarkEncoder
    from landmark_rag.encode.runtime import process
    from landmark_rag.encode.runtime.describe import flash_tokenizer

    tmp = Path(tempfile.mkdtemp(prefix="gpu-throughput-"))
    atexit.register(shutil.rmtree, tmp, True)  # a model and stores: about 90 MB a run
    full = LandmarkEncoder.from_pretrained(build_model_dir(args.arch, tmp / "full"), device=device)
    # a private copy of the Rust tokenizer: a freshly loaded one may still truncate (to 128 or 512)
    import copy

    tokenizer = copy.deepcopy(full.tokenizer.backend_tokenizer)
    tokenizer.no_truncation()
    tokenizer.no_padding()
    n_tokens = sum(len(tokenizer.encode(t, add_special_tokens=False).ids) for t in texts)
    rows: list[tuple[str, float, str]] = []

    def add(name: str, seconds: float, note: str = "", tokens: int | None = None) -> None:
        tokens = n_tokens if tokens is None else tokens
        rows.append((name, tokens / seconds, note))
        print(f"  {name}: {tokens / seconds:,.0f} tokens/s ({seconds:.2f} s) {note}", file=sys.stderr, flush=True)

    dtype = next(full.model.parameters()).dtype
    auto = process.pool_size(None, None, device.type != "cpu")
    if "e2e" not in skip:
        workers_ready(full, auto)
        add("landmark default", best_time(lambda: full.encode_documents(texts), args.rounds, device),
            f"weights {str(dtype).removeprefix('torch.')}; {auto} preparation workers")
    for count in (int(c) for c in args.workers.split(",") if c.strip()):
        process.close_shared_workers()  # each count starts its own, with its share of the cores
        full.prepare_process, full.prepare_workers = count > 0, count or None
        workers_ready(full, count)
        add(f"landmark default, {count} preparation workers",
            best_time(lambda: full.encode_documents(texts), args.rounds, device))
        real = full.model
        full.model = FreeForward(real)
        try:
            add(f"landmark host side, forward skipped, {count} preparation workers",
                best_time(lambda: full.encode_documents(texts), args.rounds, device))
        finally:
            full.model = real
        full.prepare_process = full.prepare_workers = None
    process.close_shared_workers()
    if args.tasks_per_worker:
        from landmark_rag.encode import encoder as encoder_module

        kept = encoder_module._TASKS_PER_WORKER
        workers_ready(full, auto)
        for per in (int(c) for c in args.tasks_per_worker.split(",") if c.strip()):
            encoder_module._TASKS_PER_WORKER = per
            add(f"landmark default, {per} groups per worker",
                best_time(lambda: full.encode_documents(texts), args.rounds, device), f"{auto} preparation workers")
        encoder_module._TASKS_PER_WORKER = kept
    if args.task_chars:
        # a group is one forward pass's worth of windows at most (batches never span groups), so
        # its size sets how many passes a call launches from the calling thread
        from landmark_rag.encode import encoder as encoder_module

        kept = encoder_module._TASK_CHARS, encoder_module._CUDA_TASK_CHARS, encoder_module._TASKS_PER_WORKER
        encoder_module._TASKS_PER_WORKER = 1  # else a call's share per worker caps the group first
        workers_ready(full, auto)
        for chars in (int(c) for c in args.task_chars.split(",") if c.strip()):
            encoder_module._TASK_CHARS = encoder_module._CUDA_TASK_CHARS = chars
            add(f"landmark default, groups of at most {chars:,} characters",
                best_time(lambda: full.encode_documents(texts), args.rounds, device),
                f"{auto} preparation workers, one group per worker or more")
        encoder_module._TASK_CHARS, encoder_module._CUDA_TASK_CHARS, encoder_module._TASKS_PER_WORKER = kept
    if args.separate_groups:
        # the default joins the groups workers have ready together into one pass
        # (``encoder._take_ready``); here each group goes alone, as before that
        from landmark_rag.encode import encoder as encoder_module

        workers_ready(full, auto)
        kept_take = encoder_module._take_ready
        encoder_module._take_ready = lambda *a: None
        try:
            add("landmark default, each prepared group its own passes",
                best_time(lambda: full.encode_documents(texts), args.rounds, device), f"{auto} preparation workers")
        finally:
            encoder_module._take_ready = kept_take
    if args.mask_reads:
        # an unpadded batch's all-ones mask makes transformers read it back (``bool(mask.all())``)
        # before it drops it: on a GPU the launching thread then waits for the device each pass
        from landmark_rag.encode import encoder as encoder_module

        workers_ready(full, auto)
        kept_optional = encoder_module.mask_optional
        encoder_module.mask_optional = lambda model, layout: False
        try:
            add("landmark default, every batch with its mask",
                best_time(lambda: full.encode_documents(texts), args.rounds, device), f"{auto} preparation workers")
        finally:
            encoder_module.mask_optional = kept_optional
    if cuda and "e2e" not in skip:
        # which attention kernels SDPA may pick moves the forward's cost per batch shape
        workers_ready(full, auto)
        kept_cudnn = torch.backends.cuda.cudnn_sdp_enabled()
        torch.backends.cuda.enable_cudnn_sdp(False)
        try:
            add("landmark default, cuDNN attention off",
                best_time(lambda: full.encode_documents(texts), args.rounds, device), "SDPA's other kernels")
        finally:
            torch.backends.cuda.enable_cudnn_sdp(kept_cudnn)
    if args.switch_interval:
        # the calling process's threads (the one launching passes, the one receiving prepared
        # groups) share one interpreter lock: a shorter switch interval hands it over sooner
        workers_ready(full, auto)
        kept_interval = sys.getswitchinterval()
        for interval in (float(c) for c in args.switch_interval.split(",") if c.strip()):
            sys.setswitchinterval(interval)
            try:
                add(f"landmark default, switch interval {interval * 1e3:g} ms",
                    best_time(lambda: full.encode_documents(texts), args.rounds, device),
                    f"Python's default {kept_interval * 1e3:g} ms")
            finally:
                sys.setswitchinterval(kept_interval)
    if args.compiled:
        # torch.compile (opt-in, ``LandmarkEncoder.compile``): one compiled graph per pass, far
        # fewer launches and less Python than the eager modules' per pass; "reduce-overhead"
        # also records CUDA graphs (per shape), so a pass is one launch on a GPU
        workers_ready(full, auto)
        for mode in [m.strip() for m in args.compile_modes.split(",") if m.strip()]:
            torch._dynamo.reset()  # each mode compiles from scratch, not on the last one's cache
            full.compile(mode=mode)
            try:
                t0 = time.perf_counter()
                # the first call compiles, the second recompiles for dynamic shapes; CUDA graphs
                # are recorded on a shape's later calls
                for _ in range(2 if mode == "default" else 3):
                    full.encode_documents(texts)
                print(f"  compiling ({mode}) took {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
                if full.document_model is None:  # the encoder fell back to eager (its warning says why)
                    print(f"  torch.compile ({mode}) failed: row skipped", file=sys.stderr, flush=True)
                    continue
                label = "landmark default, torch.compile" + ("" if mode == "default" else f" ({mode})")
                add(label, best_time(lambda: full.encode_documents(texts), args.rounds, device),
                    "dynamic shapes, compiled before timing")
            finally:
                full.document_model = None
    if "halves" not in skip:
        # the two halves of the same call timed apart, one after the other (no overlap): which
        # one bounds the default (the host's preparation or the device's forward and pooling)
        add("landmark default, host half alone (prepare_documents)",
            best_time(lambda: full.prepare_documents(texts), args.rounds, device), "segment, tokenise, lay out, pad")
        prepared = full.prepare_documents(texts)
        add("landmark default, device half alone (encode_prepared)",
            best_time(lambda: full.encode_prepared(prepared), args.rounds, device), "forward, pool, copy back")
        del prepared
        from landmark_rag.segment import segment_sentences

        # segmented without the encoder: its tokenising would be cached for the rows after this one
        pieces = [s.text for t in texts for s in segment_sentences(t)]
        batch_call = getattr(tokenizer, "encode_batch_fast", tokenizer.encode_batch)
        add("tokenizer, batch call over the sentences", best_time(
            lambda: batch_call(pieces, add_special_tokens=False), args.rounds, device), "all cores; part of the host half")
    tiny = None
    if "host" not in skip or "index" not in skip:
        tiny = LandmarkEncoder.from_pretrained(build_model_dir(args.arch, tmp / "tiny", tiny=True), device=device)
    if "host" not in skip:
        add("landmark host side (1-layer, 32-wide model)",
            best_time(lambda: tiny.encode_documents(texts), args.rounds, device))
        real = full.model
        full.model = FreeForward(real)
        try:
            add("landmark host side, forward skipped", best_time(lambda: full.encode_documents(texts), args.rounds, device),
                "the default's layout, its model returning zeros")
        finally:
            full.model = real
    if "index" not in skip:
        # one copy of the articles: a store's writes cost the same per token on any device
        once = texts[: len(texts) // (args.copies or (4 if cuda else 1))]
        once_tokens = sum(len(tokenizer.encode(t, add_special_tokens=False).ids) for t in once)
        try:
            for label, enc in (("default", full), ("1-layer model", tiny)):
                for mode, note in INDEX_MODES.items():
                    add(f"index, {label}, {mode}",
                        best_time(index_run(enc, once, tmp / "stores", mode), args.rounds, device),
                        f"{note}; {len(once)} documents", once_tokens)
        except ImportError as exc:  # a GPU image without chromadb still measures the rest
            print(f"  index skipped: {exc}", file=sys.stderr)
    single = best_time(lambda: [tokenizer.encode(t, add_special_tokens=False) for t in texts], args.rounds, device)
    add("tokenizer, one thread (yardstick)", single)
    if "st" not in skip:
        try:
            sentences = [s.text for t in texts[: len(texts) // (args.copies or (4 if cuda else 1))] for s in full.segment(t)]
            sentences = sentences * (args.copies or (4 if cuda else 1))
            add("sentence-transformers per sentence",
                best_time(sentence_transformers_run(tmp / "full", sentences, device, args.st_batch or (512 if cuda else 64)),
                          args.rounds, device), "fp16" if cuda else "fp32")
        except ImportError as exc:
            print(f"  sentence-transformers skipped: {exc}", file=sys.stderr)
    if "bare" not in skip:
        batch = args.batch_size or (128 if cuda else 16)
        add("bare forward, fp32", best_time(bare_forward(full, texts, torch.float32, batch), args.rounds, device))
        half = (torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16) if cuda else torch.bfloat16
        add(f"bare forward, {str(half).removeprefix('torch.')}",
            best_time(bare_forward(full, texts, half, batch), args.rounds, device))
    rate = {name: r for name, r, _ in rows}
    ratios = {}
    host = rate.get("landmark host side (1-layer, 32-wide model)")
    if host:
        ratios["host side / one-thread tokenizer"] = host / rate["tokenizer, one thread (yardstick)"]
    half, batch = rate.get("landmark default, host half alone (prepare_documents)"), rate.get(
        "tokenizer, batch call over the sentences")
    if half and batch:
        ratios["host half: share of its time in the tokenizer's batch call"] = half / batch
    skipped = rate.get("landmark host side, forward skipped")
    if skipped:
        ratios["host side, forward skipped / one-thread tokenizer"] = skipped / rate["tokenizer, one thread (yardstick)"]
    for label in ("default", "1-layer model"):
        before = rate.get(f"index, {label}, sequential")
        for mode in ("default", "all three"):
            if before and rate.get(f"index, {label}, {mode}"):
                ratios[f"index {label}: {mode} / sequential"] = rate[f"index, {label}, {mode}"] / before
    if "landmark default" in rate:
        for name, value in rate.items():
            if name.startswith(("bare forward", "sentence-transformers")):
                ratios[f"default / {name}"] = rate["landmark default"] / value
    result = {
        "device": torch.cuda.get_device_name(device) if cuda else platform.processor() or platform.machine(),
        "host_cores": os.cpu_count(), "torch": torch.__version__, "arch": ARCHS[args.arch],
        "documents": len(texts), "tokens": n_tokens, "tokens_per_s": rate, "ratios": ratios,
        "fast_tokenizer": flash_tokenizer(full.tokenizer),  # where ASCII sentences went in this run
        "runtime": full.runtime().as_dict(),  # what the default's settings chose on this machine
        "command": "python benchmarks/gpu_throughput.py " + " ".join(argv if argv is not None else sys.argv[1:]),
    }
    print(f"\n{result['device']} ({result['host_cores']} host cores), {ARCHS[args.arch]} random weights, "
          f"{len(texts)} documents, {n_tokens:,} tokens, ASCII sentences tokenised by "
          f"{result['fast_tokenizer'] or 'the tokenizers backend'}\n")
    print("| system | tokens/s | note |\n| --- | ---: | --- |")
    for name, r, note in rows:
        print(f"| {name} | {r:,.0f} | {note} |")
    for k, v in ratios.items():
        print(f"- {k}: {v:.3f}")
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
