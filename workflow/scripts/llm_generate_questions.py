"""Generate a new question-set version (kind `generated`) from seeded sections of the corpus."""

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_jsonl
from rankbench.llm.chat import chat_from_spec
from rankbench.llm.generate import generate_questions


def main(snakemake):
    chat = chat_from_spec(snakemake.params.llm)
    records = generate_questions(chat, pd.read_parquet(snakemake.input.documents), snakemake.params.n_questions,
                                 snakemake.params.seed, snakemake.params.language, snakemake.params.qid_prefix)
    write_jsonl(records, snakemake.output.questions)


run_script(main, snakemake)
