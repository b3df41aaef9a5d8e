"""rankbench: reproducible retrieval evaluation (library side of the Snakemake workflow)."""

__version__ = "0.1.0"
