"""Document expansion files: checked line by line against the corpus, then appended to the chunks' text."""

import json
from pathlib import Path

import pandas as pd
import pytest

from rankbench.errors import InputError
from rankbench.io.expansions import expanded_chunks, load_expansions

DOCS = {"d1", "d2"}


def write(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "expansions.jsonl"
    path.write_text("".join(line + "\n" for line in lines))
    return path


def test_questions_are_appended_to_every_chunk_of_their_document(tmp_path: Path) -> None:
    path = write(tmp_path, [json.dumps({"doc_id": "d1", "questions": ["how long  to return?", "refund days"]})])
    questions = load_expansions(path, DOCS)
    assert questions == {"d1": ["how long to return?", "refund days"]}
    chunks = pd.DataFrame({"chunk_id": ["d1#a", "d1#b", "d2#a"], "doc_id": ["d1", "d1", "d2"],
                           "text": ["Returns.", "Within 30 days.", "Bikes."]})
    expanded = expanded_chunks(chunks, questions)
    assert expanded["text"].tolist() == ["Returns.\n\nhow long to return?\nrefund days",
                                         "Within 30 days.\n\nhow long to return?\nrefund days", "Bikes."]
    assert expanded[["chunk_id", "doc_id"]].equals(chunks[["chunk_id", "doc_id"]])


@pytest.mark.parametrize(("lines", "message"), [
    (['{"doc_id": "d1", "questions": ["a"]}', '{"doc_id": 7, "questions": ["a"]}'],
     "line 2: needs a non-empty string `doc_id`"),
    (['{"doc_id": "d1", "questions": []}'], "line 1: needs `questions`, a non-empty list"),
    (['{"doc_id": "d1", "questions": "a question"}'], "line 1: needs `questions`"),
    (['{"doc_id": "d1", "questions": ["a", "  "]}'], "line 1: needs `questions`"),
    (['{"doc_id": "d1", "questions": ["a"]}', '{"doc_id": "d1", "questions": ["b"]}'],
     "line 2: expands document 'd1' a second time"),
    (['{"doc_id": "d9", "questions": ["a"]}'], "line 1: names document 'd9', which the corpus does not hold"),
    (['{"doc_id": "d1", "questions": ["a"]', ], "line 1"),
    ([], "holds no expansion line"),
])
def test_a_bad_expansion_file_is_refused_naming_the_file_and_line(tmp_path: Path, lines: list[str],
                                                                  message: str) -> None:
    path = write(tmp_path, lines)
    with pytest.raises(InputError) as error:
        load_expansions(path, DOCS)
    assert str(path) in str(error.value) and message in str(error.value)
