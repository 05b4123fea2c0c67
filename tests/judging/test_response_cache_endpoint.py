"""The response cache and the stored judgments are keyed by the server as well as the model
(issue 22 item 11: ``compare`` against another base URL with the same model name served "80 of
80 judgments without a call", the first server's replies)."""

from __future__ import annotations

from pathlib import Path

import pytest

from judgecards import Judge
from tests.fakes.http import Script, anthropic_message, openai_chat, reference_judgment
from tests.fakes.judges import anthropic_provider, openai_provider

ITEM = {
    "id": "q1",
    "question": "What is the capital of France?",
    "gold_answer": "Paris.",
    "model_output": "Lyon.",
}
# What each server says about the same item: the second disagrees with the first.
VERDICTS = {
    "first": (5, 5, "match"),
    "second": (1, 1, "mismatch"),
    "hosted": (3, 3, "partial_match"),
}


def reply(provider: str, name: str) -> Script:
    correctness, completeness, verdict = VERDICTS[name]
    text = reference_judgment(correctness, completeness, verdict=verdict)
    return Script(openai_chat(text) if provider == "openai" else anthropic_message(text))


def judge(provider: str, script: Script, db: Path, base_url: str | None) -> Judge:
    make, model = {
        "openai": (openai_provider, "gpt-4o"), "anthropic": (anthropic_provider, "claude-sonnet-5"),
    }[provider]  # fmt: skip
    built = make(script, model, base_url=base_url)
    return Judge("reference@1", f"{provider}:{model}", provider=built, db=db, max_attempts=1)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_another_server_with_the_same_model_name_is_asked_not_served_from_the_cache(
    provider: str, tmp_path: Path
) -> None:
    db = tmp_path / "j.db"
    servers = {
        "first": "http://first.test:8080/v1",
        "second": "http://second.test:9090/v1/",
        "hosted": None,  # the provider's default URL is an endpoint too
    }
    verdicts = {}
    for name, base_url in servers.items():
        script = reply(provider, name)
        with judge(provider, script, db, base_url) as run:
            (result,) = run.score_many([ITEM])
        assert len(script.requests) == 1, f"{name}: served from the cache"
        verdicts[name] = (result.verdict, result.cached)
    assert verdicts == {name: (VERDICTS[name][2], False) for name in servers}

    # Each server's reply is still served to a run against that same server (a trailing slash
    # is the same server).
    for name, base_url in servers.items():
        again = Script()
        url = None if base_url is None else base_url.rstrip("/")
        with judge(provider, again, db, url) as run:
            (result,) = run.score_many([ITEM])
        assert again.requests == [] and (result.verdict, result.cached) == (
            VERDICTS[name][2], True,
        )  # fmt: skip


def test_offline_replay_keys_by_the_recorded_server(tmp_path: Path) -> None:
    db = tmp_path / "j.db"
    with judge("openai", reply("openai", "first"), db, "http://first.test/v1") as online:
        online.score_many([ITEM])
    with Judge("reference@1", "openai:gpt-4o", db=db, offline=True,
               base_url="http://first.test/v1") as offline:  # fmt: skip
        (replayed,) = offline.score_many([ITEM])
    assert replayed.cached and replayed.verdict == "match"
