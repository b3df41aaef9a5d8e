"""Write the questions each document answers with the LLM: an expansion file to freeze and name in methods."""

import pandas as pd

from rankbench.execution.scripting import run_script
from rankbench.io.files import write_jsonl
from rankbench.llm.chat import chat_from_spec
from rankbench.llm.expand import expand_documents


def main(snakemake):
    lines = expand_documents(chat_from_spec(snakemake.params.llm), pd.read_parquet(snakemake.input.documents),
                             snakemake.params.questions, snakemake.params.language)
    write_jsonl(lines, snakemake.output.expansions)


run_script(main, snakemake)
