"""Imports what Lambda would import, from the given paths only (run with ``python -I -S``).

    python -I -S lambda_probe.py '{"path": [...], "handler": "app.lambda_handler", "walk": "lambda_agents",
                                   "hide": ["openai"]}'

``-I -S``: no site-packages, no user site, no PYTHON* variables, so nothing but the standard
library and ``path`` (the function's folder, then the layer, as /var/task and /opt/python) can
answer an import. ``handler`` is imported and its attribute must be callable; ``walk`` imports
every module of that package (the lazily imported ones included: the LLM client is only loaded
on the first model call). ``hide`` makes top-level packages unimportable, so the test can prove a
missing module is caught. Prints one JSON line: the modules' origins, or the first failure.
"""

from __future__ import annotations

import importlib
import importlib.abc
import json
import pkgutil
import sys
import traceback


class _Hidden(importlib.abc.MetaPathFinder):
    def __init__(self, names: set[str]) -> None:
        self._names = names

    def find_spec(self, fullname: str, path: object, target: object = None) -> None:
        if fullname.split(".", maxsplit=1)[0] in self._names:
            raise ModuleNotFoundError(f"No module named {fullname!r} (hidden by the probe)", name=fullname)


def main() -> int:
    request = json.loads(sys.argv[1])
    sys.path[:0] = request["path"]
    if request.get("hide"):
        sys.meta_path.insert(0, _Hidden(set(request["hide"])))
    imported: dict[str, str] = {}
    try:
        if request.get("handler"):
            module_name, attribute = request["handler"].rsplit(".", 1)
            module = importlib.import_module(module_name)
            if not callable(getattr(module, attribute, None)):
                raise AttributeError(f"{module_name}.{attribute} is not a callable handler")
            imported[module_name] = str(module.__file__)
        if request.get("walk"):
            package = importlib.import_module(request["walk"])
            imported[package.__name__] = str(package.__file__)
            for info in pkgutil.walk_packages(package.__path__, prefix=f"{package.__name__}."):
                module = importlib.import_module(info.name)
                imported[info.name] = str(module.__file__)
    except BaseException as exc:
        failure = {"error": f"{type(exc).__name__}: {exc}", "traceback": traceback.format_exc()}
        print(json.dumps(failure))
        return 1
    origins = {name: str(getattr(sys.modules[name], "__file__", None)) for name in sorted(sys.modules)}
    print(json.dumps({"imported": imported, "origins": origins}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
