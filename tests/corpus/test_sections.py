"""Heading detection: same section ids as the former regex, in linear time on hostile lines."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from rankbench.corpus.sections import heading_text, split_sections

# The former pattern, kept here as the reference of what a heading is (it backtracks in O(n^3) on `#` + blanks).
FORMER_HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$")


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.sampled_from(["#", " ", "\t", "\u00a0", "\r", "\x0b", "a", "é", "-", "1"]), max_size=14))
def test_heading_text_equals_the_former_regex(line: str) -> None:
    match = FORMER_HEADING.match(line)
    assert heading_text(line) == (match.group(1) if match else None)


def test_examples() -> None:
    assert heading_text("## Dépôt de garantie ##") == "Dépôt de garantie"
    assert heading_text("####### seven") is None and heading_text("##no-space") is None
    assert heading_text("## C#") == "C"  # the former regex's reading, kept so section ids never change


def test_hostile_heading_lines_are_read_in_linear_time() -> None:
    # A heading whose text holds a long run of blanks: the former regex took 2.4 s at 1,000 blanks, ~20 s at
    # 2,000 and would never end at 100,000 (cubic).
    for blanks in (2_000, 100_000):
        text = "#" + " " * blanks + "a" + " " * blanks + "b  ##\nbody\n"
        sections = split_sections(text)
        assert [(s.section_id, s.heading, s.body) for s in sections] == [("a-b", "a" + " " * blanks + "b", "body")]
        # No closing text at all: hashes and blanks only is a heading whose text is one blank.
        assert heading_text("#" + " " * blanks) == " "
        assert heading_text("#" + " " * blanks + "x" + "#" * blanks) == "x"
