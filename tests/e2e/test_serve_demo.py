"""`make serve` (samples/serve_demo.sh) and the curl commands the documentation shows.

The demo is run from a copy of the tree's layout in a temporary directory (samples/ a link
to the repository's), so what it writes (out/served/) stays there, with KILN_LISTEN and
KILN_DATA_DIR pointing at a port and a directory of the test's. Beside a running server
(same address, same data directory) and with its address taken by a listener the test
holds, it stops at once with one line and touches nothing of the other's. Run through, under
a terminal, it renders, downloads, uploads a report's images and table and renders it with
their ids, runs code (as root), and stops its server on Ctrl-C with the log complete in
DATA_DIR/access.log.
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
from serve_helpers import serve_factory, snapshot  # noqa: F401 (fixture)

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
    nothing else. The demo cds to samples/.. and writes out/served/ there."""
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
        assert c.startswith("$ curl --fail-with-body "), c

    out = demo_root / "out" / "served"
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
