"""report.audience: the report for one audience keeps that audience's questions and their labels, refuses a
version without any, and its pages say so at the top."""

from __future__ import annotations

import pandas as pd
import pytest

from rankbench.errors import InputError
from rankbench.io.audience import audience_line, for_audience

QUESTIONS = pd.DataFrame({"qid": ["q1", "q2", "q3"], "audience": ["public", "staff", "public"]})
LABELS = pd.DataFrame({"qid": ["q1", "q2", "q2", "q3"], "doc_id": ["a", "b", "c", "d"], "grade": [1, 1, 0, 2]})


def test_one_audience_keeps_its_questions_and_their_labels() -> None:
    questions, labels = for_audience(QUESTIONS, LABELS, "public", "v1")
    assert questions["qid"].tolist() == ["q1", "q3"] and labels["doc_id"].tolist() == ["a", "d"]
    staff, staff_labels = for_audience(QUESTIONS, LABELS, "staff", "v1")
    assert staff["qid"].tolist() == ["q2"] and staff_labels["doc_id"].tolist() == ["b", "c"]
    every, every_labels = for_audience(QUESTIONS, LABELS, "all", "v1")
    assert every is QUESTIONS and every_labels is LABELS


def test_an_audience_the_version_lacks_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"report\.audience.*no staff question"):
        for_audience(QUESTIONS[QUESTIONS["audience"] == "public"], LABELS, "staff", "v1")


def test_pages_of_one_audience_say_so_at_the_top() -> None:
    assert audience_line({"version": "v1"}) == [] and audience_line({"audience": "all"}) == []
    assert audience_line({"audience": "public"})[0].startswith("**Audience: public**")
