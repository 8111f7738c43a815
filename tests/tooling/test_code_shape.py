"""The code stays easy to carry: no module of the layer over 450 lines, no function anywhere over
80 lines, and the tooling (the local runner, the fakes, the demo, the benchmarks, the scripts) no
more than 36% of the code that is not tests, so that what the product does stays most of what
there is to read.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYER = ROOT / "layers/common/python/lambda_agents"
PRODUCT = (ROOT / "layers/common/python", ROOT / "functions")
TOOLING = (ROOT / "devtools", ROOT / "benchmarks", ROOT / "scripts")
MAX_LAYER_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
MAX_TOOLING_SHARE = 0.36


def _files(folder: Path, *suffixes: str) -> Iterator[Path]:
    for path in sorted(folder.rglob("*")):
        if path.is_file() and path.suffix in suffixes and "__pycache__" not in path.parts:
            yield path


def _lines(path: Path) -> int:
    return len(path.read_text(encoding="utf-8").splitlines())


def _long_functions(path: Path) -> Iterator[str]:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.end_lineno is not None:
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                yield f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({length} lines)"


def test_no_module_of_the_layer_is_over_450_lines() -> None:
    too_long = [
        f"{path.relative_to(ROOT)} ({_lines(path)} lines)"
        for path in _files(LAYER, ".py")
        if _lines(path) > MAX_LAYER_MODULE_LINES
    ]
    assert too_long == []


def test_no_function_is_over_80_lines() -> None:
    folders = (*PRODUCT, *TOOLING, ROOT / "tests")
    too_long = [found for folder in folders for path in _files(folder, ".py") for found in _long_functions(path)]
    assert too_long == []


def test_tooling_is_at_most_36_percent_of_the_code_that_is_not_tests() -> None:
    tooling = sum(_lines(path) for folder in TOOLING for path in _files(folder, ".py", ".sh"))
    product = sum(_lines(path) for folder in PRODUCT for path in _files(folder, ".py", ".sh"))
    share = tooling / (tooling + product)
    assert share <= MAX_TOOLING_SHARE, f"tooling {tooling} lines, product {product}: {share:.1%}"
