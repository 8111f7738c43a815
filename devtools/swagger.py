"""Swagger UI for the local runner: /swagger shows the merged OpenAPI document (/openapi.json).

How it works, and why: docs/local.md#the-local-tools-in-detail.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Sequence
from typing import Any

from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

from .openapi import merged_document
from .runner_api import HttpResponse

DOCUMENT_PATH = "/openapi.json"
UI_PATH = "/swagger"
ASSETS = {
    "swagger-ui.css": "text/css; charset=utf-8",
    "swagger-ui-bundle.js": "application/javascript; charset=utf-8",
    "favicon-32x32.png": "image/png",
    "favicon-16x16.png": "image/png",
}
LOCAL_IDENTITY = {"X-Local-User": "swagger-user", "X-Local-Admin": "swagger-admin"}

INDEX_HTML = f"""<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>Lambda Agents API (local runner)</title>
  <link rel="icon" type="image/png" href="{UI_PATH}/favicon-32x32.png">
  <link rel="stylesheet" href="{UI_PATH}/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui"></div>
  <script src="{UI_PATH}/swagger-ui-bundle.js"></script>
  <script src="{UI_PATH}/init.js"></script>
</body>
</html>
"""

INIT_JS = f"""window.ui = SwaggerUIBundle({{
  url: "{DOCUMENT_PATH}",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null,
  tryItOutEnabled: false,
  requestInterceptor: (request) => {{
    // The local runner's identity headers (127.0.0.1 only); AWS ignores them.
    Object.assign(request.headers, {json.dumps(LOCAL_IDENTITY)});
    return request;
  }},
}});
"""


class ApiDocs:
    """Answers the documentation paths; everything else is the API's (``answer`` returns None)."""

    def __init__(self, servers: Sequence[dict[str, Any]] = ()) -> None:
        self._servers = list(servers)
        self._document: bytes | None = None
        self._lock = threading.Lock()

    def document(self) -> bytes:
        with self._lock:  # built once, on the first request: it imports every API handler
            if self._document is None:
                document = merged_document()
                if self._servers:  # relative: "Try it out" calls this runner, under its stage or base path
                    document["servers"] = self._servers
                self._document = json.dumps(document, ensure_ascii=False).encode()
            return self._document

    def answer(self, method: str, path: str) -> HttpResponse | None:
        if method not in {"GET", "HEAD"}:
            return None
        if path == DOCUMENT_PATH:
            return _ok("application/json", self.document())
        if path in {UI_PATH, f"{UI_PATH}/", f"{UI_PATH}/index.html"}:
            return _ok("text/html; charset=utf-8", INDEX_HTML.encode())
        if path == f"{UI_PATH}/init.js":
            return _ok("application/javascript; charset=utf-8", INIT_JS.encode())
        name = path.removeprefix(f"{UI_PATH}/")
        if path.startswith(f"{UI_PATH}/") and name in ASSETS:
            return _ok(ASSETS[name], (swagger_ui_path / name).read_bytes())
        return None


def _ok(content_type: str, body: bytes) -> HttpResponse:
    return HttpResponse(200, [("Content-Type", content_type), ("Cache-Control", "no-cache")], body)
