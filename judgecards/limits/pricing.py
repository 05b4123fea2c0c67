"""What a judgment cost: a price table shipped as data, a user file over it, and the arithmetic.

The table is ``judgecards/prices.yml`` (list prices in US dollars per million tokens, each entry
dated and with its source; they must be checked, as the file says). A user file in the same
format (``JUDGECARDS_PRICES=path``, ``--prices PATH`` or ``load_prices(path)``) overrides
entries and adds models. A model with no entry costs ``None`` ("unknown"), never 0: a run on an
unpriced model must not look free. Mock models cost 0.0 and say so (`MOCK_SOURCE`).

A cost is ``uncached input × input + cache reads × cache_read + cache writes × cache_write +
output × output``: the providers report which part of the input was read from or written to
their prompt cache (`judgecards.cards.prompt_cache`), and a model with no cache rate in the table
bills those tokens at its input rate. The batch rate is kept for projections.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judgecards.errors import InputError
from judgecards.safe_yaml import load_yaml

__all__ = [
    "MOCK_SOURCE",
    "PRICES_ENV",
    "ModelPrice",
    "PriceTable",
    "format_cost",
    "load_prices",
    "run_cost",
    "run_cost_text",
]

PRICES_ENV = "JUDGECARDS_PRICES"
MOCK_SOURCE = "mock (synthetic replies: no provider is paid)"
_MAX_FILE_BYTES = 1_000_000
_SNAPSHOT = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8})$")
_PER = 1_000_000


class ModelPrice(BaseModel):
    """One model's list price in US dollars per million tokens.

    Attributes:
        input / output: prompt and completion tokens.
        cache_read / cache_write: prompt-cache rates where the provider has them (else None).
        batch_discount: the fraction taken off through the provider's batch API (0.5 = half).
        as_of: the date the price was read; source: where (a URL or document name).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write: float | None = Field(default=None, ge=0)
    batch_discount: float = Field(default=0.0, ge=0, le=1)
    as_of: str = Field(min_length=1)
    source: str = Field(min_length=1)

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        *,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        """US dollars for that many tokens at the live (non-batch) rates; the cache tokens are
        the part of ``input_tokens`` read from or written to the prompt cache."""
        uncached = max(input_tokens - cache_read_tokens - cache_write_tokens, 0)
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        dollars = uncached * self.input + cache_read_tokens * read
        return (dollars + cache_write_tokens * write + output_tokens * self.output) / _PER


_MOCK_PRICE = ModelPrice(input=0.0, output=0.0, as_of="-", source=MOCK_SOURCE)


@dataclass(frozen=True)
class PriceTable:
    """Prices by ``provider:model``, and the files they were read from (shipped table first)."""

    prices: Mapping[str, ModelPrice]
    files: tuple[str, ...]

    def lookup(self, model: str) -> ModelPrice | None:
        """The price of ``provider:model``: the exact key, else the key without a dated snapshot
        suffix (``-YYYY-MM-DD`` or ``-YYYYMMDD``); mock models are free; otherwise None."""
        if model.split(":", 1)[0] == "mock":
            return _MOCK_PRICE
        if model in self.prices:
            return self.prices[model]
        undated = _SNAPSHOT.sub("", model)
        return self.prices.get(undated) if undated != model else None

    def cost(
        self,
        model: str,
        input_tokens: int,
        output_tokens: int,
        *,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float | None:
        """US dollars billed for those tokens (`ModelPrice.cost`); 0.0 when none were billed
        (nothing was spent, priced or not); None when tokens were billed on a model with no
        price."""
        if input_tokens == 0 and output_tokens == 0:
            return 0.0
        price = self.lookup(model)
        if price is None:
            return None
        return price.cost(
            input_tokens,
            output_tokens,
            cache_read_tokens=cache_read_tokens,
            cache_write_tokens=cache_write_tokens,
        )


def format_cost(cost: float | None) -> str:
    """``$0.0123`` (four decimals: one judgment often costs under a cent), or ``unknown``."""
    return "unknown" if cost is None else f"${cost:.4f}"


def load_prices(path: str | os.PathLike[str] | None = None) -> PriceTable:
    """The shipped table, overridden entry by entry by ``path`` (else ``$JUDGECARDS_PRICES``).

    Raises:
        InputError: the user file is missing, unreadable or invalid (naming file, line and field).
    """
    shipped = resources.files("judgecards").joinpath("prices.yml")
    prices = dict(_parse(shipped.read_text(encoding="utf-8"), file="judgecards/prices.yml"))
    files = ["judgecards/prices.yml"]
    user = path if path is not None else os.environ.get(PRICES_ENV) or None
    if user is not None:
        file = Path(user)
        try:
            if file.stat().st_size > _MAX_FILE_BYTES:
                raise InputError(f"price file is over {_MAX_FILE_BYTES:,} bytes", file=file)
            text = file.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            reason = getattr(error, "strerror", None) or str(error)
            raise InputError(f"cannot read price file: {reason}", file=file) from None
        prices.update(_parse(text, file=file))
        files.append(str(file))
    return PriceTable(prices=prices, files=tuple(files))


def _parse(text: str, *, file: str | Path) -> dict[str, ModelPrice]:
    document = load_yaml(text, file=file, error=InputError, what="price file")
    data: Any = document.data
    if not isinstance(data, dict) or not isinstance(data.get("models"), dict):
        raise InputError(
            "a price file is a mapping with a 'models' mapping of provider:model to prices",
            file=file,
            line=document.line_of(["models"]),
            field="models",
        )
    if extra := sorted(str(key) for key in data if key != "models"):
        raise InputError(
            f"unknown top-level key {extra[0]!r}", file=file, line=document.line_of([extra[0]])
        )
    prices: dict[str, ModelPrice] = {}
    for key, entry in data["models"].items():
        where = ["models", str(key)]
        if not isinstance(key, str) or ":" not in key or key.startswith(":"):
            raise InputError(
                f"model {key!r} must be written provider:model (e.g. openai:gpt-4o)",
                file=file,
                line=document.line_of(where),
                field=str(key),
            )
        try:
            prices[key] = ModelPrice.model_validate(entry)
        except ValidationError as error:
            problem = error.errors()[0]
            name = ".".join(str(part) for part in problem["loc"])
            line = document.line_of([*where, str(problem["loc"][0])] if problem["loc"] else where)
            raise InputError(
                f"{key}: {problem['msg']}",
                file=file,
                line=line,
                field=f"{key}.{name}" if name else key,
            ) from None
    return prices


def run_cost(costs: Iterable[float | None]) -> float | None:
    """What a run's results cost this time: their sum, or None if any one's cost is unknown."""
    known = list(costs)
    return None if any(cost is None for cost in known) else sum(c for c in known if c is not None)


def run_cost_text(costs: Sequence[float | None], *, cached: int = 0, mock: bool = False) -> str:
    """A summary's cost line, this run only: results served from cache (``cached`` of them)
    cost nothing this time; what they cost when judged stays in their rows (``judgecards cost``).
    """
    unknown = sum(1 for cost in costs if cost is None)
    if unknown:
        return (
            f"unknown this run ({unknown} result(s) on a model with no price; add it with "
            f"--prices or ${PRICES_ENV})"
        )
    served = f", {cached} served from cache at no cost" if cached else ""
    free = " (mock: no provider is paid)" if mock else ""
    return f"{format_cost(run_cost(costs))} this run{served}{free}"
