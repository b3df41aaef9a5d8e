#!/usr/bin/env bash
# The library as users get it: build the wheel, install it (the core only) into a fresh venv for each Python given
# (default 3.10 3.12 3.13, found under ~/.pyenv/versions or on PATH), check that neither torch nor Snakemake came
# with it, and run the core tests there (marker `core`: the API and `rankbench eval` against pytrec_eval). Then, in
# the 3.12 venv, add the README's extras (no torch may come) and follow the README from a folder outside the
# repository with the installed package (tests/workflow/test_run_command.py: init, check, `rankbench run --quick`,
# a torch method refused by name; and the module way).
#
#   scripts/check-wheel.sh [3.10 3.12 ...]    # from the repository root, after `make setup` (PYTHON= another builder)
set -euo pipefail
cd "$(dirname "$0")/.."
versions=("${@:-3.10 3.12 3.13}")
read -r -a versions <<< "${versions[*]}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"${PYTHON:-.venv/bin/python}" -m pip wheel --quiet --disable-pip-version-check --no-deps -w "$work" .
rm -rf build src/rankbench.egg-info
wheel=$(ls "$work"/rankbench-*.whl)
pin() { grep -i "^$1==" requirements.lock; }  # the lock's version of a test tool
for version in "${versions[@]}"; do
    python=$(ls -d ~/.pyenv/versions/"$version".*/bin/python 2>/dev/null | sort -V | tail -1 || true)
    python=${python:-$(command -v "python$version" || true)}
    if [ -z "$python" ]; then
        echo "check-wheel: no Python $version (install it, e.g. pyenv install $version)" >&2
        exit 1
    fi
    venv="$work/venv-$version"
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel" "$(pin pytest)" \
        "$(pin pytrec_eval-terrier)"
    heavy=$("$venv/bin/python" -m pip list --disable-pip-version-check 2>/dev/null \
        | grep -i -E '^(torch|snakemake|faiss-cpu|numba|matplotlib|sentence-transformers) ' || true)
    if [ -n "$heavy" ]; then
        echo "check-wheel: the core install on Python $version pulled heavy packages:" >&2
        echo "$heavy" >&2
        exit 1
    fi
    echo "check-wheel: Python $version ($("$venv/bin/python" -c 'import sys; print(sys.version.split()[0])')):" \
        "core installed without torch or Snakemake; core tests:"
    # The wheel's rankbench, not the checkout's (PYTHONPATH unset; pytest puts tests/, not src/, on sys.path).
    env -u PYTHONPATH "$venv/bin/python" -m pytest -q -p no:cacheprovider -m core \
        $(grep -rl --include="test_*.py" "^pytestmark = pytest.mark.core" tests)
done
workflow_venv="$work/venv-3.12"
if [ -d "$workflow_venv" ]; then
    # The README's install (rankbench.execution.launch.PROJECT_INSTALL, which tests/codebase/test_packaging.py
    # finds in the README): no torch may come with it.
    install=$(env -u PYTHONPATH "$workflow_venv/bin/python" -c \
        'from rankbench.execution.launch import PROJECT_INSTALL; print(PROJECT_INSTALL)')
    "$workflow_venv/bin/python" -m pip install --quiet --disable-pip-version-check "$wheel${install#rankbench}"
    heavy=$("$workflow_venv/bin/python" -m pip list --disable-pip-version-check 2>/dev/null \
        | grep -i -E '^(torch|sentence-transformers|transformers|nvidia-.*) ' || true)
    if [ -n "$heavy" ]; then
        echo "check-wheel: the README's install ($install) pulled torch's stack:" >&2
        echo "$heavy" >&2
        exit 1
    fi
    echo "check-wheel: Python 3.12 with the README's install ($install, $(du -sh "$workflow_venv" | cut -f1) venv," \
        "no torch): the README's path and a project run from the installed package:"
    env -u PYTHONPATH "$workflow_venv/bin/python" -m pytest -q -p no:cacheprovider \
        tests/workflow/test_run_command.py -k "not kill_9"  # the kill test runs in the suite (make test)
fi
