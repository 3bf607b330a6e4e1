"""The `run` benchmark (`make bench BENCH=run`; see bench/README.md): what the sandbox of
`kiln run` costs, against the same code run bare and under bubblewrap.

Two workloads, each run four ways, interleaved (one run of each way in turn, so a
burst of background load falls on all of them alike):

- bare python3: `/usr/bin/python3 -c CODE` with this process's environment (root's
  matplotlib cache, warm);
- bare python3, cold cache: the same with MPLCONFIGDIR set to a fresh empty directory
  each run, so matplotlib rebuilds its font list (0.1 to 0.3 s here): what a sandbox with
  an empty /tmp would pay;
- bubblewrap: `bwrap` with the isolation closest to Kiln's that it offers (bwrap_cmd
  below), and Kiln's own seccomp program (exported by bench/seccomp_export.c);
- `kiln run -n -c CODE`.

Kiln copies the font list it made once (exec/fontcache.c, in $KILN_CACHE_DIR or
/var/cache/kiln) into each job's /tmp/.matplotlib, so its jobs do not rebuild it; bwrap
gets a copy of the same list bound at /tmp/.matplotlib each run, and the overheads are
taken against bare python3 with its warm cache. (With a kiln that gives its jobs no list,
checked with a probe job first, bwrap gets none either and the pandas overheads are taken
against bare python3 with a cold cache.)

Every run must succeed (exit 0; Kiln's JSON status "ok"): a failed run is reported,
never timed. Prints the median, min and p90 wall time of each, the overhead of each
sandbox (its median minus the bare run's named above), and overhead(kiln) / overhead(bwrap) against the
issue's target (kiln within 1.5x of bubblewrap's). It reports; it never fails on a timing.
"""
import glob
import json
import math
import os
import shutil
import statistics
import subprocess
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
OUT = os.path.join(HERE, "out")
PYTHON = "/usr/bin/python3"
TARGET = 1.5
PROBE = ("import glob\n"
         "print('seeded' if glob.glob('/tmp/.matplotlib/fontlist-*.json') else 'empty')\n")

WORKLOADS = [
    ("pass", "python3 -c pass", "pass"),
    ("pandas", "import pandas, matplotlib; import matplotlib.pyplot as plt",
     "import pandas, matplotlib\nimport matplotlib.pyplot as plt\n"),
]

# What `kiln run` gives the job (docs/run.md, "Inside the sandbox"), for bwrap to match.
SANDBOX_ENV = {
    "PATH": "/usr/bin:/bin", "HOME": "/tmp", "TMPDIR": "/tmp",
    "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "MPLBACKEND": "Agg",
    "MPLCONFIGDIR": "/tmp/.matplotlib", "PYTHONPATH": "/opt/kiln/lib",
    "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1", "KILN_JOB_DIR": "/mnt/data",
    "USER": "kiln",
}
# The parts of /usr exec/mount.c shows (usr_binds).
USR_BINDS = ["bin", "sbin", "lib", "lib32", "lib64", "libx32", "libexec", "share"]
# The /etc entries exec/mount.c binds read-only (etc_binds), and the files it writes.
ETC_BINDS = ["ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "fonts",
             "matplotlibrc", "mime.types", "localtime", "timezone", "python3", "python3.11",
             "bash.bashrc", "inputrc", "nsswitch.conf", "protocols", "services", "terminfo"]
ETC_WRITTEN = {
    "passwd": "root:x:0:0:root:/:/usr/sbin/nologin\n"
              "kiln:x:1000:1000:Kiln job:/tmp:/bin/bash\n"
              "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
    "group": "root:x:0:\nkiln:x:1000:\nnogroup:x:65534:\n",
    "hosts": "127.0.0.1\tlocalhost kiln\n::1\tlocalhost ip6-localhost\n",
    "hostname": "kiln\n",
}
TMP_BYTES = 64 << 20  # kiln run's --tmp default

FOOTNOTE = """\
What bwrap does here and Kiln also does: user, mount, PID, network, IPC, UTS and cgroup
namespaces; uid/gid 1000 with no capabilities; a new session; a read-only /usr and the
same /etc entries; a private /proc, a minimal /dev, a 64 MiB /tmp; the job directory at
/mnt/data as the working directory; the same environment;
%s.
What Kiln does and bwrap does not (so it is not in bwrap's time): a cgroup per job (made,
limited: memory, pids, CPU; read for CPU time and peak memory; removed), the rlimits
(RLIMIT_FSIZE, NOFILE, NPROC, CPU), the job directory as a size-limited tmpfs with the
program written into /opt/kiln (bwrap binds a host directory), its own init reaping and
killing every process left at the end, stdout/stderr capture with caps, the wall and CPU
clocks, collecting /mnt/data's files (openat2, fstat, SHA-256 each) and printing the JSON
result."""


def build_seccomp_export(kiln_lib):
    """Build bench/seccomp_export.c against kiln_lib and write Kiln's seccomp program (the
    code profile) as BPF; returns the .bpf path, or None with the reason printed."""
    src = os.path.join(HERE, "seccomp_export.c")
    exe = os.path.join(OUT, "seccomp_export")
    bpf = os.path.join(OUT, "kiln_code.bpf")
    if not os.path.exists(kiln_lib):
        print("bench: no %s (KILN_LIB): bwrap runs without seccomp" % kiln_lib)
        return None
    newest = max(os.path.getmtime(src), os.path.getmtime(kiln_lib))
    if not os.path.exists(exe) or os.path.getmtime(exe) < newest:
        flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libseccomp", "jansson"],
                               check=True, capture_output=True, text=True).stdout.split()
        cmd = [os.environ.get("CC", "cc"), "-O2", "-std=c11", "-D_GNU_SOURCE", "-Wall",
               "-Wextra", "-Werror", "-I", REPO, "-o", exe, src, kiln_lib] + flags
        print("bench: " + " ".join(cmd))
        subprocess.run(cmd, check=True)
    subprocess.run([exe, bpf], check=True)
    return bpf


def bwrap_version():
    try:
        return subprocess.run(["bwrap", "--version"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def kiln_font_list():
    """The newest font list Kiln keeps for its jobs (exec/fontcache.c), or None."""
    base = os.environ.get("KILN_CACHE_DIR", "")
    base = base if base.startswith("/") else "/var/cache/kiln"
    found = glob.glob(os.path.join(base, "matplotlib-*", "fontlist-*.json"))
    return max(found, key=os.path.getmtime) if found else None


def bwrap_cmd(etc_dir, job_dir, mpl_dir, seccomp_fd, code):
    cmd = ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--cap-drop", "ALL",
           "--uid", "1000", "--gid", "1000", "--hostname", "kiln"]
    for name in USR_BINDS:
        path = "/usr/" + name
        if os.path.islink(path):
            cmd += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            cmd += ["--ro-bind", path, path]
    for name in ("bin", "lib", "lib64", "sbin"):
        target = os.readlink("/" + name) if os.path.islink("/" + name) else None
        if target:
            cmd += ["--symlink", target, "/" + name]
        elif os.path.isdir("/" + name):
            cmd += ["--ro-bind", "/" + name, "/" + name]
    for name in ETC_BINDS:
        if os.path.lexists("/etc/" + name):
            cmd += ["--ro-bind", "/etc/" + name, "/etc/" + name]
    for name in ETC_WRITTEN:
        cmd += ["--ro-bind", os.path.join(etc_dir, name), "/etc/" + name]
    cmd += ["--ro-bind", os.path.join(REPO, "exec", "python"), "/opt/kiln/lib",
            "--proc", "/proc", "--dev", "/dev",
            "--size", str(TMP_BYTES), "--tmpfs", "/tmp",
            "--bind", job_dir, "/mnt/data", "--chdir", "/mnt/data", "--clearenv"]
    if mpl_dir:
        cmd += ["--bind", mpl_dir, "/tmp/.matplotlib"]
    for k, v in SANDBOX_ENV.items():
        cmd += ["--setenv", k, v]
    if seccomp_fd is not None:
        cmd += ["--seccomp", str(seccomp_fd)]
    return cmd + [PYTHON, "-c", code]


def timed(cmd, env=None, stdin=subprocess.DEVNULL, pass_fds=()):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, env=env, stdin=stdin, capture_output=True, pass_fds=pass_fds)
    return time.perf_counter() - t0, p


def tail(p):
    lines = (p.stderr or p.stdout).decode("utf-8", "replace").strip().splitlines()
    return " | ".join(lines[-3:])


class Way:
    """One way of running the code: its label and its timed runs."""

    def __init__(self, key, label):
        self.key, self.label, self.times, self.error = key, label, [], None
        self.inner = []  # kiln only: the JSON's wall_seconds


def run_once(way, code, kiln, etc_dir, bpf, font_list):
    """Time one run of code the given way; returns the error, or None."""
    if way.key == "bare":
        wall, p = timed([PYTHON, "-c", code])
    elif way.key == "cold":
        t0 = time.perf_counter()
        mpl = tempfile.mkdtemp(prefix="mpl-", dir=OUT)
        env = dict(os.environ, MPLCONFIGDIR=mpl)
        _, p = timed([PYTHON, "-c", code], env=env)
        shutil.rmtree(mpl)
        wall = time.perf_counter() - t0
    elif way.key == "bwrap":
        # The job directory and the font list's copy are made and removed inside the
        # timed span: Kiln's time includes its own. Both are owned by root, which bwrap
        # maps to the job's uid 1000: writable inside.
        t0 = time.perf_counter()
        job = tempfile.mkdtemp(prefix="job-", dir=OUT)
        mpl = None
        if font_list:
            mpl = tempfile.mkdtemp(prefix="mpl-", dir=OUT)
            shutil.copy(font_list, mpl)
        # bwrap reads the program from the descriptor to its end: a fresh one each run.
        fd = os.open(bpf, os.O_RDONLY) if bpf else None
        try:
            _, p = timed(bwrap_cmd(etc_dir, job, mpl, fd, code), pass_fds=(fd,) if fd is not None else ())
        finally:
            if fd is not None:
                os.close(fd)
            shutil.rmtree(job)
            if mpl:
                shutil.rmtree(mpl)
        wall = time.perf_counter() - t0
    else:
        wall, p = timed([kiln, "run", "-n", "-c", code])
        try:
            result = json.loads(p.stdout)
        except ValueError:
            return "exit %d, no JSON: %s" % (p.returncode, tail(p))
        if p.returncode != 0 or result.get("status") != "ok":
            return "exit %d, status %s: %s" % (p.returncode, result.get("status"),
                                               result.get("message"))
        way.inner.append(result["wall_seconds"])
    if p.returncode != 0:
        return "exit %d: %s" % (p.returncode, tail(p))
    way.times.append(wall)
    return None


def p90(xs):
    s = sorted(xs)
    return s[max(0, math.ceil(0.9 * len(s)) - 1)]


def ms(x):
    return "%.1f" % (x * 1000) if x is not None else "-"


def run_workload(key, title, code, runs, kiln, etc_dir, bpf, font_list, bwrap_label):
    """Time one workload every way; returns (a way failed, the overhead ratio or None)."""
    ways = [Way("bare", "bare python3 (warm cache)"), Way("cold", "bare python3 (cold cache)"),
            Way("bwrap", bwrap_label), Way("kiln", "kiln run -n")]
    print("bench: run: %s, %d runs of each way, interleaved ..." % (title, runs), flush=True)
    # One untimed round first: the page cache, and Kiln's font list if it has none yet.
    for w in ways:
        w.error = run_once(w, code, kiln, etc_dir, bpf, font_list)
    for w in ways:
        w.times, w.inner = [], []
    for _ in range(runs):
        for w in ways:
            if w.error is None:
                w.error = run_once(w, code, kiln, etc_dir, bpf, font_list)
    print()
    print("%s (%d runs each)" % (title, runs))
    print("%-34s %10s %8s %8s %12s %9s" % ("way", "median ms", "min ms", "p90 ms", "overhead ms",
                                             "(of min)"))
    # Against the bare run that does what the sandboxes do about matplotlib's font list.
    b = ways[0] if font_list or key != "pandas" else ways[1]
    base = statistics.median(b.times) if b.times and not b.error else None
    base_min = min(b.times) if base is not None else None
    med, low = {}, {}
    for w in ways:
        if w.error:
            print("%-34s FAILED: %s" % (w.label, w.error))
            continue
        med[w.key], low[w.key] = statistics.median(w.times), min(w.times)
        sandbox = base is not None and w.key in ("bwrap", "kiln")
        print("%-34s %10s %8s %8s %12s %9s" % (
            w.label, ms(med[w.key]), ms(low[w.key]), ms(p90(w.times)),
            ms(med[w.key] - base if sandbox else None),
            ms(low[w.key] - base_min if sandbox else None)))
    kiln_w = ways[3]
    if kiln_w.inner and not kiln_w.error:
        print("%-34s %10s %8s %8s" % ("  kiln JSON wall_seconds (inside)",
                                      ms(statistics.median(kiln_w.inner)),
                                      ms(min(kiln_w.inner)), ms(p90(kiln_w.inner))))
    failed = any(w.error for w in ways)
    if base is None or "bwrap" not in med or "kiln" not in med:
        return failed, None
    ob, ok = med["bwrap"] - base, med["kiln"] - base
    if key == "pandas" and "cold" in med and "bare" in med:
        print("(bare, cold cache minus warm: %+.1f ms: matplotlib rebuilding its font list, "
              "which %s)" % ((med["cold"] - med["bare"]) * 1000,
                             "neither sandbox does here" if font_list else "both sandboxes do"))
    if ob <= 0 or ok <= 0:
        print("target: overhead(kiln) %s ms, overhead(bwrap) %s ms: no ratio, one is not above "
              "the noise (target: kiln within %.1fx of bwrap)" % (ms(ok), ms(ob), TARGET))
        lb, lk = low["bwrap"] - base_min, low["kiln"] - base_min
        if lb > 0 and lk > 0:
            print("(of the minimums, steadier on a loaded machine: %s / %s ms = %.2fx)"
                  % (ms(lk), ms(lb), lk / lb))
        return failed, None
    ratio = ok / ob
    print("target: overhead(kiln) / overhead(bwrap) = %s / %s ms = %.2fx (target <= %.1fx: %s)"
          % (ms(ok), ms(ob), ratio, TARGET, "met" if ratio <= TARGET else "**not met**"))
    lb, lk = low["bwrap"] - base_min, low["kiln"] - base_min
    if lb > 0 and lk > 0:
        print("(of the minimums, steadier on a loaded machine: %s / %s ms = %.2fx)"
              % (ms(lk), ms(lb), lk / lb))
    return failed, ratio


def run_run(args):
    """The run workload; returns the exit status."""
    os.makedirs(OUT, exist_ok=True)
    if os.geteuid() != 0:
        print("bench: run: `kiln run` needs root")
        return 1
    version = bwrap_version()
    if not version:
        print("bench: run: no bwrap (Debian bubblewrap)")
        return 1
    kiln = os.path.abspath(args.kiln)
    bpf = build_seccomp_export(args.kiln_lib)
    bwrap_label = version + (" + Kiln's seccomp" if bpf else ", no seccomp")
    etc_dir = os.path.join(OUT, "run_etc")
    os.makedirs(etc_dir, exist_ok=True)
    for name, text in ETC_WRITTEN.items():
        with open(os.path.join(etc_dir, name), "w") as f:
            f.write(text)
    with open("/proc/loadavg") as f:
        load = f.read().split()[0]
    print("bench: run: %s, %s, %d cores, load average %s" % (kiln, version, os.cpu_count(), load))
    # Does this kiln give its jobs a font list? (Its first Python job makes the list if
    # there is none.) bwrap gets one only if Kiln's jobs do.
    probe = subprocess.run([kiln, "run", "-n", "-c", PROBE], capture_output=True)
    try:
        seeded = json.loads(probe.stdout)["stdout"]["text"].strip() == "seeded"
    except (ValueError, KeyError, TypeError):
        print("bench: run: kiln run failed (exit %d): %s" % (probe.returncode, tail(probe)))
        return 1
    font_list = kiln_font_list() if seeded else None
    print("bare python3 (warm cache) uses root's matplotlib cache; bare python3 (cold cache) a "
          "fresh empty")
    print("MPLCONFIGDIR each run, so matplotlib rebuilds its font list. Both sandboxes start "
          "with an empty /tmp,")
    if font_list:
        print("into which Kiln copies the font list it made once (%s);" % font_list)
        print("bwrap gets a fresh copy of the same list bound at /tmp/.matplotlib each run. "
              "Overheads are against")
        print("bare python3 (warm cache).")
    else:
        print("and this kiln gives its jobs no font list: both rebuild it in the pandas job, "
              "so its overheads")
        print("are against bare python3 (cold cache).")
    status = 0
    ratios = []
    for (key, title, code), runs in zip(WORKLOADS, (args.runs_pass, args.runs_pandas)):
        failed, ratio = run_workload(key, title, code, runs, kiln, etc_dir, bpf, font_list,
                                     bwrap_label)
        status |= 1 if failed else 0
        ratios.append((key, ratio))
    print()
    print("summary: overhead(kiln) / overhead(bwrap): " + ", ".join(
        "%s %s" % (k, "-" if r is None else "%.2fx (%s)" % (r, "met" if r <= TARGET else "not met"))
        for k, r in ratios) + " (target <= %.1fx)" % TARGET)
    print()
    print(FOOTNOTE % ("the same seccomp program (Kiln's own, exported by bench/seccomp_export.c)"
                      if bpf else "no seccomp filter in bwrap (Kiln's could not be exported)"))
    return status
