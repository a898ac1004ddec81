"""``landmark-rag info``: what a store holds and which model it needs."""

from __future__ import annotations

import json
import sys

import typer

from landmark_rag.cli import app
from landmark_rag.cli._common import (
    CollectionOption,
    DbOption,
    DeviceOption,
    console,
    fail,
    local_db_path,
    model_errors,
    no_store_folder,
    open_existing_store,
    open_index,
)


@app.command("info")
def info_command(
    db: str = DbOption,
    collection: str = CollectionOption,
    as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    text_of: str | None = typer.Option(
        None, "--text", metavar="DOC_ID",
        help="Print the text indexed for one document (a PDF's extracted text): query's offsets point into it.",
    ),
    runtime: bool = typer.Option(
        False, "--runtime",
        help="Load the model (the store's, else --model or the default; no store needed) and print how it "
        "will run here: device, precision, attention, tokenizer, preparation workers, batching, threads.",
    ),
    model: str | None = typer.Option(None, "--model", help="With --runtime: the model to load."),
    device: str | None = DeviceOption,
) -> None:
    """Model, dimension, numbers of documents and sentences, store location, GGUF cache location.

    Reads only the store's records (the model is not loaded), so it is instant. ``--runtime``
    loads the model instead and shows what the encoder's defaults chose on this machine.
    """
    from landmark_rag.encode.models.loading import cache_dir
    from landmark_rag.store import recorded_dim, recorded_model

    if runtime:
        _print_runtime(db, collection, model, device, as_json)
        return
    store = open_existing_store(db, collection)
    if text_of is not None:
        _print_text(store, text_of, as_json)
        return
    source, _ = recorded_model(store)
    identity = store.identity()
    complete = len(store.documents())
    everything = len(store.documents(include_incomplete=True))
    info = {
        "store": str(local_db_path(db) or db),
        "collection": collection,
        "model": identity.get("model_name"),
        "model_source": source,
        "pooling": identity.get("pooling"),
        "query_pooling": identity.get("query_pooling"),
        "landmark_token": identity.get("lmk_token"),
        "dimension": recorded_dim(store),
        "documents": complete,
        "incomplete_documents": everything - complete,
        "sentences": store.count_sentences(),
        "gguf_cache": str(cache_dir() / "gguf"),
    }
    interrupted = "incomplete documents (interrupted; re-run index)" if info["incomplete_documents"] else None
    _print_pairs(info, as_json, {"incomplete_documents": interrupted})


def _print_runtime(db: str, collection: str, model: str | None, device: str | None, as_json: bool) -> None:
    """The encoder's :class:`~landmark_rag.encode.runtime.describe.RuntimeInfo`: the store's model
    (checked against the store) when there is a store and no ``--model``, else ``--model`` or
    the package's default, loaded on ``--device``."""
    from landmark_rag.encode import LandmarkEncoder

    if model is None and not no_store_folder(db):
        loaded = open_index(db, collection, device=device, create=False).encoder
        if not isinstance(loaded, LandmarkEncoder):  # a store opened over another kind of encoder
            fail(f"the store's model loads as {type(loaded).__name__}, which has no runtime settings to show")
        encoder = loaded
    else:
        with model_errors(model):
            encoder = LandmarkEncoder.from_pretrained(model, device=device)
    _print_pairs(encoder.runtime().as_dict(), as_json)


def _print_pairs(info: dict, as_json: bool, labels: dict[str, str | None] | None = None) -> None:
    """``info`` as one JSON object, or as a two-column table on the terminal; ``labels`` names
    a key's row in the table (``None``: no row), else the key with spaces."""
    if as_json:
        sys.stdout.write(json.dumps(info, indent=1) + "\n")
        return
    from rich.table import Table
    from rich.text import Text

    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for key, value in info.items():
        label = (labels or {}).get(key, key.replace("_", " "))
        if label is not None:
            table.add_row(label, Text("-" if value is None else str(value)))
    console.print(table)


def _print_text(store, doc_id: str, as_json: bool) -> None:
    """A document's indexed text: exact in ``--json`` (and when piped), without control
    characters on a terminal; with the pages its sentences start on."""
    record = store.documents().get(doc_id)
    text = store.document_text(doc_id) if record is not None else None
    if text is None:
        fail(f"no document {doc_id!r} with stored text in this store (ids are paths relative to the folder indexed)")
    if as_json:
        pages = sorted({s.page for s in store.read_document(doc_id).sentences if s.page is not None})
        from landmark_rag.render import json_dumps

        payload = {"doc_id": doc_id, "source": record.get("source"), "pages": pages, "text": text}
        sys.stdout.write(json_dumps(payload, indent=1) + "\n")
    elif sys.stdout.isatty():
        console.print(text, markup=False)
    else:
        sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
