"""Judge cards: versioned prompts with front-matter, validated on load, addressed as ``name@version``."""

from __future__ import annotations

from judgecards.cards.card import CARD_SUFFIX as CARD_SUFFIX
from judgecards.cards.card import Bound as Bound
from judgecards.cards.card import BrokenCard as BrokenCard
from judgecards.cards.card import Card as Card
from judgecards.cards.card import CardLibrary as CardLibrary
from judgecards.cards.card import Defaults as Defaults
from judgecards.cards.card import FrontMatter as FrontMatter
from judgecards.cards.card import InputSpec as InputSpec
from judgecards.cards.card import OutputSpec as OutputSpec
from judgecards.cards.card import VerdictRule as VerdictRule
from judgecards.cards.card import VerdictSpec as VerdictSpec
from judgecards.cards.card import card_hash as card_hash
from judgecards.cards.card import list_cards as list_cards
from judgecards.cards.card import load_card as load_card
