# The optional LLM stage; its helpers and the config checks are in llm_common.smk.


rule llm:
    input:
        llm_outputs(),


rule llm_generate_questions:
    input:
        documents=f"{R}/corpus/documents.parquet",
    output:
        questions=f"{R}/llm/generated/{{name}}.jsonl",
    log:
        f"{LOGS}/llm_generate_questions/{{name}}.log",
    benchmark:
        f"{R}/benchmarks/llm_generate_questions/{{name}}.tsv"
    conda:
        "../../environment.yml"
    threads: llm_threads()
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        llm=llm_chat(),
        n_questions=lambda wildcards: llm_setting("generate", "count"),
        seed=lambda wildcards: llm_setting("generate", "seed"),
        qid_prefix=lambda wildcards: llm_setting("generate", "qid_prefix"),
        language=llm_language(),
    script:
        "../scripts/llm_generate_questions.py"


rule llm_judge:
    input:
        runs=lambda wildcards: [run_path(m, wildcards.qset) for m in judged_methods()],
        chunks=lambda wildcards: f"{R}/corpus/{LLM['judge'].get('chunker', config['chunker'])}/chunks.parquet",
        questions=f"{R}/{{qset}}/questions.parquet",
        labels=f"{R}/{{qset}}/labels.parquet",
    output:
        judgements=f"{R}/{{qset}}/llm/judgements.parquet",
        version=f"{R}/{{qset}}/llm/judged.jsonl",
    log:
        f"{LOGS}/llm_judge/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/llm_judge/{{qset}}.tsv"
    conda:
        "../../environment.yml"
    threads: llm_threads()
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        llm=llm_chat(),
        depth=lambda wildcards: llm_setting("judge", "depth"),
    script:
        "../scripts/llm_judge.py"


rule llm_agreement:
    input:
        judgements=f"{R}/{{qset}}/llm/judgements.parquet",
    output:
        report=f"{R}/{{qset}}/llm/agreement.md",
        agreement=f"{R}/{{qset}}/llm/agreement.parquet",
        confusion=f"{R}/{{qset}}/llm/confusion.parquet",
    log:
        f"{LOGS}/llm_agreement/{{qset}}.log",
    conda:
        "../../environment.yml"
    threads: 1
    params:
        resamples=EVALUATION["bootstrap_resamples"],
        seed=EVALUATION["seed"],
    script:
        in_worker("../scripts/llm_agreement.py")


rule llm_rewrite:
    input:
        questions=f"{R}/{{qset}}/questions.parquet",
    output:
        rewrites=f"{R}/{{qset}}/llm/rewrites.jsonl",
    log:
        f"{LOGS}/llm_rewrite/{{qset}}.log",
    benchmark:
        f"{R}/benchmarks/llm_rewrite/{{qset}}.tsv"
    conda:
        "../../environment.yml"
    threads: llm_threads()
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        llm=llm_chat(),
        language=llm_language(),
    script:
        "../scripts/llm_rewrite.py"


# The questions each document answers (doc2query), to freeze as a document expansion (docs/reference/config.md).
rule llm_expand:
    input:
        documents=f"{R}/corpus/documents.parquet",
    output:
        expansions=f"{R}/llm/expansions.jsonl",
    log:
        f"{LOGS}/llm_expand.log",
    benchmark:
        f"{R}/benchmarks/llm_expand.tsv"
    conda:
        "../../environment.yml"
    threads: llm_threads()
    resources:
        mem_mb=4000,
        runtime=600,
    params:
        llm=llm_chat(),
        questions=lambda wildcards: llm_setting("expand", "questions"),
        language=llm_language(),
    script:
        "../scripts/llm_expand.py"
