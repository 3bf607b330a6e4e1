"""`make serve` (samples/serve_demo.sh) and the curl commands the documentation shows.

The demo is run from a copy of the tree's layout in a temporary directory (samples/ a link
to the repository's), with KILN_LISTEN and KILN_DATA_DIR pointing at a port and a directory
of the test's; what it downloads goes to DATA_DIR/demo/. Beside a running server
(same address, same data directory) and with its address taken by a listener the test
holds, it stops at once with one line and touches nothing of the other's. Run through, under
a terminal, it renders, downloads, uploads a report's images and table and renders it with
their ids, runs code (as root), and stops its server on Ctrl-C with the log complete in
DATA_DIR/access.log.

Every curl command README.md, docs/*.md and the demo show checks the HTTP status
(--fail-with-body, or -f for a download), and the README's and docs/serve.md's commands run
as written against a server started as the docs start it.
"""
import json
import os
import pty
import re
import select
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from conftest import KILN_BIN, REPO, SAMPLES, load_json
from serve_helpers import Server, need_root, serve_factory, snapshot  # noqa: F401 (fixture)

try:
    import docx
    import openpyxl
except ImportError as e:  # pragma: no cover
    raise RuntimeError("openpyxl and python-docx are required (python3-openpyxl, "
                       "python3-docx): %s" % e)

DEMO = SAMPLES / "serve_demo.sh"
READY = b"Ctrl-C stops the server."


@pytest.fixture
def demo_root(tmp_path):
    """A directory laid out like the tree: samples/ (a link to the repository's) and
    nothing else. The demo cds to samples/.. and must write nothing there."""
    root = tmp_path / "tree"
    root.mkdir()
    (root / "samples").symlink_to(SAMPLES)
    return root


def demo_env(**settings):
    env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    env["KILN"] = str(KILN_BIN)
    env.update({k: str(v) for k, v in settings.items()})
    return env


def run_demo(root, env, timeout=60):
    """The demo when it is expected to stop by itself: (status, stdout, stderr)."""
    p = subprocess.run(["bash", str(root / "samples" / DEMO.name)], env=env,
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=timeout)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def test_demo_beside_a_running_server(serve_factory, demo_root):
    """A second `make serve` (the same address and data directory as a running server) stops
    at once with one line saying both are in use and which settings choose others, and writes
    nothing: no log truncated or started, no file in the other's directory, no output."""
    first = serve_factory(name="first")
    before = snapshot(first.data_dir)
    lines = len(first.lines)
    t0 = time.monotonic()
    rc, out, err = run_demo(demo_root, demo_env(KILN_LISTEN=first.host,
                                                KILN_DATA_DIR=first.data_dir))
    assert time.monotonic() - t0 < 10, "the demo took %.1fs to give up" % (time.monotonic() - t0)
    assert rc == 2, (rc, out, err)
    assert out == "", out
    assert len(err.splitlines()) == 1, err
    assert err.startswith("serve-demo: kiln serve did not start (exit 2): "), err
    assert "Traceback" not in err
    for named in ("KILN_LISTEN", "KILN_DATA_DIR", first.host, str(first.data_dir),
                  "pid %d" % first.proc.pid):
        assert named in err, (named, err)
    assert snapshot(first.data_dir) == before, "the demo changed the running server's files"
    assert not (first.data_dir / "access.log").exists()
    assert not (demo_root / "out").exists(), "the demo wrote output without a server of its own"
    assert not (first.data_dir / "demo").exists(), "the demo wrote into the other's directory"
    assert len(first.lines) == lines, "the demo talked to the other server: %s" % first.lines[lines:]
    assert first.request("GET", "/healthz", key=None).status == 200


def test_demo_address_taken(demo_root, tmp_path):
    """The address taken by another process (a plain listener here): one line naming it and
    KILN_LISTEN; the data directory is never created."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    host = "127.0.0.1:%d" % holder.getsockname()[1]
    try:
        rc, out, err = run_demo(demo_root, demo_env(KILN_LISTEN=host,
                                                    KILN_DATA_DIR=tmp_path / "fresh"))
    finally:
        holder.close()
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, (rc, out, err)
    assert err.startswith("serve-demo: kiln serve did not start (exit 2): "), err
    assert host in err and "in use" in err and "KILN_LISTEN" in err, err
    assert not (tmp_path / "fresh").exists()
    assert not (demo_root / "out").exists()


class Terminal:
    """A command under a pseudo-terminal, as `make serve` runs in one: Ctrl-C there reaches
    the whole foreground process group."""

    def __init__(self, argv, env, cwd):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:                      # the child: become the command
            # with the signals a terminal's shell has: a pytest started in the
            # background (make check from a script, `&`) ignores SIGINT, and bash
            # cannot trap a signal ignored when it starts
            for sig in (signal.SIGINT, signal.SIGQUIT):
                signal.signal(sig, signal.SIG_DFL)
            os.chdir(cwd)
            os.execvpe(argv[0], argv, env)
        self.out = b""

    def read_until(self, marker, timeout):
        deadline = time.monotonic() + timeout
        while marker not in self.out:
            left = deadline - time.monotonic()
            if left <= 0 or not self._read(left):
                return False
        return True

    def _read(self, timeout):
        r, _, _ = select.select([self.fd], [], [], min(timeout, 1.0))
        if not r:
            return True
        try:
            data = os.read(self.fd, 65536)
        except OSError:                        # EIO: the other side is closed
            return False
        self.out += data
        return bool(data)

    def wait(self, timeout):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self._read(0.1)
                return os.waitstatus_to_exitcode(status)
            self._read(0.1)
        os.kill(self.pid, signal.SIGKILL)
        os.waitpid(self.pid, 0)
        pytest.fail("the demo did not exit within %ss:\n%s" % (timeout, self.text()[-3000:]))

    def text(self):
        return re.sub(r"\x1b\[[0-9;]*m", "", self.out.decode("utf-8", "replace"))


def test_demo_runs_through_and_stops_on_ctrl_c(demo_root, tmp_path):
    """The whole demo on a port of its own (port 0: it reads the real one from the
    "listening" event): every command it shows uses --fail-with-body, the workbook and the
    report with its uploaded images and table are real files, and Ctrl-C stops the server
    with its log complete."""
    data = tmp_path / "data"
    term = Terminal(["bash", str(demo_root / "samples" / DEMO.name)],
                    demo_env(KILN_LISTEN="127.0.0.1:0", KILN_DATA_DIR=data), demo_root)
    ready = term.read_until(READY, 120)
    assert ready, "the demo did not get to its end:\n" + term.text()[-4000:]
    text = term.text()
    assert "Traceback" not in text and "serve-demo:" not in text, text[-3000:]
    commands = [line for line in text.splitlines() if line.startswith("$ ")]
    assert any("/v1/render" in c for c in commands) and any("-F file=@" in c for c in commands)
    for c in commands:
        assert c.startswith("$ curl ") and checks_status(c.split()[2:]), c

    out = data / "demo"
    assert sorted(p.name for p in demo_root.iterdir()) == ["samples"], "the demo wrote in the tree"
    wb = openpyxl.load_workbook(out / "sales.xlsx")
    visible = [ws.title for ws in wb.worksheets if ws.sheet_state == "visible"]
    assert visible == [s["name"] for s in load_json(SAMPLES / "sales_workbook.json")["sheets"]]
    report = docx.Document(str(out / "business_report.docx"))
    images = [r for r in report.part.rels.values() if r.reltype.endswith("/image")]
    assert len(images) == 2, "the report's two images are missing"
    with open(SAMPLES / "tables" / "headcount_2026.csv") as fh:
        first_row = fh.read().splitlines()[1].split(",")
    cells = [c.text for t in report.tables for row in t.rows for c in row.cells]
    assert first_row[1] in cells and first_row[2] in cells, "the CSV table is not in the report"
    request = json.loads((out / "report-request.json").read_text())
    assert len(request["inputs"]) == 3 and not re.search(r'"path": "(images|tables)/',
                                                          json.dumps(request)), request

    os.write(term.fd, b"\x03")               # Ctrl-C
    t0 = time.monotonic()
    rc = term.wait(30)
    assert rc == 130, (rc, term.text()[-2000:])
    assert time.monotonic() - t0 < 15
    log = [json.loads(x) for x in (data / "access.log").read_text().splitlines()]
    assert log[0]["event"] == "listening" and log[-1]["event"] == "stopped", log[-3:]
    requests = [e for e in log if "request_id" in e and "status" in e]
    assert requests and all(e["status"] < 400 for e in requests), requests


# --------------------------------------------------------------------------- documented commands

DOCUMENTS = [REPO / "README.md"] + sorted((REPO / "docs").glob("*.md"))
FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
FAIL_FLAGS = ("--fail-with-body", "--fail")
CONTROL = {"|", "||", "&", "&&", ";", "(", ")", "$(", "do", "then", "else"}


def logical_lines(text):
    """Shell text as its commands: continuations joined, newlines inside quotes kept,
    comments dropped."""
    lines, cur, quote, i = [], [], None, 0
    while i < len(text):
        c = text[i]
        if quote:
            if c == quote:
                quote = None
            elif c == "\\" and quote == '"':
                cur.append(c)
                i += 1
                c = text[i]
            cur.append(c)
        elif c == "\\" and text[i + 1:i + 2] == "\n":
            i += 1
        elif c in "'\"":
            quote = c
            cur.append(c)
        elif c == "#" and (not cur or cur[-1] in " \t"):
            while i < len(text) and text[i] != "\n":
                i += 1
            continue
        elif c == "\n":
            lines.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    lines.append("".join(cur))
    return [ln for ln in lines if ln.strip()]


def curl_commands(text):
    """Every curl command in shell text, as its list of arguments: curl in a command's
    place (after a pipe, ;, &&, $( ...), and a quoted string that is a curl command line
    (serve_demo.sh shows its commands as strings)."""
    import shlex
    found = []
    for line in logical_lines(text):
        lex = shlex.shlex(line.replace("$(", " $( "), posix=True, punctuation_chars="|&;()")
        lex.whitespace_split = True
        tokens = list(lex)
        for k, tok in enumerate(tokens):
            if tok == "curl" and (k == 0 or tokens[k - 1] in CONTROL):
                args = []
                for t in tokens[k + 1:]:
                    if t in CONTROL:
                        break
                    args.append(t)
                found.append(args)
            elif tok.startswith("curl ") and k > 0 and tokens[k - 1] == "show":
                found.append(shlex.split(tok, comments=True)[1:])
    return found


def checks_status(args):
    for a in args:
        if a in FAIL_FLAGS:
            return True
        if re.fullmatch(r"-[A-Za-z]+", a) and "f" in a[1:]:
            return True
    return False


def documented_curl_commands():
    """(where, arguments) of every curl command README.md, docs/*.md and the demo show."""
    out = []
    for doc in DOCUMENTS:
        for lang, body in FENCE.findall(doc.read_text(encoding="utf-8")):
            if lang in ("sh", "bash", "shell", ""):
                out += [(doc.name, args) for args in curl_commands(body)]
    out += [(DEMO.name, args) for args in curl_commands(DEMO.read_text(encoding="utf-8"))]
    return out


def test_documented_curl_commands_check_the_status():
    """Every curl command the docs and the demo show fails on an error reply (exit 22)
    rather than saving or printing it as if it were the answer: --fail-with-body for JSON
    replies, -f (nothing saved) for downloads."""
    commands = documented_curl_commands()
    where = {w for w, _ in commands}
    assert {"README.md", "serve.md", DEMO.name} <= where, where
    assert len(commands) >= 10, commands
    bad = ["%s: curl %s" % (w, " ".join(a)) for w, a in commands if not checks_status(a)]
    assert not bad, "curl commands that do not check the HTTP status:\n" + "\n".join(bad)


def doc_block(doc, marker):
    """The shell block of doc that contains marker."""
    blocks = [body for lang, body in FENCE.findall(doc.read_text(encoding="utf-8"))
              if lang == "sh" and marker in body]
    assert len(blocks) == 1, "%s: expected one sh block with %r, found %d" % (doc.name, marker,
                                                                              len(blocks))
    return blocks[0]


def test_documented_commands_work(demo_root):
    """The README's commands by hand and docs/serve.md's walk-through, run as written (with
    bash -e, so a failing command fails the test) against a server started the way the docs
    start it (no key configured: the first start makes kiln-data/api-key), its address put
    for 127.0.0.1:8080: every request succeeds and the files are what they say."""
    need_root()                                  # the walk-through ends with a run
    srv = Server(demo_root / "kiln-data", keys=None, env={"KILN_SESSIONS": "on"}).start()
    try:
        scripts = [("README.md", doc_block(REPO / "README.md", "kiln-data/api-key")),
                   ("serve.md", doc_block(REPO / "docs" / "serve.md", "kiln-data/api-key"))]
        env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
        for name, script in scripts:
            assert "127.0.0.1:8080" in script, name
            p = subprocess.run(["bash", "-euo", "pipefail", "-c",
                                script.replace("127.0.0.1:8080", srv.host)],
                               cwd=demo_root, env=env, capture_output=True, timeout=180)
            assert p.returncode == 0, "%s: exit %d\n%s\n%s" % (
                name, p.returncode, p.stdout.decode()[-2000:], p.stderr.decode()[-2000:])
        hello = openpyxl.load_workbook(demo_root / "hello.xlsx")["Hi"]
        assert [hello["A1"].value, hello["B1"].value] == ["Hello", 42]
        sales = openpyxl.load_workbook(demo_root / "sales.xlsx")["Sales"]
        with open(SAMPLES / "jobs" / "data" / "sales.csv") as fh:
            header = fh.readline().strip().split(",")
        assert [c.value for c in sales[1]][:len(header)] == header
        ids = json.loads((demo_root / "ids.json").read_text())
        assert sorted(ids) == ["images/kiln_logo.png", "images/regional_trend.jpg",
                               "tables/headcount_2026.csv"], ids
        requests = [e for e in srv.log() if "request_id" in e]
        assert len(requests) >= 10 and all(e["status"] in (200, 201, 202, 204) for e in requests), requests
        # the batch at the walk-through's end: its PDF downloaded from its results
        assert (demo_root / "hello.pdf").read_bytes().startswith(b"%PDF-")
        lines = (demo_root / "results.jsonl").read_text().splitlines()
        assert sorted(json.loads(l)["id"] for l in lines) == ["hello", "rows"], lines
    finally:
        srv.stop()
