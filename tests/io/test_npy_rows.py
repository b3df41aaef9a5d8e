"""A .npy written part by part (a corpus's vectors merged from shards) is byte for byte what np.save writes for the
whole array, and reads back in blocks of rows."""

from pathlib import Path

import numpy as np
import pytest

from rankbench.io.files import npy_row_blocks, write_npy_rows


def test_parts_give_the_bytes_of_the_whole_array(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    parts = [rng.standard_normal((rows, 5)).astype(np.float32) for rows in (4, 0, 1000, 1)]
    np.save(tmp_path / "whole.npy", np.concatenate(parts))
    write_npy_rows(iter(parts), 1005, tmp_path / "parts.npy")
    assert (tmp_path / "parts.npy").read_bytes() == (tmp_path / "whole.npy").read_bytes()
    blocks = list(npy_row_blocks(tmp_path / "parts.npy", block_rows=300))
    assert [len(block) for block in blocks] == [300, 300, 300, 105]
    assert np.array_equal(np.concatenate(blocks), np.concatenate(parts))


def test_structured_records_round_trip(tmp_path: Path) -> None:
    records = np.zeros(7, dtype=[("hash", "S32"), ("vector", np.float32, (3,))])
    records["hash"] = [bytes([i]) * 32 for i in range(7)]
    records["vector"] = np.arange(21, dtype=np.float32).reshape(7, 3)
    write_npy_rows([records[:2], records[2:]], 7, tmp_path / "records.npy")
    assert np.array_equal(np.load(tmp_path / "records.npy"), records)
    assert np.array_equal(np.concatenate(list(npy_row_blocks(tmp_path / "records.npy", 4))), records)


def test_a_wrong_row_count_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="6 rows given for an array of 7"):
        write_npy_rows([np.ones((6, 2), np.float32)], 7, tmp_path / "short.npy")
    assert list(tmp_path.iterdir()) == []
