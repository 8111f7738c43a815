"""Every reference to the product's behaviour documents resolves, and nothing cites documents the
repository does not have.

Code, tests and the README point into ``docs/`` as ``docs/<file>.md#<anchor>``; a renamed heading
or a mistyped anchor would leave a reader at the top of a long page, so each one is checked
against the headings as GitHub turns them into anchors. The behaviour was once specified in
documents outside the repository ("spec 001 2.6", "002 §1.1"); a newcomer cannot follow those,
so a citation of that shape fails here with the places that still carry it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
SEARCHED = ("layers/common/python", "functions", "devtools", "benchmarks", "tests", "events", "docs")
TOP_FILES = ("README.md", "template.yaml", "Makefile", "pyproject.toml")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".json", ".toml", ".sh"}
SKIPPED_PARTS = {".venv", ".venvs", "__pycache__", ".aws-sam", "node_modules", ".tools"}

DOC_REFERENCE = re.compile(r"docs/([a-z0-9-]+\.md)(?:#([a-z0-9-]+))?")
# "spec 001", "Spec 000's", "spec 003 A", "002 §1.1", "issue 2 §4", "spec §3": documents a newcomer does not have.
OUTSIDE_CITATION = re.compile(r"\b[Ss]pecs? 00[0-9]\b|\b00[0-9] ?§|\b[Ii]ssue [0-9]+ §|\b[Ss]pec §|seeds/")
SAMPLE_OF_A_CITATION = "spec 001 2.6"  # this module's own example, named once below


def slug(heading: str) -> str:
    """GitHub's anchor for a Markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(document: Path) -> set[str]:
    lines = document.read_text(encoding="utf-8").splitlines()
    return {slug(line.lstrip("#")) for line in lines if line.startswith("#")}


def searched_files() -> Iterator[Path]:
    for name in TOP_FILES:
        if (ROOT / name).is_file():
            yield ROOT / name
    for folder in SEARCHED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and not SKIPPED_PARTS.intersection(path.parts):
                yield path


def test_the_slug_matches_githubs_anchors() -> None:
    assert slug("AI-input schemas") == "ai-input-schemas"
    assert slug("The `[NAME:N]` tag, last one wins") == "the-namen-tag-last-one-wins"
    assert slug("Skip, correction and withdrawal") == "skip-correction-and-withdrawal"


def test_the_five_behaviour_documents_are_there() -> None:
    names = {path.name for path in DOCS.glob("*.md")}
    assert {"nudges.md", "chat-and-templates.md", "judge.md", "interview.md", "engine.md"} <= names


def test_every_reference_into_docs_names_an_existing_document_and_heading() -> None:
    known = {path.name: anchors(path) for path in DOCS.glob("*.md")}
    broken: list[str] = []
    checked = 0
    for path in searched_files():
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for document, anchor in DOC_REFERENCE.findall(line):
                checked += 1
                where = f"{path.relative_to(ROOT)}:{number}"
                if document not in known:
                    broken.append(f"{where}: no docs/{document}")
                elif anchor and anchor not in known[document]:
                    broken.append(f"{where}: docs/{document} has no heading #{anchor}")
    assert checked > 100, "the references were not found: has the layout changed?"
    assert broken == []


def test_links_inside_each_document_land_on_its_own_headings() -> None:
    broken = [
        f"{document.name}: #{anchor}"
        for document in [ROOT / "README.md", *sorted(DOCS.glob("*.md"))]
        for anchor in re.findall(r"\]\(#([a-z0-9-]+)\)", document.read_text(encoding="utf-8"))
        if anchor not in anchors(document)
    ]
    assert broken == []


def test_links_between_documents_land_on_a_document_and_its_heading() -> None:
    """docs/*.md link to each other, to the README and to benchmarks/README.md by relative path
    (``[...](engine.md#rate-limits)``, ``[...](../README.md#layout)``): each target and its heading exist."""
    broken: list[str] = []
    checked = 0
    for document in sorted(DOCS.glob("*.md")):
        for target, anchor in re.findall(
            r"\]\(((?:\.\./)?[\w/.-]+\.md)(?:#([a-z0-9-]+))?\)", document.read_text(encoding="utf-8")
        ):
            checked += 1
            linked = (DOCS / target).resolve()
            if not linked.is_file():
                broken.append(f"{document.name}: {target} does not exist")
            elif anchor and anchor not in anchors(linked):
                broken.append(f"{document.name}: {target} has no heading #{anchor}")
    assert checked > 20, "the links were not found: has the layout changed?"
    assert broken == []


def test_nothing_cites_documents_outside_the_repository() -> None:
    assert OUTSIDE_CITATION.search(SAMPLE_OF_A_CITATION), "the pattern must catch the citations it is for"
    this_file = Path(__file__).resolve()
    found = [
        f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}"
        for path in searched_files()
        if path.resolve() != this_file
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1)
        if OUTSIDE_CITATION.search(line)
    ]
    assert found == []
