"""Pages made from draft versions say so in their first line (Markdown) or first element (HTML)."""

from __future__ import annotations

from rankbench.report.pages import draft_banner, markdown_html, with_draft_banner


def test_a_draft_page_says_so_first_and_a_frozen_one_is_unchanged() -> None:
    page = "# demo — question-set version v3\n\ntext\n"
    assert draft_banner([]) == ""
    drafted = draft_banner(["v3"]) + page
    assert drafted.splitlines()[0].startswith("**DRAFT**: question-set version v3 not frozen")
    assert "`rankbench freeze --version v3`" in drafted.splitlines()[0]
    assert draft_banner(["v2", "v3"]).startswith("**DRAFT**: question-set versions v2, v3 not frozen")
    document = markdown_html(page, "demo v3")
    assert with_draft_banner(document, []) == document
    body = with_draft_banner(document, ["v3"]).split("<body>\n", 1)[1]
    assert body.startswith("<p><strong>DRAFT</strong>: question-set version v3 not frozen")
    assert body.count("DRAFT") == 1
