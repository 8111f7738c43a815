"""`make serve` shows the API in Swagger UI at /swagger, offline, with every route of the template.

A real browser (Debian's headless Chromium) loads the page from the local runner and renders it;
the test reads the rendered DOM. The page may only load from 127.0.0.1: Chromium runs without
background networking, and a request for any other host would leave the UI unrendered.
"""

from __future__ import annotations

import html
import json
import re
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urljoin

import pytest

from devtools.runner_template import route_specs
from devtools.template import load_template
from tests.support.chromium import chromium_path
from tests.support.served_runner import served_offline

pytestmark = pytest.mark.integration

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
ROUTES = sorted({(route.method, route.path) for route in route_specs(load_template())})


@pytest.fixture(scope="module")
def base_url() -> Iterator[str]:
    with served_offline() as url:
        yield url


def _rendered_dom(url: str, profile: Path) -> str:
    done = subprocess.run(
        [
            chromium_path(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile}",
            "--virtual-time-budget=20000",  # run the page's scripts and fetches before the dump
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_given_make_serve_when_a_browser_opens_swagger_then_every_route_of_the_template_is_shown(
    base_url: str, tmp_path: Path
) -> None:
    dom = _rendered_dom(f"{base_url}/swagger", tmp_path / "profile")

    shown = {
        (html.unescape(method).upper(), html.unescape(path))
        for method, path in re.findall(
            r'opblock-summary-method">(\w+)</span>.*?opblock-summary-path" data-path="([^"]+)"', dom, re.S
        )
    }
    assert "Lambda Agents API" in dom
    assert shown == set(ROUTES), f"missing: {set(ROUTES) - shown}; extra: {shown - set(ROUTES)}"
    assert dom.count('class="authorization__btn') >= len(ROUTES)  # each operation shows its lock


def test_the_swagger_page_loads_nothing_but_the_runners_own_files(base_url: str) -> None:
    with urllib.request.urlopen(f"{base_url}/swagger", timeout=10) as page:
        text = page.read().decode()
    with urllib.request.urlopen(f"{base_url}/swagger/init.js", timeout=10) as script:
        init = script.read().decode()

    for reference in re.findall(r'(?:src|href)="([^"]+)"', text):
        assert reference.startswith("/swagger/"), reference
        with urllib.request.urlopen(f"{base_url}{reference}", timeout=10) as asset:
            assert asset.status == 200 and asset.read()
    assert "validatorUrl: null" in init  # no call to the online validator
    assert not re.search(r"https?://", text + init)


def test_the_document_at_openapi_json_names_the_templates_parameters_and_security(base_url: str) -> None:
    with urllib.request.urlopen(f"{base_url}/openapi.json", timeout=30) as answer:
        document = json.load(answer)

    assert {(m.upper(), p) for p, ops in document["paths"].items() for m in ops} == set(ROUTES)
    assert "/api/admin/x/posts/{postId}/posted" in document["paths"]
    schemes = document["components"]["securitySchemes"]
    assert schemes["CognitoUserPool"]["x-amazon-apigateway-authtype"] == "cognito_user_pools"
    assert schemes["SigV4"]["x-amazon-apigateway-authtype"] == "awsSigv4"
    auth = {(r.method, r.path): r.auth for r in route_specs(load_template())}
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            expected = {"cognito": "CognitoUserPool", "iam": "SigV4"}[auth[(method.upper(), path)]]
            assert operation["security"] == [{expected: []}], (method, path)
            names = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            assert names == set(re.findall(r"{(\w+)}", path)), (method, path)
    assert "{post_id}" not in json.dumps(document["paths"])  # the handler's name, not the route's


def test_try_it_out_calls_the_stage_url_a_deployed_client_calls(base_url: str) -> None:
    """Swagger UI sends "Try it out" to the document's first ``servers`` entry, resolved against the
    page's URL: the runner's stage, as the execute-api URL has it."""
    document_url = f"{base_url}/openapi.json"
    with urllib.request.urlopen(document_url, timeout=30) as answer:
        servers = json.load(answer)["servers"]

    assert [server["url"] for server in servers] == ["/v1"]
    tried = urllib.request.Request(f"{urljoin(document_url, servers[0]['url'])}/jobs", headers={"X-Local-User": "u"})
    with urllib.request.urlopen(tried, timeout=30) as answer:
        assert answer.status == 200 and "items" in json.load(answer)
