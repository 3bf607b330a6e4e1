"""`kiln serve` under bad clients and crashes (issue 7): slowloris-style slow clients and
abrupt disconnects (mid-upload, mid-download) do not hold up other clients; uploads and
renders cut off by a clean close release their connection and descriptors at once; a
client trickling its headers is closed after --header-timeout and holds at most
--max-connections-per-ip connections; a body sent to a route that takes none is refused
unread; HEAD works wherever GET does; SIGKILL during a slow upload and a restart leave no
half file, no row, no temporary file, and the restart logs what it removed; /metrics parses
as Prometheus text and counts the requests; shutdown answers 503 to what is left.
"""
import hashlib
import http.client
import json
import os
import re
import selectors
import signal
import socket
import threading
import time

import pytest

from conftest import err_text, out_text, run_kiln
from serve_helpers import (MIB, Resp, Server, check_response, content_files, raw_exchange,
                           request_on, rst_close, serve_factory, snapshot)  # noqa: F401 (fixtures)

BIG = bytes((i * 31 + (i >> 10)) & 0xFF for i in range(8 * MIB))


@pytest.fixture(scope="module")
def server(serve_factory):
    """This module's shared server: the bad clients below may leave connections that only
    the connection timeout ends; 10 s bounds the wait at the module's end."""
    return serve_factory("--connection-timeout", "10")


@pytest.fixture(scope="module")
def big(server):
    return server.upload("big.bin", BIG)


def timed_requests(srv, n=20, limit=1.0):
    """n quick requests of several kinds, each must finish within `limit` seconds."""
    worst = 0.0
    for i in range(n):
        t0 = time.monotonic()
        if i % 3 == 0:
            r = srv.request("GET", "/healthz", key=None, timeout=10)
        elif i % 3 == 1:
            r = srv.request("GET", "/v1/files?limit=5", timeout=10)
        else:
            f = srv.upload("quick-%d.txt" % i, b"quick")
            r = srv.request("GET", "/v1/files/" + f["id"], timeout=10)
        worst = max(worst, time.monotonic() - t0)
        assert r.status == 200, r
    assert worst < limit, "a normal request took %.2fs while bad clients were connected" % worst
    return worst


def test_slowloris(server):
    socks = []
    stop = threading.Event()
    try:
        for i in range(50):
            s = socket.create_connection(("127.0.0.1", server.port), timeout=10)
            s.sendall(b"GET /v1/files HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)

        line = b"X-Slow: 1234567890\r\n"

        def drip():                         # one header byte a second on every socket
            n = 0
            while not stop.is_set():
                for s in list(socks):
                    try:
                        s.sendall(line[n % len(line):n % len(line) + 1])
                    except OSError:
                        socks.remove(s)
                n += 1
                stop.wait(1.0)

        t = threading.Thread(target=drip, daemon=True)
        t.start()
        time.sleep(1.5)
        timed_requests(server, n=30)
        time.sleep(2)
        timed_requests(server, n=10)
    finally:
        stop.set()
        for s in socks:
            s.close()


def test_idle_connections_time_out(serve_factory):
    """--connection-timeout: a connection that sends nothing is closed."""
    s = serve_factory("--connection-timeout", "2", name="idle")
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    try:
        sock.sendall(b"GET /healthz HTTP/1.1\r\n")         # and then nothing
        t0 = time.monotonic()
        data = sock.recv(1000)                             # EOF (b"") or a 408, within the timeout
        assert time.monotonic() - t0 < 8, "the idle connection stayed open"
        assert data == b"" or data.startswith(b"HTTP/1.1 408"), data[:200]
    finally:
        sock.close()
    assert s.request("GET", "/healthz", key=None).status == 200


def test_abrupt_disconnect_mid_upload(server):
    before_files = content_files(server.data_dir)
    before_total = server.request("GET", "/v1/files?limit=1").json["total"]
    for i in range(5):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        sock.sendall(b"POST /v1/files?filename=cut.bin HTTP/1.1\r\nHost: x\r\n"
                     b"Authorization: Bearer KEY1\r\nContent-Length: 5000000\r\n\r\n")
        sock.sendall(b"z" * 300_000)
        (rst_close if i % 2 else socket.socket.close)(sock)
    timed_requests(server, n=6)
    time.sleep(0.5)
    assert server.request("GET", "/v1/files?limit=1").json["total"] == before_total + 2   # timed_requests uploads 2
    after = set(content_files(server.data_dir)) - set(before_files)
    assert len(after) == 2, after                     # only the two quick uploads
    assert not [n for n in content_files(server.data_dir) if n.startswith(".tmp-")]


def test_abrupt_disconnect_mid_download(server, big):
    for i in range(5):
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        sock.sendall(("GET /v1/files/%s/content HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY1\r\n\r\n"
                      % big["id"]).encode())
        got = sock.recv(65536)
        assert got.startswith(b"HTTP/1.1 200"), got[:200]
        (rst_close if i % 2 else socket.socket.close)(sock)
    timed_requests(server, n=6)
    assert hashlib.sha256(server.download(big["id"])).hexdigest() == big["sha256"]


def vm_hwm(pid):
    """Peak resident memory of a process, bytes (VmHWM)."""
    with open("/proc/%d/status" % pid) as fh:
        for line in fh:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM in /proc/%d/status" % pid)


def test_bodies_not_buffered(serve_factory):
    """Uploads stream to disk and downloads go out from the file: a 30 MiB upload and three
    downloads of it do not raise the server's peak memory by anything near 30 MiB."""
    s = serve_factory(name="memory")
    warm = s.upload("warm.bin", b"w" * MIB)
    s.download(warm["id"])
    before = vm_hwm(s.proc.pid)
    data = BIG * 3 + BIG[:6 * MIB]                       # 30 MiB
    f = s.upload("thirty.bin", data)
    for _ in range(3):
        assert hashlib.sha256(s.download(f["id"])).hexdigest() == f["sha256"]
    r = s.request("POST", "/v1/files?filename=chunked.bin", body=data, chunked=True)
    assert r.status == 201, r
    grown = vm_hwm(s.proc.pid) - before
    assert grown < 12 * MIB, "the server's peak memory grew by %.1f MiB moving 30 MiB bodies" % (grown / MIB)


def test_slow_reader_does_not_block(server, big):
    """A client that stops reading a download holds a connection, not the server."""
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    try:
        sock.sendall(("GET /v1/files/%s/content HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY1\r\n\r\n"
                      % big["id"]).encode())
        sock.recv(100)
        timed_requests(server, n=9)
    finally:
        sock.close()


def test_sigterm_with_stuck_clients(serve_factory):
    """SIGTERM with no job running ends promptly even with a client that stopped reading a
    download and one that vanished mid-upload (it does not wait out --connection-timeout)."""
    s = serve_factory("--shutdown-grace", "2", name="stuck")
    f = s.upload("big.bin", BIG)
    reader = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    reader.sendall(("GET /v1/files/%s/content HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY1\r\n\r\n"
                    % f["id"]).encode())
    reader.recv(100)
    up = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    up.sendall(b"POST /v1/files?filename=cut.bin HTTP/1.1\r\nHost: x\r\n"
               b"Authorization: Bearer KEY1\r\nContent-Length: 5000000\r\n\r\n" + b"z" * 300_000)
    up.close()
    time.sleep(0.5)
    t0 = time.monotonic()
    s.signal(signal.SIGTERM)
    try:
        rc = s.proc.wait(10)
    except Exception:
        s.kill()
        pytest.fail("kiln serve was still running 10 s after SIGTERM with no job in flight "
                    "(stalled download + vanished upload; --connection-timeout is 30 s)")
    finally:
        reader.close()
    assert rc == 0
    assert time.monotonic() - t0 < 10


def test_sigkill_during_upload_and_restart(tmp_path):
    data_dir = tmp_path / "crash"
    s = Server(data_dir).start()
    try:
        keep = s.upload("keep.txt", b"survives the crash")
        keep2 = s.upload("keep2.bin", BIG[:MIB])
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        sock.sendall(b"POST /v1/files?filename=half.bin HTTP/1.1\r\nHost: x\r\n"
                     b"Authorization: Bearer KEY1\r\nContent-Length: 20000000\r\n\r\n")
        for _ in range(20):                       # 5 MB, slowly
            sock.sendall(b"h" * 250_000)
            time.sleep(0.05)
        time.sleep(0.3)
        s.proc.send_signal(signal.SIGKILL)
        assert s.wait(30) == -signal.SIGKILL
        sock.close()
    finally:
        s.kill()
    s2 = Server(data_dir).start()
    try:
        r = s2.request("GET", "/v1/files?limit=1000")
        assert r.status == 200, r
        assert sorted(f["id"] for f in r.json["files"]) == sorted([keep["id"], keep2["id"]]), r.json
        assert [f["filename"] for f in r.json["files"] if f["filename"] == "half.bin"] == []
        names = content_files(data_dir)
        assert sorted(names) == sorted([keep["id"], keep2["id"]]), names
        assert s2.download(keep["id"]) == b"survives the crash"
        assert hashlib.sha256(s2.download(keep2["id"])).hexdigest() == keep2["sha256"]
    finally:
        s2.stop()


def test_restart_keeps_files_and_links(tmp_path):
    """Files, keys and the link secret survive a clean restart."""
    data_dir = tmp_path / "restart"
    s = Server(data_dir).start()
    try:
        f = s.upload("k.txt", b"kept")
        link = s.request("POST", "/v1/files/%s/link" % f["id"]).json
    finally:
        s.stop()
    s2 = Server(data_dir).start()
    try:
        assert s2.download(f["id"]) == b"kept"
        r = s2.request("GET", link["path"], key=None)
        assert r.status == 200 and r.body == b"kept", r
    finally:
        s2.stop()


PROM_SAMPLE = re.compile(
    r'^(?P<series>[a-zA-Z_:][a-zA-Z0-9_:]*'
    r'(\{([a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")(,[a-zA-Z_][a-zA-Z0-9_]*="(\\.|[^"\\])*")*,?\})?)'
    r' (?P<value>-?[0-9.]+([eE][+-]?[0-9]+)?|NaN|\+Inf|-Inf)( -?[0-9]+)?$')
PROM_COMMENT = re.compile(r'^# (HELP [a-zA-Z_:][a-zA-Z0-9_:]* .*|TYPE [a-zA-Z_:][a-zA-Z0-9_:]* '
                          r'(counter|gauge|histogram|summary|untyped)|.*)$')


def parse_metrics(text):
    samples = {}
    for line in text.splitlines():
        if not line:
            continue
        if line.startswith("#"):
            assert PROM_COMMENT.match(line), "not a Prometheus comment: %r" % line
            continue
        m = PROM_SAMPLE.match(line)
        assert m, "not a Prometheus sample: %r" % line
        assert m.group("series") not in samples, "a series twice: %r" % line
        samples[m.group("series")] = float(m.group("value"))
    return samples


def test_metrics(serve_factory):
    s = serve_factory(name="metrics")
    for _ in range(7):
        assert s.request("GET", "/healthz", key=None).status == 200
    f = s.upload("m.txt", b"metrics")
    for _ in range(3):
        s.download(f["id"])
    for _ in range(2):
        assert s.request("GET", "/v1/nowhere").status == 404
    assert s.request("GET", "/v1/files/" + "0" * 32).status == 404
    want = {'kiln_http_requests_total{method="GET",route="/healthz",status="200"}': 7,
            'kiln_http_requests_total{method="GET",route="/v1/files/{id}/content",status="200"}': 3,
            'kiln_http_requests_total{method="POST",route="/v1/files",status="201"}': 1,
            'kiln_http_requests_total{method="GET",route="other",status="404"}': 2,
            'kiln_http_requests_total{method="GET",route="/v1/files/{id}",status="404"}': 1}
    # a request is counted when its response is done, which may be just after the client
    # has read it: scrape until the counts are in (at most 3 s)
    deadline = time.monotonic() + 3
    while True:
        r = s.request("GET", "/metrics", key=None)
        assert r.status == 200, r
        text = r.body.decode("utf-8")
        m = parse_metrics(text)
        if all(m.get(k) == v for k, v in want.items()) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert r.getheader("Content-Type").startswith("text/plain"), r.getheader("Content-Type")
    assert {k: m.get(k) for k in want} == want, text[:4000]
    assert any(k.startswith("kiln_http_request_duration_seconds_bucket{") and 'route="/healthz"' in k
               and 'le="+Inf"' in k and v == 7 for k, v in m.items()), text[:3000]
    assert any(k.startswith("kiln_http_request_duration_seconds_count{") and 'route="/healthz"' in k
               and v == 7 for k, v in m.items())
    assert any(k.startswith("kiln_http_request_duration_seconds_sum{") for k in m)
    resp_bytes = [v for k, v in m.items() if k.startswith("kiln_http_response_bytes_total")]
    assert resp_bytes and sum(resp_bytes) >= 3 * len(b"metrics")
    assert m["kiln_store_bytes"] == len(b"metrics")
    assert m["kiln_jobs_running"] == 0 and m["kiln_jobs_queued"] == 0
    for name in ("kiln_http_requests_total", "kiln_http_request_duration_seconds", "kiln_store_bytes"):
        assert re.search(r"^# TYPE %s " % name, text, re.M), name
    # the next scrape counts the first one
    # (counted, like any request, once its response is done: scrape until it shows)
    series = 'kiln_http_requests_total{method="GET",route="/metrics",status="200"}'
    deadline = time.monotonic() + 3
    m2 = parse_metrics(s.metrics())
    while series not in m2 and time.monotonic() < deadline:
        time.sleep(0.1)
        m2 = parse_metrics(s.metrics())
    assert m2.get(series, 0) >= 1, sorted(m2)


# --------------------------------------------------------------------------- connections


def fd_count(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def wait_fds_at_most(srv, limit, timeout):
    """The server's open descriptors once they are <= limit, or after timeout."""
    deadline = time.monotonic() + timeout
    n = fd_count(srv.proc.pid)
    while n > limit and time.monotonic() < deadline:
        time.sleep(0.05)
        n = fd_count(srv.proc.pid)
    return n


def test_aborted_bodies_release_connections(serve_factory):
    """Uploads and renders whose client sends half the body and then closes normally (a
    FIN, not a reset) free their connection, the upload's temporary file and its
    descriptors at once, and are logged as client_abort. (libmicrohttpd's epoll loop
    missed such a close and kept all of it for the whole --connection-timeout.)"""
    s = serve_factory(name="aborts")
    assert s.request("GET", "/healthz", key=None).status == 200
    time.sleep(0.3)
    base = fd_count(s.proc.pid)
    before = len(s.lines)
    for i in range(50):
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        if i % 2 == 0:
            sock.sendall(b"POST /v1/files?filename=cut.bin HTTP/1.1\r\nHost: x\r\n"
                         b"Authorization: Bearer KEY1\r\nContent-Length: 1000000\r\n\r\n"
                         + b"z" * 400_000)
        else:
            sock.sendall(b"POST /v1/render HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY1\r\n"
                         b"Content-Type: application/json\r\nContent-Length: 1000000\r\n\r\n"
                         b'{"format": "xlsx", "spec": {"sheets": [' + b" " * 400_000)
        sock.close()
    n = wait_fds_at_most(s, base, 2.0)
    assert n <= base, "%d descriptors open 2 s after 50 aborted requests (%d before)" % (n, base)
    deadline = time.monotonic() + 2
    while True:
        entries = [json.loads(line) for line in s.lines[before:]]
        aborted = [e for e in entries if e.get("route") in ("/v1/files", "/v1/render")]
        if len(aborted) >= 50 or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(aborted) == 50, entries
    assert {e.get("termination") for e in aborted} == {"client_abort"}, aborted[:5]
    assert {e["status"] for e in aborted} == {0}
    assert s.request("GET", "/v1/files?limit=1").json["total"] == 0
    assert content_files(s.data_dir) == []


def test_slowloris_over_the_limit(serve_factory):
    """30 clients trickling their headers from one address against --max-connections 20:
    --max-connections-per-ip 10 keeps them from taking every connection (a client from
    another address is served at once), --header-timeout 2 closes the ones accepted after
    about 2 s, and then a normal client from their address is served too."""
    s = serve_factory("--max-connections", "20", "--max-connections-per-ip", "10",
                      "--header-timeout", "2", name="slowloris")
    before = len(s.lines)
    sel = selectors.DefaultSelector()
    opened = {}
    closed = {}
    t0 = time.monotonic()
    for i in range(30):
        sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
        try:
            sock.sendall(b"GET /v1/files HTTP/1.1\r\nHost: x\r\n")
        except OSError:
            pass
        sock.setblocking(False)
        sel.register(sock, selectors.EVENT_READ)
        opened[sock] = time.monotonic()

    # another address: the per-address limit left it room under --max-connections
    c = http.client.HTTPConnection("127.0.0.1", s.port, timeout=5, source_address=("127.0.0.2", 0))
    try:
        t = time.monotonic()
        r = request_on(c, "GET", "/healthz")
        assert r.status == 200 and time.monotonic() - t < 1.0, r
    finally:
        c.close()

    # the same address: refused until the trickling ones are closed, then served
    served_at = None
    last_drip = 0.0
    line = b"X-Slow: 1234567890\r\n"
    n = 0
    while time.monotonic() - t0 < 6 and (len(closed) < 30 or served_at is None):
        now = time.monotonic()
        if now - last_drip >= 0.5:                   # a header byte every 0.5 s on each
            for sock in opened:
                if sock not in closed:
                    try:
                        sock.send(line[n % len(line):n % len(line) + 1])
                    except OSError:
                        pass
            n += 1
            last_drip = now
        for key, _ in sel.select(timeout=0.05):
            sock = key.fileobj
            try:
                data = sock.recv(4096)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            if not data:
                closed[sock] = time.monotonic() - opened[sock]
                sel.unregister(sock)
        if served_at is None:
            try:
                r = s.request("GET", "/healthz", key=None, timeout=1)
                if r.status == 200:
                    served_at = time.monotonic() - t0
            except (OSError, http.client.HTTPException):
                pass
    for sock in opened:
        sock.close()
    sel.close()
    assert served_at is not None and served_at < 3.5, \
        "a normal client waited %s s for /healthz behind 30 trickling clients" % served_at
    assert len(closed) == 30, "%d of 30 trickling connections still open after 6 s" % (30 - len(closed))
    held = sorted(v for v in closed.values() if v >= 1.0)
    assert 1 <= len(held) <= 10, sorted(closed.values())      # the per-address limit
    assert all(1.8 <= v <= 3.5 for v in held), held           # closed by --header-timeout
    # the server logs a close once libmicrohttpd has finished it, which may be just
    # after the client saw it: wait for the events (at most 5 s)
    deadline = time.monotonic() + 5
    while True:
        events = [json.loads(x) for x in list(s.lines)[before:]]
        timeouts = [e for e in events if e.get("event") == "connection_closed"]
        if len(timeouts) >= len(held) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert len(timeouts) == len(held), events
    assert {e["termination"] for e in timeouts} == {"header_timeout"}
    assert {e["remote"] for e in timeouts} == {"127.0.0.1"}


def test_request_timeout(serve_factory):
    """--request-timeout bounds the time a body takes to arrive, however steadily it
    trickles (each byte keeps --connection-timeout from firing)."""
    s = serve_factory("--request-timeout", "2", name="reqtimeout")
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    t0 = time.monotonic()
    try:
        sock.sendall(b"POST /v1/files?filename=slow.bin HTTP/1.1\r\nHost: x\r\n"
                     b"Authorization: Bearer KEY1\r\nContent-Length: 1000\r\n\r\n")
        sock.settimeout(0.3)
        gone = None
        while time.monotonic() - t0 < 8:
            try:
                sock.send(b"s")
                data = sock.recv(1000)
                if not data:
                    gone = time.monotonic() - t0
                    break
            except socket.timeout:
                continue
            except OSError:
                gone = time.monotonic() - t0
                break
        assert gone is not None and 1.8 <= gone <= 4, gone
    finally:
        sock.close()
    entries = [e for e in s.log() if e.get("route") == "/v1/files"]
    deadline = time.monotonic() + 2
    while not entries and time.monotonic() < deadline:
        time.sleep(0.05)
        entries = [e for e in s.log() if e.get("route") == "/v1/files"]
    assert [e.get("termination") for e in entries] == ["request_timeout"], entries
    assert content_files(s.data_dir) == []


def read_reply(sock, method):
    """One HTTP response from a raw socket, as a Resp."""
    r = http.client.HTTPResponse(sock, method=method)
    r.begin()
    body = r.read()
    return Resp(r.status, r.reason, r.msg, body)


def test_body_on_a_route_without_one(server, big):
    """GET, HEAD, DELETE, /healthz: a Content-Length above 0 or a chunked body is answered
    413 too_large (details.limit 0) from the headers alone, before any of it is sent, and
    the connection is closed rather than read."""
    cases = [("GET", "/v1/files", "Content-Length: 100000000\r\n"),
             ("GET", "/v1/files/" + big["id"], "Content-Length: 5\r\n"),
             ("HEAD", "/v1/files", "Content-Length: 100000000\r\n"),
             ("DELETE", "/v1/files/" + big["id"], "Transfer-Encoding: chunked\r\n"),
             ("GET", "/v1/files/%s/content" % big["id"], "Content-Length: 100000000\r\n"),
             ("GET", "/healthz", "Transfer-Encoding: chunked\r\n")]
    for method, path, header in cases:
        sock = socket.create_connection(("127.0.0.1", server.port), timeout=5)
        try:
            sock.sendall(("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY1\r\n%s\r\n"
                          % (method, path, header)).encode())
            r = read_reply(sock, method)              # no byte of the body was sent
            check_response(r, method, path)
            assert r.status == 413, (method, path, r)
            if method != "HEAD":
                assert r.error_code == "too_large" and r.json["error"]["details"]["limit"] == 0, r
            # the server reads none of it: the connection ends instead (a send or
            # receive that merely times out means it was kept open: a failure)
            ended = False
            try:
                for _ in range(64):
                    sock.sendall(b"x" * 65536)
                    time.sleep(0.01)
            except socket.timeout:
                raise AssertionError("the connection was kept open: %s %s" % (method, path))
            except (BrokenPipeError, ConnectionResetError):
                ended = True
            if not ended:
                try:
                    ended = sock.recv(1) == b""
                except socket.timeout:
                    raise AssertionError("the connection was kept open: %s %s" % (method, path))
                except ConnectionResetError:
                    ended = True
            assert ended, (method, path)
        finally:
            sock.close()
    assert server.request("GET", "/v1/files/" + big["id"]).status == 200   # not deleted


def test_head_on_files(server, big):
    """HEAD /v1/files and /v1/files/{id} (RFC 9110 9.1: wherever GET is): GET's status and
    headers, no body."""
    for path in ("/v1/files?limit=1", "/v1/files/" + big["id"], "/v1/files/" + "0" * 32):
        get = server.request("GET", path)
        head = server.request("HEAD", path)
        assert head.status == get.status, (path, head, get)
        assert head.body == b""
        assert head.getheader("Content-Type") == get.getheader("Content-Type")
        if get.status == 200:
            assert int(head.getheader("Content-Length")) == len(get.body), (path, head)
        raw = raw_exchange(server.port, ("HEAD %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer KEY1\r\n"
                                         "Connection: close\r\n\r\n" % path).encode())
        assert raw.endswith(b"\r\n\r\n"), raw[-200:]                    # nothing after the headers
        assert raw.startswith(b"HTTP/1.1 %d" % get.status), raw[:100]
    r = server.request("PUT", "/v1/files/" + big["id"], body=b"")
    assert r.status == 405 and {m.strip() for m in r.getheader("Allow").split(",")} == {"GET", "HEAD", "DELETE"}
    assert r.getheader("Cache-Control") == "no-store", r
    r = server.request("DELETE", "/v1/files")
    assert r.status == 405 and {m.strip() for m in r.getheader("Allow").split(",")} == {"GET", "HEAD", "POST"}


def test_recovery_is_logged(tmp_path):
    """What the start removes after a crash (a body without a row, a temporary file) is
    logged once, in a "recovered" event right after "listening"."""
    data_dir = tmp_path / "recover"
    s = Server(data_dir).start()
    try:
        keep = s.upload("keep.txt", b"kept")
    finally:
        s.stop()
    assert not [e for e in (json.loads(x) for x in s.lines) if e.get("event") == "recovered"]
    (data_dir / "content" / ("ab" * 16)).write_bytes(b"an orphan body")
    (data_dir / "content" / ".tmp-0123456789abcdef").write_bytes(b"half")
    s2 = Server(data_dir).start()
    try:
        deadline = time.monotonic() + 3             # the line after "listening"
        while True:
            events = [json.loads(x) for x in s2.lines]
            rec = [e for e in events if e.get("event") == "recovered"]
            if rec or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        assert len(rec) == 1, events
        assert (rec[0]["orphan_bodies"], rec[0]["temporaries"], rec[0]["lost_rows"]) == (1, 1, 0), rec
        assert events[0]["event"] == "listening" and events[1] is rec[0], events[:3]
        assert content_files(data_dir) == [keep["id"]]
    finally:
        s2.stop()


def test_connection_limits_from_env_and_config(serve_factory, tmp_path):
    """The new limits come from the environment and the config file like every setting:
    KILN_MAX_CONNECTIONS_PER_IP=0 lifts the per-address limit (70 idle connections from one
    address, over the default 64, and a request still goes through), header-timeout = 1
    in the config file closes them after about a second."""
    conf = tmp_path / "serve.conf"
    conf.write_text("header-timeout = 1\n")
    s = serve_factory("--config", str(conf), env={"KILN_MAX_CONNECTIONS_PER_IP": "0"},
                      name="limits")
    socks = [socket.create_connection(("127.0.0.1", s.port), timeout=5) for _ in range(70)]
    try:
        time.sleep(0.2)
        assert s.request("GET", "/healthz", key=None, timeout=5).status == 200
        t0 = time.monotonic()
        for sock in socks:
            sock.settimeout(max(0.1, t0 + 4 - time.monotonic()))
            try:
                assert sock.recv(100) == b""
            except ConnectionResetError:
                pass
        assert time.monotonic() - t0 < 3.5
    finally:
        for sock in socks:
            sock.close()


def test_idle_keepalive_closed_quietly(serve_factory):
    """A kept-alive connection that goes idle after its requests is closed after
    --header-timeout like a slow one, but it is ordinary: no connection_closed event."""
    s = serve_factory("--header-timeout", "1", name="keepalive_idle")
    sock = socket.create_connection(("127.0.0.1", s.port), timeout=10)
    try:
        for _ in range(2):
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            r = read_reply(sock, "GET")
            check_response(r, "GET", "/healthz")
            assert r.status == 200, r
        start = time.monotonic()
        assert sock.recv(1) == b""           # closed by the server, not by our timeout
        waited = time.monotonic() - start
        assert 0.5 < waited < 4, waited
    finally:
        sock.close()
    time.sleep(0.3)
    assert not [e for e in s.log() if e.get("event") == "connection_closed"], s.log()[-5:]


# --------------------------------------------------------------------------- a second server

def _serve_once(*args, env=None, timeout=20):
    """`kiln serve ARGS` that is expected to fail at once: (exit status, stdout, stderr)."""
    e = {k: v for k, v in os.environ.items() if not k.startswith("KILN_")}
    e.update(env or {})
    p = run_kiln("serve", *args, env=e, timeout=timeout)
    return p.returncode, out_text(p), err_text(p)


def test_second_server_on_a_data_dir_in_use(serve_factory):
    """A second server on a data directory a running one holds stops at once (exit 2) with
    one line naming the directory, the holder's pid and how to choose another, and writes
    nothing there: the first has no keys file (its keys are in KILN_API_KEYS), which the
    second, with no keys of its own, would otherwise have made, key and all."""
    first = serve_factory(name="held")
    before = snapshot(first.data_dir)
    lines_before = len(first.lines)
    rc, out, err = _serve_once("--listen", "127.0.0.1:0", "--data-dir", first.data_dir)
    assert rc == 2, (rc, out, err)
    assert out == "", "a refused server printed on stdout: %r" % out
    assert len(err.splitlines()) == 1, err
    assert "in use" in err and str(first.data_dir) in err, err
    assert "pid %d" % first.proc.pid in err, err
    assert "--data-dir" in err and "KILN_DATA_DIR" in err and "came from --data-dir" in err, err
    assert snapshot(first.data_dir) == before, "the refused server changed the first's files"
    # the first is untouched and still serves: the only line since is that healthz's
    r = first.request("GET", "/healthz", key=None)
    assert r.status == 200
    first.access_entry(r)                           # waits for its line
    assert len(first.lines) == lines_before + 1, first.lines[lines_before:]


def test_listen_address_taken(tmp_path):
    """A listen address another process holds: exit 2, one line naming the address and how
    to choose another (and where this one came from), and the data directory is never
    created: the address is bound before anything is written."""
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        rc, out, err = _serve_once(env={"KILN_LISTEN": "127.0.0.1:%d" % port,
                                        "KILN_DATA_DIR": str(tmp_path / "new"),
                                        "KILN_API_KEYS": "a:K"})
    finally:
        holder.close()
    assert rc == 2, (rc, out, err)
    assert out == "" and len(err.splitlines()) == 1, (out, err)
    assert "127.0.0.1:%d" % port in err and "in use" in err, err
    assert "--listen" in err and "KILN_LISTEN" in err and "came from KILN_LISTEN" in err, err
    assert "KILN_DATA_DIR" not in err, err
    assert not (tmp_path / "new").exists(), "a server that cannot listen made its data directory"


def test_second_server_started_like_the_first(serve_factory):
    """The same address and the same data directory (a second `kiln serve` started as the
    first was): one line says both are in use and how to choose each."""
    first = serve_factory(name="twice")
    before = snapshot(first.data_dir)
    rc, out, err = _serve_once("--listen", first.host, env={"KILN_DATA_DIR": str(first.data_dir)})
    assert rc == 2 and out == "" and len(err.splitlines()) == 1, (rc, out, err)
    assert "%s: the address is in use" % first.host in err, err
    assert str(first.data_dir) in err and "pid %d" % first.proc.pid in err, err
    for named in ("--listen", "KILN_LISTEN", "--data-dir", "KILN_DATA_DIR"):
        assert named in err, err
    assert snapshot(first.data_dir) == before
