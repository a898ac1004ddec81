"""``landmark-rag train``: train a landmark encoder from a config file and/or flags."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from landmark_rag.cli import app

if TYPE_CHECKING:
    from landmark_rag.train import TrainConfig


def _parse_stage(spec: str) -> dict:
    """``kind:steps[:contrastive_weight[:distill_weight]]``, e.g. ``longdoc:300`` or ``longdoc:100:0:1``."""
    parts = spec.split(":")
    if not 2 <= len(parts) <= 4:
        raise typer.BadParameter(f"--stage {spec!r}: expected kind:steps[:contrastive_weight[:distill_weight]]")
    try:
        stage: dict = {"kind": parts[0], "steps": int(parts[1])}
        if len(parts) > 2:
            stage["contrastive_weight"] = float(parts[2])
        if len(parts) > 3:
            stage["distill_weight"] = float(parts[3])
    except ValueError:
        raise typer.BadParameter(
            f"--stage {spec!r}: steps is a whole number and the weights are numbers (kind:steps[:contrastive[:distill]])"
        ) from None
    return stage


def _prepare(recipe: Path, raw: Path | None, output_dir: Path | None, download: bool) -> None:
    """``--prepare``: one line per output file, the manifest's path, and exit 2 on bad input."""
    from landmark_rag.train.config import TrainingInputError
    from landmark_rag.train.prepare import MANIFEST_FILE, default_output, load_recipe, prepare

    if raw is None:
        raise typer.BadParameter("--prepare needs --raw DIR (where the recipe's raw files are, or go with --download)")
    try:
        out = output_dir or default_output(load_recipe(recipe))
        manifest = prepare(recipe, raw, out, download=download)
    except (TrainingInputError, FileNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    for name, info in manifest["outputs"].items():
        typer.echo(f"{out / name}: {info['documents']:,} documents, {info['questions']:,} questions")
    typer.echo(f"manifest: {out / MANIFEST_FILE}")


@app.command("train")
def train_command(
    config: Path | None = typer.Option(None, "--config", "-c", help="JSON/YAML/TOML training config (flags override it)."),
    output_dir: Path | None = typer.Option(None, "--output-dir", "-o", help="Where the trained model directory goes."),
    base_model: str | None = typer.Option(
        None,
        "--base",
        "--base-model",
        help="Model to adapt: any Hugging Face encoder or causal LM (alias, directory, .gguf or hub name).",
    ),
    data: list[Path] | None = typer.Option(
        None,
        "--data",
        help="Training data (repeatable): SQuAD-format .json files, a long-document set that --prepare built "
        "(prepared:NAME, e.g. prepared:general-v1, or its folder), or plain-text documents "
        "(.txt/.md files or folders of them; no questions -> a self-distillation stage).",
    ),
    train_articles: str | None = typer.Option(
        None, help="Training documents of each --data source: slice 'a:b', comma list of indices and titles, or "
        "@FILE of titles, one per line (default: 0:16 of a SQuAD file, all plain-text documents)."
    ),
    val_articles: str | None = typer.Option(
        None, help="Held-out validation documents, same spec ('' for none; default: 16:24 of a SQuAD file, none of "
        "plain text)."
    ),
    pooling: str | None = typer.Option(None, help="Document pooling: landmark | mean."),
    query_pooling: str | None = typer.Option(None, help="Query pooling: landmark | mean."),
    stage: list[str] | None = typer.Option(
        None, "--stage", help="kind:steps[:contrastive_weight[:distill_weight]] (repeatable; replaces the config's stages)."
    ),
    lora: bool | None = typer.Option(None, "--lora/--full", help="LoRA adapter (small) or full fine-tuning."),
    lora_target: list[str] | None = typer.Option(
        None, "--lora-target", help="Module name to adapt (repeatable; default: every linear layer of the base)."
    ),
    new_lmk_token: bool | None = typer.Option(
        None, "--new-lmk-token/--no-new-lmk-token", help="Add a new [LMK] token as the landmark (trained, saved)."
    ),
    lr: float | None = typer.Option(None, help="Peak learning rate."),
    temperature: float | None = typer.Option(None, help="Contrastive temperature tau."),
    alpha: float | None = typer.Option(None, help="Position weight decay: w_i = exp(-alpha * i)."),
    landmark_attention: str | None = typer.Option(
        None, help="full | isolated | prefix | causal: what a landmark (and the text) may attend to (docs/encoder.md)."
    ),
    landmark_span: int | None = typer.Option(
        None, help="Sentences an isolated/causal landmark reads: its own and SPAN-1 before it."
    ),
    boundary_margin: float | None = typer.Option(
        None, help="Cosine margin by which the 2 sentences just before an answer must score below it (Front-k)."
    ),
    front_set_weight: float | None = typer.Option(
        None, help="Weight of -log P(hit within the k sentences from the answer on), which Front-k recovers."
    ),
    max_length: int | None = typer.Option(None, help="Encoder window in tokens (saved with the model)."),
    seed: int | None = typer.Option(None, help="Random seed."),
    device: str | None = typer.Option(None, help="cpu | cuda (default: accelerate's choice)."),
    mixed_precision: str | None = typer.Option(None, help="no | fp16 | bf16."),
    gradient_accumulation_steps: int | None = typer.Option(None, help="Micro-batches per optimiser step."),
    gradient_checkpointing: bool | None = typer.Option(None, "--gradient-checkpointing/--no-gradient-checkpointing"),
    eval_every: int | None = typer.Option(None, help="Validate every N steps (0: after each stage)."),
    threads: int | None = typer.Option(None, help="torch CPU threads."),
    resume: Path | None = typer.Option(
        None, "--resume", help="Continue a run from one of its checkpoints (OUTPUT/checkpoints/step-N, written "
        "every --save-every steps); its train_config.json is the run's config unless -c is given.",
    ),
    save_every: int | None = typer.Option(None, help="Write a resumable checkpoint every N steps."),
    overwrite: bool = typer.Option(
        False, "--overwrite", help="Train into an output folder that already holds files (a model, checkpoints); "
        "without it such a folder is refused, unless the run resumes a checkpoint.",
    ),
    prepare: Path | None = typer.Option(
        None, "--prepare", help="Build the training set of this data recipe (e.g. data/training/general-v1.json) "
        "into -o (default: the cache folder) and stop; see docs/training.md.",
    ),
    raw: Path | None = typer.Option(
        None, "--raw", help="--prepare: folder of the recipe's raw files, RAW/SOURCE/FILE (checksums verified)."
    ),
    download: bool = typer.Option(
        False, "--download", help="--prepare: download missing raw files from their pinned GitHub commits into --raw."
    ),
) -> None:
    """Train with the position-aware contrastive objective (pairwise, pseudo and long-document stages).

    With --prepare, build a training set from a recipe of public datasets instead (no training).
    """
    if prepare is not None:
        return _prepare(prepare, raw, output_dir, download)
    flags = {
        "output_dir": str(output_dir) if output_dir else None,
        "base_model": base_model,
        "data": [str(p) for p in data] if data else None,
        "train_articles": train_articles,
        "val_articles": val_articles,
        "pooling": pooling,
        "query_pooling": query_pooling,
        "stages": [_parse_stage(s) for s in stage] if stage else None,
        "lora": lora,
        "lora_targets": list(lora_target) if lora_target else None,
        "new_lmk_token": new_lmk_token,
        "lr": lr,
        "temperature": temperature,
        "alpha": alpha,
        "landmark_attention": landmark_attention,
        "landmark_span": landmark_span,
        "boundary_margin": boundary_margin,
        "front_set_weight": front_set_weight,
        "max_length": max_length,
        "seed": seed,
        "device": device,
        "mixed_precision": mixed_precision,
        "gradient_accumulation_steps": gradient_accumulation_steps,
        "gradient_checkpointing": gradient_checkpointing,
        "eval_every": eval_every,
        "threads": threads,
        "save_every": save_every,
    }
    cfg = _training_config(config, resume, flags)
    _check_output(Path(cfg.output_dir), overwrite=overwrite or resume is not None)
    _run_training(cfg, resume)


def _check_output(output: Path, *, overwrite: bool) -> None:
    """Exit 2 when ``output`` already holds files and the run was not told to write there:
    a finished model or the checkpoints of another run would be mixed with this one's."""
    if output.exists() and not output.is_dir():
        typer.echo(f"error: {output} is a file; --output-dir names a folder", err=True)
        raise typer.Exit(2)
    if overwrite or not output.is_dir():
        return
    held = sorted(p.name for p in output.iterdir())
    if held:
        shown = ", ".join(held[:5]) + (", ..." if len(held) > 5 else "")
        typer.echo(f"error: {output} already holds files ({shown}); choose another --output-dir, "
                   "--resume one of its checkpoints, or pass --overwrite", err=True)
        raise typer.Exit(2)


def _training_config(config: Path | None, resume: Path | None, flags: dict) -> TrainConfig:
    """The config file (a resumed run's own when none is given) with the flags that were set on top."""
    from landmark_rag.train import TrainConfig

    if config is None and resume is not None:
        config = resume / "train_config.json"
        if not config.is_file():
            typer.echo(f"error: {resume} is not a training checkpoint (no train_config.json)", err=True)
            raise typer.Exit(2)
    try:
        values = TrainConfig.load(config).to_dict() if config else {}
    except FileNotFoundError as exc:
        typer.echo(f"error: no training config at {config}", err=True)
        raise typer.Exit(2) from exc
    except ValueError as exc:  # unreadable JSON/TOML, or an unknown or bad option in the file
        typer.echo(f"error: {config}: {exc}", err=True)
        raise typer.Exit(2) from exc
    values.update({k: v for k, v in flags.items() if v is not None})
    try:
        return TrainConfig.from_dict(values)
    except (TypeError, ValueError) as exc:
        raise typer.BadParameter(str(exc)) from exc


def _run_training(cfg: TrainConfig, resume: Path | None) -> None:
    """Train, then print where the model went and its last validation; bad input exits 2."""
    from landmark_rag.encode.models.registry import ModelNotFoundError
    from landmark_rag.train import train
    from landmark_rag.train.config import TrainingInputError

    try:
        _, history = train(cfg, resume=resume)
    except (TrainingInputError, FileNotFoundError, ModelNotFoundError) as exc:
        # bad data, selection, stage choice or base model: a message, not a traceback (an
        # internal ValueError is a bug and keeps its traceback)
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    final = [h for h in history if "validation" in h]
    typer.echo(f"saved to {cfg.output_dir}")
    if final:
        typer.echo("validation: " + json.dumps(final[-1]["validation"]))
