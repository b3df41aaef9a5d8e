"""A real search service on the loopback address for the `type: http` tests: Xapian's Omega (Debian's xapian-omega:
Xapian's BM25 over an index built by its scriptindex), run as a CGI by Python's http.server. Its `json` template
answers {"total": N, "hits": [{"id", "score"}]} with Omega's version in a header; `broken` answers JSON cut short."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest

OMEGA = Path("/usr/lib/cgi-bin/omega/omega")
SCRIPTINDEX = shutil.which("scriptindex")
NEEDS_OMEGA = pytest.mark.skipif(not (OMEGA.exists() and SCRIPTINDEX),
                                 reason="Xapian Omega is not installed (apt-get install xapian-omega; .ci/run does)")
JSON_TEMPLATE = ('$httpheader{Content-Type,application/json}$httpheader{X-Omega-Version,$version}'
                 '{"total":$msize,"hits":[$hitlist{$if{$ne{$hit,0},$.}{"id":"$json{$field{id}}","score":$weight}}]}')
BROKEN_TEMPLATE = '$httpheader{Content-Type,application/json}{"total":$msize,"hits":['
INDEX_SCRIPT = "id : field=id boolean=Q unique=Q\ntext : index field=text\n"
# What the method sends Omega: the question, OR of its terms (Omega's default is AND), k hits, the JSON template.
OMEGA_PARAMS = {"P": "{query}", "DEFAULTOP": "or", "HITSPERPAGE": "{hits}", "FMT": "json"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def omega_server(documents: Sequence[tuple[str, str]]) -> Iterator[str]:
    """Index (doc_id, text) pairs and serve them; yields the search URL (…/cgi-bin/omega). The folder is one that
    any user may read: as root, http.server runs a CGI as `nobody`."""
    folder = Path(tempfile.mkdtemp(prefix="rankbench-omega-"))
    folder.chmod(0o755)
    try:
        yield from _serve(folder, documents)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _serve(folder: Path, documents: Sequence[tuple[str, str]]) -> Iterator[str]:
    (folder / "cgi-bin").mkdir(parents=True)
    (folder / "templates").mkdir()
    (folder / "db").mkdir()
    (folder / "cgi-bin" / "omega").symlink_to(OMEGA)
    (folder / "templates" / "json").write_text(JSON_TEMPLATE)
    (folder / "templates" / "broken").write_text(BROKEN_TEMPLATE)
    (folder / "index.script").write_text(INDEX_SCRIPT)
    dump = "".join(f"id={doc_id}\ntext={' '.join(text.split())}\n\n" for doc_id, text in documents)
    (folder / "documents.txt").write_text(dump)
    subprocess.run([SCRIPTINDEX, str(folder / "db" / "default"), "index.script", "documents.txt"], cwd=folder,
                   check=True, capture_output=True)
    (folder / "omega.conf").write_text(f"database_dir {folder / 'db'}\ntemplate_dir {folder / 'templates'}\n"
                                       f"log_dir {folder / 'log'}\n")
    port = free_port()
    environment = {"PATH": "/usr/bin:/bin", "OMEGA_CONFIG_FILE": str(folder / "omega.conf")}
    server = subprocess.Popen([sys.executable, "-m", "http.server", "--cgi", "--bind", "127.0.0.1", str(port)],
                              cwd=folder, env=environment, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise RuntimeError("the Omega server did not start") from None
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/cgi-bin/omega"
    finally:
        server.terminate()
        server.wait(timeout=10)
