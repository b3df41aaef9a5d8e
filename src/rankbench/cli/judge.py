"""`rankbench judge`: a local labelling page over a project's pool for a version (stdlib http.server, one page with
its script and style inline), the agreement of its judges, and the freeze of their labels into a new version through
pool-import's own code. The judging logic is analysis.judging; this module reads the project and serves.

Safety: documents are untrusted, so the page writes every passage as text (textContent) under a Content Security
Policy that loads nothing from the network; every API request carries the server's token (in the page only), a
cross-origin request or another Host is refused and no CORS header is ever sent; the server binds 127.0.0.1 unless
--host says otherwise."""

from __future__ import annotations

import argparse
import html
import ipaddress
import json
import secrets
import sys
from dataclasses import dataclass
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.resources import files
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import yaml

from rankbench.analysis.judging import (
    ACCEPTED,
    GRADES,
    PERSON,
    JudgingPool,
    JudgmentLog,
    agreement_markdown,
    agreement_tables,
    check_judge_name,
    filled_labels,
    judging_pool,
    judgments_folder,
    latest_judgments,
    now,
    progress,
    selected_evidence,
)
from rankbench.analysis.pooling import import_labels, results_pool
from rankbench.configuration.defaults import RESULTS
from rankbench.errors import InputError
from rankbench.io.config_file import load_config_file
from rankbench.io.files import write_text
from rankbench.io.frozen import check_frozen, check_version_name, freeze, read_lock, rewrite_lock_key
from rankbench.project.drafts import rooted

MAX_BODY = 1 << 20  # a judgment is small; a larger request is refused unread


@dataclass(frozen=True)
class Project:
    """What `judge` needs of a project: its folder, config (paths from the folder), results and the version."""

    root: Path
    config_path: Path
    config: dict[str, Any]
    raw_qsets: dict[str, Any]
    results: Path
    qset: str

    @classmethod
    def open(cls, config_path: Path, directory: Path | None, qset: str) -> Project:
        root = Path(directory or Path.cwd())
        path = config_path if config_path.is_absolute() or config_path.is_file() else root / config_path
        raw = load_config_file(path)
        if not isinstance(raw.get("dataset"), dict) or not isinstance(raw.get("qsets"), dict):
            raise InputError(path, None, "has no `dataset` and `qsets` blocks", "Give the project's config.yaml.")
        if qset not in raw["qsets"]:
            raise InputError(path, "qsets", f"has no version {qset!r} (it has: {', '.join(sorted(raw['qsets']))})",
                             "Give one of these with --qset.")
        if raw["dataset"].get("format", "native") != "native" or "path" not in (raw["qsets"][qset] or {}):
            raise InputError(path, f"qsets.{qset}", "is not a native question-set file", "Judging writes a new "
                             "native version; convert the dataset with `rankbench init` first.")
        config = rooted(raw, root)
        results = root / str(raw.get("results", RESULTS)) / raw["dataset"]["name"]
        return cls(root, path, config, raw["qsets"], results, qset)

    def chunker(self, given: str | None) -> str:
        return given or str(self.config.get("chunker", "sections"))

    def folder(self) -> Path:
        return judgments_folder(self.root, self.qset)

    def suggestions(self) -> pd.DataFrame | None:
        """The LLM judge's frozen judgements of this version (`snakemake llm`), None when there are none."""
        path = self.results / self.qset / "llm" / "judgements.parquet"
        return pd.read_parquet(path) if path.is_file() else None


def load_pool(project: Project, chunker: str, depth: int, blind: bool) -> JudgingPool:
    """The version's unjudged pool (pool-export's) as passages in their documents, with suggestions unless blind."""
    frame, _ = results_pool(project.results, project.qset, chunker, depth)
    documents = pd.read_parquet(project.results / "corpus" / "documents.parquet", columns=["doc_id", "text"])
    chunks = pd.read_parquet(project.results / "corpus" / chunker / "chunks.parquet",
                             columns=["chunk_id", "start", "end"])
    return judging_pool(frame, chunks, documents, None if blind else project.suggestions())


class JudgeServer(ThreadingHTTPServer):
    """The page's server: the pool, one judge's log, a token and the origins it answers."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], pool: JudgingPool, log: JudgmentLog, project: Project,
                 blind: bool) -> None:
        super().__init__(address, JudgeHandler)
        self.pool, self.log, self.project, self.blind = pool, log, project, blind
        self.token = secrets.token_urlsafe(32)
        self.nonce = secrets.token_urlsafe(16)
        self.port = int(self.server_address[1])
        self.host = address[0]

    def answers(self, netloc: str | None) -> bool:
        """Whether a Host (or Origin's host) is this server's: its port, and an IP address, `localhost` or the
        --host name. A DNS name other than these is how a rebinding attack reaches a local server: refused."""
        parts = urlsplit(f"//{netloc or ''}")
        try:
            port, name = parts.port, parts.hostname or ""
        except ValueError:
            return False
        if port != self.port:
            return False
        try:
            ipaddress.ip_address(name)
            return True
        except ValueError:
            return name in ("localhost", self.host.lower())

    def page(self) -> bytes:
        template = files("rankbench.report").joinpath("judge.html").read_text(encoding="utf-8")
        settings = {"token": self.token, "judge": self.log.judge, "qset": self.project.qset,
                    "dataset": self.project.config["dataset"]["name"], "blind": self.blind}
        # `<` escaped: a judge or version name can never close the script element
        data = json.dumps(settings, ensure_ascii=False).replace("<", "\\u003c")
        return template.replace("{{NONCE}}", self.nonce).replace("{{SETTINGS}}", data).encode("utf-8")

    def agreement_page(self) -> bytes:
        """agreement.md's content as a page: headings, paragraphs and tables, every cell escaped."""
        stats, disagreements = agreement(self.project, resamples=1000)
        parts, rows = [], []
        for line in agreement_markdown(self.project.qset, stats, disagreements).splitlines() + [""]:
            if line.startswith("|"):
                if not line.startswith("|---"):
                    rows.append("<tr>" + "".join(f"<td>{html.escape(cell.strip())}</td>"
                                                 for cell in line.strip("|").split("|")) + "</tr>")
                continue
            if rows:
                parts.append(f"<table>{''.join(rows)}</table>")
                rows = []
            if line.startswith("#"):
                level = len(line) - len(line.lstrip("#"))
                parts.append(f"<h{level}>{html.escape(line.lstrip('#').strip())}</h{level}>")
            elif line:
                parts.append(f"<p>{html.escape(line)}</p>")
        return (f"<!doctype html><meta charset=utf-8><title>Agreement</title><style nonce={self.nonce}>"
                "body{font:15px system-ui;margin:2em}td{border:1px solid #ccc;padding:3px 8px}</style>"
                "<p><a href='/'>back to judging</a></p>" + "".join(parts)).encode()


class JudgeHandler(BaseHTTPRequestHandler):
    server: JudgeServer

    def log_message(self, format: str, *args: Any) -> None:
        """Requests are not logged line by line: the terminal shows judgments and progress."""

    def _send(self, status: int, body: bytes, kind: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", f"{kind}; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("X-Frame-Options", "DENY")
        nonce = self.server.nonce
        self.send_header("Content-Security-Policy", f"default-src 'none'; script-src 'nonce-{nonce}'; style-src "
                         f"'nonce-{nonce}'; connect-src 'self'; base-uri 'none'; form-action 'none'; "
                         "frame-ancestors 'none'")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, value: Any) -> None:
        self._send(status, json.dumps(value, ensure_ascii=False).encode("utf-8"))

    def _refused(self, api: bool) -> str | None:
        """Why a request is refused: another Host (DNS rebinding), another Origin, or (API) no valid token."""
        if not self.server.answers(self.headers.get("Host")):
            return "unknown Host"
        origin = self.headers.get("Origin")
        if origin is not None and not self.server.answers(urlsplit(origin).netloc):
            return "cross-origin request"
        if api and not secrets.compare_digest(self.headers.get("X-Rankbench-Token", ""), self.server.token):
            return "missing or wrong token"
        return None

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlsplit(self.path)
        reason = self._refused(url.path.startswith("/api/"))
        if reason:
            self._json(HTTPStatus.FORBIDDEN, {"error": reason})
        elif url.path == "/":
            self._send(HTTPStatus.OK, self.server.page(), "text/html")
        elif url.path == "/agreement":
            self._send(HTTPStatus.OK, self.server.agreement_page(), "text/html")
        elif url.path == "/api/pool":
            pool, log = self.server.pool, self.server.log
            self._json(HTTPStatus.OK, {
                "questions": [{**q, "passages": [p.summary() for p in pool.passages[q["qid"]]]}
                              for q in pool.questions],
                "judgments": [event for event in log.latest.values()],
                "progress": progress(pool, log.latest), "torn": log.torn})
        elif url.path == "/api/texts":
            qid = parse_qs(url.query).get("qid", [""])[0]
            if qid not in self.server.pool.passages:
                self._json(HTTPStatus.NOT_FOUND, {"error": f"no question {qid!r} in the pool"})
            else:
                self._json(HTTPStatus.OK, {"qid": qid, "passages": self.server.pool.texts_of(qid)})
        else:
            self._json(HTTPStatus.NOT_FOUND, {"error": "not found"})

    def do_POST(self) -> None:  # noqa: N802 (http.server's name)
        reason = self._refused(True)
        length = int(self.headers.get("Content-Length") or 0)
        if reason or self.path != "/api/judge" or not 0 < length <= MAX_BODY:
            self._json(HTTPStatus.FORBIDDEN if reason else HTTPStatus.BAD_REQUEST,
                       {"error": reason or "a judgment is POSTed to /api/judge"})
            return
        try:
            body = json.loads(self.rfile.read(length))
            status, answer = judge(self.server, body)
        except (InputError, ValueError, TypeError, KeyError) as error:
            status, answer = HTTPStatus.BAD_REQUEST, {"error": str(error)}
        self._json(status, answer)

    def do_OPTIONS(self) -> None:  # noqa: N802 (http.server's name)
        """A CORS preflight gets no CORS header: the browser refuses the cross-origin request."""
        self._json(HTTPStatus.FORBIDDEN, {"error": "cross-origin requests are refused"})


def judge(server: JudgeServer, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    """One POSTed judgment checked and appended (or refused: another tab changed the passage since `seen`)."""
    pool, log = server.pool, server.log
    passage = pool.passage(str(body["qid"]), str(body["chunk_id"]))
    if passage is None:
        raise InputError(None, f"question {body['qid']}", f"has no passage {body['chunk_id']!r} in the pool",
                         "Reload the page.")
    grade = body.get("grade")
    if grade is not None and grade not in GRADES:
        raise InputError(None, f"question {passage.qid}", f"grade {grade!r}", "Grades are 0 to 3.")
    selection = body.get("evidence")
    if selection == "keep":  # the evidence in force stays (a grade or notes changed)
        evidence = (log.latest.get((passage.qid, passage.chunk_id)) or {}).get("evidence")
    else:
        evidence = None if not selection else selected_evidence(
            pool, passage, int(selection["start16"]), int(selection["end16"]), str(selection["quote"]))
    suggestion = None if server.blind else passage.suggestion
    accepted = bool(body.get("accepted")) and suggestion is not None and grade == suggestion
    event = {"at": now(), "qid": passage.qid, "chunk_id": passage.chunk_id, "doc_id": passage.doc_id,
             "section": passage.section, "grade": grade, "skip": bool(body.get("skip")) and grade is None,
             "evidence": evidence, "notes": str(body.get("notes") or ""), "suggestion": suggestion,
             "decided": ACCEPTED if accepted else PERSON}
    written, current = log.append(event, int(body.get("seen") or 0))
    state = progress(pool, log.latest)
    if written:
        shown = "skip" if event["skip"] else ("-" if grade is None else str(grade))
        print(f"{log.judge}: {passage.qid} {passage.chunk_id} -> {shown}"
              f"{' (evidence)' if evidence else ''}; judged {state['judged']}/{state['size']}", flush=True)
    return (HTTPStatus.OK if written else HTTPStatus.CONFLICT), {"judgment": current, "progress": state}


def agreement(project: Project, resamples: int = 2000) -> tuple[pd.DataFrame, pd.DataFrame]:
    return agreement_tables(latest_judgments(project.folder()), project.suggestions(), resamples)


def agreement_command(project: Project) -> int:
    """`judge --agreement`: the kappa table and the disagreements, printed and written to agreement.md."""
    stats, disagreements = agreement(project)
    text = agreement_markdown(project.qset, stats, disagreements)
    path = project.folder() / "agreement.md"
    write_text(text, path)
    print(text + f"\nwritten to {path}")
    return 0


def freeze_command(project: Project, version: str, judges: list[str]) -> int:
    """`judge --freeze --version NAME`: the judgments in force as a new frozen version, through pool-import's
    import_labels (old questions kept, labels added, the source never changed); prints the `qsets` lines to add."""
    check_version_name(version, "--version")
    if version in project.config["qsets"]:
        raise InputError(project.config_path, "qsets", f"already has a version {version!r}",
                         "Give the new version a new name: versions are never changed.")
    folder = project.folder()
    judgments = latest_judgments(folder)
    if judgments.empty:
        raise InputError(folder, None, "holds no judgment", f"Judge first: rankbench judge --qset {project.qset} "
                         "--judge NAME.")
    filled = filled_labels(judgments, judges, folder)
    source = Path(project.config["qsets"][project.qset]["path"])
    output = source.with_name(f"{version}.jsonl")
    lock = Path(project.config["dataset"]["lock"])
    # the same questions: the source's rewrites serve the new version unchanged, once checked against their lock key
    rewrites = {name: project.root / path for name, path in
                (project.raw_qsets[project.qset].get("rewrites") or {}).items()}
    registered = read_lock(lock) if lock.is_file() else {}
    for name, path in rewrites.items():
        key = rewrite_lock_key(project.qset, name)
        check_frozen(key, [path], registered.get(key), lock)
    added, digest = import_labels(filled, source, output, version, lock)
    for name, path in rewrites.items():
        freeze(path, rewrite_lock_key(version, name), lock)
    entry = {key: value for key, value in project.raw_qsets[project.qset].items() if key != "draft"}
    entry["path"] = str(Path(project.raw_qsets[project.qset]["path"]).with_name(f"{version}.jsonl"))
    lines = yaml.safe_dump({version: entry}, sort_keys=False, allow_unicode=True)
    print(f"{version}: {added} labels ({int(filled['evidence'].notna().sum())} with evidence) added to the questions "
          f"of {project.qset}, written to {output}, sha256 {digest} registered in "
          f"{lock}{' with its rewrites' if rewrites else ''}\nAdd to `qsets` in {project.config_path.name}:\n"
          + "".join(f"  {line}\n" for line in lines.splitlines()))
    return 0


def serve_command(project: Project, args: argparse.Namespace) -> int:
    """Serve the page until interrupted; the URL, what --host exposes, and each judgment are printed."""
    if not args.judge:
        raise InputError(None, "judge", "needs --judge NAME to serve the page (it names the judgments file)",
                         "Give your name, e.g. --judge alice.")
    pool = load_pool(project, project.chunker(args.chunker), args.depth, args.blind)
    log = JudgmentLog(project.folder() / f"{args.judge}.jsonl", args.judge)
    try:
        server = JudgeServer((args.host or "127.0.0.1", args.port), pool, log, project, args.blind)
    except OSError as error:
        raise InputError(None, "--port", f"cannot listen on {args.host or '127.0.0.1'}:{args.port} ({error})",
                         "Give another port, or 0 for any free one.") from None
    if args.host:
        print(f"rankbench: warning: --host {args.host}: anyone who can reach this address can read the pool's "
              "questions and documents (the page carries the token that records judgments); keep it to a network "
              "you trust.", file=sys.stderr, flush=True)
    state = progress(pool, log.latest)
    where = f"; resume at {state['next']['qid']}" if state["next"] else "; every passage is judged"
    print(f"{args.judge} judging {project.qset}: {state['judged']}/{state['size']} passages judged{where}"
          + ("\nrankbench: a judgment cut short by a crash was dropped from " + str(log.path) if log.torn else ""),
          flush=True)
    print(f"Serving http://{'localhost' if not args.host else args.host}:{server.port}/ (Ctrl+C to stop)",
          flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


def judge_command(args: argparse.Namespace) -> int:
    """`rankbench judge`: serve the labelling page, or (--agreement) measure agreement, or (--freeze) freeze."""
    for name in args.judge or []:
        check_judge_name(name)
    project = Project.open(args.config, args.directory, args.qset)
    if args.freeze:
        if not args.version:
            raise InputError(None, "--freeze", "needs --version NAME, the new version", "e.g. --freeze --version v4.")
        return freeze_command(project, args.version, args.judge or [])
    if args.agreement:
        return agreement_command(project)
    if args.judge and len(args.judge) > 1:
        raise InputError(None, "--judge", "is given several times", "Serve the page for one judge.")
    args.judge = args.judge[0] if args.judge else None
    return serve_command(project, args)


def add_judge_command(commands: argparse._SubParsersAction) -> None:
    """The `judge` subcommand's arguments."""
    from rankbench.cli.options import whole_number

    parser = commands.add_parser("judge", help="label the pool of a version in the browser, measure agreement, "
                                 "freeze the labels as a new version")
    parser.add_argument("--qset", required=True, help="the version whose pool is judged")
    parser.add_argument("--judge", action="append", help="your name (names your judgments file); with --freeze, "
                        "the judge(s) whose labels are frozen (default: every judge, who must agree)")
    parser.add_argument("--config", type=Path, default=Path("config.yaml"), help="the project's config "
                        "(default: config.yaml)")
    parser.add_argument("--directory", type=Path, help="the project folder (default: here)")
    parser.add_argument("--chunker", help="chunker of the runs pooled (default: the config's `chunker`)")
    parser.add_argument("--depth", type=whole_number(1), default=10, help="top k of each run pooled (default: 10)")
    parser.add_argument("--port", type=whole_number(0), default=0, help="port to serve on (default: 0, any free)")
    parser.add_argument("--host", help="address to bind instead of 127.0.0.1 (exposes the pool to that network)")
    parser.add_argument("--blind", action="store_true", help="hide the LLM judge's suggestions")
    parser.add_argument("--agreement", action="store_true", help="print the judges' agreement, write agreement.md")
    parser.add_argument("--freeze", action="store_true", help="freeze the judgments as a new version (--version)")
    parser.add_argument("--version", help="with --freeze: the new version's name")
    parser.set_defaults(handler=judge_command)
