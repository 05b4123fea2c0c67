"""Judge cards: versioned prompts with front-matter, validated on load, addressed as
``name@version``; their rendering in a sandbox, delimiters around untrusted inputs, output
models and the static prefix providers may cache.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgecards.faces import lazy_exports, public_names

# Imported on first use, like `judgecards`' face: reading one name loads one module.
# `_EXPORTS` (this face's `__all__`, documented under it): names a user imports from here.
_EXPORTS: dict[str, str] = {
    "Bound": "judgecards.cards.spec",
    "BrokenCard": "judgecards.cards.card",
    "CARD_SUFFIX": "judgecards.cards.card",
    "CardLibrary": "judgecards.cards.card",
    "Defaults": "judgecards.cards.spec",
    "FrontMatter": "judgecards.cards.spec",
    "InputSpec": "judgecards.cards.spec",
    "OutputSpec": "judgecards.cards.spec",
    "VerdictRule": "judgecards.cards.spec",
    "VerdictSpec": "judgecards.cards.spec",
    "card_hash": "judgecards.cards.card",
}
# `_SHARED`: what `judgecards`' face (documented there), the other subpackages, cli, serve,
# report and calibration take from here.
_SHARED: dict[str, str] = {
    "Card": "judgecards.cards.card",
    "DEFAULT_MAX_INPUT_CHARS": "judgecards.cards.rendering",
    "check_inputs": "judgecards.cards.rendering",
    "estimated_tokens": "judgecards.cards.prompt_cache",
    "import_schema_model": "judgecards.cards.schema_import",
    "input_size": "judgecards.cards.rendering",
    "list_cards": "judgecards.cards.card",
    "load_cache_minimums": "judgecards.cards.prompt_cache",
    "load_card": "judgecards.cards.card",
    "lock_lines": "judgecards.cards.card",
    "lone_surrogate": "judgecards.cards.unicode_text",
    "neutralise_text": "judgecards.cards.delimiters",
    "parse_card_file": "judgecards.cards.card",
    "render": "judgecards.cards.rendering",
    "user_card_dirs": "judgecards.cards.card",
}

__all__ = public_names(_EXPORTS)

__getattr__, __dir__ = lazy_exports("judgecards.cards", globals(), {**_EXPORTS, **_SHARED})

if TYPE_CHECKING:
    from judgecards.cards.card import CARD_SUFFIX as CARD_SUFFIX
    from judgecards.cards.card import BrokenCard as BrokenCard
    from judgecards.cards.card import Card as Card
    from judgecards.cards.card import CardLibrary as CardLibrary
    from judgecards.cards.card import card_hash as card_hash
    from judgecards.cards.card import list_cards as list_cards
    from judgecards.cards.card import load_card as load_card
    from judgecards.cards.card import lock_lines as lock_lines
    from judgecards.cards.card import parse_card_file as parse_card_file
    from judgecards.cards.card import user_card_dirs as user_card_dirs
    from judgecards.cards.delimiters import neutralise_text as neutralise_text
    from judgecards.cards.prompt_cache import estimated_tokens as estimated_tokens
    from judgecards.cards.prompt_cache import load_cache_minimums as load_cache_minimums
    from judgecards.cards.rendering import DEFAULT_MAX_INPUT_CHARS as DEFAULT_MAX_INPUT_CHARS
    from judgecards.cards.rendering import check_inputs as check_inputs
    from judgecards.cards.rendering import input_size as input_size
    from judgecards.cards.rendering import render as render
    from judgecards.cards.schema_import import import_schema_model as import_schema_model
    from judgecards.cards.spec import Bound as Bound
    from judgecards.cards.spec import Defaults as Defaults
    from judgecards.cards.spec import FrontMatter as FrontMatter
    from judgecards.cards.spec import InputSpec as InputSpec
    from judgecards.cards.spec import OutputSpec as OutputSpec
    from judgecards.cards.spec import VerdictRule as VerdictRule
    from judgecards.cards.spec import VerdictSpec as VerdictSpec
    from judgecards.cards.unicode_text import lone_surrogate as lone_surrogate
