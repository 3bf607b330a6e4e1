"""`kiln serve` under bad clients and crashes (issue 7): slowloris-style slow clients and
abrupt disconnects (mid-upload, mid-download) do not hold up other clients; SIGKILL during
a slow upload and a restart leave no half file, no row, no temporary file; /metrics parses
as Prometheus text and counts the requests; shutdown answers 503 to what is left.
"""
import hashlib
import re
import signal
import socket
import threading
import time

import pytest

from serve_helpers import (MIB, Server, content_files, rst_close,
                           serve_factory)  # noqa: F401 (fixtures)

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
