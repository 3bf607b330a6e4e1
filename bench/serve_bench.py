#!/usr/bin/python3
"""The `serve` benchmark (`make bench BENCH=serve`; see bench/README.md): `kiln serve`
under wrk on loopback, beside nginx serving the same files from disk.

    /usr/bin/python3 bench/serve_bench.py [--kiln PATH] [--duration SECONDS] [--rounds N]

1. Makes a temporary directory; starts `kiln serve --listen 127.0.0.1:0 --data-dir TMP/data`
   with one API key (KILN_API_KEYS), reads its port from the first stdout line
   ({"event": "listening", ..., "port": N}) and drains the rest (the access log) on a
   thread.
2. Uploads a 30 MiB file and a 10 KiB file of random bytes (POST /v1/files, raw body,
   ?filename=...), and hard-links kiln's stored copies into nginx's root, so that both
   servers send the same file from the same page cache (nginx_file says why; a copy
   when the link fails, and the output says which).
3. Starts nginx (Debian's, as installed) with a configuration written into the temporary
   directory: as many worker processes as kiln's HTTP thread pool has threads (kiln's
   default, the CPU count with a minimum of 2, passed as --threads), sendfile and
   tcp_nopush on, no access log.
4. Downloads each file once from each server and checks its SHA-256; then runs wrk
   (Debian's 4.1, with Lua scripts written into the temporary directory that print
   wrk's summary as JSON):
   - the 30 MiB download from kiln and from nginx: `wrk -t2 -c8`; requests/s, MiB/s;
   - the 10 KiB download from each: the same;
   - POST /v1/render of a small xlsx spec (one sheet, 20 rows x 5 columns):
     `wrk -t2 -c4 --latency`; requests/s and latency percentiles, every reply's status
     counted by the Lua script (4 connections: at most 4 renders in flight, fewer than
     kiln's --max-jobs plus --queue, so none can be refused with 429).
   Each is measured --rounds times (default 2, kiln and nginx taking turns to go first);
   the best by requests/s counts, as in the other benchmarks.
5. Prints a Markdown table, the download ratio kiln/nginx against the issue's target
   (>= 0.8x), and writes the raw figures of every run to bench/out/serve.json.

Also reported per row: the server's CPU time (user + system, from /proc) per request
and wrk's (wait4): on a small machine wrk, kiln and nginx share the same cores, and wrk
(which reads 8 KiB at a time) needs most of them to take in a download, so the server's
CPU per request is the steadier comparison.

It reports; it never fails on a timing. It exits non-zero when a server does not start,
an upload or a download is wrong, or wrk sees errors or non-2xx replies. Every process
it starts (kiln, nginx, wrk) is stopped, by process group, whatever happens.
"""
import argparse
import datetime
import hashlib
import http.client
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out")

TARGET = 0.8                  # issue 7: download throughput >= 0.8x nginx's
BIG_BYTES = 30 << 20          # the download: kiln's default upload ceiling
SMALL_BYTES = 10 << 10        # the second reference row: a small file
RENDER_ROWS = 20              # the render's sheet: RENDER_ROWS x 5 columns
TENANT = "bench"
API_KEY = "kiln-bench-" + "5e" * 16
START_TIMEOUT = 20.0          # seconds for a server to start listening
STOP_TIMEOUT = 10.0           # seconds after SIGTERM before SIGKILL
WRK_THREADS = 2
DURATION = 10                 # seconds of each wrk run
ROUNDS = 2                    # each measured this many times; the best counts
DOWNLOAD_CONNECTIONS = 8
RENDER_CONNECTIONS = 4        # <= kiln's --max-jobs + --queue (2 + 32 by default): no 429

# wrk's summary as one JSON line (times in microseconds). Shared by both scripts.
LUA_DONE = r"""
local function statuses_json()
  local merged, parts = {}, {}
  for _, t in ipairs(threads) do
    local s = t:get("statuses")
    if s then for k, v in pairs(s) do merged[k] = (merged[k] or 0) + v end end
  end
  for k, v in pairs(merged) do parts[#parts + 1] = string.format('"%s": %d', k, v) end
  return "{" .. table.concat(parts, ", ") .. "}"
end

function done(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests": %d, "bytes": %d, "duration_us": %d, ' ..
    '"errors": {"connect": %d, "read": %d, "write": %d, "status": %d, "timeout": %d}, ' ..
    '"latency_us": {"mean": %.1f, "stdev": %.1f, "max": %d, "p50": %d, "p75": %d, ' ..
    '"p90": %d, "p99": %d}, "statuses": %s}\n',
    summary.requests, summary.bytes, summary.duration,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.stdev, latency.max, latency:percentile(50),
    latency:percentile(75), latency:percentile(90), latency:percentile(99),
    statuses_json()))
end
"""

# Downloads: no response() callback, which would make wrk copy every 30 MiB body into
# Lua; wrk itself counts statuses >= 400 (errors.status).
LUA_DOWNLOAD = r"""
threads = {}
function setup(thread) table.insert(threads, thread) end
""" + LUA_DONE

# The render: POST the body in $KILN_BENCH_BODY; count every reply's status.
LUA_RENDER = r"""
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open(os.getenv("KILN_BENCH_BODY"), "rb"))
wrk.body = f:read("*a")
f:close()

threads = {}
function setup(thread) table.insert(threads, thread) end

statuses = {}
function response(status, headers, body)
  local k = tostring(status)
  statuses[k] = (statuses[k] or 0) + 1
end
""" + LUA_DONE

NGINX_CONF = """\
# Written by bench/serve_bench.py: the physical reference for kiln's downloads.
daemon off;
master_process on;
worker_processes {workers};
{user}pid {tmp}/nginx.pid;
error_log {tmp}/nginx-error.log warn;
events {{
    worker_connections 1024;
}}
http {{
    access_log off;
    sendfile on;
    tcp_nopush on;
    # wrk keeps its connections open for the whole run; nginx's default closes one
    # every 1000 requests, which would cost it on the small file.
    keepalive_requests 1000000;
    default_type application/octet-stream;
    client_body_temp_path {tmp}/nginx-temp/body;
    proxy_temp_path {tmp}/nginx-temp/proxy;
    fastcgi_temp_path {tmp}/nginx-temp/fastcgi;
    uwsgi_temp_path {tmp}/nginx-temp/uwsgi;
    scgi_temp_path {tmp}/nginx-temp/scgi;
    server {{
        listen 127.0.0.1:{port};
        root {tmp}/www;
    }}
}}
"""


class BenchError(Exception):
    """A server that does not start or answers wrongly: the run fails."""


def free_port():
    """A port free on 127.0.0.1 now (nginx needs one in its configuration)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_group(proc):
    """SIGTERM the process group of proc (started with start_new_session), SIGKILL what
    is left of it after STOP_TIMEOUT; reap proc."""
    if proc is None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        try:
            proc.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired:
            if sig == signal.SIGKILL:
                print("bench: serve: process %d would not die" % proc.pid)


def tail(path, n=20):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-n:])
    except OSError:
        return ""


def start_kiln(kiln, tmp, threads):
    """Start `kiln serve` (threads HTTP threads, the other settings their defaults) on a
    free loopback port; returns (proc, port). stdout (the
    access log) is drained to nowhere on a thread once the listening line is read."""
    env = dict(os.environ, KILN_API_KEYS="%s:%s" % (TENANT, API_KEY))
    err_path = os.path.join(tmp, "kiln-stderr.log")
    with open(err_path, "wb") as err:
        proc = subprocess.Popen([kiln, "serve", "--listen", "127.0.0.1:0", "--data-dir",
                                 os.path.join(tmp, "data"), "--threads", str(threads)],
                                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=err,
                                env=env, start_new_session=True)
    fd = proc.stdout.fileno()
    deadline = time.monotonic() + START_TIMEOUT
    buf = b""
    port = None
    # With sessions on, the zygote's start (its own event line) may come first.
    while port is None:
        while b"\n" not in buf:
            left = deadline - time.monotonic()
            if left <= 0 or proc.poll() is not None:
                stop_group(proc)
                raise BenchError("kiln serve did not print its listening line (stderr: %s)"
                                 % (tail(err_path).strip() or "empty"))
            ready, _, _ = select.select([fd], [], [], min(left, 0.2))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    continue
                buf += chunk
        line, buf = buf.split(b"\n", 1)
        try:
            event = json.loads(line)
            if event.get("event") == "listening":
                port = int(event["port"])
        except (ValueError, KeyError, TypeError, AttributeError) as e:
            stop_group(proc)
            raise BenchError("kiln serve printed a line that is not an event, or a listening "
                             "event without \"port\": N: %r (%s)" % (line[:200], e))

    def drain():
        try:
            while os.read(fd, 1 << 16):
                pass
        except OSError:
            pass
    threading.Thread(target=drain, daemon=True).start()
    return proc, port


def start_nginx(tmp, workers):
    """Start nginx serving tmp/www on a free loopback port; returns (proc, port)."""
    port = free_port()
    os.makedirs(os.path.join(tmp, "nginx-temp"), exist_ok=True)
    # As root, nginx's workers would switch to nobody, who cannot read the 0700
    # temporary directory; they stay root (loopback only, for the length of the run).
    user = "user root;\n" if os.geteuid() == 0 else ""
    conf = os.path.join(tmp, "nginx.conf")
    with open(conf, "w", encoding="utf-8") as f:
        f.write(NGINX_CONF.format(workers=workers, user=user, tmp=tmp, port=port))
    err_path = os.path.join(tmp, "nginx-error.log")
    # -e: the error log before the configuration is read (else /var/log/nginx/error.log).
    proc = subprocess.Popen(["nginx", "-p", tmp, "-c", conf, "-e", err_path],
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if proc.poll() is not None:
            raise BenchError("nginx exited with %d: %s" % (proc.returncode,
                                                           tail(err_path).strip()))
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, port
        except OSError:
            if time.monotonic() > deadline:
                stop_group(proc)
                raise BenchError("nginx did not listen on port %d: %s"
                                 % (port, tail(err_path).strip()))
            time.sleep(0.05)


def nginx_file(data_dir, file_id, dest, data):
    """Put the bytes kiln stores as file_id at dest for nginx: a hard link to kiln's own
    copy (DATA_DIR/content/ID, service/store.h), so that both servers send the same
    inode from the same page cache; a copy when that cannot be linked. Returns which.

    The page cache matters: kiln's store writes an upload as it arrives, in pieces of
    the size libmicrohttpd hands over, and on this kernel (ext4 with large folios) a
    file written that way is cached in smaller folios than one written in one go; the
    kernel's splice read (sendfile) then costs more per byte, whichever server sends it."""
    try:
        os.link(os.path.join(data_dir, "content", file_id), dest)
        return "hard link"
    except OSError:
        with open(dest, "wb") as f:
            f.write(data)
        return "copy"


def request(port, method, path, body=None, headers=None):
    """One request; returns (status, headers dict lowercased, body bytes)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, data
    finally:
        conn.close()


def auth():
    return {"Authorization": "Bearer " + API_KEY}


def upload(port, name, data):
    status, _, body = request(port, "POST", "/v1/files?filename=" + name, body=data,
                              headers=dict(auth(), **{"Content-Type":
                                                      "application/octet-stream"}))
    if status != 201:
        raise BenchError("upload of %s: HTTP %d: %s" % (name, status, body[:300]))
    obj = json.loads(body)
    if obj.get("bytes") != len(data) or obj.get("sha256") != hashlib.sha256(data).hexdigest():
        raise BenchError("upload of %s: the file object does not match: %s" % (name, obj))
    return obj["id"]


def check_download(port, path, data, headers=None):
    """GET path once (it also warms the page cache) and compare the bytes."""
    status, _, body = request(port, "GET", path, headers=headers)
    if status != 200 or hashlib.sha256(body).digest() != hashlib.sha256(data).digest():
        raise BenchError("GET %s on port %d: HTTP %d, %d bytes, not the %d uploaded"
                         % (path, port, status, len(body), len(data)))


def render_body(path):
    """The render request: a small xlsx spec, one sheet of RENDER_ROWS x 5 columns."""
    names = ["Ada Andersen", "Bruno Baptiste", "Chiara Castellanos", "Dmitri Dubois",
             "Elif Eriksson"]
    rows = [[i, "2026-01-%02d" % (i % 28 + 1), names[i % len(names)],
             round(1234.5 + 17.25 * i, 2), i % 3 != 0] for i in range(1, RENDER_ROWS + 1)]
    spec = {"version": 1,
            "metadata": {"title": "Kiln serve benchmark", "author": "bench/serve_bench.py",
                         "created": "2026-01-01T00:00:00Z"},
            "sheets": [{"name": "Orders",
                        "columns": [{"header": "Id", "type": "integer"},
                                    {"header": "Date", "type": "date"},
                                    {"header": "Customer", "type": "string", "width": 22},
                                    {"header": "Amount", "type": "currency"},
                                    {"header": "Paid", "type": "boolean"}],
                        "rows": rows}]}
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"format": "xlsx", "filename": "bench.xlsx", "spec": spec}, f)
    return path


def proc_cpu(pids):
    """User + system CPU seconds used so far by the processes pids (all their threads)
    and their child processes (/proc/PID/stat: nginx's workers are the master's)."""
    tick = os.sysconf("SC_CLK_TCK")
    want = set(pids)
    children = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(d) in want or int(fields[1]) in want:
            children.append(int(fields[11]) + int(fields[12]))
    return sum(children) / tick


def run_wrk(label, url, script, connections, seconds, server_pids, extra=(), env=None):
    """One wrk run; returns its figures (the Lua summary, wrk's and the server's CPU)."""
    cmd = ["wrk", "-t%d" % WRK_THREADS, "-c%d" % connections, "-d%ds" % seconds,
           "-H", "Authorization: Bearer " + API_KEY, "-s", script] + list(extra) + [url]
    cpu0 = proc_cpu(server_pids)
    proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        out = proc.stdout.read().decode("utf-8", "replace")
        _, status, ru = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if proc.returncode is None:
            stop_group(proc)
    server_cpu = proc_cpu(server_pids) - cpu0
    m = re.search(r"^WRKJSON (.*)$", out, re.M)
    if proc.returncode != 0 or not m:
        raise BenchError("%s: wrk failed (exit %s):\n%s" % (label, proc.returncode, out))
    r = json.loads(m.group(1))
    secs = r["duration_us"] / 1e6
    r.update(label=label, cmd=" ".join(cmd).replace(API_KEY, "$KEY"),
             rps=r["requests"] / secs, mib_s=r["bytes"] / secs / (1 << 20),
             wrk_cpu=ru.ru_utime + ru.ru_stime, server_cpu=server_cpu,
             wrk_output=out.replace(API_KEY, "$KEY"))
    return r


def version(cmd, pattern):
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
        m = re.search(pattern, p.stdout + p.stderr)
        return m.group(1) if m else "?"
    except OSError:
        return "?"


def errors_of(r, expect_status=None):
    """The problems wrk saw in r, as text ("" when none)."""
    bad = ["%s %d" % (k, v) for k, v in r["errors"].items() if v]
    if expect_status is not None:
        bad += ["HTTP %s x %d" % (k, v) for k, v in sorted(r["statuses"].items())
                if k != str(expect_status)]
    return ", ".join(bad)


def ms(us):
    return "%.2f" % (us / 1000.0)


def run_serve(args):
    """The serve benchmark; returns the exit status (0 unless something failed)."""
    kiln = os.path.abspath(args.kiln)
    seconds = getattr(args, "duration", DURATION)
    rounds = getattr(args, "rounds", ROUNDS)
    if not os.access(kiln, os.X_OK):
        print("bench: serve: FAILED: no kiln binary at %s" % kiln)
        return 1
    for tool in ("wrk", "nginx"):
        if shutil.which(tool) is None:
            print("bench: serve: FAILED: %s is not installed (make deps)" % tool)
            return 1
    # kiln's HTTP thread pool: its default, the CPU count, at least 2 (docs/serve.md),
    # given explicitly; nginx gets as many worker processes.
    workers = max(2, os.cpu_count() or 1)
    os.makedirs(OUT, exist_ok=True)
    load_before = os.getloadavg()
    tmp = tempfile.mkdtemp(prefix="kiln-serve-bench-")
    kiln_proc = nginx_proc = None
    results = {}
    try:
        print("bench: serve: kiln serve --threads %d and nginx with as many worker processes,"
              " in %s; wrk -t%d, %d s a run" % (workers, tmp, WRK_THREADS, seconds))
        kiln_proc, kport = start_kiln(kiln, tmp, workers)
        big = os.urandom(BIG_BYTES)
        small = os.urandom(SMALL_BYTES)
        big_id = upload(kport, "big.bin", big)
        small_id = upload(kport, "small.bin", small)
        www = os.path.join(tmp, "www")
        os.makedirs(www)
        how = set()
        for name, fid, data in (("big.bin", big_id, big), ("small.bin", small_id, small)):
            how.add(nginx_file(os.path.join(tmp, "data"), fid, os.path.join(www, name), data))
        nginx_proc, nport = start_nginx(tmp, workers)
        kbase, nbase = "http://127.0.0.1:%d" % kport, "http://127.0.0.1:%d" % nport
        for fid, name, data in ((big_id, "big.bin", big), (small_id, "small.bin", small)):
            check_download(kport, "/v1/files/%s/content" % fid, data, auth())
            check_download(nport, "/" + name, data)
        body = render_body(os.path.join(tmp, "render.json"))
        status, _, reply = request(kport, "POST", "/v1/render", body=open(body, "rb").read(),
                                   headers=dict(auth(), **{"Content-Type": "application/json"}))
        if status != 201:
            raise BenchError("POST /v1/render: HTTP %d: %s" % (status, reply[:300]))
        lua_dl = os.path.join(tmp, "download.lua")
        lua_render = os.path.join(tmp, "render.lua")
        with open(lua_dl, "w") as f:
            f.write(LUA_DOWNLOAD)
        with open(lua_render, "w") as f:
            f.write(LUA_RENDER)
        del big, small

        kpids, npids = [kiln_proc.pid], [nginx_proc.pid]
        c = DOWNLOAD_CONNECTIONS
        runs = {
            "big_kiln": ("kiln GET 30 MiB", "%s/v1/files/%s/content" % (kbase, big_id),
                         lua_dl, c, kpids, (), None),
            "big_nginx": ("nginx GET 30 MiB", nbase + "/big.bin", lua_dl, c, npids, (), None),
            "small_kiln": ("kiln GET 10 KiB", "%s/v1/files/%s/content" % (kbase, small_id),
                           lua_dl, c, kpids, (), None),
            "small_nginx": ("nginx GET 10 KiB", nbase + "/small.bin", lua_dl, c, npids, (),
                            None),
            "render": ("kiln POST /v1/render", kbase + "/v1/render", lua_render,
                       RENDER_CONNECTIONS, kpids, ["--latency"],
                       dict(os.environ, KILN_BENCH_BODY=body)),
        }
        # Kiln first in odd rounds, nginx first in even ones, so a burst of load from
        # elsewhere does not always fall on the same server.
        order = [["big_kiln", "big_nginx"], ["small_kiln", "small_nginx"], ["render"]]
        for i in range(rounds):
            for pair in order:
                for key in (pair if i % 2 == 0 else pair[::-1]):
                    label, url, script, conns, pids, extra, env = runs[key]
                    results.setdefault(key, []).append(
                        run_wrk(label, url, script, conns, seconds, pids, extra, env))
    except BenchError as e:
        print("bench: serve: FAILED: %s" % e)
        return 1
    finally:
        stop_group(nginx_proc)
        stop_group(kiln_proc)
        shutil.rmtree(tmp, ignore_errors=True)
    load_after = os.getloadavg()

    nginx_v = version(["nginx", "-v"], r"nginx/(\S+)")
    wrk_v = version(["wrk", "-v"], r"wrk (\S+)")
    rows = [
        ("kiln, GET 30 MiB file", "big_kiln", None),
        ("nginx %s, same file" % nginx_v, "big_nginx", None),
        ("kiln, GET 10 KiB file", "small_kiln", None),
        ("nginx %s, same file" % nginx_v, "small_nginx", None),
        ("kiln, POST /v1/render (xlsx, %d x 5)" % RENDER_ROWS, "render", 201),
    ]
    failed = False
    best = {}
    for key, rs in results.items():
        for r in rs:
            failed |= bool(errors_of(r, 201 if key == "render" else None))
        best[key] = max(rs, key=lambda r: r["rps"])
    print()
    print("| serve (wrk, loopback, %d s%s) | conns | req/s | MiB/s | p50 ms | p99 ms | "
          "server cpu us/req | wrk cpu s | errors |"
          % (seconds, ", best of %d" % rounds if rounds > 1 else ""))
    print("|------|------:|------:|------:|------:|------:|------:|------:|------|")
    for label, key, expect in rows:
        r = best[key]
        err = "; ".join(e for e in (errors_of(x, expect) for x in results[key]) if e)
        print("| %s | %d | %.1f | %.1f | %s | %s | %.0f | %.2f | %s |"
              % (label, DOWNLOAD_CONNECTIONS if expect is None else RENDER_CONNECTIONS,
                 r["rps"], r["mib_s"], ms(r["latency_us"]["p50"]), ms(r["latency_us"]["p99"]),
                 r["server_cpu"] / max(r["requests"], 1) * 1e6, r["wrk_cpu"], err or "none"))
    ratio = best["big_kiln"]["mib_s"] / best["big_nginx"]["mib_s"]
    all_ratios = [k["mib_s"] / n["mib_s"] for k, n in zip(results["big_kiln"],
                                                          results["big_nginx"])]
    cpu_per_req = {k: r["server_cpu"] / max(r["requests"], 1) for k, r in best.items()}
    small_ratio = best["small_kiln"]["rps"] / best["small_nginx"]["rps"]
    rl = best["render"]["latency_us"]
    print()
    print("wrk %s -t%d; kiln serve --threads %d (its default: the CPUs, at least 2) and %d "
          "nginx worker processes (sendfile, tcp_nopush) serving a %s of kiln's stored file; "
          "wrk and both servers share %d CPUs. "
          "%sMiB/s: bytes received (headers included) / wrk's duration. server cpu: user + "
          "system time of the server's processes during the run / requests. Load average: "
          "%.2f before, %.2f after."
          % (wrk_v, WRK_THREADS, workers, workers, " and ".join(sorted(how)),
             os.cpu_count() or 0,
             "Best of %d rounds (by req/s), kiln and nginx taking turns to go first. " % rounds
             if rounds > 1 else "", load_before[0], load_after[0]))
    print("render: %d connections (kiln's --max-jobs + --queue is more, so no 429); every "
          "reply's status counted: %s; latency p50 %s ms, p90 %s ms, p99 %s ms, max %s ms."
          % (RENDER_CONNECTIONS, json.dumps(best["render"]["statuses"], sort_keys=True),
             ms(rl["p50"]), ms(rl["p90"]), ms(rl["p99"]), ms(rl["max"])))
    print("30 MiB file: server cpu per request kiln / nginx %.2fx. 10 KiB file: kiln / nginx "
          "requests/s %.2fx, server cpu per request %.2fx."
          % (cpu_per_req["big_kiln"] / cpu_per_req["big_nginx"], small_ratio,
             cpu_per_req["small_kiln"] / cpu_per_req["small_nginx"]))
    print()
    print("target: kiln's 30 MiB download >= %.1fx nginx's throughput -> %.2fx (%s)%s"
          % (TARGET, ratio, "met" if ratio >= TARGET else "NOT MET",
             "; round by round: " + ", ".join("%.2fx" % x for x in all_ratios)
             if rounds > 1 else ""))

    record = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(), "load_before": load_before, "load_after": load_after,
        "kiln": kiln, "nginx": nginx_v, "wrk": wrk_v, "nginx_workers": workers,
        "nginx_files": sorted(how),
        "seconds": seconds, "big_bytes": BIG_BYTES, "small_bytes": SMALL_BYTES,
        "render_rows": RENDER_ROWS, "rounds": rounds, "target": TARGET,
        "download_ratio": ratio, "download_ratios_by_round": all_ratios,
        "small_rps_ratio": small_ratio, "results": results,
    }
    path = os.path.join(OUT, "serve.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(record, f, indent=1)
    print("raw figures: %s" % os.path.relpath(path, REPO))
    return 1 if failed else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kiln", default=os.environ.get("KILN_BIN", os.path.join(REPO, "bin/kiln")))
    ap.add_argument("--duration", type=int, default=DURATION, help="seconds of each wrk run")
    ap.add_argument("--rounds", type=int, default=ROUNDS,
                    help="times each is measured; the best (by requests/s) counts")
    args = ap.parse_args()
    if args.duration < 1 or args.rounds < 1:
        ap.error("need --duration >= 1 and --rounds >= 1")
    return run_serve(args)


if __name__ == "__main__":
    sys.exit(main())
