"""The pytest plugin (entry point ``pytest11``): a ``judge`` fixture, options, a session summary.

- ``judge("reference", model=...)`` builds a `Judge`; the model and database default to
  ``--judge-model`` / ``--judge-db`` (or the ``judge_model`` / ``judge_db`` ini settings), and
  every judge a test made is closed when the test ends.
- ``--judge-offline`` builds offline judges (`judgecards.judging.replay`): stored judgments and cached
  replies only, and a test whose item was never recorded fails with `NotRecorded`, which says
  how to record it. CI without keys replays what a developer recorded.
- At the end of the session, a table of judgments, cache hits, provider calls, tokens, error
  records and failed tests. Under pytest-xdist every worker sends its counts to the controller
  (``workeroutput``), which prints one table.

pytest loads this module for every project once judgecards is installed, so it imports only
pytest and the standard library at import time; `Judge` is imported when a test first asks.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Protocol

import pytest

if TYPE_CHECKING:
    from judgecards.judging import Judge
    from judgecards.storage import JudgeResult

__all__ = ["JudgeFactory", "JudgeStats"]

_DEFAULT_MODEL = "mock:judge"
_WORKER_KEY = "judgecards"


class JudgeFactory(Protocol):
    """What the ``judge`` fixture is: ``judge(card, model=None, **options) -> Judge``."""

    def __call__(self, card: str = "reference", model: str | None = None, **options: Any) -> Judge:
        """A `Judge` for ``card``; ``options`` are `Judge`'s keyword arguments."""
        ...


@dataclass
class JudgeStats:
    """Counts for the session summary; plain numbers, so xdist workers can send them.
    ``cost_usd`` sums the judgments of known price; ``unknown_cost`` counts the rest."""

    judges: int = 0
    mock_judges: int = 0
    judgments: int = 0
    cache_hits: int = 0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    error_records: int = 0
    failed_tests: int = 0
    cost_usd: float = 0.0
    unknown_cost: int = 0

    def add_results(self, results: list[JudgeResult]) -> None:
        self.judgments += len(results)
        self.cache_hits += sum(result.cached for result in results)
        self.error_records += sum(result.status != "ok" for result in results)
        self.input_tokens += sum(result.usage.input_tokens for result in results)
        self.output_tokens += sum(result.usage.output_tokens for result in results)
        self.cost_usd += sum(result.cost_usd or 0.0 for result in results)
        self.unknown_cost += sum(result.cost_usd is None for result in results)

    def merge(self, other: Mapping[str, Any]) -> None:
        for field in fields(self):
            value = other.get(field.name, 0)
            if isinstance(value, (int, float)):
                setattr(self, field.name, getattr(self, field.name) + value)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("judgecards", "judgecards judges")
    group.addoption(
        "--judge-model",
        default=None,
        help=f"provider:model for the judge fixture (default: ini judge_model, else {_DEFAULT_MODEL})",
    )
    group.addoption(
        "--judge-db",
        default=None,
        help="results database for the judge fixture (default: ini judge_db, else JUDGECARDS_DB "
        "or ./judgecards.db)",
    )
    group.addoption(
        "--judge-offline",
        action="store_true",
        default=False,
        help="answer only from stored judgments and cached replies; a test that would need a "
        "provider call fails",
    )
    parser.addini("judge_model", "provider:model for the judge fixture", default=None)
    parser.addini("judge_db", "results database for the judge fixture (relative to rootdir)")


def pytest_configure(config: pytest.Config) -> None:
    config.pluginmanager.register(_JudgeSession(config), "judgecards-session")


@pytest.fixture
def judge(request: pytest.FixtureRequest) -> Iterator[JudgeFactory]:
    """A factory of judges: ``judge("reference", model="openai:gpt-4o")`` returns a `Judge`.

    Unless given, ``model``, ``db`` and ``offline`` come from ``--judge-model``, ``--judge-db``
    and ``--judge-offline``. The judges are closed when the test ends.
    """
    session = _session(request.config)
    made: list[Judge] = []

    def make(card: str = "reference", model: str | None = None, **options: Any) -> Judge:
        options.setdefault("db", session.db)
        options.setdefault("offline", session.offline)
        built = session.judge_class()(card, model or session.model, **options)
        made.append(built)
        session.stats.judges += 1
        session.stats.mock_judges += built.is_mock
        return built

    yield make
    for built in made:
        session.stats.calls += built.transport_counters.requests
        built.close()


class _JudgeSession:
    """The session's settings and counts, registered as a plugin object for its hooks."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.stats = JudgeStats()
        self.offline: bool = bool(config.getoption("judge_offline"))
        self.model: str = config.getoption("judge_model") or config.getini("judge_model")
        self.model = self.model or _DEFAULT_MODEL
        db = config.getoption("judge_db")
        if db is None and config.getini("judge_db"):
            db = str(config.rootpath / str(config.getini("judge_db")))
        self.db: str | None = db
        self._failed: set[str] = set()
        self._judge_class: type[Judge] | None = None

    def judge_class(self) -> type[Judge]:
        if self._judge_class is None:
            self._judge_class = _recording_judge(self.stats)
        return self._judge_class

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        # Counted where the test runs (an xdist worker or this process), once per test.
        report: pytest.TestReport = yield
        if report.failed and "judge" in getattr(item, "fixturenames", ()):
            if item.nodeid not in self._failed:
                self._failed.add(item.nodeid)
                self.stats.failed_tests += 1
        return report

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        output = getattr(self.config, "workeroutput", None)
        if output is not None:  # an xdist worker: the controller prints the table
            output[_WORKER_KEY] = asdict(self.stats)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        self.stats.merge(getattr(node, "workeroutput", {}).get(_WORKER_KEY, {}))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if hasattr(self.config, "workerinput") or self.stats.judges == 0:
            return
        from judgecards.limits import PRICES_ENV, format_cost

        stats = self.stats
        mode = "offline (stored judgments only)" if self.offline else "online"
        rows = [
            ("judgments", stats.judgments),
            ("cache hits", stats.cache_hits),
            ("provider calls", stats.calls),
            ("input tokens", stats.input_tokens),
            ("output tokens", stats.output_tokens),
            ("cost", "unknown" if stats.unknown_cost else format_cost(stats.cost_usd)),
            ("error records", stats.error_records),
            ("failed tests", stats.failed_tests),
        ]
        terminalreporter.write_sep("-", "judgecards")
        width = max(len(str(value)) for _, value in rows)
        for label, value in rows:
            terminalreporter.write_line(f"{label:<16}{value:>{width}}")
        where = self.db or "default (JUDGECARDS_DB or ./judgecards.db)"
        terminalreporter.write_line(f"{stats.judges} judge(s), {mode}, database: {where}")
        if stats.unknown_cost:
            terminalreporter.write_line(
                f"cost: {stats.unknown_cost} judgment(s) on a model with no price "
                f"({format_cost(stats.cost_usd)} known); add it with {PRICES_ENV}=path"
            )
        if stats.mock_judges:
            from judgecards.providers.mock import MOCK_BANNER

            terminalreporter.write_line(f"{stats.mock_judges} on a mock model. {MOCK_BANNER}")


def _session(config: pytest.Config) -> _JudgeSession:
    plugin = config.pluginmanager.get_plugin("judgecards-session")
    assert isinstance(plugin, _JudgeSession)
    return plugin


def _recording_judge(stats: JudgeStats) -> type[Judge]:
    """A `Judge` subclass that adds every result it returns to ``stats``. Built when a test
    first asks for a judge, so collecting tests never imports the judge."""
    from judgecards.judging import Judge

    class RecordingJudge(Judge):
        __doc__ = Judge.__doc__

        def score(self, **inputs: Any) -> JudgeResult:
            result = super().score(**inputs)
            stats.add_results([result])
            return result

        async def ascore(self, **inputs: Any) -> JudgeResult:
            result = await super().ascore(**inputs)
            stats.add_results([result])
            return result

        async def ascore_many(self, items: Any, **options: Any) -> list[JudgeResult]:
            # score_many and compare_many come through here.
            results = await super().ascore_many(items, **options)
            stats.add_results(results)
            return results

    return RecordingJudge
