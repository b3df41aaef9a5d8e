"""`python -m rankbench.cli` is the `rankbench` command."""

import sys

from rankbench.cli import main

sys.exit(main())
