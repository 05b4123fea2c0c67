"""Importers: other tools' grader configs as judgecards cards and tiered-eval configs.

`import_openai_graders` reads OpenAI Evals graders, `import_promptfoo` a promptfoo config. Both
write a new directory (cards under ``cards/``, one or more eval configs, items files and
``IMPORT_NOTES.md``) and return an `ImportResult` whose ``gaps`` list what was approximated or
left out; nothing in the source is executed. See ``judgecards import --help``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports

if TYPE_CHECKING:
    from judgecards.importers._output import Gap, ImportResult
    from judgecards.importers.openai_graders import import_openai_graders
    from judgecards.importers.promptfoo import import_promptfoo

_EXPORTS = {
    "Gap": "judgecards.importers._output",
    "ImportResult": "judgecards.importers._output",
    "import_openai_graders": "judgecards.importers.openai_graders",
    "import_promptfoo": "judgecards.importers.promptfoo",
}

__all__ = ["Gap", "ImportResult", "import_openai_graders", "import_promptfoo"]

__getattr__, __dir__ = lazy_exports(__name__, globals(), _EXPORTS)
