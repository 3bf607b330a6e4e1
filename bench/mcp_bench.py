"""The `mcp` benchmark (`make bench BENCH=mcp`; see bench/README.md): what the MCP layer
adds to a cell's round trip on a warm session, over stdio and over HTTP.

The same cell, `x + 1` on a session where x is set, N times (--mcp-cells, default 200;
--mcp-warmup more before, not timed), one at a time, each timed from the request's first
byte written to its reply read:

  stdio  `kiln session` (its JSON lines: the session without MCP) beside `kiln mcp`
         (tools/call execute_code, newline-delimited JSON-RPC), each a child on pipes;
  HTTP   POST /v1/sessions/{id}/cells beside POST /mcp tools/call execute_code, on one
         `kiln serve` (sessions on), each on one keep-alive loopback connection
         (TCP_NODELAY: http.client writes headers and body apart, and the second write
         would wait on the first's delayed ACK, the client's time, not Kiln's).

The MCP clients here are raw JSON-RPC written for this file (the initialize handshake,
then tools/call), not an SDK: what is measured is Kiln, not a client library. MCP overhead
is MCP p50 - the same transport's p50 without MCP. Target (issue 18): at most 1 ms p50.
It reports; it exits non-zero only when a call fails, never on a time.
"""
import http.client
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

from session_bench import pct

PROTOCOL = "2025-11-25"
CELL = "x + 1"
ACCEPT = "application/json, text/event-stream"


def us(v):
    return "%.3f ms" % (v * 1000) if v == v else "n/a"


class BenchError(RuntimeError):
    pass


class NoMcp(BenchError):
    """This kiln serve has no /mcp."""


# --------------------------------------------------------------------------- clients


def check_cell(result):
    """A tools/call result of execute_code: the cell ran and gave 42."""
    sc = result.get("structuredContent") or {}
    if result.get("isError") or sc.get("status") != "ok":
        raise BenchError("execute_code failed: %s" % json.dumps(result)[:1500])
    return sc


class StdioMcp:
    """`kiln mcp` on pipes, spoken to in raw JSON-RPC lines."""

    def __init__(self, kiln, tmp):
        self.err = open(os.path.join(tmp, "kiln-mcp.stderr"), "wb")
        self.p = subprocess.Popen([kiln, "mcp", "--out", os.path.join(tmp, "mcp-out")],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err)
        self.n = 0
        r = self.rpc("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                    "clientInfo": {"name": "kiln-bench", "version": "1"}})
        if r.get("protocolVersion") != PROTOCOL:
            raise BenchError("kiln mcp answered initialize with %r" % r)
        self.notify("notifications/initialized")

    def notify(self, method, params=None):
        msg = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            msg["params"] = params
        self.p.stdin.write(json.dumps(msg).encode() + b"\n")
        self.p.stdin.flush()

    def rpc(self, method, params):
        self.n += 1
        self.p.stdin.write(json.dumps({"jsonrpc": "2.0", "id": self.n, "method": method,
                                       "params": params}).encode() + b"\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise BenchError("kiln mcp ended (see its stderr)")
            msg = json.loads(line)
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise BenchError("%s: %r" % (method, msg["error"]))
                return msg["result"]

    def cell(self, code):
        return check_cell(self.rpc("tools/call", {"name": "execute_code", "arguments": {"code": code}}))

    def close(self):
        self.p.stdin.close()
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.err.close()


class StdioSession:
    """`kiln session` on pipes (docs/session.md): the same cell without MCP."""

    def __init__(self, kiln):
        self.p = subprocess.Popen([kiln, "session"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL)
        self.n = 0
        ev = json.loads(self.p.stdout.readline() or b"{}")
        if ev.get("event") != "ready":
            raise BenchError("kiln session did not start: %r" % ev)

    def cell(self, code):
        self.n += 1
        self.p.stdin.write(json.dumps({"op": "execute", "id": self.n, "code": code}).encode() + b"\n")
        self.p.stdin.flush()
        while True:
            line = self.p.stdout.readline()
            if not line:
                raise BenchError("kiln session ended")
            ev = json.loads(line)
            if ev.get("event") == "cell" and ev.get("id") == self.n:
                if ev["status"] != "ok":
                    raise BenchError("a cell failed: %s" % json.dumps(ev)[:1500])
                return ev
            if ev.get("event") == "rejected":
                raise BenchError("rejected: %r" % ev)

    def close(self):
        try:
            self.p.stdin.write(b'{"op": "close"}\n')
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(30)


def keepalive(port):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    conn.connect()
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return conn


class HttpMcp:
    """POST /mcp on one keep-alive connection, in raw JSON-RPC."""

    def __init__(self, port, key):
        self.conn = keepalive(port)
        self.headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json",
                        "Accept": ACCEPT}
        self.n = 0
        r = self.rpc("initialize", {"protocolVersion": PROTOCOL, "capabilities": {},
                                    "clientInfo": {"name": "kiln-bench", "version": "1"}})
        if r.get("protocolVersion") != PROTOCOL:
            raise BenchError("/mcp answered initialize with %r" % r)
        self.headers["MCP-Protocol-Version"] = PROTOCOL
        if self.session:
            self.headers["Mcp-Session-Id"] = self.session
        self.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, expect=202)

    def post(self, msg, expect=200):
        self.conn.request("POST", "/mcp", body=json.dumps(msg), headers=self.headers)
        r = self.conn.getresponse()
        body = r.read()
        if r.status == 404 and msg.get("method") == "initialize":
            raise NoMcp("POST /mcp: 404")
        if r.status != expect:
            raise BenchError("POST /mcp %s: %d %s" % (msg.get("method"), r.status, body[:500]))
        self.session = r.getheader("Mcp-Session-Id") or getattr(self, "session", None)
        return r, body

    def rpc(self, method, params):
        self.n += 1
        r, body = self.post({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params})
        ctype = (r.getheader("Content-Type") or "").split(";")[0].strip()
        if ctype == "text/event-stream":
            msgs = [json.loads(line[5:]) for line in body.decode().splitlines() if line.startswith("data:")]
        else:
            msgs = [json.loads(body)]
        for msg in msgs:
            if msg.get("id") == self.n:
                if "error" in msg:
                    raise BenchError("%s: %r" % (method, msg["error"]))
                return msg["result"]
        raise BenchError("POST /mcp %s: no reply in %r" % (method, body[:500]))

    def cell(self, code):
        return check_cell(self.rpc("tools/call", {"name": "execute_code", "arguments": {"code": code}}))

    def close(self):
        if self.session:
            self.conn.request("DELETE", "/mcp", headers=self.headers)
            self.conn.getresponse().read()
        self.conn.close()


class HttpSession:
    """POST /v1/sessions/{id}/cells on one keep-alive connection: the cell without MCP."""

    def __init__(self, port, key):
        self.conn = keepalive(port)
        self.headers = {"Authorization": "Bearer " + key, "Content-Type": "application/json"}
        self.conn.request("POST", "/v1/sessions", body="{}", headers=self.headers)
        r = self.conn.getresponse()
        body = r.read()
        if r.status != 201:
            raise BenchError("POST /v1/sessions: %d %s" % (r.status, body[:500]))
        self.id = json.loads(body)["id"]

    def cell(self, code):
        self.conn.request("POST", "/v1/sessions/%s/cells" % self.id, body=json.dumps({"code": code}),
                          headers=self.headers)
        r = self.conn.getresponse()
        rec = json.loads(r.read())
        if r.status != 200 or rec.get("status") != "ok":
            raise BenchError("a cell over HTTP failed: %d %r" % (r.status, rec))
        return rec

    def close(self):
        self.conn.request("DELETE", "/v1/sessions/" + self.id, headers=self.headers)
        self.conn.getresponse().read()
        self.conn.close()


# --------------------------------------------------------------------------- the runs


def round_trips(s, runs, warmup):
    s.cell("x = 41")
    for _ in range(warmup):
        s.cell(CELL)
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.cell(CELL)
        times.append(time.perf_counter() - t0)
    return times


def interleaved(a, b, runs, warmup):
    """Round trips of a and b taken in turns, so that a drift of the machine's load
    falls on both alike."""
    a.cell("x = 41")
    b.cell("x = 41")
    for _ in range(warmup):
        a.cell(CELL)
        b.cell(CELL)
    ta, tb = [], []
    for _ in range(runs):
        for s, t in ((a, ta), (b, tb)):
            t0 = time.perf_counter()
            s.cell(CELL)
            t.append(time.perf_counter() - t0)
    return ta, tb


def cpu_seconds(pid):
    """User + system time of a process, every thread of it (those ended too), from
    /proc/PID/stat: clock ticks, so only many calls give a figure."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_per_call(s, pid, runs):
    """The CPU time process pid spends per round trip of s, over runs round trips."""
    c0 = cpu_seconds(pid)
    for _ in range(runs):
        s.cell(CELL)
    return (cpu_seconds(pid) - c0) / runs


def start_serve(kiln, tmp):
    from serve_bench import API_KEY, start_kiln
    proc, port = start_kiln(kiln, tmp, 4)
    # the zygote and the pool start with the server: wait for a first session
    headers = {"Authorization": "Bearer " + API_KEY, "Content-Type": "application/json"}
    deadline = time.monotonic() + 60
    while True:
        c = keepalive(port)
        c.request("POST", "/v1/sessions", body="{}", headers=headers)
        r = c.getresponse()
        body = r.read()
        if r.status == 201:
            c.request("DELETE", "/v1/sessions/" + json.loads(body)["id"], headers=headers)
            c.getresponse().read()
            c.close()
            return proc, port, API_KEY
        c.close()
        if time.monotonic() > deadline:
            raise BenchError("kiln serve has no sessions: POST /v1/sessions %d %s" % (r.status, body[:300]))
        time.sleep(0.1)


def run_mcp(args):
    kiln = os.path.abspath(args.kiln)
    if os.geteuid() != 0:
        print("mcp: skipped (sessions need root)")
        return 0
    n, warm = args.mcp_cells, args.mcp_warmup
    tmp = tempfile.mkdtemp(prefix="kiln-bench-mcp-")
    rows, cpu = [], {}
    try:
        sess, mcp = StdioSession(kiln), StdioMcp(kiln, tmp)
        try:
            t_sess, t_mcp = interleaved(sess, mcp, n, warm)
            # kiln mcp's own process: what MCP adds to the session child it drives
            cpu["stdio"] = cpu_per_call(mcp, mcp.p.pid, args.mcp_cpu_cells)
        finally:
            sess.close()
            mcp.close()
        rows.append(("stdio", "kiln session (JSON lines)", t_sess, "kiln mcp, tools/call", t_mcp))
        from serve_bench import stop_group
        proc, port, key = start_serve(kiln, tmp)
        try:
            v1 = HttpSession(port, key)
            try:
                hm = HttpMcp(port, key)
            except NoMcp:
                v1.close()
                raise
            try:
                t_v1, t_hm = interleaved(v1, hm, n, warm)
                # the server's process (its sessions are children of their own)
                cpu["HTTP"] = (cpu_per_call(v1, proc.pid, args.mcp_cpu_cells),
                               cpu_per_call(hm, proc.pid, args.mcp_cpu_cells))
            finally:
                v1.close()
                hm.close()
        except NoMcp:
            print("mcp: over HTTP skipped: this kiln serve has no /mcp (POST /mcp: 404)")
        else:
            rows.append(("HTTP", "POST /v1/sessions/{id}/cells", t_v1, "POST /mcp, tools/call", t_hm))
        finally:
            stop_group(proc)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print("mcp: `%s` on a warm session, %d round trips of each (after %d not timed), "
          "taken in turns" % (CELL, n, warm))
    print("%-6s %-32s %11s %11s" % ("", "", "p50", "p99"))
    for transport, base_name, base, mcp_name, t in rows:
        print("%-6s %-32s %11s %11s" % (transport, base_name, us(pct(base, 50)), us(pct(base, 99))))
        print("%-6s %-32s %11s %11s" % ("", mcp_name, us(pct(t, 50)), us(pct(t, 99))))
    line = "CPU per round trip (%d more of each, not interleaved): kiln mcp's process %s" % (
        args.mcp_cpu_cells, us(cpu["stdio"]))
    if "HTTP" in cpu:
        line += "; kiln serve's process %s for /v1/sessions, %s for /mcp" % (
            us(cpu["HTTP"][0]), us(cpu["HTTP"][1]))
    print(line)
    for transport, base_name, base, mcp_name, t in rows:
        d = pct(t, 50) - pct(base, 50)
        print("MCP overhead p50, %s: %s - %s = %s (target <= 1 ms: %s)" % (
            transport, us(pct(t, 50)), us(pct(base, 50)), us(d), "met" if d <= 0.001 else "NOT met"))
    return 0


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kiln", default=os.environ.get("KILN_BIN", "bin/kiln"))
    ap.add_argument("--mcp-cells", type=int, default=200)
    ap.add_argument("--mcp-warmup", type=int, default=20)
    ap.add_argument("--mcp-cpu-cells", type=int, default=1000)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    sys.exit(run_mcp(ap.parse_args()))
