"""The README is short and every link in it resolves to a page of the built site."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"


def _nav_pages(nav: Any) -> set[str]:
    if isinstance(nav, str):
        return {nav}
    if isinstance(nav, list):
        return set().union(*(_nav_pages(entry) for entry in nav))
    if isinstance(nav, dict):
        return set().union(*(_nav_pages(value) for value in nav.values()))
    return set()


def test_readme_is_at_most_10_kb() -> None:
    assert README.stat().st_size <= 10 * 1024


def test_every_readme_link_is_a_page_of_the_site() -> None:
    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    pages = _nav_pages(config["nav"])
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8"))
    local = [link for link in links if not re.match(r"[a-z]+://", link)]
    assert len(local) >= 20, local  # a link to each guide and reference page
    for link in local:
        assert link.startswith("docs/"), f"{link}: README links go to docs pages"
        page = link.removeprefix("docs/")
        assert (REPO / link).is_file(), f"{link} does not exist"
        assert page in pages, f"{link} is not in mkdocs.yml's nav, so the site has no page for it"
