"""`kiln mcp` on stdio, driven by raw JSON-RPC lines (docs/mcp.md).

A reader thread parses every line the server writes: each must be one JSON-RPC
message (anything else on stdout fails the test). One server per module; the
tests that need a fresh connection (the lifecycle, the modern revision) start
their own. The official SDK client and the Inspector drive it too
(test_mcp_clients.py); here every member is checked as the spec words it.
"""
import base64
import io
import json
import os
import queue
import subprocess
import threading
import time
import zipfile

import pytest

from conftest import KILN_BIN, REPO, SANITIZED

MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="kiln mcp's sessions need root")


class Mcp:
    def __init__(self, *args, cwd=None):
        self.p = subprocess.Popen([str(KILN_BIN), "mcp", *args], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=cwd)
        self.q = queue.Queue()
        self.bad = []
        self.next_id = 100
        threading.Thread(target=self._read, daemon=True).start()
        self.stderr = b""
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stderr(self):
        for chunk in iter(lambda: self.p.stderr.read1(65536), b""):
            self.stderr += chunk

    def _read(self):
        for line in self.p.stdout:
            try:
                msg = json.loads(line)
                assert msg.get("jsonrpc") == "2.0"
            except Exception:
                self.bad.append(line)
                continue
            self.q.put(msg)
        self.q.put(None)

    def send(self, msg):
        self.p.stdin.write((json.dumps(msg) + "\n").encode())
        self.p.stdin.flush()

    def request(self, method, params=None, timeout=120, notes=None):
        self.next_id += 1
        rid = self.next_id
        msg = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        self.send(msg)
        return self.wait(rid, timeout, notes)

    def wait(self, rid, timeout=120, notes=None):
        end = time.time() + timeout
        while True:
            msg = self.q.get(timeout=max(0.1, end - time.time()))
            assert msg is not None, "kiln mcp closed its stdout"
            if msg.get("id") == rid and "method" not in msg:
                assert not self.bad, self.bad
                return msg
            if notes is not None and "method" in msg:
                notes.append(msg)

    def call(self, name, arguments, meta=None, **kw):
        params = {"name": name, "arguments": arguments}
        if meta:
            params["_meta"] = meta
        return self.request("tools/call", params, **kw)

    def initialize(self, version="2025-11-25"):
        r = self.request("initialize", {"protocolVersion": version, "capabilities": {},
                                        "clientInfo": {"name": "pytest", "version": "1"}})
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return r

    def close(self):
        self.p.stdin.close()
        rc = self.p.wait(timeout=60)
        assert not self.bad, self.bad
        # under ASan a report (a leak at exit) is on stderr with a non-zero status
        assert b"ERROR: AddressSanitizer" not in self.stderr, self.stderr.decode(errors="replace")
        assert b"runtime error:" not in self.stderr, self.stderr.decode(errors="replace")
        return rc


@pytest.fixture(scope="module")
def host(tmp_path_factory):
    root = tmp_path_factory.mktemp("mcp")
    allowed = root / "allowed"
    (allowed / "sub").mkdir(parents=True)
    (allowed / "data.csv").write_text("region,sales\nnorth,10\nsouth,32\n")
    (allowed / "sub" / "inner.txt").write_text("inside")
    os.symlink("data.csv", allowed / "link_inside.csv")
    # an absolute link is refused even when it points inside (RESOLVE_BENEATH)
    os.symlink(allowed / "data.csv", allowed / "abs_inside.csv")
    (root / "secret.txt").write_text("not for the model")
    os.symlink(root / "secret.txt", allowed / "link_out.txt")
    os.symlink("/etc/passwd", allowed / "abs_link")
    os.mkfifo(allowed / "fifo")
    return root


@pytest.fixture(scope="module")
def mcp(host):
    m = Mcp("--out", str(host / "out"), "--allow-read", str(host / "allowed"))
    r = m.initialize()
    assert r["result"]["protocolVersion"] == "2025-11-25"
    yield m
    assert m.close() == 0


def text_of(result):
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def test_initialize_and_tools_list(mcp):
    tools = mcp.request("tools/list")["result"]["tools"]
    names = [t["name"] for t in tools]
    assert names == ["execute_code", "render_document", "list_files", "load_file"]
    for t in tools:
        assert t["title"] and t["description"]
        assert t["inputSchema"]["type"] == "object"
        assert t["outputSchema"]["type"] == "object"
        assert set(t["annotations"]) >= {"readOnlyHint", "destructiveHint", "idempotentHint",
                                         "openWorldHint"}
    assert mcp.request("ping")["result"] == {}


def test_execute_code_shares_variables(mcp):
    r1 = mcp.call("execute_code", {"code": "x = 41\nprint('set')"})["result"]
    assert r1["isError"] is False
    assert "set" in text_of(r1)
    sid = r1["structuredContent"]["session_id"]
    r2 = mcp.call("execute_code", {"code": "x + 1"})["result"]
    assert r2["structuredContent"]["session_id"] == sid
    assert "42" in text_of(r2)
    assert r2["structuredContent"]["outputs"][0]["data"]["text/plain"] == "42"
    # passing the session_id back reaches the same session
    r3 = mcp.call("execute_code", {"code": "x * 2", "session_id": sid})["result"]
    assert "82" in text_of(r3)


def test_figure_is_image_content_and_files_are_links(mcp, host):
    notes = []
    r = mcp.call("execute_code", {"code": (
        "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()\n"
        "open('/mnt/data/table.csv', 'w').write('a,b\\n1,2\\n')")},
        meta={"progressToken": "tok"}, notes=notes)["result"]
    assert r["isError"] is False
    images = [c for c in r["content"] if c["type"] == "image"]
    assert len(images) == 1 and images[0]["mimeType"] == "image/png"
    assert base64.b64decode(images[0]["data"])[:8] == b"\x89PNG\r\n\x1a\n"
    # the record does not carry the figure twice
    out = r["structuredContent"]["outputs"][0]["data"]["image/png"]
    assert out == "(in content[%d])" % r["content"].index(images[0])
    links = [c for c in r["content"] if c["type"] == "resource_link"]
    assert [l["name"] for l in links] == ["table.csv"]
    assert (host / "out" / "table.csv").read_text() == "a,b\n1,2\n"
    blob = mcp.request("resources/read", {"uri": links[0]["uri"]})["result"]["contents"][0]
    assert base64.b64decode(blob["blob"]) == b"a,b\n1,2\n"
    progress = [n for n in notes if n["method"] == "notifications/progress"]
    assert progress and all(n["params"]["progressToken"] == "tok" for n in progress)
    values = [n["params"]["progress"] for n in progress]
    assert values == sorted(values) and len(set(values)) == len(values)


def test_exception_is_error_with_traceback(mcp):
    r = mcp.call("execute_code", {"code": "def f():\n    return 1 / 0\nf()"})["result"]
    assert r["isError"] is True
    assert "ZeroDivisionError" in text_of(r)
    assert r["structuredContent"]["status"] == "error"
    assert r["structuredContent"]["error"]["ename"] == "ZeroDivisionError"


def test_long_output_is_cut_with_a_note(mcp):
    r = mcp.call("execute_code", {"code": "print('x' * 100000)"})["result"]
    text = text_of(r)
    assert len(text) < 25000
    assert "not shown" in text


def test_bash_cell(mcp):
    r = mcp.call("execute_code", {"code": "echo $((6 * 7))", "language": "bash"})["result"]
    assert r["isError"] is False and "42" in text_of(r)


def test_render_document_and_read_back(mcp, host):
    spec = {"sheets": [{"name": "Sales", "rows": [["Region", "Sales"], ["North", 10.25],
                                                     ["South", 32]]}]}
    r = mcp.call("render_document", {"format": "xlsx", "spec": spec,
                                     "filename": "sales"})["result"]
    assert r["isError"] is False
    link = [c for c in r["content"] if c["type"] == "resource_link"][0]
    assert link["name"] == "sales.xlsx"
    assert link["mimeType"].endswith("spreadsheetml.sheet")
    sc = r["structuredContent"]
    assert sc["uri"] == link["uri"] and sc["bytes"] > 0 and len(sc["sha256"]) == 64
    blob = mcp.request("resources/read", {"uri": link["uri"]})["result"]["contents"][0]
    data = base64.b64decode(blob["blob"])
    assert data == (host / "out" / "sales.xlsx").read_bytes()
    if not SANITIZED:
        import openpyxl
        wb = openpyxl.load_workbook(io.BytesIO(data))
        assert [[c.value for c in row] for row in wb["Sales"].iter_rows()] == \
            [["Region", "Sales"], ["North", 10.25], ["South", 32]]
    # a second render of the same name never overwrites the first
    r2 = mcp.call("render_document", {"format": "xlsx", "spec": spec,
                                      "filename": "sales.xlsx"})["result"]
    assert r2["structuredContent"]["filename"] == "sales-2.xlsx"
    listed = mcp.request("resources/list")["result"]["resources"]
    assert {link["uri"], r2["structuredContent"]["uri"]} <= {x["uri"] for x in listed}
    templates = mcp.request("resources/templates/list")["result"]["resourceTemplates"]
    assert templates[0]["uriTemplate"] == "kiln://files/{id}"


def test_bad_spec_lists_every_pointer(mcp):
    r = mcp.call("render_document", {"format": "docx", "spec": {
        "title": 5, "content": [{"type": "nope"}]}})["result"]
    assert r["isError"] is True
    pointers = [e["pointer"] for e in r["structuredContent"]["errors"]]
    assert "/title" in pointers and any(p.startswith("/content") for p in pointers)
    for p in pointers:
        assert p in text_of(r)


def test_bad_arguments_are_tool_errors(mcp):
    r = mcp.call("execute_code", {"cod": "1"})["result"]
    assert r["isError"] is True and "/cod" in text_of(r)
    r = mcp.call("execute_code", {"code": "1", "language": "ruby"})["result"]
    assert r["isError"] is True and "/language" in text_of(r)
    r = mcp.call("render_document", {"format": "odt", "spec": {}})["result"]
    assert r["isError"] is True and "/format" in text_of(r)
    r = mcp.call("execute_code", {"code": "1", "session_id": "nosuchsession"})["result"]
    assert r["isError"] is True
    # an unknown tool is a JSON-RPC error
    e = mcp.call("no_such_tool", {})["error"]
    assert e["code"] == -32602
    e = mcp.request("no/such/method")["error"]
    assert e["code"] == -32601
    e = mcp.request("resources/read", {"uri": "kiln://files/0123"})["error"]
    assert e["code"] == -32002


def test_load_file_allowed_and_refused(mcp, host):
    allowed = host / "allowed"
    r = mcp.call("load_file", {"path": str(allowed / "data.csv")})["result"]
    assert r["isError"] is False and r["structuredContent"]["bytes"] == 31
    r = mcp.call("execute_code", {"code": "print(open('/mnt/data/data.csv').read())"})["result"]
    assert "south,32" in text_of(r)
    r = mcp.call("load_file", {"path": "sub/inner.txt", "name": "inner2.txt"})["result"]
    assert r["isError"] is False, text_of(r)
    r = mcp.call("load_file", {"path": str(allowed / "link_inside.csv")})["result"]
    assert r["isError"] is False, text_of(r)
    files = mcp.call("list_files", {})["result"]["structuredContent"]["files"]
    assert {"data.csv", "inner2.txt", "link_inside.csv"} <= {f["name"] for f in files}
    for bad in [str(allowed / "link_out.txt"), str(allowed / "abs_link"),
                str(allowed / "abs_inside.csv"),
                str(allowed / ".." / "secret.txt"), str(host / "secret.txt"), "/etc/passwd",
                "../secret.txt", str(allowed / "fifo"), str(allowed / "sub")]:
        r = mcp.call("load_file", {"path": bad})["result"]
        assert r["isError"] is True, bad
        assert r["structuredContent"]["errors"][0]["pointer"] == "/path"
    r = mcp.call("execute_code", {"code": "import os; print(sorted(os.listdir('/mnt/data')))"})
    assert "secret" not in text_of(r["result"])


def test_cancellation_interrupts_the_running_cell(mcp):
    mcp.next_id += 1
    rid = mcp.next_id
    mcp.send({"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": {
        "name": "execute_code",
        "arguments": {"code": "import time\nfor i in range(600): time.sleep(0.1)\ndone = 1"}}})
    time.sleep(1.5)
    mcp.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": rid, "reason": "test"}})
    t = time.time()
    r = mcp.call("execute_code", {"code": "'done' in dir()"})
    assert "False" in text_of(r["result"])
    assert time.time() - t < 30
    # the cancelled request got no reply, and never will
    time.sleep(0.5)
    while not mcp.q.empty():
        assert mcp.q.get().get("id") != rid


def test_logging(mcp):
    assert mcp.request("logging/setLevel", {"level": "info"})["result"] == {}
    notes = []
    mcp.call("execute_code", {"code": "1/0"}, notes=notes)
    logs = [n for n in notes if n["method"] == "notifications/message"]
    assert logs and logs[0]["params"]["level"] == "warning"
    assert mcp.request("logging/setLevel", {"level": "loud"})["error"]["code"] == -32602
    mcp.request("logging/setLevel", {"level": "emergency"})


def test_lifecycle_and_malformed_lines(host):
    m = Mcp("--out", str(host / "out2"))
    # before initialize: only ping
    assert m.request("tools/list")["error"]["code"] == -32600
    assert m.request("ping")["result"] == {}
    # an unknown version gets the server's latest legacy one
    assert m.initialize("2024-11-05")["result"]["protocolVersion"] == "2025-11-25"
    assert m.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "x", "version": "1"}})["error"]
    m.p.stdin.write(b"{not json\n[1, 2]\n{\"jsonrpc\": \"1.0\", \"id\": 5, \"method\": \"x\"}\n")
    m.p.stdin.flush()
    codes = [m.q.get(timeout=30)["error"]["code"] for _ in range(3)]
    assert codes == [-32700, -32600, -32600]
    # load_file without --allow-read reads nothing
    r = m.call("load_file", {"path": "/etc/hostname"})["result"]
    assert r["isError"] is True and "--allow-read" in text_of(r)
    assert m.close() == 0


def test_legacy_2025_06_18(host):
    m = Mcp("--out", str(host / "out3"))
    assert m.initialize("2025-06-18")["result"]["protocolVersion"] == "2025-06-18"
    r = m.call("execute_code", {"code": "y = 6 * 7"})["result"]
    r = m.call("execute_code", {"code": "y"})["result"]
    assert "42" in text_of(r)
    assert m.close() == 0


def test_modern_revision_is_stateless(host):
    m = Mcp("--out", str(host / "out4"))
    d = m.request("server/discover", {"_meta": META})["result"]
    assert d["supportedVersions"][0] == MODERN and "2025-06-18" in d["supportedVersions"]
    assert d["resultType"] == "complete" and "tools" in d["capabilities"]
    # no initialize: each request names its version
    tl = m.request("tools/list", {"_meta": META})["result"]
    assert tl["resultType"] == "complete" and tl["ttlMs"] > 0 and tl["cacheScope"] == "public"
    assert tl["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "kiln"
    r1 = m.call("execute_code", {"code": "z = 5"}, meta=META)["result"]
    sid = r1["structuredContent"]["session_id"]
    r2 = m.call("execute_code", {"code": "z + 1", "session_id": sid}, meta=META)["result"]
    assert "6" in text_of(r2)
    # without session_id a modern call gets a session of its own
    r3 = m.call("execute_code", {"code": "'z' in dir()"}, meta=META)["result"]
    assert r3["structuredContent"]["session_id"] != sid and "False" in text_of(r3)
    e = m.request("tools/list", {"_meta": {**META, "io.modelcontextprotocol/protocolVersion":
                                           "2099-01-01"}})["error"]
    assert e["code"] == -32022 and e["data"]["requested"] == "2099-01-01"
    assert MODERN in e["data"]["supported"]
    e = m.request("tools/list", {"_meta": {"io.modelcontextprotocol/protocolVersion":
                                           MODERN}})["error"]
    assert e["code"] == -32602
    # modern has no ping or logging/setLevel; resource not found is -32602
    assert m.request("ping", {"_meta": META})["error"]["code"] == -32601
    e = m.request("resources/read", {"uri": "kiln://files/none", "_meta": META})["error"]
    assert e["code"] == -32602
    # a log level in _meta asks for this request's log messages
    notes = []
    m.call("execute_code", {"code": "1/0", "session_id": sid},
           meta={**META, "io.modelcontextprotocol/logLevel": "debug"}, notes=notes)
    assert any(n["method"] == "notifications/message" for n in notes)
    assert m.close() == 0


def test_end_of_input_closes_sessions(host):
    m = Mcp("--out", str(host / "out5"))
    m.initialize()
    r = m.call("execute_code", {"code": "import os; print(os.getpid())"})["result"]
    assert r["isError"] is False
    children = subprocess.run(["pgrep", "-P", str(m.p.pid)], capture_output=True, text=True)
    pids = [int(x) for x in children.stdout.split()]
    assert pids, "kiln mcp has no kiln session child"
    assert m.close() == 0
    for pid in pids:  # reaped by kiln mcp, so gone from /proc
        assert not os.path.exists("/proc/%d" % pid), pid


def test_traceback_shown_after_long_output(mcp):
    r = mcp.call("execute_code", {"code": "print('y' * 50000)\nraise KeyError('the-missing-key')"})
    text = text_of(r["result"])
    assert r["result"]["isError"] is True
    assert "KeyError: 'the-missing-key'" in text
    assert "not shown" in text and len(text) < 21000


def test_cancelling_a_queued_call_leaves_the_running_cell_alone(mcp):
    """Two calls on one session: the first runs, the second waits behind it. Cancelling
    the second must not interrupt the first (the session's interrupt stops whichever
    cell runs); the second is interrupted as soon as it starts."""
    mcp.next_id += 2
    first, second = mcp.next_id - 1, mcp.next_id
    mcp.send({"jsonrpc": "2.0", "id": first, "method": "tools/call", "params": {
        "name": "execute_code", "arguments": {
            "code": "import time\nprint('first', flush=True)\ntime.sleep(3)\nfirst_done = 1"}},
        })
    mcp.send({"jsonrpc": "2.0", "id": second, "method": "tools/call", "params": {
        "name": "execute_code", "arguments": {
            "code": "import time\ntime.sleep(20)\nsecond_ran = 1"}}})
    time.sleep(1)
    mcp.send({"jsonrpc": "2.0", "method": "notifications/cancelled",
              "params": {"requestId": second}})
    r = mcp.wait(first)["result"]
    assert r["isError"] is False and r["structuredContent"]["status"] == "ok", text_of(r)
    check = mcp.call("execute_code", {"code": "print('first_done' in dir(), 'second_ran' in dir())"})
    assert "True False" in text_of(check["result"])


def test_modern_sessions_that_ended_do_not_count(host):
    """Under 2026-07-28 each call without session_id opens a session; one that ends by
    itself (here its interpreter exits) stops counting against --max-sessions."""
    m = Mcp("--out", str(host / "out7"), "--max-sessions", "2")
    for _ in range(4):
        r = m.call("execute_code", {"code": "import os; os._exit(3)"}, meta=META)["result"]
        assert r["structuredContent"]["status"] == "session_lost", text_of(r)
    r = m.call("execute_code", {"code": "1 + 1"}, meta=META)["result"]
    assert r["isError"] is False, text_of(r)
    # list_files names its session under the modern revision
    r = m.call("list_files", {}, meta=META)["result"]
    assert r["isError"] is True and "/session_id" in text_of(r)
    assert m.close() == 0


def test_docs_command_and_config_snippet(tmp_path):
    """docs/mcp.md's command line, exactly as written (HOME a scratch directory
    holding the data folder it names), ends at the end of its input; its config
    snippet is JSON that names `kiln mcp`."""
    import re
    doc = (REPO / "docs" / "mcp.md").read_text()
    line = re.search(r"```sh\n(kiln mcp [^\n]*)\n```", doc).group(1)
    (tmp_path / "data").mkdir()
    env = dict(os.environ, HOME=str(tmp_path), PATH="%s:%s" % (KILN_BIN.parent, os.environ["PATH"]))
    p = subprocess.run(["bash", "-c", line], stdin=subprocess.DEVNULL, capture_output=True,
                       env=env, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b""
    assert (tmp_path / "kiln-out").is_dir()
    snippet = re.search(r"```json\n(\{\"mcpServers\".*?)\n```", doc, re.S).group(1)
    cfg = json.loads(snippet)["mcpServers"]["kiln"]
    assert cfg["args"][0] == "mcp"


def test_document_saved_by_a_cell_is_a_link(mcp, host):
    r = mcp.call("execute_code", {"code": (
        "import kiln, pandas as pd\n"
        "wb = kiln.Workbook()\nwb.sheet(pd.DataFrame({'n': [1, 2, 3]}), 'Nums')\n"
        "wb.save('nums.xlsx')\n")})["result"]
    assert r["isError"] is False, text_of(r)
    links = [c for c in r["content"] if c["type"] == "resource_link"]
    assert [l["name"] for l in links] == ["nums.xlsx"]
    assert "document nums.xlsx" in text_of(r)
    doc = r["structuredContent"]["documents"][0]
    assert doc["ok"] is True and doc["uri"] == links[0]["uri"]
    data = base64.b64decode(mcp.request("resources/read", {"uri": links[0]["uri"]})
                            ["result"]["contents"][0]["blob"])
    assert zipfile.ZipFile(io.BytesIO(data)).testzip() is None
    assert data == (host / "out" / "nums.xlsx").read_bytes()


def test_requests_sent_behind_initialize_find_it_done(host):
    """A client that does not wait for initialize's reply before its next
    requests (allowed to be refused, but easy to trip over) is served."""
    m = Mcp("--out", str(host / "out6"))
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                         "clientInfo": {"name": "x", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
             {"jsonrpc": "2.0", "id": 3, "method": "resources/templates/list"}]
    m.p.stdin.write("".join(json.dumps(x) + "\n" for x in lines).encode())
    m.p.stdin.flush()
    replies = {}
    while len(replies) < 3:
        msg = m.q.get(timeout=60)
        assert msg is not None
        replies[msg["id"]] = msg
    assert all("result" in replies[i] for i in (1, 2, 3)), replies
    assert m.close() == 0


def test_end_of_input_answers_what_was_begun(host):
    """Requests piped in and the input closed: every one is answered before the end."""
    lines = [{"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "x", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"},
             {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                 "name": "execute_code", "arguments": {"code": "import time\ntime.sleep(1)\n6 * 7"}}}]
    p = subprocess.run([str(KILN_BIN), "mcp", "--out", str(host / "out8")],
                       input="".join(json.dumps(x) + "\n" for x in lines).encode(),
                       capture_output=True, timeout=120)
    assert p.returncode == 0, p.stderr
    replies = {m["id"]: m for m in map(json.loads, p.stdout.decode().splitlines())}
    assert "42" in text_of(replies[2]["result"])


def test_sigterm_interrupts_what_runs(host):
    m = Mcp("--out", str(host / "out9"))
    m.initialize()
    m.next_id += 1
    m.send({"jsonrpc": "2.0", "id": m.next_id, "method": "tools/call", "params": {
        "name": "execute_code", "arguments": {"code": "import time\nprint('in', flush=True)\ntime.sleep(300)"},
        "_meta": {"progressToken": 1}}})
    while True:  # the cell has started when its output comes
        msg = m.q.get(timeout=60)
        if msg.get("method") == "notifications/progress" and "stdout" in msg["params"].get("message", ""):
            break
    m.p.terminate()
    # a 300 s cell: only its interruption lets the server end within the wait
    assert m.p.wait(timeout=60) == 0


def test_a_line_past_the_bound_is_refused_and_skipped(host):
    """A message line over 72 MiB is answered once (-32600) and dropped to its newline;
    the next message is served."""
    m = Mcp("--out", str(host / "out10"))
    m.p.stdin.write(b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"x": "'
                    + b"a" * (73 << 20) + b'"}}\n')
    m.p.stdin.flush()
    err = m.q.get(timeout=120)
    assert err["error"]["code"] == -32600 and "too long" in err["error"]["message"], err
    assert m.request("ping")["result"] == {}
    assert m.close() == 0
