"""The `session` benchmark (`make bench BENCH=session`; see bench/README.md): Kiln's
sessions beside a Jupyter kernel (Debian's python3-ipykernel and python3-jupyter-client)
doing the same cells, in one run.

  (a) a new session and its first cell `print(1)`: p50 and p99. Kiln: `kiln session
      --zygote SOCKET` forked from a shared zygote (as `kiln serve` does), timed from the
      spawn to the cell's record; and, when `kiln serve` here has sessions, POST
      /v1/sessions + POST /v1/sessions/{id}/cells over HTTP on loopback. Jupyter:
      start_new_kernel() and execute_interactive('print(1)').
  (b) a cell round trip `x + 1` on a live session: p50 and p99.
  (c) the first pandas cell on a live session: `df.groupby('k').sum()` on 100,000 rows
      loaded by the cell before.
  (d) memory per idle session, PSS (/proc/PID/smaps_rollup, every process of the session:
      Kiln's supervisor, the sandbox's init and the interpreter; Jupyter's kernel), with
      1, 10 and 50 sessions open, pandas and matplotlib imported in each.

The targets (issue 17): (a) <= 25 ms p50 over HTTP and >= 30x faster than starting a
Jupyter kernel; (b) <= 2 ms p50 and no slower than Jupyter's round trip; (d) <= 40 MB PSS
per idle session. It reports; it exits non-zero only when a cell fails, never on a time.
"""
import json
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

PANDAS_LOAD = ("import pandas as pd, numpy as np, matplotlib.pyplot as plt\n"
               "rng = np.random.default_rng(7)\n"
               "df = pd.DataFrame({'k': rng.integers(0, 50, 100_000), 'v': rng.random(100_000),"
               " 'w': rng.random(100_000)})\n")
PANDAS_CELL = "r = df.groupby('k').sum()\nlen(r)"
WARM_IMPORTS = "import pandas as pd, numpy as np, matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"


def pct(values, p):
    s = sorted(values)
    if not s:
        return float("nan")
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]


def ms(v):
    return "%.1f ms" % (v * 1000) if v == v else "n/a"


# --------------------------------------------------------------------------- Kiln


class KilnSession:
    def __init__(self, kiln, zygote):
        self.p = subprocess.Popen([kiln, "session", "--zygote", zygote], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.n = 0
        ev = self._read()
        if ev.get("event") != "ready":
            raise RuntimeError("kiln session did not start: %r" % ev)

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            raise RuntimeError("kiln session ended")
        return json.loads(line)

    def cell(self, code):
        self.n += 1
        self.p.stdin.write((json.dumps({"op": "execute", "id": self.n, "code": code}) + "\n").encode())
        self.p.stdin.flush()
        while True:
            ev = self._read()
            if ev.get("event") == "cell" and ev.get("id") == self.n:
                if ev["status"] != "ok":
                    raise RuntimeError("a Kiln cell failed: %s" % json.dumps(ev)[:2000])
                return ev
            if ev.get("event") == "rejected":
                raise RuntimeError("rejected: %r" % ev)

    def pids(self):
        """The supervisor and every process of the session's sandbox (its cgroup's)."""
        found = [self.p.pid]
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open("/proc/%s/status" % pid) as f:
                    uid = int(f.read().split("Uid:")[1].split()[0])
            except (OSError, IndexError, ValueError):
                continue
            base = 0x40000000 + 2 * self.p.pid
            if uid in (base, base + 1):
                found.append(int(pid))
        return found

    def close(self):
        try:
            self.p.stdin.write(b'{"op": "close"}\n')
            self.p.stdin.close()
        except OSError:
            pass
        self.p.wait(timeout=30)


class Zygote:
    def __init__(self, kiln):
        self.dir = tempfile.mkdtemp(prefix="kiln-bench-zygote-")
        os.chmod(self.dir, 0o700)
        self.path = os.path.join(self.dir, "z.sock")
        self.p = subprocess.Popen([kiln, "zygote", self.path], stderr=subprocess.DEVNULL)
        end = time.monotonic() + 60
        while not os.path.exists(self.path):
            if self.p.poll() is not None or time.monotonic() > end:
                raise RuntimeError("kiln zygote did not start")
            time.sleep(0.02)
        # the first fork pays for the zygote's imports having just finished
        KilnSession(kiln, self.path).close()

    def pss(self):
        return pss_kb(self.p.pid)

    def close(self):
        self.p.kill()
        self.p.wait()
        try:
            os.unlink(self.path)
        except OSError:
            pass
        os.rmdir(self.dir)


def pss_kb(pid):
    try:
        with open("/proc/%d/smaps_rollup" % pid) as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


# --------------------------------------------------------------------------- Jupyter


def jupyter():
    try:
        from jupyter_client.manager import start_new_kernel
    except ImportError:
        return None
    os.environ.setdefault("PYDEVD_DISABLE_FILE_VALIDATION", "1")
    return start_new_kernel


class JupyterKernel:
    def __init__(self, start_new_kernel):
        self.km, self.kc = start_new_kernel(kernel_name="python3",
                                            extra_arguments=["--HistoryManager.enabled=False"])

    def cell(self, code):
        reply = self.kc.execute_interactive(code, timeout=120, output_hook=lambda msg: None)
        if reply["content"]["status"] != "ok":
            raise RuntimeError("a Jupyter cell failed: %r" % reply["content"])
        return reply

    def pids(self):
        pid = self.km.provisioner.process.pid if self.km.provisioner else self.km.kernel.pid
        return [pid]

    def close(self):
        self.kc.stop_channels()
        self.km.shutdown_kernel(now=True)


# --------------------------------------------------------------------------- the workloads


def measure_first_cell(make, runs):
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s = make()
        s.cell("print(1)")
        times.append(time.perf_counter() - t0)
        s.close()
    return times


def measure_round_trip(s, runs):
    s.cell("x = 1")
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.cell("x + 1")
        times.append(time.perf_counter() - t0)
    return times


def measure_pandas(s, runs):
    s.cell(PANDAS_LOAD)
    s.cell(PANDAS_CELL)     # not timed: the first call of groupby's code paths
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        s.cell(PANDAS_CELL)
        times.append(time.perf_counter() - t0)
    return times


def measure_pss(make, counts):
    """PSS per idle session (MB) with n open, for each n in counts."""
    out = {}
    for n in counts:
        sessions = []
        try:
            for _ in range(n):
                s = make()
                s.cell(WARM_IMPORTS)
                sessions.append(s)
            time.sleep(0.5)
            total = sum(pss_kb(pid) for s in sessions for pid in s.pids())
            out[n] = total / 1024.0 / n
        finally:
            for s in sessions:
                s.close()
    return out


def http_first_cell(kiln, runs):
    """(a) over HTTP: POST /v1/sessions + POST /v1/sessions/{id}/cells print(1) on a
    keep-alive loopback connection, against a `kiln serve` of its own (its default pool of
    ready sessions; the runs are spaced by 0.3 s, not timed, so the pool has refilled, as
    it has for a server's users but under a burst). None when this kiln serve has no
    sessions."""
    import http.client
    from serve_bench import API_KEY, BenchError, start_kiln, stop_group
    tmp = tempfile.mkdtemp(prefix="kiln-bench-sessions-")
    try:
        proc, port = start_kiln(kiln, tmp, 4)
    except BenchError as e:
        print("session: over HTTP skipped: %s" % e)
        return None
    headers = {"Authorization": "Bearer " + API_KEY, "Content-Type": "application/json"}
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.connect()
    # http.client sends a request's headers and body in two writes: without TCP_NODELAY
    # the second waits on the first's delayed ACK, which is the client's time, not Kiln's
    import socket
    conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    times = []
    try:
        # the zygote and the pool start with the server
        for _ in range(600):
            conn.request("POST", "/v1/sessions", body="{}", headers=headers)
            r = conn.getresponse()
            body = r.read()
            if r.status == 201:
                sid = json.loads(body)["id"]
                conn.request("DELETE", "/v1/sessions/" + sid, headers=headers)
                conn.getresponse().read()
                break
            if r.status in (404, 405):
                return None
            time.sleep(0.1)
        for _ in range(runs):
            time.sleep(0.3)
            t0 = time.perf_counter()
            conn.request("POST", "/v1/sessions", body="{}", headers=headers)
            r = conn.getresponse()
            body = r.read()
            if r.status != 201:
                raise RuntimeError("POST /v1/sessions: %d %s" % (r.status, body[:300]))
            sid = json.loads(body)["id"]
            conn.request("POST", "/v1/sessions/%s/cells" % sid, body=json.dumps({"code": "print(1)"}),
                         headers=headers)
            r = conn.getresponse()
            rec = json.loads(r.read())
            if r.status != 200 or rec.get("status") != "ok":
                raise RuntimeError("a cell over HTTP failed: %r" % rec)
            times.append(time.perf_counter() - t0)
            conn.request("DELETE", "/v1/sessions/" + sid, headers=headers)
            conn.getresponse().read()
    finally:
        conn.close()
        stop_group(proc)
        import shutil
        shutil.rmtree(tmp, ignore_errors=True)
    return times


def run_session(args):
    kiln = os.path.abspath(args.kiln)
    if os.geteuid() != 0:
        print("session: skipped (kiln session needs root)")
        return 0
    status = 0
    start = jupyter()
    z = Zygote(kiln)
    try:
        rows = []
        a_kiln = measure_first_cell(lambda: KilnSession(kiln, z.path), args.session_runs)
        a_http = http_first_cell(kiln, args.session_runs)
        a_jup = measure_first_cell(lambda: JupyterKernel(start), args.jupyter_runs) if start else []
        s = KilnSession(kiln, z.path)
        b_kiln = measure_round_trip(s, args.session_cells)
        c_kiln = measure_pandas(s, args.pandas_cells)
        s.close()
        b_jup = c_jup = []
        if start:
            j = JupyterKernel(start)
            b_jup = measure_round_trip(j, args.session_cells)
            c_jup = measure_pandas(j, args.pandas_cells)
            j.close()
        counts = [int(c) for c in args.pss_counts.split(",")]
        d_kiln = measure_pss(lambda: KilnSession(kiln, z.path), counts)
        d_jup = measure_pss(lambda: JupyterKernel(start), counts) if start else {}
        zygote_mb = z.pss() / 1024.0
    finally:
        z.close()

    print("session: Kiln (kiln session, forked from a shared zygote) beside a Jupyter kernel")
    print("%-44s %14s %14s %14s %14s" % ("", "kiln p50", "kiln p99", "jupyter p50", "jupyter p99"))

    def line(name, k, j):
        print("%-44s %14s %14s %14s %14s" % (name, ms(pct(k, 50)), ms(pct(k, 99)),
                                             ms(pct(j, 50)) if j else "n/a", ms(pct(j, 99)) if j else "n/a"))

    line("(a) new session + print(1), CLI (%d)" % len(a_kiln), a_kiln, a_jup)
    if a_http:
        line("(a) new session + print(1), HTTP (%d)" % len(a_http), a_http, a_jup)
    line("(b) cell round trip x + 1 (%d)" % len(b_kiln), b_kiln, b_jup)
    line("(c) df.groupby('k').sum(), 100k rows (%d)" % len(c_kiln), c_kiln, c_jup)
    print("(d) PSS per idle session, pandas + matplotlib imported:")
    for n in counts:
        print("      %3d open: kiln %6.1f MB   jupyter %s" % (
            n, d_kiln[n], ("%6.1f MB" % d_jup[n]) if n in d_jup else "n/a"))
    print("    (the zygote itself, shared by every session: %.1f MB PSS)" % zygote_mb)
    if a_jup:
        best = a_http or a_kiln
        print("target (a): <= 25 ms p50 over HTTP -> %s; >= 30x faster than a Jupyter kernel -> %.0fx"
              % (ms(pct(best, 50)), pct(a_jup, 50) / pct(best, 50)))
    if b_jup:
        print("target (b): <= 2 ms p50 and no slower than Jupyter -> %s vs %s" % (
            ms(pct(b_kiln, 50)), ms(pct(b_jup, 50))))
    print("target (d): <= 40 MB PSS per idle session -> %s" % ", ".join(
        "%.1f MB at %d" % (d_kiln[n], n) for n in counts))
    return status
