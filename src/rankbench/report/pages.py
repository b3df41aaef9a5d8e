"""Markdown pages rendered to standalone HTML for `snakemake --report` (which shows HTML, not Markdown)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlsplit

from markdown_it import MarkdownIt
from markdown_it.renderer import RendererHTML
from markdown_it.token import Token

# The page never scrolls sideways, whatever its width (1280 px and narrower): a table wider than the page scrolls in
# its own box (div.wide), a word or code longer than a line breaks, images shrink to fit.
STYLE = ("body{font-family:system-ui,sans-serif;margin:1.5em;max-width:110em;color:#222;overflow-wrap:break-word}"
         "div.wide{overflow-x:auto;max-width:100%}img{max-width:100%;height:auto}"
         "table{border-collapse:collapse;margin:.6em 0;font-size:.9em}"
         "th,td{border:1px solid #ccc;padding:.25em .5em}th{background:#f2f2f2}"
         "tr:nth-child(even) td{background:#fafafa}code{background:#f4f4f4;padding:0 .2em}"
         "pre{background:#f4f4f4;padding:.6em;overflow:auto;max-height:30em}")


def _is_local(url: str) -> bool:
    """A relative path beside the page (a plot of the run), not an address another host would serve."""
    parts = urlsplit(url)
    return not (parts.scheme or parts.netloc or url.startswith(("/", "\\")))


def _image(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """An image of the run's own files as <img>; any other image as its Markdown text: no page loads from the
    network, whatever text reached it (raw HTML is off, so no other tag can)."""
    token = tokens[idx]
    source = str(token.attrGet("src") or "")
    if _is_local(source):
        return renderer.image(tokens, idx, options, env)
    return html.escape(f"![{token.content}]({source})")


def _table_open(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    """A table in its own sideways-scrolling box (STYLE's div.wide)."""
    return '<div class="wide">' + renderer.renderToken(tokens, idx, options, env)


def _table_close(renderer: RendererHTML, tokens: Sequence[Token], idx: int, options: Any, env: Any) -> str:
    return renderer.renderToken(tokens, idx, options, env) + "</div>\n"


def markdown_html(text: str, title: str) -> str:
    """A whole HTML document for a Markdown page (CommonMark with pipe tables, each in a box of its own that scrolls
    when the table is wider than the page; images only of local files)."""
    parser = MarkdownIt("commonmark", {"html": False}).enable("table")
    parser.add_render_rule("image", _image)
    parser.add_render_rule("table_open", _table_open)
    parser.add_render_rule("table_close", _table_close)
    body = parser.render(text)
    return (f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{STYLE}</style></head><body>\n{body}</body></html>\n")


def draft_banner(drafts: Sequence[str]) -> str:
    """The first line of every page made from draft question-set versions (empty when none is a draft)."""
    if not drafts:
        return ""
    names = ", ".join(drafts)
    return (f"**DRAFT**: question-set version{'s' if len(drafts) > 1 else ''} {names} not frozen: questions and labels "
            f"may still change, and so may these numbers (`rankbench freeze --version {drafts[0]}` freezes it).\n\n")


def with_draft_banner(document: str, drafts: Sequence[str]) -> str:
    """An HTML document whose body opens with the draft banner (as is, when no version is a draft)."""
    if not drafts:
        return document
    banner = MarkdownIt("commonmark", {"html": False}).render(draft_banner(drafts))
    return document.replace("<body>\n", f"<body>\n{banner}", 1)
