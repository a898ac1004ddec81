"""No import cycles: between sub-packages (read from the source, every import counted,
function-level ones too) and for every module on its own in a fresh interpreter."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.child_env import SRC, pythonpath

PACKAGE = SRC / "landmark_rag"


def _modules() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out.append(".".join(parts))
    return out


def _unit(module: str) -> str:
    """The sub-package a module belongs to (``landmark_rag.encode.models.cache`` -> ``encode``);
    top-level modules (``types``) are units of their own."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "<root>"


def _imports(path: Path, module: str) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - node.level + 1]
                found.add(".".join([*base, node.module] if node.module else base))
            elif node.module:
                found.add(node.module)
    return {m for m in found if m.startswith("landmark_rag.")}


def _package_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(SRC).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        if module == "landmark_rag":
            continue  # the root re-exports the public names; it is imported by nothing inside
        src = _unit(module)
        for target in _imports(path, module):
            dst = _unit(target)
            if dst not in (src, "<root>"):
                graph.setdefault(src, set()).add(dst)
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycle_between_packages():
    graph = _package_graph()
    assert "encode" in graph and "cli" in graph  # the graph was really read
    cycle = _cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])
    # the specific cycle this layout removed: the model registry no longer needs models/
    assert "models" not in graph.get("encode", set())


def test_datasets_is_a_low_layer():
    # training, evaluation and preparation all read their data through datasets' one record
    # type; if datasets imported any of them, the record would depend on its own consumers
    graph = _package_graph()
    assert {"train", "evaluation"} <= {unit for unit, deps in graph.items() if "datasets" in deps}
    assert graph.get("datasets", set()) <= {"errors", "types"}, graph.get("datasets")


def _import_alone(module: str) -> tuple[str, int, str]:
    env = {**os.environ, "PYTHONPATH": pythonpath()}
    proc = subprocess.run(
        [sys.executable, "-c", f"import {module}"], capture_output=True, text=True, env=env, timeout=600
    )
    return module, proc.returncode, proc.stderr[-2000:]


@pytest.mark.slow
def test_every_module_imports_alone_in_a_fresh_interpreter():
    modules = _modules()
    assert len(modules) > 50
    with ThreadPoolExecutor(max_workers=max(1, os.cpu_count() or 1)) as pool:
        results = list(pool.map(_import_alone, modules))
    failed = [f"{m}: {err.strip().splitlines()[-1] if err.strip() else rc}" for m, rc, err in results if rc != 0]
    assert not failed, "\n".join(failed)
