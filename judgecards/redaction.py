"""Keep API keys out of error messages, logs and the results database.

Provider SDKs build their error messages from response bodies, and some servers echo the key
they were sent (a proxy answering 400 "invalid key sk-..."). Such text flows into exceptions,
stderr and every error row of a batch, so it is scrubbed where judgecards creates error text
(`judgecards.errors.ProviderError`) and again in the one place every write to the database
passes through (`judgecards.storage.database.Transaction`, with `scrubber`), whichever table or column
the text is bound for.

Two kinds of secret are replaced by ``[REDACTED]``:

- *configured keys*: every key a provider was built with (`register_secret`) and the value of
  every environment variable whose name ends in ``API_KEY``, wherever they occur;
- *key-shaped text*: ``sk-…`` / ``sk-ant-…`` tokens of 16 or more key characters, which are
  secrets whoever configured them. Model replies are judged text in which such a token may be
  legitimate, so `redact` can be told to scrub configured keys only.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Callable

__all__ = ["REDACTED", "redact", "register_secret", "scrubber"]

REDACTED = "[REDACTED]"

# Shorter values would blank out ordinary words ("test", a placeholder key) wherever they occur.
_MIN_SECRET_LENGTH = 8
_KEY_SHAPED = re.compile(r"(?<![A-Za-z0-9_\-])sk-[A-Za-z0-9_\-]{16,}")

_registered: set[str] = set()
_lock = threading.Lock()


def register_secret(value: str | None) -> None:
    """Remember a key so that `redact` scrubs it from now on (for the life of the process)."""
    if value and len(value) >= _MIN_SECRET_LENGTH:
        with _lock:
            _registered.add(value)


def _configured() -> list[str]:
    with _lock:
        secrets = set(_registered)
    # Names first: reading every variable's value (os.environ decodes each) cost more than
    # the rest of `redact`, which runs on every stored reply.
    values = (os.environ.get(name, "") for name in os.environ if name.upper().endswith("API_KEY"))
    secrets.update(value for value in values if len(value) >= _MIN_SECRET_LENGTH)
    # Longest first, so a key that contains another is replaced whole.
    return sorted(secrets, key=len, reverse=True)


def redact(text: str, *, key_shaped: bool = True) -> str:
    """``text`` with every configured key, and unless ``key_shaped=False`` every ``sk-``-shaped
    token, replaced by ``[REDACTED]``."""
    for secret in _configured():
        if secret in text:
            text = text.replace(secret, REDACTED)
    if key_shaped:
        text = _KEY_SHAPED.sub(REDACTED, text)
    return text


def scrubber() -> Callable[[str], str]:
    """A function replacing every key configured *now* by ``[REDACTED]`` (configured keys only).

    For the database's write path, which sees every value bound to a statement: the keys are
    looked up once per transaction instead of once per value, and key-shaped tokens are left
    alone because judged text and model replies may legitimately contain them.
    """
    secrets = _configured()
    if not secrets:
        return _unchanged

    def scrub(text: str) -> str:
        for secret in secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return text

    return scrub


def _unchanged(text: str) -> str:
    return text
