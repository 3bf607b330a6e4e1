"""Kiln's MCP server driven by real clients nobody here wrote (issue 18 item 5): the
official TypeScript SDK's Client (tests/mcp/sdk_client.mjs) on `kiln mcp` over stdio and on
`kiln serve`'s /mcp over Streamable HTTP, in the oldest and the newest revision both speak
(the SDK opens with its newest, LATEST_PROTOCOL_VERSION; the driver rewrites its initialize
for the oldest); and the MCP Inspector CLI listing and calling tools on both.

Each (transport, revision) is one client connection (one driver run, made once and shared
by the tests that read its results): tools/list, two execute_code calls sharing x, a figure
as image content, render_document's resource_link read back as an .xlsx (ooxml-check and
openpyxl here), a bad spec's pointers, bad arguments reaching the client as isError results
(the SDK checks every structuredContent against the tool's outputSchema), a cancelled long
cell, load_file (stdio) and another tenant (HTTP). The file is an xdist group of its own
(conftest.py: every file not in SANDBOX_FILES is), so the runs, the one `kiln serve` and
its sessions are made once, in one worker. The npm packages come from `make deps`
(tests/mcp/package-lock.json); a missing one fails saying so. Under ASan only the stdio
smoke runs (the C under the sanitizers once; Node and the Python readers are the plain
build's to check).
"""
import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import KILN_BIN, REPO, SANITIZED, assert_ooxml_ok, external_reader, run_kiln
from serve_helpers import KEYS, need_root, serve_factory  # noqa: F401

NODE_DIR = REPO / "tests" / "mcp"
DRIVER = NODE_DIR / "sdk_client.mjs"
INSPECTOR = NODE_DIR / "node_modules" / ".bin" / "mcp-inspector-cli"
# The revisions Kiln's legacy lifecycle speaks that the SDK (1.x) speaks too: 2025-06-18
# (the first with structuredContent and resource_link) and 2025-11-25, the SDK's newest.
# The SDK has no 2026-07-28: that revision is tested with raw requests elsewhere.
OLDEST, NEWEST = "2025-06-18", "2025-11-25"
KILN_SPEAKS = {OLDEST, NEWEST}
# Revisions the SDK knows and Kiln does not: Kiln answers with one it speaks.
OLDER = ["2025-03-26", "2024-11-05"]

XLSX_SPEC = {"sheets": [{"name": "Sales",
                         "columns": [{"header": "Region"}, {"header": "Revenue", "type": "currency"}],
                         "rows": [["North", 1200.5], ["South", 980],
                                  ["Total", {"formula": "=SUM(B2:B3)", "value": 2180.5}]]}]}
BAD_SPEC = {"version": 1, "sheets": [{"name": "A/B", "columns": [{"header": "x", "type": "bogus"}],
                                      "rows": [[1, 2, 3]]}, {"name": "", "rows": "nope"}]}
LOAD_MARKER = "kiln-load-file-marker"
SCENARIOS_STDIO = ["tools", "state", "figure", "render", "bad_spec", "tool_errors", "cancel",
                   "load_file"]
SCENARIOS_HTTP = ["tools", "state", "figure", "render", "bad_spec", "tool_errors", "cancel", "tenant",
                  "negotiate"]
# Under ASan: the C of every tool once, none of the Python-side readers.
SCENARIOS_SMOKE = ["tools", "state", "render", "bad_spec", "cancel", "load_file"]


@pytest.fixture(autouse=True)
def _root():
    need_root()


def node_ready():
    """Node.js and the npm packages of tests/mcp, or a failure saying what to install."""
    if not shutil.which("node"):
        pytest.fail("node is not installed: the MCP client tests need Node.js >= 20 and npm")
    for pkg in ("@modelcontextprotocol/sdk", "@modelcontextprotocol/inspector-cli"):
        if not (NODE_DIR / "node_modules" / pkg / "package.json").is_file():
            pytest.fail("%s is not installed in tests/mcp/node_modules: run `make deps` "
                        "(npm ci --prefix tests/mcp)" % pkg)


def full_only():
    if SANITIZED:
        pytest.skip("under ASan only the stdio smoke runs; the plain build's run has the rest")


# --------------------------------------------------------------------------- the runs


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The directories the stdio server is given, and the files load_file is tried on."""
    d = tmp_path_factory.mktemp("mcp-clients")
    allowed, secret = d / "allowed", d / "secret"
    allowed.mkdir()
    secret.mkdir()
    (allowed / "data.csv").write_text("a,b\n%s,2\n" % LOAD_MARKER)
    (secret / "key.txt").write_text("not for the model\n")
    # a link inside the allowed directory to a file outside it: load_file does not follow it
    os.symlink(secret / "key.txt", allowed / "link.txt")
    return {"root": d, "out": d / "out", "allowed": allowed, "secret": secret,
            "drivers": d / "drivers"}


def drive(cfg, timeout=300):
    """Run the SDK driver; returns its JSON result (asserting it ran)."""
    node_ready()
    proc = subprocess.run(["node", str(DRIVER), json.dumps(cfg)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, cwd=str(NODE_DIR))
    try:
        res = json.loads(proc.stdout.decode("utf-8").strip().splitlines()[-1])
    except (ValueError, IndexError):
        pytest.fail("the SDK driver printed no result (exit %d)\nstdout:\n%s\nstderr:\n%s" % (
            proc.returncode, proc.stdout[-3000:].decode("utf-8", "replace"),
            proc.stderr[-3000:].decode("utf-8", "replace")))
    res["_exit"] = proc.returncode
    res["_stderr"] = proc.stderr.decode("utf-8", "replace")[-4000:]
    return res


def base_cfg(files, version, scenarios):
    return {"version": version, "scenarios": scenarios, "out": str(files["drivers"]),
            "render_spec": XLSX_SPEC, "bad_spec": BAD_SPEC, "cancel_wait_ms": 3000}


_runs = {}


def stdio_run(files, version, scenarios):
    key = ("stdio", version, tuple(scenarios))
    if key not in _runs:
        cfg = base_cfg(files, version, scenarios)
        cfg.update(transport="stdio", command=str(KILN_BIN),
                   args=["mcp", "--out", str(files["out"] / version), "--allow-read", str(files["allowed"])],
                   load_path=str(files["allowed"] / "data.csv"), load_marker=LOAD_MARKER,
                   denied_path=str(files["allowed"] / "link.txt"))
        (files["out"] / version).mkdir(parents=True, exist_ok=True)
        _runs[key] = drive(cfg)
    return _runs[key]


@pytest.fixture(scope="module")
def srv(serve_factory):
    return serve_factory("--sessions", "on", "--session-pool", "2", name="mcp")


def http_run(srv, files, version):
    key = ("http", version)
    if key not in _runs:
        cfg = base_cfg(files, version, SCENARIOS_HTTP)
        cfg.update(transport="http", url="http://%s/mcp" % srv.host, key=KEYS["alpha"],
                   other_key=KEYS["beta"], offer=OLDER + [OLDEST, NEWEST])
        _runs[key] = drive(cfg)
    return _runs[key]


def scenario(res, name):
    """The scenario's result, failing with what the driver said went wrong."""
    mine = [f for f in res["failures"] if f.startswith(name + ":") or f.startswith("driver:")
            or f.startswith("initialize:")]
    assert not mine, "%s over %s (%s):\n%s\n--- server stderr:\n%s\n--- driver stderr:\n%s" % (
        name, res.get("transport"), res.get("asked"), "\n".join(mine),
        (res.get("server_stderr") or "")[-3000:], res.get("_stderr", "")[-2000:])
    assert name in res["results"], "the driver ran no %r: %r" % (name, res["failures"])
    return res["results"][name]


# --------------------------------------------------------------------------- what the results say


def check_connection(res, version):
    fatal = [f for f in res["failures"] if f.startswith("driver:")]
    assert not fatal, "the SDK client could not run over %s:\n%s\n--- server stderr:\n%s" % (
        res.get("transport"), "\n".join(fatal), (res.get("server_stderr") or "")[-3000:])
    assert res["negotiated"] == version, "asked for %s, the server answered %s" % (version, res["negotiated"])
    caps = res["capabilities"] or {}
    assert "tools" in caps and "resources" in caps, caps
    assert (res["server_info"] or {}).get("name"), res["server_info"]
    # A progress notification already on its way when the client cancels its request
    # reaches a client that has forgotten the token: the race the spec asks both ends to
    # tolerate (the server sends none once it has read the cancellation). The SDK reports
    # it through onerror; anything else it reports fails the test.
    errors = [e for e in res["client_errors"]
              if not e.startswith("Received a progress notification for an unknown token")]
    assert not errors, "the SDK client reported errors: %r" % errors


def check_render(res, files):
    r = scenario(res, "render")
    path = Path(r["xlsx"])
    data = path.read_bytes()
    assert hashlib.sha256(data).hexdigest() == r["structured"]["sha256"], r["structured"]
    assert r["structured"]["filename"] == "mcp.xlsx" and r["link"]["name"], r
    external_reader("openpyxl")
    import openpyxl
    ws = openpyxl.load_workbook(path)["Sales"]
    assert [[c.value for c in row] for row in ws.iter_rows()] == [
        ["Region", "Revenue"], ["North", 1200.5], ["South", 980], ["Total", "=SUM(B2:B3)"]]
    assert_ooxml_ok(path)
    return data


def check_bad_spec(res, tmp_path):
    r = scenario(res, "bad_spec")
    p = tmp_path / "bad.json"
    p.write_text(json.dumps(BAD_SPEC))
    proc = run_kiln("validate", "--json", p)
    expected = json.loads(proc.stdout)["errors"]
    assert sorted((e["pointer"], e["message"]) for e in r["errors"]) == \
        sorted((e["pointer"], e["message"]) for e in expected), r
    assert "/sheets/0/columns/0/type" in [e["pointer"] for e in r["errors"]]


def check_figure(res):
    r = scenario(res, "figure")
    external_reader("Pillow")
    from PIL import Image
    with Image.open(r["png"]) as im:
        im.verify()
        assert im.format == "PNG" and im.size[0] > 100 and im.size[1] > 100, (im.format, im.size)
    assert "figure.png" in r["listed"], r


def check_cancel(res):
    r = scenario(res, "cancel")
    assert r["marker"] == "'running'", r
    assert not r["replied_after_cancel"], "the server answered the cancelled request %r" % r["request_id"]


# =========================================================================== stdio: the SDK


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_stdio_connect_and_tools(files, version):
    full_only()
    res = stdio_run(files, version, SCENARIOS_STDIO)
    check_connection(res, version)
    t = scenario(res, "tools")
    assert t["annotations"]["execute_code"]["readOnlyHint"] is False, t
    assert t["templates"] == ["kiln://files/{id}"], t


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_stdio_state_and_errors(files, version):
    full_only()
    r = scenario(stdio_run(files, version, SCENARIOS_STDIO), "state")
    assert r["execution_counts"] == [1, 2, 3, 4], r


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_stdio_figure(files, version):
    full_only()
    check_figure(stdio_run(files, version, SCENARIOS_STDIO))


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_stdio_render_and_out_dir(files, version):
    """The document read back through resources/read is a valid .xlsx, and `--out DIR` has
    the same bytes."""
    full_only()
    res = stdio_run(files, version, SCENARIOS_STDIO)
    data = check_render(res, files)
    digests = {hashlib.sha256(p.read_bytes()).hexdigest(): p
               for p in (files["out"] / version).rglob("*") if p.is_file()}
    assert hashlib.sha256(data).hexdigest() in digests, \
        "the document is not in --out %s: %r" % (files["out"] / version, sorted(map(str, digests.values())))


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_stdio_bad_spec(files, version, tmp_path):
    full_only()
    check_bad_spec(stdio_run(files, version, SCENARIOS_STDIO), tmp_path)


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_stdio_tool_errors(files, version):
    """Bad arguments and refusals reach the client as isError results, not exceptions: the
    SDK checks an error's structuredContent against the tool's outputSchema too."""
    full_only()
    scenario(stdio_run(files, version, SCENARIOS_STDIO), "tool_errors")


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_stdio_cancel(files, version):
    full_only()
    check_cancel(stdio_run(files, version, SCENARIOS_STDIO))


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_stdio_load_file_and_exit(files, version):
    """load_file reads the allowed directory and not a link out of it; closing stdin ends
    `kiln mcp` with status 0."""
    full_only()
    res = stdio_run(files, version, SCENARIOS_STDIO)
    r = scenario(res, "load_file")
    assert "not for the model" not in r["denied"], r
    assert res["exit"] == {"code": 0, "signal": None}, res["exit"]


def test_sdk_stdio_smoke(files, tmp_path):
    """Under ASan the one pass: connect at the SDK's newest, every tool, a cancellation."""
    # the plain build's run has these in its full run at NEWEST: the same connection
    res = stdio_run(files, NEWEST, SCENARIOS_SMOKE if SANITIZED else SCENARIOS_STDIO)
    check_connection(res, NEWEST)
    for name in SCENARIOS_SMOKE:
        scenario(res, name)
    check_cancel(res)
    check_bad_spec(res, tmp_path)
    assert res["exit"] == {"code": 0, "signal": None}, res["exit"]


def check_negotiation(res):
    """Offered a revision it does not speak, the server answers with one it does (which the
    SDK accepts); offered one it speaks, that one."""
    answers = scenario(res, "negotiate")["answers"]
    assert answers[OLDEST] == OLDEST and answers[NEWEST] == NEWEST, answers
    for v in OLDER:
        assert answers[v] in KILN_SPEAKS, answers


def test_sdk_stdio_negotiation(files):
    full_only()
    cfg = base_cfg(files, None, ["negotiate"])
    cfg.update(transport="stdio", command=str(KILN_BIN), args=["mcp", "--out", str(files["out"] / "negotiate")],
               offer=OLDER + [OLDEST, NEWEST])
    check_negotiation(drive(cfg))


# =========================================================================== HTTP: the SDK


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_http_connect_and_tools(srv, files, version):
    full_only()
    res = http_run(srv, files, version)
    check_connection(res, version)
    assert res["session_id_header"], "no Mcp-Session-Id on the initialize reply"
    scenario(res, "tools")


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_http_state_figure_render(srv, files, version):
    full_only()
    res = http_run(srv, files, version)
    scenario(res, "state")
    check_figure(res)
    check_render(res, files)


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_http_bad_spec(srv, files, version, tmp_path):
    full_only()
    check_bad_spec(http_run(srv, files, version), tmp_path)


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_http_tool_errors(srv, files, version):
    full_only()
    scenario(http_run(srv, files, version), "tool_errors")


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_http_cancel(srv, files, version):
    full_only()
    check_cancel(http_run(srv, files, version))


def test_sdk_http_negotiation(srv, files):
    full_only()
    check_negotiation(http_run(srv, files, NEWEST))


@pytest.mark.parametrize("version", [OLDEST, NEWEST])
def test_sdk_http_other_tenant(srv, files, version):
    """Another API key reads neither the first tenant's kiln:// file nor its session."""
    full_only()
    r = scenario(http_run(srv, files, version), "tenant")
    assert r["read_error"]["code"] in (-32002, -32602), r


# =========================================================================== the Inspector CLI


def inspector(*args, timeout=120):
    """The Inspector CLI (`mcp-inspector-cli --cli TARGET --method ...`); its JSON output."""
    node_ready()
    # It reads its own package.json as "../package.json" from the working directory (or
    # "../../package.json"): from tests/mcp/node_modules, that is tests/mcp's.
    proc = subprocess.run([str(INSPECTOR), "--cli"] + [str(a) for a in args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, cwd=str(NODE_DIR / "node_modules"))
    assert proc.returncode == 0, "the Inspector CLI failed (exit %d):\n%s\n%s" % (
        proc.returncode, proc.stdout.decode("utf-8", "replace")[-3000:],
        proc.stderr.decode("utf-8", "replace")[-3000:])
    try:
        return json.loads(proc.stdout)
    except ValueError:
        pytest.fail("the Inspector CLI printed no JSON:\n" + proc.stdout.decode("utf-8", "replace")[-3000:])


def check_inspector(target, extra=()):
    listed = inspector(*target, "--method", "tools/list", *extra)
    assert sorted(t["name"] for t in listed["tools"]) == [
        "execute_code", "list_files", "load_file", "render_document"], listed
    called = inspector(*target, "--method", "tools/call", "--tool-name", "execute_code", *extra,
                       "--tool-arg", "code=print(6 * 7)")
    assert not called.get("isError") and called["structuredContent"]["status"] == "ok", called
    assert "42" in "".join(c.get("text", "") for c in called["content"]), called


def test_inspector_stdio(files):
    """The server's own options go after its command, before the Inspector's --method."""
    full_only()
    check_inspector([KILN_BIN, "mcp", "--out", files["out"] / "inspector"])


def test_inspector_http(srv):
    full_only()
    check_inspector(["http://%s/mcp" % srv.host, "--transport", "http"],
                    ["--header", "Authorization: Bearer " + KEYS["alpha"]])
