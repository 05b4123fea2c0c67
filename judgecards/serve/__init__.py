"""`judgecards serve`: the ASGI app over the results database (labeling queues, reports, JSON API).

FastAPI, uvicorn and matplotlib are an optional extra (``pip install 'judgecards[serve]'``):
nothing outside this package and the ``serve``/``report`` commands imports them, so the core
library and every other command work without them. `require_extra` is called before anything
here is imported, so a missing extra is one clear error instead of a ``ModuleNotFoundError``.
"""

from __future__ import annotations

import importlib.util

from judgecards.errors import MissingExtra

__all__ = ["require_extra"]

_NEEDED = ("fastapi", "uvicorn", "jinja2", "python_multipart")


def require_extra() -> None:
    """Raise `MissingExtra` naming the install command when a serve dependency is missing."""
    missing = [name for name in _NEEDED if importlib.util.find_spec(name) is None]
    if missing:
        raise MissingExtra(
            f"judgecards serve needs {', '.join(missing)}: pip install 'judgecards[serve]'",
            extra="serve",
        )
