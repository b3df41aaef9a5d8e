"""`python -m rankbench.llm publish ...`: the same as `rankbench publish ...` (freeze an LLM output as data)."""

import sys

from rankbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
