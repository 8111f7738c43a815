"""`make serve`'s page at /_local/live shows a chat answer's words as the model writes them: in a
real browser (Debian's Chromium driven by Playwright), the local runner with the real openai
client against the fake server writing at a slow model's pace in real seconds. Words are on screen
before the answer is done, and the words joined by offset equal the stored answer, which the page
shows once done. Orderings and equalities, never seconds."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devtools.fake_openai import FakeOpenAIServer, Reply
from devtools.runner import QueuePoller
from tests.support.chromium import live_page
from tests.support.socket_clients import rest, served_runner
from tests.unit.chat.answers import answer

pytestmark = pytest.mark.integration

PROSE = "中途採用の段取りを、求人票の作成から入社手続きまで五つの工程に分けて整理しました。" * 6
SLOW = Reply(content=answer(prose=PROSE), first_token_s=0.5, tokens_per_s=40.0)  # ~400 tokens: ~10 s
WRITING = """() => {
  const shown = document.querySelector(".answer");
  return shown !== null && !shown.classList.contains("done") && shown.textContent.length > 0;
}"""


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[str, FakeOpenAIServer]]:
    with FakeOpenAIServer() as fake, pytest.MonkeyPatch.context() as patch:
        patch.setenv("OPENAI_API_KEY", "test")  # as a developer's shell holds it: the functions read it there
        environ = {"AI_AGENT_MODE": "openai", "OPENAI_API_KEY": "test", "OPENAI_BASE_URL": fake.base_url}
        with served_runner(**environ) as (runner, url):
            poller = QueuePoller(runner, 0.2)  # the workers, as `make serve` runs them
            poller.start()
            try:
                yield url, fake
            finally:
                poller.stop()


@pytest.fixture
def page(served: tuple[str, FakeOpenAIServer]) -> Iterator[object]:
    with live_page(served[0]) as opened:
        yield opened


def test_a_chat_answers_words_are_on_screen_before_it_is_done_and_end_as_the_stored_text(
    page: object, served: tuple[str, FakeOpenAIServer]
) -> None:
    url, fake = served
    fake.enqueue(SLOW)
    page.fill("#user", "page-words")  # type: ignore[attr-defined]
    page.check("input[name=to][value=chat]")  # type: ignore[attr-defined]
    page.click("#open")  # type: ignore[attr-defined]
    page.wait_for_selector("#status:text('open')", timeout=60_000)  # type: ignore[attr-defined]
    session = page.inner_text("#session")  # type: ignore[attr-defined]
    page.fill("#message", "段取りを作りたい")  # type: ignore[attr-defined]
    page.click("#send")  # type: ignore[attr-defined]
    page.wait_for_function(WRITING, timeout=120_000)  # type: ignore[attr-defined]  # words shown, not done yet
    shown = page.wait_for_selector(".answer.done", timeout=120_000)  # type: ignore[attr-defined]
    status, stored = rest(
        url, "GET", f"/ai-agent/sessions/{session}/messages/{shown.get_attribute('data-seq')}", "page-words"
    )
    assert status == 200 and not stored["aiResponse"]["fallback"]
    assert shown.get_attribute("data-words-match") == "true"  # the words joined were the stored text
    assert shown.inner_text().strip() == stored["aiResponse"]["content"].strip()
