# Learned sparse retrieval: its helpers; its rules (index, question weights, run) are in sparse.smk.


def sparse_queries_path(method, qset):
    """The sparse question vectors a method sends: of the version's questions, or of a rewrite source's."""
    spec = METHOD_SPECS[method]
    if spec.get("rewrite"):
        return f"{R}/{qset}/sparse-queries/{spec['rewrite']}/{spec['encoder']}.npz"
    return f"{R}/{qset}/sparse-queries/{spec['encoder']}.npz"


SERVED_FILES.update(
    {
        m: [corpus_path(m, "sparse", f"{METHOD_SPECS[m]['encoder']}.npz")]
        for m in methods_of_rule("retrieve_sparse")
    }
)
