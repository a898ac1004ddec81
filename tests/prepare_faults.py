"""Tasks for the preparation process's tests (tests/encode/test_pipeline.py), importable by the
worker (it imports a task by its name; it gets this process's sys.path)."""

from __future__ import annotations

import os
import sys

from landmark_rag.encode.runtime.process import prepare_group


class ChunkFailed(RuntimeError):
    pass


def prepare_or_fail(key, texts, *args):
    """The real task, except for a group with the chronicle in it: an error there."""
    if any("chronicle" in t for t in texts):
        raise ChunkFailed("cannot prepare the chronicle")
    return prepare_group(key, texts, *args)


def prepare_or_die(key, texts, *args):
    """The real task, except for a group with the chronicle in it: the worker ends there."""
    if any("chronicle" in t for t in texts):
        os._exit(3)
    return prepare_group(key, texts, *args)


def loaded(names):
    """Which of ``names`` the worker has imported."""
    return [n for n in names if n in sys.modules]


def explode():
    """Called where a request is unpickled: the worker cannot read it."""
    raise RuntimeError("this request cannot be read here")


class Unreadable:
    """Pickles in the caller; unpickling it in the worker raises."""

    def __reduce__(self):
        return (explode, ())
