"""The public surface of judgecards.metrics: the names the issue promises, sorted and documented."""

from __future__ import annotations

import inspect
import re

from judgecards import metrics

PROMISED = {
    "exact_match",
    "token_f1",
    "substring_recall",
    "rouge",
    "mc1",
    "mc2",
    "pass_at_k",
    "pass_hat_k",
    "ndcg_at_k",
    "mrr",
    "recall_at_k",
    "average_precision",
    "win_rate",
    "bootstrap_ci",
    "paired_bootstrap",
    "mcnemar",
    "conversation_pass",
    "tool_correctness",
}


def _isort_key(name: str) -> tuple[int, str]:
    # ruff's RUF022 order: CONSTANTS, then Classes, then functions, each alphabetical.
    kind = 0 if name.isupper() else 1 if name[0].isupper() else 2
    return kind, name


def test_promised_names_are_exported() -> None:
    assert PROMISED <= set(metrics.__all__)
    for name in metrics.__all__:
        assert hasattr(metrics, name), name


def test_all_is_sorted_and_unique() -> None:
    assert metrics.__all__ == sorted(set(metrics.__all__), key=_isort_key)


def test_every_public_callable_is_documented() -> None:
    for name in metrics.__all__:
        obj = getattr(metrics, name)
        if not callable(obj):
            continue
        doc = inspect.getdoc(obj)
        assert doc and len(doc) > 40, f"{name} needs a docstring"
        if inspect.isfunction(obj) and inspect.signature(obj).parameters:
            assert "Args:" in doc and "Returns:" in doc, (
                f"{name}'s docstring should state args and returns"
            )


def test_every_aggregate_returns_an_interval() -> None:
    # mean_* aggregates and the dataset-level names expose level, n_resamples and seed.
    for name in metrics.__all__:
        if re.match(r"mean_|mrr$", name):
            params = inspect.signature(getattr(metrics, name)).parameters
            assert {"level", "n_resamples", "seed"} <= set(params), name


def test_importing_one_metric_module_loads_no_other() -> None:
    # Names are imported on first use: calibration needs `stats` alone, not all eleven modules
    # (tiered evaluation, which drives a judge, is `judgecards.tiered`, not a metric).
    import subprocess
    import sys

    code = (
        "import sys, judgecards.metrics.stats\n"
        "print(sorted(m for m in sys.modules if m.startswith('judgecards.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout.strip()
    # `rouge` is imported eagerly: the function shares its submodule's name. `judgecards.faces` is the
    # few lines that make the other names lazy.
    assert loaded == str(
        [
            "judgecards.faces",
            "judgecards.metrics",
            "judgecards.metrics.rouge",
            "judgecards.metrics.stats",
        ]
    )


def test_exported_names_are_not_shadowed_by_submodules() -> None:
    # `judgecards.metrics.rouge` is a module and `rouge` a function: after every submodule has
    # been imported, each exported name must still be the function or class, never a module.
    import importlib
    import pkgutil
    import types

    for module in pkgutil.iter_modules(metrics.__path__):
        importlib.import_module(f"judgecards.metrics.{module.name}")
    shadowed = [n for n in metrics.__all__ if isinstance(getattr(metrics, n), types.ModuleType)]
    assert shadowed == []
