"""Helpers for the end-to-end tests of `kiln serve` (tests/e2e/test_serve_*.py).

    srv = Server(tmp_path / "data", "--ttl", "2").start()
    r = srv.request("POST", "/v1/files?filename=a.csv", body=b"x,y\n1,2\n")
    assert r.status == 201, r
    srv.stop()                       # SIGTERM, asserts exit 0

Every response goes through check_response: X-Request-Id on every reply, JSON replies
with Content-Type application/json, and the body and headers validated against the
OpenAPI document (docs/openapi.json) for (route template, method, status) with
jsonschema's Draft202012Validator. An undocumented status is a failure.

The server's stdout (the access log and the server's events, one JSON line each) is
drained by a thread into Server.lines, so tests can assert on it.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import pytest

from conftest import KILN_BIN, REPO

try:
    import jsonschema
    from jsonschema import Draft202012Validator
except ImportError:  # pragma: no cover - a clear failure, not a skip
    raise RuntimeError("jsonschema is required: apt-get install python3-jsonschema")

OPENAPI_PATH = REPO / "docs" / "openapi.json"
API_KEYS = "alpha:KEY1,beta:KEY2,gamma:KEY3"
KEYS = {"alpha": "KEY1", "beta": "KEY2", "gamma": "KEY3"}
MIB = 1 << 20
DEFAULT_MAX_UPLOAD = 30 * MIB
ID_RE = re.compile(r"^[0-9a-f]{32}$")
REQUEST_ID_RE = re.compile(r"^[0-9a-f]+$")

MEDIA_TYPES = {
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "pdf": "application/pdf",
}


# --------------------------------------------------------------------------- OpenAPI

_openapi = None


def openapi():
    global _openapi
    if _openapi is None:
        if not OPENAPI_PATH.is_file():
            pytest.fail("docs/openapi.json is missing")
        with open(OPENAPI_PATH, encoding="utf-8") as fh:
            _openapi = json.load(fh)
    return _openapi


def _resolver():
    return jsonschema.RefResolver(base_uri="", referrer=openapi())


def deref(obj):
    """Follow a local $ref (#/components/...) of the OpenAPI document."""
    seen = 0
    while isinstance(obj, dict) and "$ref" in obj and len(obj) <= 3:
        ref = obj["$ref"]
        assert ref.startswith("#/"), "only local refs: %s" % ref
        node = openapi()
        for part in ref[2:].split("/"):
            node = node[part.replace("~1", "/").replace("~0", "~")]
        obj = node
        seen += 1
        assert seen < 20, "a $ref loop at %s" % ref
    return obj


def validate_schema(instance, schema, what):
    """Validate instance against an OpenAPI schema (refs resolved in the document)."""
    validator = Draft202012Validator(schema, resolver=_resolver())
    errors = sorted(validator.iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        lines = ["%s: /%s: %s" % (what, "/".join(str(p) for p in e.absolute_path), e.message)
                 for e in errors[:10]]
        pytest.fail("response does not match docs/openapi.json:\n" + "\n".join(lines)
                    + "\nbody: " + json.dumps(instance)[:2000])


def validate_component(instance, name):
    validate_schema(instance, {"$ref": "#/components/schemas/" + name}, name)


def route_of(path):
    """The OpenAPI path template a request path falls in, or None (an unknown route)."""
    path = path.split("?", 1)[0]
    for template in openapi()["paths"]:
        rx = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(rx, path):
            return template
    return None


def _header_ok(name, value, header_obj, what):
    schema = deref(header_obj).get("schema", {})
    inst = value
    if schema.get("type") == "integer":
        assert re.fullmatch(r"[0-9]+", value), "%s: header %s is not an integer: %r" % (what, name, value)
        inst = int(value)
    validate_schema(inst, schema, "%s header %s" % (what, name))


def check_response(resp, method, path):
    """Check resp against the contract and docs/openapi.json (see the module doc)."""
    what = "%s %s -> %d" % (method, path.split("?", 1)[0], resp.status)
    rid = resp.getheader("X-Request-Id")
    assert rid and REQUEST_ID_RE.match(rid), "%s: no X-Request-Id (random hex): %r" % (what, rid)
    ctype = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
    has_body = method != "HEAD" and resp.status not in (204, 304)
    if resp.status in (204, 304):
        assert resp.body == b"", "%s: a body on a %d: %r" % (what, resp.status, resp.body[:200])
    if resp.status >= 400 and method != "HEAD":
        assert ctype == "application/json", "%s: an error not in JSON (Content-Type %r): %r" % (
            what, ctype, resp.body[:300])
    if has_body and ctype == "application/json":
        try:
            resp.json = json.loads(resp.body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            pytest.fail("%s: Content-Type application/json but the body is not JSON (%s): %r"
                        % (what, e, resp.body[:300]))

    template = route_of(path)
    ops = openapi()["paths"].get(template, {}) if template else {}
    op = ops.get(method.lower())
    if op is None:
        # An unknown route (404) or a known route with the wrong method (405): the error shape.
        expected = 405 if template else 404
        assert resp.status in (expected, 401, 503), "%s: expected %d for %s" % (
            what, expected, "a known route with the wrong method" if template else "an unknown route")
        if resp.status == 405:
            assert resp.getheader("Allow"), "%s: 405 without Allow" % what
        if has_body:
            validate_component(resp.json, "Error")
        return resp
    responses = op["responses"]
    spec = responses.get(str(resp.status)) or responses.get("default")
    if spec is None:
        pytest.fail("%s: status %d is not documented for %s %s in docs/openapi.json (documented: %s)\nbody: %r"
                    % (what, resp.status, method, template, sorted(responses), resp.body[:500]))
    spec = deref(spec)
    for name, hobj in (spec.get("headers") or {}).items():
        hobj = deref(hobj)
        value = resp.getheader(name)
        if value is None:
            if hobj.get("required"):
                pytest.fail("%s: header %s missing (required by docs/openapi.json)" % (what, name))
            continue
        _header_ok(name, value, hobj, what)
    content = spec.get("content") or {}
    if has_body:
        if ctype != "application/json" and ctype in content:
            pass      # another documented type (an event stream): checked by the tests
        elif "application/json" in content:
            assert ctype == "application/json", "%s: Content-Type %r, documented application/json" % (what, ctype)
            validate_schema(resp.json, content["application/json"].get("schema", {}), what)
        elif content:
            pass      # binary or text bodies: checked by the tests themselves
        else:
            assert resp.body == b"", "%s: a body where none is documented: %r" % (what, resp.body[:200])
    return resp


# --------------------------------------------------------------------------- responses

class Resp:
    def __init__(self, status, reason, headers, body):
        self.status, self.reason, self.headers, self.body = status, reason, headers, body
        self.json = None

    def getheader(self, name, default=None):
        v = self.headers.get_all(name) if hasattr(self.headers, "get_all") else None
        if not v:
            return default
        return ", ".join(v) if len(v) > 1 and name.lower() not in ("set-cookie",) else v[0]

    def header_count(self, name):
        return len(self.headers.get_all(name) or [])

    @property
    def error_code(self):
        return (self.json or {}).get("error", {}).get("code")

    def __repr__(self):
        return "<%d %s %s: %r>" % (self.status, self.reason, dict(self.headers.items()),
                                   self.body[:600])


def request_on(conn, method, path, body=None, headers=None, key=None, check=True,
               chunked=False):
    """One request on an http.client connection; returns a checked Resp."""
    h = dict(headers or {})
    if key is not None:
        h["Authorization"] = "Bearer " + key
    if isinstance(body, (dict, list)):
        body = json.dumps(body).encode("utf-8")
        h.setdefault("Content-Type", "application/json")
    elif isinstance(body, str):
        body = body.encode("utf-8")
    conn.putrequest(method, path, skip_accept_encoding=True)
    for k, v in h.items():
        conn.putheader(k, v)
    if chunked:
        conn.putheader("Transfer-Encoding", "chunked")
    elif body is not None or method in ("POST", "PUT", "PATCH"):
        conn.putheader("Content-Length", str(len(body or b"")))
    conn.endheaders()
    step = 64 * 1024
    try:
        for i in range(0, len(body or b""), step):
            piece = body[i:i + step]
            conn.send(b"%x\r\n%s\r\n" % (len(piece), piece) if chunked else piece)
        if chunked:
            conn.send(b"0\r\n\r\n")
    except (BrokenPipeError, ConnectionResetError):
        pass          # the server answered early (413) and closed: read its reply
    r = conn.getresponse()
    data = r.read()
    resp = Resp(r.status, r.reason, r.msg, data)
    if check:
        check_response(resp, method, path)
    return resp


def multipart(fields, boundary="kilnTestBoundary7MA4YWxkTrZu0gW"):
    """fields: [(name, filename or None, content type or None, bytes)] -> (body, content type)."""
    out = []
    for name, filename, ctype, data in fields:
        disp = 'form-data; name="%s"' % name
        if filename is not None:
            disp += '; filename="%s"' % filename
        out.append(b"--" + boundary.encode() + b"\r\n")
        out.append(("Content-Disposition: %s\r\n" % disp).encode("utf-8"))
        if ctype:
            out.append(("Content-Type: %s\r\n" % ctype).encode())
        out.append(b"\r\n" + data + b"\r\n")
    out.append(b"--" + boundary.encode() + b"--\r\n")
    return b"".join(out), "multipart/form-data; boundary=" + boundary


# --------------------------------------------------------------------------- the server

class Server:
    """A `kiln serve` child on a loopback port with its own data directory."""

    def __init__(self, data_dir, *args, keys=API_KEYS, env=None, exe=None, wrap=()):
        """exe: the kiln binary (default KILN_BIN); wrap: a command it is run under
        (["setpriv", "--reuid=65534", ...]): it must exec kiln, so the pid stays the server's."""
        self.data_dir = Path(data_dir)
        self.args = [str(a) for a in args]
        self.exe = Path(exe) if exe else KILN_BIN
        self.wrap = [str(w) for w in wrap]
        self.keys = keys
        self.extra_env = env or {}
        self.proc = None
        self.port = None
        self.lines = []               # every stdout line, in order
        self.first_line = None
        self._cv = threading.Condition()
        self._reader = None
        self.stderr_path = None
        self.returncode = None

    # -- life
    def start(self, timeout=30):
        if not (self.exe.is_file() and os.access(self.exe, os.X_OK)):
            pytest.fail("kiln binary not found at %s (build it with `make`, or set KILN_BIN)" % self.exe)
        self.data_dir.mkdir(parents=True, exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
        # Sessions start a zygote and a pool at once: only the servers that
        # test them (test_service_sessions.py) pay for that.
        if "--sessions" not in self.args and "KILN_SESSIONS" not in self.extra_env:
            env["KILN_SESSIONS"] = "off"
        if self.keys is not None:
            env["KILN_API_KEYS"] = self.keys
        env.update(self.extra_env)
        self.stderr_path = self.data_dir.parent / ("%s.stderr" % self.data_dir.name)
        self._stderr = open(self.stderr_path, "ab")
        self.lines, self.first_line, self.port = [], None, None
        self.proc = subprocess.Popen(
            self.wrap + [str(self.exe), "serve", "--listen", "127.0.0.1:0", "--data-dir", str(self.data_dir)]
            + self.args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=self._stderr,
            env=env)
        self._reader = threading.Thread(target=self._drain, args=(self.proc.stdout,), daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        with self._cv:
            while self.port is None:
                if self.proc.poll() is not None and not self._reader.is_alive():
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._cv.wait(min(left, 0.2))
        if self.port is None:
            self.kill()
            pytest.fail("kiln serve did not print {\"event\": \"listening\", \"port\": N} within %ss "
                        "(exit %s)\nstdout:\n%s\nstderr:\n%s" % (
                            timeout, self.proc.returncode, "\n".join(self.lines[:20]), self.stderr()[-3000:]))
        return self

    def _drain(self, stream):
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", "replace").rstrip("\n")
            with self._cv:
                if self.first_line is None:
                    self.first_line = line
                self.lines.append(line)
                if self.port is None:
                    try:
                        ev = json.loads(line)
                    except ValueError:
                        ev = None
                    if isinstance(ev, dict) and ev.get("event") == "listening" and \
                            isinstance(ev.get("port"), int):
                        self.port = ev["port"]
                self._cv.notify_all()
        stream.close()

    def stderr(self):
        try:
            return Path(self.stderr_path).read_text("utf-8", "replace")
        except OSError:
            return ""

    def signal(self, sig):
        self.proc.send_signal(sig)

    def wait(self, timeout=60):
        try:
            self.returncode = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            pytest.fail("kiln serve did not exit within %ss\nstderr:\n%s" % (timeout, self.stderr()[-3000:]))
        if self._reader:
            self._reader.join(10)
        self._stderr.close()
        return self.returncode

    def stop(self, timeout=60, expect=0):
        """SIGTERM; assert the exit status (0 by default)."""
        if self.proc is None or self.proc.poll() is not None:
            rc = self.proc.returncode if self.proc else None
        else:
            self.proc.send_signal(signal.SIGTERM)
            rc = self.wait(timeout)
        if expect is not None:
            assert rc == expect, "kiln serve exited %s after SIGTERM (expected %s)\nstderr:\n%s" % (
                rc, expect, self.stderr()[-3000:])
        return rc

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
        if self._reader:
            self._reader.join(10)
        try:
            self._stderr.close()
        except Exception:
            pass

    # -- requests
    @property
    def host(self):
        return "127.0.0.1:%d" % self.port

    def conn(self, timeout=60):
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)

    def request(self, method, path, body=None, headers=None, key="KEY1", check=True,
                chunked=False, timeout=60):
        """One request on a fresh connection (key=None: no Authorization header)."""
        c = self.conn(timeout)
        try:
            return request_on(c, method, path, body=body, headers=headers, key=key, check=check,
                              chunked=chunked)
        finally:
            c.close()

    def upload(self, name, data, media_type=None, key="KEY1", expect=201):
        """Raw upload with ?filename=; returns the file object (asserting the status)."""
        from urllib.parse import quote
        h = {"Content-Type": media_type} if media_type else {}
        r = self.request("POST", "/v1/files?filename=" + quote(name), body=data, headers=h, key=key)
        assert r.status == expect, r
        return r.json

    def download(self, file_id, key="KEY1", headers=None):
        r = self.request("GET", "/v1/files/%s/content" % file_id, key=key, headers=headers)
        assert r.status == 200, r
        return r.body

    def log(self, wait_for=None, timeout=5):
        """The JSON lines of stdout; with wait_for (a request id), wait until its line is there."""
        deadline = time.monotonic() + timeout
        while True:
            with self._cv:
                lines = list(self.lines)
            out = []
            for line in lines:
                try:
                    out.append(json.loads(line))
                except ValueError:
                    out.append({"_unparsed": line})
            if wait_for is None or any(isinstance(e, dict) and e.get("request_id") == wait_for
                                       for e in out):
                return out
            if time.monotonic() > deadline:
                return out
            time.sleep(0.05)

    def log_until(self, match, count=1, timeout=10):
        """The log entries match(entry) accepts, once there are count of them (or the timeout):
        the server writes an event before the reply that follows it, but the reader thread
        may take the line off the pipe after the reply arrived."""
        deadline = time.monotonic() + timeout
        while True:
            found = [e for e in self.log() if isinstance(e, dict) and match(e)]
            if len(found) >= count or time.monotonic() > deadline:
                return found
            time.sleep(0.05)

    def access_entry(self, resp, timeout=5):
        rid = resp.getheader("X-Request-Id")
        entries = [e for e in self.log(wait_for=rid, timeout=timeout) if e.get("request_id") == rid]
        assert len(entries) == 1, "expected one access-log line for request %s, found %d" % (rid, len(entries))
        return entries[0]

    def metrics(self):
        r = self.request("GET", "/metrics", key=None)
        assert r.status == 200, r
        return r.body.decode("utf-8")


def raw_exchange(port, data, timeout=10, shutdown=True):
    """Send raw bytes, read until the server closes (or timeout); returns the bytes read."""
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    try:
        s.sendall(data)
        if shutdown:
            s.shutdown(socket.SHUT_WR)
        chunks = []
        while True:
            try:
                b = s.recv(65536)
            except socket.timeout:
                break
            if not b:
                break
            chunks.append(b)
        return b"".join(chunks)
    finally:
        s.close()


def rst_close(sock):
    """Close a socket with a TCP RST (SO_LINGER 0): an abrupt disconnect."""
    import struct
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass
    sock.close()


def content_files(data_dir):
    """Names in DATA/content (bodies and any temporary files)."""
    d = Path(data_dir) / "content"
    return sorted(os.listdir(d)) if d.is_dir() else []


def snapshot(directory):
    """Every path below directory with its size and modification time (ns): equal
    snapshots mean nothing there was written, made or removed."""
    out = {}
    for base, dirs, files in os.walk(directory):
        for name in dirs + files:
            p = os.path.join(base, name)
            st = os.lstat(p)
            out[os.path.relpath(p, directory)] = (st.st_size, st.st_mtime_ns)
    return out


def need_root():
    if os.geteuid() != 0:
        pytest.skip("runs need root (kiln run makes namespaces and cgroups); CI runs as root")


@pytest.fixture(scope="module")
def serve_factory(tmp_path_factory):
    """start(*args, name=..., keys=..., env=..., data_dir=..., exe=..., wrap=...) -> a started
    Server (see Server for exe and wrap); every server still running at the
    end of the module is stopped with SIGTERM and must exit 0."""
    servers = []

    def start(*args, name="data", keys=API_KEYS, env=None, data_dir=None, exe=None, wrap=()):
        d = Path(data_dir) if data_dir else tmp_path_factory.mktemp("serve") / name
        s = Server(d, *args, keys=keys, env=env, exe=exe, wrap=wrap).start()
        servers.append(s)
        return s

    yield start
    problems = []
    for s in servers:
        if s.proc and s.proc.poll() is None:
            s.proc.send_signal(signal.SIGTERM)
            try:
                rc = s.proc.wait(60)
            except subprocess.TimeoutExpired:
                s.kill()
                rc = "timeout"
            if rc != 0:
                problems.append("%s: exit %s after SIGTERM\n%s" % (s.data_dir, rc, s.stderr()[-2000:]))
        s.kill()
    assert not problems, "\n".join(problems)


@pytest.fixture(scope="module")
def server(serve_factory):
    """One server per module, default settings."""
    return serve_factory()
