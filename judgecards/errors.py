"""One exception tree, so callers can catch exactly what they can handle.

```
JudgecardsError
├── CardError              (file, line, field)
│   ├── CardNotFound
│   ├── CardValidationError
│   ├── CardLockMismatch
│   └── WrongCardKind         the card exists but cannot do this (e.g. not pairwise)
├── RenderError            (card, variable)
│   └── InvalidInput          an item's inputs, refused before any call
│       ├── MissingInput
│       └── InputTooLarge     (size, limit) over ``max_input_chars``
├── InputError             (file, line, field)   a bad line in an items / labels file
│   └── LabelImportError      a labels file or sheet row; ``errors`` lists every row problem
├── OutputError            (file)                an output file cannot be written
├── MissingExtra           (extra)               an optional dependency is not installed
├── ProviderError          (provider, model)
│   ├── ProviderConfigError   missing key or unknown provider; names the variable to set
│   └── TransportError        the call failed after retries (kind, status, retries, url)
├── JudgeOutputError       (raw reply, problems)  internal to the re-ask loop
├── NotRecorded            (card, model, item_id) an offline judge would need a provider call
├── RankingError           stored comparisons cannot be rated (none, or disconnected groups)
├── BudgetError            a cost cap cannot be kept (a model with no price, a negative cap)
├── EstimateError          no corrected estimate: no results or no human labels to correct with
├── AuditError             an audit cannot be made or read (nothing to sample, unknown audit,
│                          a cascade without enough labels)
├── AlignmentError         a judge cannot be aligned (no labels, too few to split)
├── ReportError            a report has nothing to show (no stored results match)
└── StoreError             (path, operation)     the database cannot be opened, read or written
```

`WrongCardKind` and `RankingError` are also `ValueError`s, which is what they were before they
joined the tree. `UncalibratedJudgeWarning` is a warning, not an error: it lives here so that
neither the core nor the calibration package has to import the other to name it.

Messages never contain API keys: providers build errors from status codes and response bodies,
never from request headers or client settings, and `ProviderError` redacts every configured key
and ``sk-``-shaped token a server may echo in its body (`judgecards.redaction`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judgecards.redaction import redact

__all__ = [
    "AlignmentError",
    "AuditError",
    "BudgetError",
    "CardError",
    "CardLockMismatch",
    "CardNotFound",
    "CardValidationError",
    "EstimateError",
    "InputError",
    "InputTooLarge",
    "InvalidInput",
    "JudgeOutputError",
    "JudgecardsError",
    "LabelImportError",
    "MissingExtra",
    "MissingInput",
    "NotRecorded",
    "OutputError",
    "ProviderConfigError",
    "ProviderError",
    "RankingError",
    "RenderError",
    "ReportError",
    "StoreError",
    "TransportError",
    "UncalibratedJudgeWarning",
    "WrongCardKind",
]


class JudgecardsError(Exception):
    """Base class of every error judgecards raises on purpose."""


def _where(file: str | Path | None, line: int | None, field: str | None) -> str:
    parts = []
    if file is not None:
        parts.append(f"{file}:{line}" if line is not None else str(file))
    elif line is not None:
        parts.append(f"line {line}")
    if field:
        parts.append(f"field {field!r}")
    return ", ".join(parts)


class _Located(JudgecardsError):
    """An error about a place in a file: its message always names file, line and field."""

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.file = str(file) if file is not None else None
        self.line = line
        self.field = field
        self.reason = message
        where = _where(file, line, field)
        super().__init__(f"{where}: {message}" if where else message)


class CardError(_Located):
    """A judge card could not be found, parsed, validated or trusted."""


class CardNotFound(CardError):
    """No card with that name (and version) in the built-in or user card directories."""


class CardValidationError(CardError):
    """A card file's front-matter or body is invalid."""


class CardLockMismatch(CardError):
    """A released card's text changed without a new version (its hash differs from cards.lock)."""


class WrongCardKind(CardError, ValueError):
    """The card exists and is valid, but not of the kind this needs (e.g. a pairwise card)."""


class InputError(_Located):
    """A line of an input file (items, labels, outputs) is malformed."""


class OutputError(_Located):
    """An output file cannot be created or written (missing directory, no permission, disk full).

    Raised before any provider call when the path is unusable, so nothing is paid for in vain.
    """


class MissingExtra(JudgecardsError, ImportError):
    """An optional dependency a feature needs is not installed (e.g. pyarrow for parquet).

    The message names the extra that installs it; ``extra`` holds its name (``parquet``).
    """

    def __init__(self, message: str, *, extra: str) -> None:
        self.extra = extra
        super().__init__(message)


class RenderError(JudgecardsError):
    """A card could not be rendered with the inputs given."""

    def __init__(self, message: str, *, card: str, variable: str | None = None) -> None:
        self.card = card
        self.variable = variable
        super().__init__(message)


class InvalidInput(RenderError):
    """An item's inputs cannot be rendered: caught before any call, per item."""


class MissingInput(InvalidInput):
    """An input the card needs was not supplied."""


class InputTooLarge(InvalidInput):
    """An input is longer than the judge's ``max_input_chars`` (sizes in characters)."""

    def __init__(self, message: str, *, card: str, variable: str, size: int, limit: int) -> None:
        self.size = size
        self.limit = limit
        super().__init__(message, card=card, variable=variable)


class ProviderError(JudgecardsError):
    """A provider could not be configured or called. The message is redacted
    (`judgecards.redaction`): a key a server echoed in its error body never reaches it."""

    def __init__(self, message: str, *, provider: str, model: str | None = None) -> None:
        self.provider = provider
        self.model = model
        super().__init__(redact(message))


class ProviderConfigError(ProviderError):
    """The provider is unknown or not configured (e.g. no API key); the message says what to set."""


class TransportError(ProviderError):
    """A provider call failed for good: retries were exhausted or the error was not retryable.

    Attributes:
        kind: ``rate_limit``, ``transient`` or ``fatal`` (the item becomes an error record of
            that kind); ``auth`` (401/403) or ``unreachable`` (nothing answers at the URL
            before the server ever answered: a wrong base URL) stop a batch, see `stops_batch`.
        status: the HTTP status, when the server answered.
        retries: requests re-sent for this call before giving up.
        url: the URL that could not be reached (``unreachable`` only; never has a key).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str,
        model: str | None = None,
        kind: str,
        status: int | None = None,
        retries: int = 0,
        url: str | None = None,
    ) -> None:
        self.kind = kind
        self.status = status
        self.retries = retries
        self.url = url
        super().__init__(message, provider=provider, model=model)

    @property
    def stops_batch(self) -> bool:
        """True when every other item would fail the same way (bad credentials, wrong URL)."""
        return self.kind in ("auth", "unreachable")


class JudgeOutputError(JudgecardsError):
    """The judge's reply could not be parsed or validated; carries the evidence for a re-ask."""

    def __init__(self, raw_reply: str, problems: Sequence[str], *, truncated: bool = False) -> None:
        self.raw_reply = raw_reply
        self.problems = list(problems)
        self.truncated = truncated
        super().__init__("; ".join(self.problems) or "invalid judge reply")


class NotRecorded(JudgecardsError):
    """An offline judge (``Judge(..., offline=True)``, pytest ``--judge-offline``) has no stored
    judgment or cached reply for an item, so answering it would need a provider call.

    Raised before anything is sent. The message names the card, the model and the item (its id,
    else its inputs, shortened) and says how to record it.
    """

    def __init__(self, message: str, *, card: str | None, model: str, item_id: str | None) -> None:
        self.card = card
        self.model = model
        self.item_id = item_id
        super().__init__(message)


class RankingError(JudgecardsError, ValueError):
    """Stored comparisons cannot be rated: none match, or they split into groups never compared."""


class BudgetError(JudgecardsError, ValueError):
    """``max_cost`` cannot be kept: the model has no price (its spend would be unknown, never 0),
    or the cap is not a number of dollars >= 0. Raised before anything is judged."""


class EstimateError(JudgecardsError):
    """No corrected estimate can be made: no judged results, no human labels, or too few."""


class UncalibratedJudgeWarning(UserWarning):
    """A judge card is used with a model it was never checked against human labels for.

    Issued by the command line and by `calibration.warn_if_uncalibrated`, never by `Judge` itself
    (the core does not depend on the calibration package).
    """


class StoreError(JudgecardsError):
    """The results database could not be opened, migrated, read or written.

    The message names the database file and what was being done; so do ``path`` and
    ``operation`` (``None`` when not known).
    """

    def __init__(
        self, message: str, *, path: str | Path | None = None, operation: str | None = None
    ) -> None:
        self.path = str(path) if path is not None else None
        self.operation = operation
        super().__init__(message)


class LabelImportError(InputError):
    """A label row (or a whole labels file or audit sheet) that cannot be imported.

    A per-row error names ``file``, ``line`` and ``field``. The error raised for a rejected file
    names the file and carries every row problem in ``errors``.
    """

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        errors: Sequence[LabelImportError] = (),
    ) -> None:
        super().__init__(message, file=file, line=line, field=field)
        self.errors = list(errors)


class AuditError(JudgecardsError):
    """An audit cannot be made or read: nothing to sample, an unknown audit or anchor set, or
    a cascade's judges without enough human labels to calibrate (the message says what to label)."""


class AlignmentError(JudgecardsError):
    """A judge cannot be aligned to its people: no human labels, too few to split into an example
    pool, dev and test, no card directory to write the new version to, or a leak of example items
    into the items scored."""


class ReportError(JudgecardsError):
    """A report has nothing to show: no stored results match the card and model asked for."""
