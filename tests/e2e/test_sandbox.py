"""`kiln run` against attacks and faults (issue 6, item 5): a table of cases, each
with the outcome it must produce.

Every case runs untrusted code through the real binary ($KILN_BIN) and checks
  - the result: status (and exit_code / signal / timeout where it matters), the
    exit status of `kiln run` (0 for "ok", 1 for any other status), stdout/stderr
    accounting, the files and refusals listed;
  - what the job itself saw, from the PROBE lines it printed (BLOCKED / ESCAPED);
  - the host, after every case: the canary files the test created are unchanged and
    never appeared in the result or the out dir (neither their text nor its
    SHA-256), no line of the real /etc/shadow (nor its SHA-256) appeared, the
    listeners the test started accepted nothing, the host `sleep` the test started
    is alive, /etc/passwd, /etc/shadow, /etc/hosts, core_pattern and the host name
    are unchanged, no file the attack aimed at appeared on the host, no process
    of a sandbox uid (>= 0x40000000) survives, no mount appeared in the test's
    mount namespace, no kiln-* job directory or cgroup is left behind.

SAFETY. These tests run as root. Each attack is written so that it harms nothing
even if the sandbox fails: values read are written back unchanged, writes aim at
files and names the test created (or fresh names carrying the test's random
token, which the test removes), connections go to listeners the test started, the
only process ever signalled from inside is a `sleep` the test started, fork bombs
are bounded (each process forks at most a few times), no raw packet is sent and
ptrace only ever aims at the job's own child. Never run these codes outside the
sandbox. A weak sandbox shows up as a failed test, not as a damaged host.

Each job prints "PROBE <name> BLOCKED|ESCAPED <detail>" lines; a probe's detail
never holds host data (only errno names, counts and hashes).

The slow cases carry "slow" in their id (`-k "not slow"` leaves them out); they
still run in the default suite.
"""
import glob
import hashlib
import json
import os
import platform
import re
import select
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import KILN_BIN, REPO, describe

MiB = 1 << 20
GiB = 1 << 30
SANDBOX_UID_MIN = 0x40000000        # every host uid a job maps to is at least this
DEFAULT_WALL = 20                   # --timeout given to a case that sets none

if platform.machine() != "x86_64":
    # The seccomp cases call syscalls by their x86_64 numbers.
    pytestmark = pytest.mark.skip(reason="the sandbox attack table is written for x86_64")


# =========================================================================== host state

def _read(path, mode="rb"):
    try:
        with open(path, mode) as fh:
            return fh.read()
    except OSError:
        return None


def _sha(data):
    return hashlib.sha256(data).hexdigest() if data is not None else None


def _proc_status(pid):
    """{field: value} of /proc/PID/status, or None when the process is gone."""
    text = _read("/proc/%s/status" % pid, "r")
    if text is None:
        return None
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        out[k] = v.strip()
    return out


def _all_pids():
    return [int(p) for p in os.listdir("/proc") if p.isdigit()]


def _ppid(pid):
    st = _proc_status(pid)
    return int(st["PPid"]) if st and "PPid" in st else 0


def _comm(pid):
    c = _read("/proc/%d/comm" % pid, "r")
    return c.strip() if c else ""


def sandbox_pids():
    """{pid: "uid comm"} of every process with a uid in the sandbox range."""
    out = {}
    for pid in _all_pids():
        st = _proc_status(pid)
        if not st or "Uid" not in st:
            continue
        uids = [int(u) for u in st["Uid"].split()]
        if max(uids) >= SANDBOX_UID_MIN:
            out[pid] = "uid %d %s" % (max(uids), st.get("Name", "?"))
    return out


def supervisor_of_uid(desc):
    """The supervisor pid a sandbox uid was derived from (exec/user.c:
    host uid = 0x40000000 + 2 * supervisor pid, +1 for the job's uid 1000)."""
    uid = int(desc.split()[1])
    return (uid - SANDBOX_UID_MIN) // 2


class SupervisorWatch:
    """Notes every child of a `kiln run` process while it runs: its supervisor(s).
    The sandbox uids, job directory (kiln-job-PID-*) and cgroups (kiln-PID*) are
    all named after the supervisor's pid, so what a case leaves behind can be told
    from what another session's concurrent run has."""

    def __init__(self, pid):
        self.pid = pid
        self.found = set()
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        path = "/proc/%d/task/%d/children" % (self.pid, self.pid)
        while not self.stop.is_set():
            text = _read(path, "r")
            if text is None:
                break
            self.found.update(int(x) for x in text.split())
            time.sleep(0.002)

    def close(self):
        self.stop.set()
        self.thread.join(2)
        return self.found


def kiln_pids():
    """Live processes named kiln (other runs: another session's, or job A of a case)."""
    return {pid for pid in _all_pids() if _comm(pid).startswith("kiln")}


def _under_live_kiln(pid, kilns):
    seen = 0
    while pid > 1 and seen < 64:
        pid = _ppid(pid)
        if pid in kilns:
            return True
        seen += 1
    return False


JOB_DIR_GLOBS = ["/tmp/kiln-*", "/var/tmp/kiln-*", "/run/kiln*", "/dev/shm/kiln-*"]


def kiln_dirs():
    return {p for g in JOB_DIR_GLOBS for p in glob.glob(g) if os.path.isdir(p) and not os.path.islink(p)}


def kiln_cgroups():
    found = set()
    for ctrl in ("memory", "pids", "cpuacct", "cpu", "unified", "systemd"):
        top = os.path.join("/sys/fs/cgroup", ctrl)
        if not os.path.isdir(top):
            continue
        base_depth = top.count("/")
        for root, dirs, _files in os.walk(top):
            if root.count("/") - base_depth >= 6:
                dirs[:] = []
            for d in dirs:
                if d.startswith("kiln") and d != "kiln-supervisor":   # the runner's own v2 leaf stays
                    found.add(os.path.join(root, d))
    # a v2 root mounted at /sys/fs/cgroup itself
    if os.path.isfile("/sys/fs/cgroup/cgroup.controllers"):
        for root, dirs, _files in os.walk("/sys/fs/cgroup"):
            if root.count("/") > 9:
                dirs[:] = []
            for d in dirs:
                if d.startswith("kiln") and d != "kiln-supervisor":
                    found.add(os.path.join(root, d))
    return found


def mounts():
    text = _read("/proc/self/mountinfo", "r") or ""
    # mount ids change; compare what is mounted where
    return {" ".join(line.split()[4:]) for line in text.splitlines()}


def host_fingerprint():
    return {
        "/etc/passwd": _sha(_read("/etc/passwd")),
        "/etc/shadow": _sha(_read("/etc/shadow")),
        "/etc/hosts": _sha(_read("/etc/hosts")),
        "/etc/hostname": _sha(_read("/etc/hostname")),
        "core_pattern": _read("/proc/sys/kernel/core_pattern"),
        "hostname": socket.gethostname(),
    }


def host_free_bytes(path="/tmp"):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def shadow_lines():
    data = _read("/etc/shadow") or b""
    return [ln for ln in data.splitlines() if ln.strip()]


class Snapshot:
    def __init__(self):
        self.pids = sandbox_pids()
        self.dirs = kiln_dirs()
        self.cgroups = kiln_cgroups()
        self.mounts = mounts()
        self.nprocs = len(_all_pids())
        self.fingerprint = host_fingerprint()
        self.free = host_free_bytes()

    def leftovers(self):
        now_pids = sandbox_pids()
        return {
            "processes": {p: d for p, d in now_pids.items() if p not in self.pids},
            "job dirs": kiln_dirs() - self.dirs,
            "cgroups": kiln_cgroups() - self.cgroups,
            "mounts": mounts() - self.mounts,
        }


_DIR_PID = re.compile(r"^kiln-job-(\d+)-")
_CG_PID = re.compile(r"^kiln-(\d+)(-|$)")


def _ours(left, sups):
    """The part of the leftovers that belongs to the supervisors `sups`."""
    def named(path, pattern):
        m = pattern.match(os.path.basename(path))
        return bool(m) and int(m.group(1)) in sups
    return {
        "processes": {p: d for p, d in left["processes"].items() if supervisor_of_uid(d) in sups},
        "job dirs": {d for d in left["job dirs"] if named(d, _DIR_PID)},
        "cgroups": {c for c in left["cgroups"] if named(c, _CG_PID)},
        "mounts": left["mounts"],
    }


def assert_host_clean(before, sups=None, grace=5.0, foreign_wait=40.0):
    """Nothing the job made may outlive it: processes, job dirs, cgroups, mounts.

    With the supervisors' pids known (SupervisorWatch), only what is named after
    them counts. Without, another run of kiln (another session's test) may be
    alive at the same moment; its processes sit under a live kiln process. Ours
    has ended, so we wait for such runs to end before judging what is left."""
    deadline = time.monotonic() + grace
    left = before.leftovers()
    if sups:
        left = _ours(left, sups)
    while any(left.values()) and time.monotonic() < deadline:
        time.sleep(0.1)
        left = before.leftovers()
        if sups:
            left = _ours(left, sups)
    if any(left.values()) and kiln_pids() and not sups:
        deadline = time.monotonic() + foreign_wait
        while any(left.values()) and kiln_pids() and time.monotonic() < deadline:
            time.sleep(0.25)
            left = before.leftovers()
        kilns = kiln_pids()
        if kilns and left["processes"]:
            left["processes"] = {p: d for p, d in left["processes"].items()
                                 if not _under_live_kiln(p, kilns)}
        if kilns:
            # still someone else's run: their directories and groups are theirs
            left["job dirs"] = set()
            left["cgroups"] = set()
    assert not left["processes"], "processes of a sandbox uid survived the job: %r" % left["processes"]
    assert not left["mounts"], "new mounts in the host mount namespace: %r" % sorted(left["mounts"])
    assert not left["job dirs"], "job directories left behind: %r" % sorted(left["job dirs"])
    assert not left["cgroups"], "cgroups left behind: %r" % sorted(left["cgroups"])


# =========================================================================== listeners

class Listeners:
    """Sockets the test listens on: TCP on 127.0.0.1 (and on the host's own
    address when it has one), a Unix socket at a host path, an abstract Unix
    socket. Every connection accepted is counted (and closed at once)."""

    def __init__(self, hostdir, token):
        self.socks = {}
        self.accepted = {}
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.bind(("127.0.0.1", 0))
        self.port = s.getsockname()[1]
        self.socks["tcp 127.0.0.1"] = s
        self.host_ip, self.port2 = "", 0
        try:
            probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            probe.connect(("192.0.2.1", 9))    # sends nothing: finds the outgoing address
            ip = probe.getsockname()[0]
            probe.close()
            if ip and not ip.startswith("127."):
                s2 = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                s2.bind((ip, 0))
                self.host_ip, self.port2 = ip, s2.getsockname()[1]
                self.socks["tcp host ip"] = s2
        except OSError:
            pass
        self.unix_path = str(Path(hostdir) / "s")      # short: sun_path holds 108 bytes
        u = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        u.bind(self.unix_path)
        self.socks["unix path"] = u
        self.abstract = "kiln-test-" + token
        a = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        a.bind("\0" + self.abstract)
        self.socks["unix abstract"] = a
        for name, sock in self.socks.items():
            sock.listen(16)
            sock.setblocking(False)
            self.accepted[name] = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def _loop(self):
        by_sock = {s: n for n, s in self.socks.items()}
        while not self.stop.is_set():
            ready, _, _ = select.select(list(by_sock), [], [], 0.05)
            for s in ready:
                try:
                    conn, _ = s.accept()
                    conn.close()
                    self.accepted[by_sock[s]] += 1
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.thread.join(2)
        for s in self.socks.values():
            s.close()


# =========================================================================== context

class Ctx:
    """Everything one case needs on the host: a token, canaries, listeners, a sleep."""

    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.token = os.urandom(8).hex()
        self.secret = "kiln-canary-" + os.urandom(16).hex()   # never given to the job
        self.secret2 = "kiln-jobA-" + os.urandom(16).hex()
        self.out = tmp_path / "out"
        # Host things the job aims at live in a world-accessible directory (and are
        # world-writable) so that only the sandbox, never file permissions, stops it.
        self.hostdir = Path(tempfile.mkdtemp(prefix="kt-", dir="/tmp"))
        os.chmod(self.hostdir, 0o777)
        self.canary = self.hostdir / ("canary-" + self.token + ".txt")
        self.canary.write_text("kiln canary " + self.secret + "\n")
        os.chmod(self.canary, 0o666)
        self.repo_canary = REPO / (".kiln-test-canary-" + self.token)
        self.repo_canary.write_text("kiln repo canary " + self.secret + "\n")
        os.chmod(self.repo_canary, 0o666)
        self.canaries = {}
        for p in (self.canary, self.repo_canary):
            st = os.lstat(p)
            self.canaries[p] = (p.read_bytes(), st.st_mtime_ns, st.st_mode, st.st_uid, st.st_ino)
        self.listeners = Listeners(self.hostdir, self.token)
        self.sleep = subprocess.Popen(["sleep", "300"])
        self.probes = {}
        self.supervisors = set() # pids of the supervisors of this case's runs
        self.extra = {}          # hooks keep their things here
        self.code_subst = {}     # more @NAME@ substitutions, set by a setup hook
        self.proc = None
        self.elapsed = None

    def subst(self, code):
        table = {
            "@TOKEN@": self.token,
            "@CANARY@": str(self.canary),
            "@CANARY_DIR@": str(self.canary.parent),
            "@REPO_CANARY@": str(self.repo_canary),
            "@REPO@": str(REPO),
            "@PORT@": str(self.listeners.port),
            "@HOST_IP@": self.listeners.host_ip,
            "@PORT2@": str(self.listeners.port2),
            "@UNIX_PATH@": self.listeners.unix_path,
            "@ABSTRACT@": self.listeners.abstract,
            "@HOST_PID@": str(self.sleep.pid),
            "@OUT_LEN@": str(len(str(self.out.resolve()))),   # what kiln run's realpath gives
        }
        table.update(self.code_subst)
        for k, v in table.items():
            code = code.replace(k, v)
        return code

    def close(self):
        for fd in self.extra.get("pty", ()):
            os.close(fd)
        self.listeners.close()
        if self.sleep.poll() is None:
            self.sleep.kill()          # the test's own sleep
        self.sleep.wait()
        try:
            self.repo_canary.unlink()
        except FileNotFoundError:
            pass
        shutil.rmtree(self.hostdir, ignore_errors=True)


# =========================================================================== running a job

def parse_result(proc):
    text = proc.stdout.decode("utf-8", "replace")
    try:
        r = json.loads(text)
    except ValueError:
        pytest.fail("kiln run did not print one JSON object: " + describe(proc))
    assert isinstance(r, dict), "kiln run printed JSON that is not an object: " + describe(proc)
    return r


def parse_probes(r):
    probes = {}
    for line in r.get("stdout", {}).get("text", "").splitlines():
        if line.startswith("PROBE "):
            parts = line.split(" ", 3)
            if len(parts) >= 3:
                probes[parts[1]] = (parts[2], parts[3] if len(parts) > 3 else "")
    return probes


def short(r):
    """The result for an assertion message, streams cut short."""
    r2 = dict(r)
    for k in ("stdout", "stderr"):
        if isinstance(r2.get(k), dict):
            s = dict(r2[k])
            t = s.get("text", "")
            if len(t) > 2500:
                s["text"] = t[:1200] + " [...] " + t[-1200:]
            r2[k] = s
    for k in ("files", "refused"):
        if isinstance(r2.get(k), list) and len(r2[k]) > 12:
            r2[k] = r2[k][:12] + ["... %d more" % (len(r2[k]) - 12)]
    return json.dumps(r2, indent=1)[:8000]


def run_job(ctx, code, language="python", args=(), timeout=None, env_extra=None, out=True, pty=False):
    """Run `kiln run` with the code; returns (result dict, CompletedProcess, seconds).
    pty=True: kiln runs in a new session whose controlling terminal is a pty the
    test opened (as when a user runs it from a terminal)."""
    args = list(args)
    if "--timeout" not in args:
        args += ["--timeout", str(DEFAULT_WALL)]
    wall = float(args[args.index("--timeout") + 1])
    cmd = ["run", "-l", language, "-c", code] + (["-o", str(ctx.out)] if out else ["-n"]) + args
    env = dict(os.environ, KILN_TEST_HOST_SECRET=ctx.secret)
    env.update(env_extra or {})
    if not (KILN_BIN.is_file() and os.access(KILN_BIN, os.X_OK)):
        pytest.fail("kiln binary not found at %s (build it with `make`, or set KILN_BIN)" % KILN_BIN)
    argv = [str(KILN_BIN)] + cmd
    t0 = time.monotonic()
    if pty:
        import fcntl
        import termios
        master, slave = os.openpty()
        ctx.extra["pty"] = (master, slave)
        p = subprocess.Popen(argv, stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             cwd=str(ctx.tmp), start_new_session=True,
                             preexec_fn=lambda: fcntl.ioctl(0, termios.TIOCSCTTY, 0))
    else:
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, cwd=str(ctx.tmp))
    watch = SupervisorWatch(p.pid)
    try:
        out, err = p.communicate(timeout=timeout or wall + 60)
    except subprocess.TimeoutExpired:
        p.kill()                   # our own kiln process
        out, err = p.communicate()
        ctx.supervisors |= watch.close()
        pytest.fail("kiln run did not end within %ss (--timeout %s)" % (timeout or wall + 60, wall))
    elapsed = time.monotonic() - t0
    ctx.supervisors |= watch.close()
    proc = subprocess.CompletedProcess(argv, p.returncode, out, err)
    r = parse_result(proc)
    return r, proc, elapsed


# =========================================================================== job code

# Prepended to every Python case (not to the syntax error one).
PY = r'''
import os, sys, errno, socket, hashlib, time
def say(*a):
    print(*a, flush=True)
def _err(e):
    n = getattr(e, 'errno', None)
    return errno.errorcode.get(n, str(n)) if isinstance(n, int) else type(e).__name__
def attempt(name, fn):
    """BLOCKED when fn raises; ESCAPED otherwise. fn returns nothing of the host."""
    try:
        r = fn()
    except (NameError, TypeError, AttributeError, ImportError, SyntaxError) as e:
        say('PROBE', name, 'BROKEN', type(e).__name__, str(e)[:120])     # a bug in the probe itself
        return None
    except BaseException as e:
        say('PROBE', name, 'BLOCKED', type(e).__name__, _err(e))
        return None
    say('PROBE', name, 'ESCAPED', str(r)[:160].replace('\n', ' '))
    return r
def sha(b):
    return hashlib.sha256(b).hexdigest()
'''

# ctypes access to raw syscalls (x86_64 numbers).
PY_SYS = PY + r'''
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def call(nr, *args):
    say('CALL', nr)
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) for a in args])
    e = ctypes.get_errno()
    say('RETURNED', r, errno.errorcode.get(e, e))
    return r, e
'''


def py(code):
    return PY + code


def blocked(ctx, *names):
    for n in names:
        assert n in ctx.probes, "probe %s did not report (job stdout lacks it)" % n
        verdict, detail = ctx.probes[n]
        assert verdict == "BLOCKED", "probe %s ESCAPED the sandbox: %s" % (n, detail)


def probe_detail(ctx, name):
    assert name in ctx.probes, "probe %s did not report" % name
    return ctx.probes[name]


def stdout_of(r):
    return r["stdout"]["text"]


def file_names(r):
    return sorted(f["name"] for f in r.get("files", []))


def refused_map(r):
    return {e["name"]: e["reason"] for e in r.get("refused", [])}


def out_files(ctx):
    found = {}
    if ctx.out.is_dir():
        for root, dirs, files in os.walk(ctx.out):
            for n in files + dirs:
                p = Path(root) / n
                found[str(p.relative_to(ctx.out))] = p
    return found


# ---------------------------------------------------------------- basics

IDENTITY = py(r'''
import json
st = {}
for line in open('/proc/self/status'):
    k, _, v = line.partition(':')
    st[k] = v.strip()
dev = [l.split(':')[0].strip() for l in open('/proc/net/dev').read().splitlines()[2:]]
pids = sorted(int(p) for p in os.listdir('/proc') if p.isdigit())
fds = {}
for fd in os.listdir('/proc/self/fd'):
    try:
        fds[fd] = os.readlink('/proc/self/fd/' + fd)
    except OSError as e:
        fds[fd] = 'gone'
root_ro = bool(os.statvfs('/').f_flag & os.ST_RDONLY)
mnt = [l.split()[4] for l in open('/proc/self/mountinfo')]
try:
    open('/kiln-attack-@TOKEN@', 'x').close()
    root_write = 'created'
except OSError as e:
    root_write = _err(e)
facts = dict(uid=os.getuid(), euid=os.geteuid(), gid=os.getgid(), egid=os.getegid(),
             groups=os.getgroups(), cap={k: st.get(k) for k in ('CapInh', 'CapPrm', 'CapEff', 'CapBnd', 'CapAmb')},
             nnp=st.get('NoNewPrivs'), seccomp=st.get('Seccomp'), hostname=socket.gethostname(),
             uts=open('/proc/sys/kernel/hostname').read().strip(), netdev=dev, pids=pids,
             pid1=open('/proc/1/comm').read().strip(), cwd=os.getcwd(), root_ro=root_ro,
             root_write=root_write, env=dict(os.environ), fds=fds, mounts=mnt,
             stdin=os.readlink('/proc/self/fd/0'), argv=sys.argv,
             rlimits={n: __import__('resource').getrlimit(getattr(__import__('resource'), n))
                      for n in ('RLIMIT_CORE', 'RLIMIT_NOFILE', 'RLIMIT_FSIZE', 'RLIMIT_NPROC', 'RLIMIT_CPU')})
say('FACTS', json.dumps(facts))
''')


def facts_of(r):
    for line in stdout_of(r).splitlines():
        if line.startswith("FACTS "):
            return json.loads(line[6:])
    pytest.fail("the job printed no FACTS line:\n" + short(r))


def chk_identity(r, ctx):
    f = facts_of(r)
    assert (f["uid"], f["euid"], f["gid"], f["egid"]) == (1000, 1000, 1000, 1000), f
    assert f["groups"] in ([], [1000]), f["groups"]
    for k, v in f["cap"].items():
        assert v is not None and int(v, 16) == 0, "capability set %s is %s, not empty" % (k, v)
    assert f["nnp"] == "1", "NoNewPrivs is %s" % f["nnp"]
    assert f["seccomp"] == "2", "Seccomp mode is %s, not 2 (filter)" % f["seccomp"]
    assert f["hostname"] == "kiln" and f["uts"] == "kiln", (f["hostname"], f["uts"])
    assert f["netdev"] == ["lo"], "network interfaces: %r" % f["netdev"]
    assert f["pid1"] not in ("systemd", "init", "tini"), "pid 1 is %r: the host's /proc" % f["pid1"]
    assert len(f["pids"]) <= 6 and 1 in f["pids"], "/proc shows pids %r" % f["pids"][:50]
    assert f["cwd"] == "/mnt/data"
    assert f["root_ro"], "/ is not mounted read-only"
    assert f["root_write"] in ("EROFS", "EACCES", "EPERM"), "creating a file in / gave %s" % f["root_write"]
    env = f["env"]
    want = {"HOME": "/tmp", "TMPDIR": "/tmp", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8",
            "MPLBACKEND": "Agg", "PYTHONPATH": "/opt/kiln/lib", "KILN_JOB_DIR": "/mnt/data"}
    for k, v in want.items():
        assert env.get(k) == v, "environment %s=%r, the contract says %r" % (k, env.get(k), v)
    assert "KILN_TEST_HOST_SECRET" not in env, "the host's environment reached the job"
    # the job's environment is the runner's fixed list, nothing of the host's
    allowed = set(want) | {"LC_ALL", "MPLCONFIGDIR", "PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "USER",
                           "LOGNAME", "PWD", "SHLVL", "_"}
    extra = sorted(set(env) - allowed)
    assert not extra, "environment variables beyond the runner's own list: %r" % extra
    for k in ("USER", "LOGNAME"):
        assert env.get(k) in (None, "kiln"), "%s=%r in the job" % (k, env.get(k))
    fds = {k: v for k, v in f["fds"].items() if v != "gone" and not v.startswith("/proc/") }
    extra = {k: v for k, v in fds.items() if k not in ("0", "1", "2")}
    assert not extra, "file descriptors inherited by the job beyond 0-2: %r" % extra
    assert f["stdin"] == "/dev/null", f["stdin"]
    # a core dump would run the host's core_pattern helper or drop a file in /mnt/data
    assert f["rlimits"]["RLIMIT_CORE"] == [0, 0], "RLIMIT_CORE is %r" % (f["rlimits"]["RLIMIT_CORE"],)
    assert f["rlimits"]["RLIMIT_NOFILE"] == [256, 256], f["rlimits"]
    assert f["rlimits"]["RLIMIT_FSIZE"] == [256 * MiB, 256 * MiB], f["rlimits"]
    bad = [m for m in f["mounts"] if m.split("/")[1:2] and m.split("/")[1] in ("work", "root", "home", "srv", "boot")]
    assert not bad, "host directories mounted in the sandbox: %r" % bad


def chk_print1(r, ctx):
    assert r["stdout"] == {"text": "1\n", "bytes": 2, "truncated": False}, r["stdout"]
    assert r["stderr"]["bytes"] == 0 and r["stderr"]["text"] == "" and not r["stderr"]["truncated"]
    assert r["exit_code"] == 0 and r["signal"] is None and r["timeout"] is None
    assert r["language"] == "python"
    assert isinstance(r["wall_seconds"], (int, float)) and 0 < r["wall_seconds"] < 10
    assert isinstance(r["cpu_seconds"], (int, float)) and r["cpu_seconds"] >= 0
    assert r["files"] == [] and r["refused"] == [] and r.get("refused_more", 0) == 0
    lim = r["limits"]
    assert lim["memory_bytes"] == GiB and lim["processes"] == 64, lim


FILES_CODE = py(r'''
data = open('/mnt/data/in.csv', 'rb').read()
say('INPUT', len(data), sha(data))
say('LISTING', sorted(os.listdir('/mnt/data')))
open('out.txt', 'w').write('hello from the sandbox\n')
os.makedirs('sub/deeper')
open('sub/data.csv', 'w').write('a,b\n1,2\n')
open('sub/deeper/blob.bin', 'wb').write(bytes(range(256)) * 4)
''')


def setup_files(ctx):
    src = ctx.tmp / "host-input.csv"
    src.write_bytes(b"x,y\n" + b"".join(b"%d,%d\n" % (i, i * i) for i in range(1000)))
    ctx.extra["input"] = src


def chk_files(r, ctx):
    data = ctx.extra["input"].read_bytes()
    assert "INPUT %d %s" % (len(data), _sha(data)) in stdout_of(r), "the input was not readable as in.csv"
    expect = {
        "out.txt": b"hello from the sandbox\n",
        "sub/data.csv": b"a,b\n1,2\n",
        "sub/deeper/blob.bin": bytes(range(256)) * 4,
    }
    listed = {f["name"]: f for f in r["files"]}
    for name, content in expect.items():
        assert name in listed, "%s not listed: %r" % (name, sorted(listed))
        f = listed[name]
        assert f["bytes"] == len(content) and f["sha256"] == _sha(content), f
        copied = ctx.out / name
        assert copied.is_file() and not copied.is_symlink(), "%s not copied to the out dir" % name
        assert copied.read_bytes() == content
    assert listed["sub/data.csv"]["media_type"] == "text/csv"
    assert listed["out.txt"]["media_type"].startswith("text/plain")
    assert r["out_dir"] == str(ctx.out.resolve())


def chk_nocopy(r, ctx):
    assert file_names(r) == ["n.txt"], r["files"]
    assert r["out_dir"] is None
    assert not out_files(ctx), "-n copied files: %r" % sorted(out_files(ctx))


SCIENCE = py(r'''
import numpy, pandas, matplotlib
import matplotlib.pyplot as plt
df = pandas.DataFrame({'x': numpy.arange(10), 'y': numpy.arange(10) ** 2})
fig, ax = plt.subplots()
ax.plot(df.x, df.y)
fig.savefig('plot.png')
df.to_csv('table.csv', index=False)
say('SCIENCE', numpy.__version__, pandas.__version__, matplotlib.__version__, int(df.y.sum()))
''')


def chk_science(r, ctx):
    assert "SCIENCE " in stdout_of(r) and " 285" in stdout_of(r)
    listed = {f["name"]: f for f in r["files"]}
    assert "plot.png" in listed and listed["plot.png"]["media_type"] == "image/png", r["files"]
    png = (ctx.out / "plot.png").read_bytes()
    assert png.startswith(b"\x89PNG") and _sha(png) == listed["plot.png"]["sha256"]


def chk_nonutf8(r, ctx):
    assert r["stdout"]["bytes"] == 7
    assert r["stdout"]["text"].startswith("ok") and "\ufffd" in r["stdout"]["text"]


# ---------------------------------------------------------------- network

NET_TCP = py(r'''
def tcp(host, port):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect((host, port))
    s.close()
    return 'connected'
attempt('tcp_loopback', lambda: tcp('127.0.0.1', @PORT@))
if '@HOST_IP@':
    attempt('tcp_host_ip', lambda: tcp('@HOST_IP@', @PORT2@))
else:
    say('PROBE tcp_host_ip BLOCKED no-host-ip')
def tcp6():
    s = socket.socket(socket.AF_INET6, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect(('::1', @PORT@))
    return 'connected'
attempt('tcp6_loopback', tcp6)
def udp():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    return 'udp socket made'
attempt('udp_socket', udp)
def unix_path():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect('@UNIX_PATH@')
    return 'connected'
attempt('unix_host_path', unix_path)
def unix_abstract():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(3)
    s.connect('\0@ABSTRACT@')
    return 'connected'
attempt('unix_abstract', unix_abstract)
def pair():
    a, b = socket.socketpair()
    a.sendall(b'x')
    return b.recv(1)
r = pair()
say('SOCKETPAIR', r)
''')


def chk_net_tcp(r, ctx):
    blocked(ctx, "tcp_loopback", "tcp_host_ip", "tcp6_loopback", "udp_socket", "unix_host_path", "unix_abstract")
    for probe in ("tcp_loopback", "tcp6_loopback", "udp_socket"):
        assert "EAFNOSUPPORT" in ctx.probes[probe][1], "%s: %s (the contract: EAFNOSUPPORT)" % (
            probe, ctx.probes[probe][1])
    assert "SOCKETPAIR b'x'" in stdout_of(r), "AF_UNIX socketpair must work inside"


NET_DNS = py(r'''
attempt('dns', lambda: socket.getaddrinfo('example.com', 80))
attempt('dns_localhost_tcp', lambda: socket.create_connection(('localhost', @PORT@), timeout=3) and 'connected')
say('RESOLV', os.path.exists('/etc/resolv.conf'))
''')


def chk_net_dns(r, ctx):
    blocked(ctx, "dns", "dns_localhost_tcp")


NET_RAW = py(r'''
AF_PACKET, AF_NETLINK, AF_VSOCK, AF_ALG, AF_KEY, AF_BLUETOOTH = 17, 16, 40, 38, 15, 31
def mk(fam, typ, proto=0):
    def f():
        s = socket.socket(fam, typ, proto)
        s.close()               # nothing is ever sent
        return 'socket made'
    return f
attempt('packet_raw', mk(AF_PACKET, socket.SOCK_RAW, 0x0300))
attempt('inet_raw_icmp', mk(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP))
attempt('inet6_raw', mk(socket.AF_INET6, socket.SOCK_RAW, 58))
attempt('netlink_route', mk(AF_NETLINK, socket.SOCK_RAW, 0))
attempt('netlink_audit', mk(AF_NETLINK, socket.SOCK_RAW, 9))
attempt('netlink_uevent', mk(AF_NETLINK, socket.SOCK_DGRAM, 15))
attempt('vsock', mk(AF_VSOCK, socket.SOCK_STREAM))
attempt('alg', mk(AF_ALG, socket.SOCK_SEQPACKET))
attempt('pfkey', mk(AF_KEY, socket.SOCK_RAW, 2))
attempt('bluetooth', mk(AF_BLUETOOTH, socket.SOCK_RAW, 0))
''')

RAW_PROBES = ("packet_raw", "inet_raw_icmp", "inet6_raw", "netlink_route", "netlink_audit",
              "netlink_uevent", "vsock", "alg", "pfkey", "bluetooth")


def chk_net_raw(r, ctx):
    blocked(ctx, *RAW_PROBES)
    for p in RAW_PROBES:
        assert "EAFNOSUPPORT" in ctx.probes[p][1], "%s: %s (the contract: EAFNOSUPPORT)" % (p, ctx.probes[p][1])


# ---------------------------------------------------------------- host files

HOST_READ = py(r'''
def opens(path):
    os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))      # opened, never read
    return 'opened'
def nonempty(path):
    """The number of bytes of path, when it can be read and is not empty (never the bytes)."""
    with open(path, 'rb') as f:
        n = len(f.read(4096))
    if not n:
        raise OSError(errno.ENODATA, 'empty')
    return n
def nonzero_kallsyms():
    for l in open('/proc/kallsyms'):
        if not l.startswith('0000000000000000'):
            return 'addresses'
    raise OSError(errno.EPERM, 'all addresses hidden')
def read_hashes(path):
    """Hashes of the lines, never the lines: a host secret must not reach a log."""
    with open(path, 'rb') as f:
        return ' '.join(sha(l) for l in f.read().splitlines())
say('SHADOW_EXISTS', os.path.exists('/etc/shadow'))
r = attempt('read_shadow', lambda: read_hashes('/etc/shadow'))
attempt('read_gshadow', lambda: read_hashes('/etc/gshadow'))
attempt('read_canary', lambda: sha(open('@CANARY@', 'rb').read()))
attempt('list_canary_dir', lambda: len(os.listdir('@CANARY_DIR@')))
attempt('read_repo_canary', lambda: sha(open('@REPO_CANARY@', 'rb').read()))
attempt('read_repo_makefile', lambda: sha(open('@REPO@/Makefile', 'rb').read()))
attempt('list_repo', lambda: len(os.listdir('@REPO@')))
attempt('read_root_home', lambda: len(os.listdir('/root')))
attempt('list_home', lambda: os.listdir('/home') and 'non-empty' or (_ for _ in ()).throw(OSError(errno.ENOENT, 'empty')))
attempt('pid1_root_canary', lambda: sha(open('/proc/1/root@CANARY@', 'rb').read()))
attempt('pid1_root_list', lambda: len(os.listdir('/proc/1/root/')))
attempt('pid1_exe', lambda: sha(open('/proc/1/exe', 'rb').read(4096)))
attempt('pid1_environ', lambda: len(open('/proc/1/environ', 'rb').read()))
attempt('pid1_fds', lambda: len(os.listdir('/proc/1/fd')))
attempt('pid1_mem', lambda: opens('/proc/1/mem'))
attempt('host_pid_dir', lambda: os.stat('/proc/@HOST_PID@') and 'visible')
for sock in ('/run/systemd/private', '/var/run/docker.sock', '/run/dbus/system_bus_socket',
             '/run/containerd/containerd.sock'):
    attempt('sock_' + sock.rsplit('/', 1)[1], lambda: os.stat(sock) and 'exists')
for dev in ('/dev/vda', '/dev/sda', '/dev/nvme0n1', '/dev/mem', '/dev/kmem', '/dev/port', '/dev/kmsg', '/dev/vsock'):
    attempt('dev_' + dev.rsplit('/', 1)[1], lambda: opens(dev))
attempt('kcore', lambda: nonempty('/proc/kcore'))
attempt('kallsyms_addrs', nonzero_kallsyms)
attempt('boot_config', lambda: len(open('/boot/config-' + os.uname().release).read()))
attempt('cgroup_procs_write', lambda: open('/sys/fs/cgroup/cgroup.procs', 'a') and 'opened')
''')


def chk_host_read(r, ctx):
    blocked(ctx, "read_shadow", "read_gshadow", "read_canary", "list_canary_dir", "read_repo_canary",
            "read_repo_makefile", "list_repo", "read_root_home", "list_home", "pid1_root_canary",
            "pid1_root_list", "pid1_exe", "pid1_environ", "pid1_fds", "pid1_mem", "host_pid_dir",
            "sock_private", "sock_docker.sock", "sock_system_bus_socket", "sock_containerd.sock",
            "dev_vda", "dev_sda", "dev_nvme0n1", "dev_mem", "dev_kmem", "dev_port", "dev_kmsg",
            "dev_vsock", "kcore", "kallsyms_addrs", "boot_config", "cgroup_procs_write")


# Issue 15 item 12: what the job sees of the host. The job reports names, types and
# sizes only (never contents); the check compares them with the host.
# The sandbox's init is a fork of the supervisor: its memory held the host's command line
# (kiln run's arguments, the service's data directory), which /proc/1/cmdline shows to the
# job. It reads "kiln-init" and nothing else; /proc/1/environ is not the job's to read.
INIT_CMDLINE = py(r'''
raw = open('/proc/1/cmdline', 'rb').read()
say('CMDLINE', repr(raw.rstrip(b'\0')))
try:
    env = open('/proc/1/environ', 'rb').read()
    say('ENVIRON', repr(env.rstrip(b'\0')))
except OSError as e:
    say('ENVIRON-DENIED', e.errno)
''')


def chk_init_cmdline(r, ctx):
    out = stdout_of(r)
    assert "CMDLINE b'kiln-init'" in out, out
    assert "ENVIRON-DENIED" in out or "ENVIRON b''" in out, out
    for host in (str(ctx.out), "kiln run", "--timeout", ctx.secret):
        assert host not in out, "the host's %r is readable in /proc/1: %s" % (host, out)


VISIBLE_TREE = py(r"""
import json, stat
def kind(p):
    try:
        m = os.lstat(p).st_mode
    except OSError as e:
        return _err(e)
    return ('link' if stat.S_ISLNK(m) else 'dir' if stat.S_ISDIR(m) else 'file' if stat.S_ISREG(m)
            else 'chr' if stat.S_ISCHR(m) else 'other')
def size(p):
    try:
        with open(p, 'rb') as f:
            return len(f.read(1 << 16))
    except OSError as e:
        return _err(e)
def listing(p):
    try:
        return sorted(os.listdir(p))
    except OSError as e:
        return _err(e)
proc = {n: [kind('/proc/' + n), listing('/proc/' + n) if kind('/proc/' + n) == 'dir' else size('/proc/' + n)]
        for n in ('kcore', 'kallsyms', 'keys', 'key-users', 'timer_list', 'timer_stats', 'sched_debug',
                  'latency_stats', 'config.gz', 'iomem', 'ioports', 'partitions', 'swaps', 'diskstats',
                  'modules', 'cmdline', 'vmallocinfo', 'slabinfo', 'acpi', 'asound', 'bus', 'driver', 'fs',
                  'irq', 'scsi', 'meminfo', 'cpuinfo', 'uptime', 'stat', 'loadavg')}
found = sorted({n for d in os.environ['PATH'].split(':') for n in (listing(d) if os.path.isdir(d) else [])})
facts = dict(root=listing('/'), usr=listing('/usr'), proc=proc, found=found, path=os.environ['PATH'],
             kinds={p: kind(p) for p in ('/usr/local', '/usr/src', '/usr/include', '/usr/etc', '/usr/games',
                                         '/sys', '/boot', '/home', '/root', '/var', '/run', '/srv')},
             proc_sys_ro=bool(os.statvfs('/proc/sys').f_flag & os.ST_RDONLY),
             hostname=size('/proc/sys/kernel/hostname'))
say('FACTS', json.dumps(facts))
attempt('proc_sys_create', lambda: open('/proc/sys/kernel/kiln-attack-@TOKEN@', 'x') and 'created')
""")

HOST_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")      # exec/mount.c top_level
USR_SHOWN = ("bin", "sbin", "lib", "lib32", "lib64", "libx32", "libexec", "share")   # exec/mount.c usr_binds
PROC_MASKED_FILES = ("kcore", "kallsyms", "keys", "key-users", "timer_list", "timer_stats", "sched_debug",
                     "latency_stats", "config.gz", "iomem", "ioports", "partitions", "swaps", "diskstats",
                     "modules", "cmdline", "vmallocinfo", "slabinfo")
PROC_MASKED_DIRS = ("acpi", "asound", "bus", "driver", "fs", "irq", "scsi")


def chk_visible_tree(r, ctx):
    f = facts_of(r)
    host_top = {n for n in HOST_TOP_LEVEL if os.path.lexists("/" + n)}
    assert f["root"] == sorted(host_top | {"dev", "etc", "mnt", "opt", "proc", "tmp", "usr"}), f["root"]
    assert f["usr"] == sorted(n for n in USR_SHOWN if os.path.lexists("/usr/" + n)), f["usr"]
    for p, k in f["kinds"].items():
        assert k == "ENOENT", "%s is visible in the sandbox (%s)" % (p, k)
    assert f["path"] == "/usr/bin:/bin", f["path"]
    # nothing of the host's /usr/local/bin can be run by name
    local = set(os.listdir("/usr/local/bin")) if os.path.isdir("/usr/local/bin") else set()
    only_local = local - set(os.listdir("/usr/bin")) - set(os.listdir("/bin"))
    assert not only_local & set(f["found"]), sorted(only_local & set(f["found"]))
    for n in PROC_MASKED_FILES:       # /dev/null bound over it, as container runtimes do
        k, v = f["proc"][n]
        assert k == "ENOENT" or (k == "chr" and v == 0), "/proc/%s: %s %r (not masked)" % (n, k, v)
    for n in PROC_MASKED_DIRS:
        k, v = f["proc"][n]
        assert k == "ENOENT" or (k == "dir" and v == []), "/proc/%s: %s %r (not masked)" % (n, k, v)
    for n in ("meminfo", "cpuinfo", "uptime", "stat", "loadavg"):
        k, v = f["proc"][n]
        assert k == "file" and v > 0, "/proc/%s: %s %r (programs read it)" % (n, k, v)
    # the host has the entries this test expects to see masked (else it proves little)
    assert os.path.exists("/proc/partitions") and os.path.exists("/proc/swaps")
    assert f["proc_sys_ro"] and isinstance(f["hostname"], int) and f["hostname"] > 0, f
    blocked(ctx, "proc_sys_create")


# Issue 15 item 12: --ro-bind shows a host directory read-only at its own path. The
# directory is the test's own; a symlink in it aims at the canary (outside it).
RO_BIND = py(r"""
d = '@SHARED@'
say('READ', open(d + '/data.txt').read().strip(), sorted(os.listdir(d)))
attempt('ro_create', lambda: open(d + '/new-@TOKEN@', 'x') and 'created')
attempt('ro_append', lambda: open(d + '/data.txt', 'a').write('PWNED'))
attempt('ro_unlink', lambda: os.unlink(d + '/data.txt') or 'unlinked')
attempt('ro_chmod', lambda: os.chmod(d + '/data.txt', 0o666) or 'chmod')
attempt('ro_rename', lambda: os.rename(d + '/sub', d + '/moved') or 'renamed')
attempt('ro_umount_by_rmdir', lambda: os.rmdir(d) or 'removed')
attempt('ro_link_out', lambda: sha(open(d + '/to-canary', 'rb').read()))
def suid_euid():
    got = __import__('subprocess').run([d + '/sub/suid-id', '-u'], capture_output=True, text=True).stdout.strip()
    if got != '0':
        raise OSError(errno.EPERM, 'set-uid ignored, euid ' + got)
    return got
attempt('ro_setuid_exec', suid_euid)
say('PATH', os.environ['PATH'], os.path.isdir('/usr/local/bin'))
""")


def setup_ro_bind(ctx):
    # in the test's world-searchable directory: the sandbox reaches a --ro-bind path as
    # any other user would (tmp_path's parents are 0700)
    shared = ctx.hostdir / "shared"
    (shared / "sub").mkdir(parents=True)
    (shared / "data.txt").write_text("shared data\n")
    os.symlink(ctx.canary, shared / "to-canary")
    suid = shared / "sub" / "suid-id"
    shutil.copy("/usr/bin/id", suid)          # a copy of id, set-uid root, in the test's own dir
    os.chmod(suid, 0o4755)
    # world-writable, so that only the read-only bind, never file permissions, stops the job
    for p in (shared, shared / "sub"):
        os.chmod(p, 0o777)
    os.chmod(shared / "data.txt", 0o666)
    ctx.extra["shared"] = shared
    ctx.extra["shared_before"] = sorted(str(p.relative_to(shared)) for p in shared.rglob("*"))
    ctx.extra["data_mtime"] = (shared / "data.txt").stat().st_mtime_ns
    ctx.code_subst = {"@SHARED@": str(shared)}


def ro_bind_args(ctx):
    args = ["--ro-bind", str(ctx.extra["shared"])]
    if os.path.isdir("/usr/local/bin"):
        args += ["--ro-bind", "/usr/local"]
    return args


def chk_ro_bind(r, ctx):
    shared = ctx.extra["shared"]
    assert "READ shared data ['data.txt', 'sub', 'to-canary']" in stdout_of(r), stdout_of(r)
    blocked(ctx, "ro_create", "ro_append", "ro_unlink", "ro_chmod", "ro_rename", "ro_umount_by_rmdir",
            "ro_link_out", "ro_setuid_exec")
    for n in ("ro_create", "ro_append", "ro_unlink", "ro_rename"):
        assert "EROFS" in ctx.probes[n][1], (n, ctx.probes[n])
    assert ctx.probes["ro_chmod"][1].split()[-1] in ("EROFS", "EPERM"), ctx.probes["ro_chmod"]
    assert sorted(str(p.relative_to(shared)) for p in shared.rglob("*")) == ctx.extra["shared_before"]
    assert (shared / "data.txt").read_text() == "shared data\n"
    assert (shared / "data.txt").stat().st_mtime_ns == ctx.extra["data_mtime"]
    if os.path.isdir("/usr/local/bin"):
        assert "PATH /usr/local/bin:/usr/bin:/bin True" in stdout_of(r), stdout_of(r)
    assert not any(f["name"].startswith("shared") for f in r["files"]), r["files"]


# another job's directory: job A holds a file, job B looks for it
JOB_A = r'''
import time
open('/mnt/data/jobA-@TOKEN@.txt', 'w').write('@SECRET2@')
open('/tmp/jobA-@TOKEN@.tmp', 'w').write('@SECRET2@')
print('A up', flush=True)
time.sleep(5)
print('A done', flush=True)
'''

JOB_B = py(r'''
import glob
tok = '@TOKEN@'
found = []
t0 = time.time()
def scan(d):
    try:
        for n in os.listdir(d):
            if tok in n:
                found.append(os.path.join(d, n))
    except OSError:
        pass
cands = ['/tmp', '/mnt', '/mnt/data', '/dev/shm', '/run', '/var/tmp', '/', '/opt/kiln', '/opt/kiln/job']
cands += glob.glob('/tmp/*/') + glob.glob('/mnt/*/') + glob.glob('/tmp/kiln-*/')
for p in glob.glob('/proc/[0-9]*'):
    cands += [p + '/root/mnt/data', p + '/cwd', p + '/root/tmp', p + '/fd']
for d in cands:
    scan(d)
for root, dirs, files in os.walk('/'):
    if root in ('/proc', '/sys'):
        dirs[:] = []
        continue
    if time.time() - t0 > 8:
        break
    for n in files + dirs:
        if tok in n:
            found.append(os.path.join(root, n))
say('PIDS', sorted(int(p) for p in os.listdir('/proc') if p.isdigit()))
say('PROBE other_job_dir', 'ESCAPED' if found else 'BLOCKED', len(found), 'found' if found else 'notfound')
''')


def _wait_for_new_job(before_pids, seconds=10):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for pid in sandbox_pids():
            if pid in before_pids:
                continue
            cmd = _read("/proc/%d/cmdline" % pid) or b""
            if b"main.py" in cmd:
                return True
        time.sleep(0.05)
    return False


def setup_job_a(ctx):
    before = sandbox_pids()
    code = JOB_A.replace("@TOKEN@", ctx.token).replace("@SECRET2@", ctx.secret2)
    outa = ctx.tmp / "out-a"
    ctx.extra["outa"] = outa
    ctx.extra["job_a"] = subprocess.Popen(
        [str(KILN_BIN), "run", "-l", "python", "-c", code, "-o", str(outa), "--timeout", "20"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(ctx.tmp))
    ctx.extra["watch_a"] = SupervisorWatch(ctx.extra["job_a"].pid)
    assert _wait_for_new_job(before), "job A never started (no main.py process of a sandbox uid)"
    time.sleep(0.5)          # A writes its files right after it starts
    assert ctx.extra["job_a"].poll() is None, "job A ended before job B ran"


def teardown_job_a(ctx):
    a = ctx.extra.get("job_a")
    if a is None:
        return
    try:
        out, err = a.communicate(timeout=40)
    except subprocess.TimeoutExpired:
        a.kill()                   # our own kiln process
        out, err = a.communicate()
    if ctx.extra.get("watch_a"):
        ctx.supervisors |= ctx.extra["watch_a"].close()
    ra = json.loads(out.decode("utf-8", "replace"))
    ctx.extra["result_a"] = ra


def chk_other_job(r, ctx):
    blocked(ctx, "other_job_dir")
    ra = ctx.extra["result_a"]
    assert ra["status"] == "ok" and "A up" in ra["stdout"]["text"], "job A: " + short(ra)
    assert "jobA-%s.txt" % ctx.token in [f["name"] for f in ra["files"]], "job A's own file was not collected"
    raw = json.dumps(r)
    assert ctx.secret2 not in raw, "job B's result holds job A's file content"
    pids = [ln for ln in stdout_of(r).splitlines() if ln.startswith("PIDS ")]
    assert pids and len(json.loads(pids[0][5:])) <= 6, "job B sees other processes: " + pids[0]


# ---------------------------------------------------------------- writing outside /mnt/data

HOST_WRITE = py(r'''
def create(path):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    os.close(fd)
    return 'created'
attempt('create_etc', lambda: create('/etc/kiln-attack-@TOKEN@'))
attempt('create_usr', lambda: create('/usr/kiln-attack-@TOKEN@'))
attempt('create_opt_kiln', lambda: create('/opt/kiln/kiln-attack-@TOKEN@'))
attempt('create_opt_kiln_lib', lambda: create('/opt/kiln/lib/kiln-attack-@TOKEN@'))
attempt('create_opt_kiln_job', lambda: create('/opt/kiln/job/kiln-attack-@TOKEN@'))
attempt('create_root', lambda: create('/kiln-attack-@TOKEN@'))
attempt('mkdir_root', lambda: os.mkdir('/kiln-attack-@TOKEN@.d') or 'made')
attempt('create_var', lambda: create('/var/kiln-attack-@TOKEN@'))
attempt('create_proc', lambda: create('/proc/kiln-attack-@TOKEN@'))
attempt('append_main_py', lambda: open('/opt/kiln/job/main.py', 'a') and 'opened')
attempt('append_kiln_py', lambda: open('/opt/kiln/lib/kiln.py', 'a') and 'opened')
attempt('append_python_exe', lambda: open('/proc/self/exe', 'ab') and 'opened')   # never written
attempt('append_etc_passwd', lambda: open('/etc/passwd', 'a') and 'opened')       # never written
def write_back(path):
    with open(path, 'rb') as f:
        v = f.read()
    with open(path, 'wb') as f:        # the value just read, unchanged
        f.write(v)
    return 'written back'
attempt('core_pattern', lambda: write_back('/proc/sys/kernel/core_pattern'))
attempt('proc_hostname', lambda: write_back('/proc/sys/kernel/hostname'))
attempt('proc_overcommit', lambda: write_back('/proc/sys/vm/overcommit_memory'))
attempt('sysrq_open', lambda: open('/proc/sysrq-trigger', 'wb') and 'opened')      # never written
attempt('uevent_helper_open', lambda: open('/sys/kernel/uevent_helper', 'wb') and 'opened')
attempt('canary_append', lambda: open('@CANARY@', 'a').write('PWNED'))
attempt('canary_chmod', lambda: os.chmod('@CANARY@', 0o666) or 'chmod')       # the mode it has
attempt('canary_utime', lambda: os.utime('@CANARY@') or 'utime')
attempt('repo_canary_append', lambda: open('@REPO_CANARY@', 'a').write('PWNED'))
attempt('canary_dir_create', lambda: create('@CANARY_DIR@/kiln-attack-@TOKEN@'))
attempt('repo_create', lambda: create('@REPO@/kiln-attack-@TOKEN@'))
open('/mnt/data/inside.txt', 'w').write('fine\n')
open('/tmp/inside-@TOKEN@.txt', 'w').write('fine\n')      # the sandbox's own /tmp
open('/dev/shm/inside-@TOKEN@.txt', 'w').write('fine\n')
say('INSIDE_WRITES_OK')
''')

WRITE_PROBES = ("create_etc", "create_usr", "create_opt_kiln", "create_opt_kiln_lib", "create_opt_kiln_job",
                "create_root", "mkdir_root", "create_var", "create_proc", "append_main_py", "append_kiln_py",
                "append_python_exe", "append_etc_passwd", "core_pattern", "proc_hostname", "proc_overcommit",
                "sysrq_open", "uevent_helper_open", "canary_append", "canary_chmod", "canary_utime",
                "repo_canary_append", "canary_dir_create", "repo_create")

ATTACK_HOST_PATHS = ["/etc/kiln-attack-@TOKEN@", "/usr/kiln-attack-@TOKEN@", "/opt/kiln/kiln-attack-@TOKEN@",
                     "/kiln-attack-@TOKEN@", "/kiln-attack-@TOKEN@.d", "/var/kiln-attack-@TOKEN@",
                     "@CANARY_DIR@/kiln-attack-@TOKEN@", "@REPO@/kiln-attack-@TOKEN@",
                     "/tmp/jobA-@TOKEN@.tmp", "/tmp/inside-@TOKEN@.txt", "/dev/shm/inside-@TOKEN@.txt",
                     "/tmp/in-tmp-@TOKEN@.txt", "/tmp/fill-@TOKEN@.bin", "/dev/shm/fill-@TOKEN@.bin"]


def chk_host_write(r, ctx):
    blocked(ctx, *WRITE_PROBES)
    assert "INSIDE_WRITES_OK" in stdout_of(r), "writing /mnt/data, /tmp and /dev/shm must work"
    assert "inside.txt" in file_names(r)


# ---------------------------------------------------------------- links

LINKS = py(r'''
open('real.txt', 'w').write('real\n')
os.symlink('/etc/passwd', 'out.txt')
os.symlink('@CANARY@', 'canary_link.txt')
os.symlink('/proc/self/root/etc/passwd', 'magic.txt')
os.symlink('real.txt', 'inner_link.txt')
os.symlink('/etc', 'd')
os.symlink('/tmp', 'd2')
open('/tmp/in-tmp-@TOKEN@.txt', 'w').write('tmp\n')
os.makedirs('sub')
os.symlink('/etc', 'sub/etc')
os.symlink('..', 'sub/up')
attempt('hardlink_passwd', lambda: os.link('/etc/passwd', 'hard_passwd') or 'linked')
attempt('hardlink_canary', lambda: os.link('@CANARY@', 'hard_canary') or 'linked')
attempt('hardlink_python', lambda: os.link('/usr/bin/python3', 'hard_python') or 'linked')
os.link('real.txt', 'real2.txt')
say('LINKS_MADE')
''')


def _passwd_sha():
    return _sha(_read("/etc/passwd"))


def chk_links(r, ctx):
    blocked(ctx, "hardlink_passwd", "hardlink_canary", "hardlink_python")
    assert "LINKS_MADE" in stdout_of(r)
    ref = refused_map(r)
    for name in ("out.txt", "canary_link.txt", "magic.txt", "inner_link.txt", "d", "d2", "sub/etc", "sub/up"):
        assert ref.get(name) == "symlink", "%s: refused as %r, want 'symlink' (refused: %r)" % (name, ref.get(name), ref)
    names = file_names(r)
    assert "real.txt" in names and "real2.txt" in names, names
    shas = {f["name"]: f["sha256"] for f in r["files"]}
    assert shas["real.txt"] == shas["real2.txt"] == _sha(b"real\n")
    for n in names:
        assert not n.startswith(("d/", "d2/", "sub/etc/", "sub/up/")) and n not in ("out.txt", "canary_link.txt",
                                                                               "magic.txt", "inner_link.txt"), \
            "collected through a symlink: %s" % n
    host_passwd = _passwd_sha()
    for rel, p in out_files(ctx).items():
        assert not p.is_symlink(), "symlink in the out dir: %s" % rel
        if p.is_file():
            data = p.read_bytes()
            assert _sha(data) != host_passwd, "the host's /etc/passwd was copied out as %s" % rel
            assert ctx.secret.encode() not in data, "the canary was copied out as %s" % rel
    for rel in ("out.txt", "canary_link.txt", "magic.txt", "d", "d2", "sub/etc", "inner_link.txt"):
        assert not (ctx.out / rel).exists() and not (ctx.out / rel).is_symlink(), "%s exists in the out dir" % rel
    assert r["status"] == "ok"   # refusing a symlink is not a cap


def setup_outdir_symlink(ctx):
    """A symlink already in the out dir, where the job's output will land."""
    ctx.out.mkdir()
    os.symlink(ctx.canary, ctx.out / "result.txt")


def chk_outdir_symlink(r, ctx):
    p = ctx.out / "result.txt"
    assert p.is_file() and not p.is_symlink(), "the out dir's symlink was not replaced by a file"
    assert p.read_text() == "job output\n"


ODD_ENTRIES = py(r'''
os.mkfifo('fifo')
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind('/mnt/data/sock')
fd = os.open(b'/mnt/data/bad-\xff.txt', os.O_WRONLY | os.O_CREAT, 0o644)
os.write(fd, b'x'); os.close(fd)
p = 'deep'
for i in range(40):
    p = os.path.join(p, 'd%d' % i)
os.makedirs(p)
open(os.path.join(p, 'bottom.txt'), 'w').write('bottom\n')
open('ok.txt', 'w').write('ok\n')
say('ODD_MADE')
''')


def chk_odd(r, ctx):
    ref = refused_map(r)
    assert ref.get("fifo") == "not a regular file", ref
    assert ref.get("sock") == "not a regular file", ref
    bad = [n for n, why in ref.items() if why == "name not UTF-8"]
    assert bad, "the file with a non-UTF-8 name was not refused as such: %r" % ref
    assert any(why == "too deep" for why in ref.values()), "nothing refused as too deep: %r" % ref
    assert "ok.txt" in file_names(r)
    assert not any(n.endswith("bottom.txt") for n in file_names(r))


# ---------------------------------------------------------------- resource bombs

FORK_BOMB_PY = py(r'''
# Bounded even without a sandbox: a child goes on from its parent's count, so
# there are at most 2**10 = 1024 processes in all.
say('bomb')
forks = 0
while True:
    if forks < 10:
        try:
            os.fork()
            forks += 1          # parent and child alike
        except OSError:
            time.sleep(0.01)
    else:
        time.sleep(0.05)
''')

# Bounded too: depth 10 at most.
FORK_BOMB_SH = r'''
bomb() { local d=$1; if [ "$d" -ge 10 ]; then sleep 30; return; fi; bomb $((d+1)) | bomb $((d+1)) & }
echo bomb
bomb 0
sleep 30
'''


def setup_count_procs(ctx):
    ctx.extra["nprocs"] = len(_all_pids())


def chk_fork_bomb(r, ctx):
    assert r["wall_seconds"] < 5 + 3, "the fork bomb ran %.1fs with --timeout 5" % r["wall_seconds"]
    assert ctx.elapsed < 5 + 15
    deadline = time.monotonic() + 5
    while len(_all_pids()) > ctx.extra["nprocs"] + 20 and time.monotonic() < deadline:
        time.sleep(0.1)
    assert len(_all_pids()) <= ctx.extra["nprocs"] + 20, "the machine's process count did not come back"


MEM_BOMB = py(r'''
blocks = []
for i in range(32):                    # 2 GiB in 64 MiB blocks, every page touched
    blocks.append(b'\1' * (64 << 20))
    say('ALLOC', (i + 1) * 64, 'MiB')
say('SURVIVED 2 GiB')
''')


def chk_mem_bomb(r, ctx):
    assert "SURVIVED" not in stdout_of(r), "2 GiB allocated under --memory 256M"
    assert r["limits"]["memory_bytes"] == 256 * MiB
    peak = r.get("peak_memory_bytes") or 0
    assert peak <= 300 * MiB, "peak memory %d over the 256 MiB limit" % peak
    assert r["exit_code"] is None and r["signal"] == "SIGKILL", (r["exit_code"], r["signal"])


def fill_code(path, label):
    return py(r'''
chunk = b'\0' * (1 << 20)
n = 0
fd = os.open('%s', os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
try:
    while n < (64 << 20):
        n += os.write(fd, chunk)
    say('FILL', 'NOERROR', n)
except OSError as e:
    say('FILL', _err(e), n)
    say('%s')
os.close(fd)
''' % (path, label))


def setup_free(ctx):
    ctx.extra["free"] = host_free_bytes()


def chk_fill(limit):
    def check(r, ctx):
        line = [ln for ln in stdout_of(r).splitlines() if ln.startswith("FILL ")]
        assert line, "the job printed no FILL line"
        _, err, n = line[0].split()
        assert err == "ENOSPC", "filling gave %s after %s bytes, want ENOSPC" % (err, n)
        assert int(n) <= limit + MiB, "%s bytes written into a %d byte file system" % (n, limit)
        drop = ctx.extra["free"] - host_free_bytes()
        assert drop < 32 * MiB, "the host's free disk space dropped by %d MiB" % (drop // MiB)
    return check


def chk_fill_data(r, ctx):
    chk_fill(16 * MiB)(r, ctx)
    assert "DISKFULL" in stdout_of(r)
    assert "fill.bin" in file_names(r)


CPU_LOOP = py(r'''
say('spinning')
while True:
    pass
''')


def chk_cpu(r, ctx):
    assert r["timeout"] == "cpu", "timeout is %r, want 'cpu'" % r["timeout"]
    assert r["cpu_seconds"] >= 1.5, r["cpu_seconds"]
    assert r["wall_seconds"] < 12, "a 2 s CPU limit took %.1f s of wall time" % r["wall_seconds"]
    assert "spinning" in stdout_of(r)


SLEEPER = py(r'''
say('before the sleep')
time.sleep(600)
say('after the sleep')
''')


def chk_wall(r, ctx):
    assert r["timeout"] == "wall", "timeout is %r, want 'wall'" % r["timeout"]
    assert r["wall_seconds"] < 4, "--timeout 2 ended after %.1f s" % r["wall_seconds"]
    assert ctx.elapsed < 8, "kiln run took %.1f s for --timeout 2" % ctx.elapsed
    assert stdout_of(r) == "before the sleep\n", "the output before the kill was lost: %r" % stdout_of(r)


BG_SH = r'''
sleep 600 &
nohup sleep 600 >/dev/null 2>&1 &
setsid sleep 600 &
( trap '' TERM HUP INT; while :; do sleep 1; done ) &
disown -a
echo started
exit 0
'''

BG_PY = py(r'''
import signal
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:                       # the daemon: ignores every signal it can
        for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGPIPE):
            signal.signal(s, signal.SIG_IGN)
        devnull = os.open('/dev/null', os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        while True:
            with open('/mnt/data/heartbeat', 'a') as f:
                f.write('.')
            time.sleep(0.05)
    os._exit(0)
if os.fork() == 0:                           # a stopped child
    os.kill(os.getpid(), signal.SIGSTOP)
    os._exit(0)
if os.fork() == 0:                           # a zombie nobody reaps
    os._exit(0)
if os.fork() == 0:                           # a child holding stdout open
    time.sleep(600)
    os._exit(0)
time.sleep(0.3)
say('parent exits')
''')


def chk_background(r, ctx):
    assert r["exit_code"] == 0
    assert r["wall_seconds"] < 5, "the job took %.1f s: left-behind processes kept it alive" % r["wall_seconds"]
    assert ctx.elapsed < 10


# ---------------------------------------------------------------- seccomp and privileges

def seccomp_case(cid, body, kill=True):
    """One forbidden call per job. kill=True: the contract says it kills
    (seccomp_violation, SIGSYS, nothing after the call); kill=False: it must
    not succeed, either way (killed, or failed with an errno)."""
    def check(r, ctx):
        out = stdout_of(r)
        assert "CALL" in out, "the job never reached the call: " + short(r)
        if r["status"] == "seccomp_violation":
            assert r["signal"] == "SIGSYS", r["signal"]
            assert "RETURNED" not in out and "AFTER" not in out, "the call returned before the kill: " + out
        else:
            assert not kill, "want seccomp_violation"
            lines = [ln for ln in out.splitlines() if ln.startswith("RETURNED")]
            assert lines and lines[0].split()[1] == "-1", "the call succeeded: %r" % lines
            assert "ESCAPED" not in out, out
    return dict(id=cid, code=PY_SYS + body, status="seccomp_violation" if kill else ("seccomp_violation", "ok"),
                check=check)


CLONE_NEWUSER = 0x10000000
SECCOMP_CASES = [
    seccomp_case("seccomp-ptrace-attach-child", r'''
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
time.sleep(0.1)
libc.ptrace.restype = ctypes.c_long
say('CALL ptrace attach')
r = libc.ptrace(ctypes.c_long(16), ctypes.c_long(pid), None, None)     # PTRACE_ATTACH: our own child only
say('RETURNED', r, ctypes.get_errno())
if r == 0:
    libc.ptrace(ctypes.c_long(17), ctypes.c_long(pid), None, None)     # PTRACE_DETACH
say('AFTER')
'''),
    seccomp_case("seccomp-ptrace-traceme", r'''
say('CALL ptrace traceme')
r = libc.ptrace(ctypes.c_long(0), ctypes.c_long(0), None, None)
say('RETURNED', r)
'''),
    seccomp_case("seccomp-process-vm-readv-child", r'''
pid = os.fork()
if pid == 0:
    time.sleep(30)
    os._exit(0)
buf = ctypes.create_string_buffer(8)
class iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
local = iovec(ctypes.cast(buf, ctypes.c_void_p), 8)
remote = iovec(ctypes.cast(buf, ctypes.c_void_p), 8)
call(310, pid, ctypes.addressof(local), 1, ctypes.addressof(remote), 1, 0)
''', kill=False),
    seccomp_case("seccomp-unshare-newuser", r'''
call(272, %d)
''' % CLONE_NEWUSER),
    seccomp_case("seccomp-unshare-newns", r'''
call(272, 0x00020000)
'''),
    seccomp_case("seccomp-setns-own-uts", r'''
fd = os.open('/proc/self/ns/uts', os.O_RDONLY)
call(308, fd, 0)
'''),
    seccomp_case("seccomp-clone-newuser", r'''
r, e = call(56, %d | 17, 0, 0, 0, 0)       # clone(CLONE_NEWUSER | SIGCHLD): fork-like
if r == 0:
    os._exit(0)
''' % CLONE_NEWUSER),
    seccomp_case("seccomp-clone3-newuser", r'''
import struct
args = struct.pack('11Q', %d, 0, 0, 0, 17, 0, 0, 0, 0, 0, 0)   # flags CLONE_NEWUSER, exit_signal SIGCHLD
buf = ctypes.create_string_buffer(args, len(args))
r, e = call(435, ctypes.addressof(buf), len(args))
if r == 0:
    os._exit(0)
if r > 0:
    say('PROBE clone3 ESCAPED child', r)
''' % CLONE_NEWUSER, kill=False),
    seccomp_case("seccomp-mount-tmpfs", r'''
os.mkdir('/mnt/data/m')
libc.mount.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_ulong, ctypes.c_void_p]
say('CALL mount')
r = libc.mount(b'none', b'/mnt/data/m', b'tmpfs', 0, None)
say('RETURNED', r, ctypes.get_errno())
'''),
    seccomp_case("seccomp-umount-jobdir", r'''
call(166, ctypes.addressof(ctypes.create_string_buffer(b'/mnt/data')), 2)    # umount2(MNT_DETACH)
''', kill=False),
    seccomp_case("seccomp-pivot-root", r'''
a = ctypes.create_string_buffer(b'/mnt/data')
call(155, ctypes.addressof(a), ctypes.addressof(a))
''', kill=False),
    seccomp_case("seccomp-chroot", r'''
a = ctypes.create_string_buffer(b'/tmp')
call(161, ctypes.addressof(a))
''', kill=False),
    seccomp_case("seccomp-keyctl", r'''
call(250, 0, -3, 0)          # KEYCTL_GET_KEYRING_ID of the session keyring: reads only
'''),
    seccomp_case("seccomp-add-key", r'''
call(248, 0, 0, 0, 0, 0)     # NULL type: EFAULT if it were allowed
'''),
    seccomp_case("seccomp-bpf", r'''
call(321, 0, 0, 0)           # BPF_MAP_CREATE with a NULL attr
'''),
    seccomp_case("seccomp-perf-event-open", r'''
call(298, 0, 0, -1, -1, 0)   # NULL attr
'''),
    seccomp_case("seccomp-userfaultfd", r'''
call(323, 0)
'''),
    seccomp_case("seccomp-io-uring-setup", r'''
call(425, 1, 0)              # NULL params
'''),
    seccomp_case("seccomp-init-module", r'''
call(175, 0, 0, 0)           # NULL image
'''),
    seccomp_case("seccomp-finit-module", r'''
call(313, -1, 0, 0)          # bad fd
'''),
    seccomp_case("seccomp-open-by-handle-at", r'''
call(304, -100, 0, 0)        # the "shocker" call, with a NULL handle
''', kill=False),
    seccomp_case("seccomp-syslog-size", r'''
call(103, 10, 0, 0)          # SYSLOG_ACTION_SIZE_BUFFER: reads a number
''', kill=False),
    seccomp_case("seccomp-x32-getpid", r'''
call(39 | 0x40000000)        # the x32 ABI number of getpid
''', kill=False),
    seccomp_case("seccomp-x32-unshare", r'''
call(272 | 0x40000000, %d)   # the x32 ABI number of unshare
''' % CLONE_NEWUSER, kill=False),
    seccomp_case("seccomp-sethostname-same", r'''
name = socket.gethostname().encode()
b = ctypes.create_string_buffer(name)
call(170, ctypes.addressof(b), len(name))      # writes back the name it has
''', kill=False),
    seccomp_case("seccomp-ioctl-tiocsti", r'''
c = ctypes.create_string_buffer(b'#')
call(16, 0, 0x5412, ctypes.addressof(c))                 # TIOCSTI on stdin (/dev/null)
'''),
    seccomp_case("seccomp-ioctl-tiocsti-high-bits", r'''
c = ctypes.create_string_buffer(b'#')
call(16, 0, 0x5412 | (1 << 32), ctypes.addressof(c))     # the kernel drops the upper half
'''),
    dict(id="seccomp-bash-unshare", language="bash", code="echo CALL\nexec unshare -U -r true\n",
         status="seccomp_violation",
         check=lambda r, ctx: r["signal"] == "SIGSYS" or pytest.fail("signal %r" % r["signal"])),
]

SETUID = py(r'''
import subprocess, stat
found = []
for d in ('/usr/bin', '/usr/sbin', '/bin', '/sbin', '/usr/lib', '/usr/libexec'):
    for root, dirs, files in os.walk(d):
        for n in files:
            p = os.path.join(root, n)
            try:
                m = os.lstat(p).st_mode
            except OSError:
                continue
            if stat.S_ISREG(m) and m & (stat.S_ISUID | stat.S_ISGID):
                found.append(p)
say('SETUID_FILES', len(found))
def run(name, argv):
    if not os.path.exists(argv[0]):
        say('PROBE', name, 'BLOCKED', 'absent')
        return
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=5)
    except Exception as e:
        say('PROBE', name, 'BLOCKED', type(e).__name__)
        return
    root = p.stdout.strip() == b'0' or b'uid=0' in p.stdout
    # passwd -S root prints the account's status only to root
    if name == 'passwd_status_root':
        root = p.returncode == 0
    say('PROBE', name, 'ESCAPED' if root else 'BLOCKED', 'rc', p.returncode)
run('su_id', ['/usr/bin/su', '-c', 'id -u', 'root'])
run('sudo_id', ['/usr/bin/sudo', '-n', 'id', '-u'])
run('passwd_status_root', ['/usr/bin/passwd', '-S', 'root'])
say('EUID', os.geteuid(), os.getuid())
''')


def chk_setuid(r, ctx):
    blocked(ctx, "su_id", "sudo_id", "passwd_status_root")
    assert "EUID 1000 1000" in stdout_of(r)


KILL_HOST = py(r'''
attempt('kill0_host_sleep', lambda: os.kill(@HOST_PID@, 0) or 'signal 0 delivered')
attempt('kill9_host_sleep', lambda: os.kill(@HOST_PID@, 9) or 'SIGKILL delivered')   # the test's own sleep
attempt('pidfd_host_sleep', lambda: os.pidfd_open(@HOST_PID@) and 'pidfd')
try:
    os.kill(1, 9)          # the sandbox's init (different uid: EPERM); host init can't be SIGKILLed either
except OSError as e:
    say('KILL_INIT', _err(e))
time.sleep(0.2)
say('STILL_RUNNING')
''')


def chk_kill_host(r, ctx):
    blocked(ctx, "kill0_host_sleep", "kill9_host_sleep", "pidfd_host_sleep")
    assert ctx.sleep.poll() is None, "the host's sleep was killed"
    assert "ESRCH" in ctx.probes["kill9_host_sleep"][1], ctx.probes["kill9_host_sleep"]
    assert "STILL_RUNNING" in stdout_of(r)


TTY = py(r"""
import fcntl, termios
def tty_fd():
    return os.open('/dev/tty', os.O_RDWR | os.O_NOCTTY)
fd = attempt('open_dev_tty', lambda: tty_fd())
def sti(f):
    fcntl.ioctl(f, termios.TIOCSTI, b'#')    # one '#' into the test's own pty, if anything
    return 'pushed'
if fd is not None:
    attempt('tiocsti_dev_tty', lambda: sti(fd))
for f in (0, 1, 2):
    attempt('tiocsti_fd%d' % f, lambda: sti(f))
attempt('isatty_any', lambda: [f for f in (0, 1, 2) if os.isatty(f)] or (_ for _ in ()).throw(OSError(errno.ENOTTY, 'none')))
say('SID', os.getsid(0) == os.getpid())
""")


def chk_tty(r, ctx):
    blocked(ctx, "open_dev_tty")
    if r["status"] == "ok":             # TIOCSTI failed rather than killed
        blocked(ctx, "tiocsti_fd0", "tiocsti_fd1", "tiocsti_fd2", "isatty_any")
    else:
        assert r["signal"] == "SIGSYS"


# ---------------------------------------------------------------- output floods

STDOUT_GIB = py(r'''
chunk = b'x' * (1 << 20)
w = sys.stdout.buffer
for i in range(1024):
    w.write(chunk)
w.flush()
''')


def chk_stdout_gib(r, ctx):
    s = r["stdout"]
    assert s["truncated"] is True
    assert 256 * MiB <= s["bytes"] <= GiB, "stdout bytes %d" % s["bytes"]
    assert len(s["text"].encode()) == MiB, "kept %d bytes, --stream-keep is 1M" % len(s["text"].encode())
    assert r["wall_seconds"] < 15 and ctx.elapsed < 25, "a 1 GiB flood took %.1f s" % ctx.elapsed


STDOUT_5M = py(r'''
sys.stdout.buffer.write(b'a' * (5 << 20))
sys.stdout.flush()
sys.stderr.buffer.write(b'e' * (2 << 20))
''')


def chk_stdout_5m(r, ctx):
    s, e = r["stdout"], r["stderr"]
    assert s["truncated"] is True and s["bytes"] == 5 * MiB and len(s["text"]) == MiB, \
        (s["truncated"], s["bytes"], len(s["text"]))
    assert e["truncated"] is True and e["bytes"] == 2 * MiB and len(e["text"]) == MiB, \
        (e["truncated"], e["bytes"], len(e["text"]))


SPARSE_200M = py(r'''
with open('sparse.bin', 'wb') as f:
    f.truncate(200 << 20)
open('small.txt', 'w').write('small\n')
say('SPARSE_MADE')
''')

SPARSE_40G = py(r'''
with open('huge.bin', 'wb') as f:
    f.truncate(40 << 30)
say('SPARSE_MADE', os.stat('huge.bin').st_size)
''')


def chk_sparse(name):
    def check(r, ctx):
        assert "SPARSE_MADE" in stdout_of(r), "the job could not make the sparse file: " + short(r)
        ref = refused_map(r)
        assert ref.get(name) == "file over the per-file limit", ref
        assert name not in file_names(r)
        assert not (ctx.out / name).exists(), "the sparse file was copied out"
        assert ctx.elapsed < 20
    return check


FSIZE_BASH = "echo start\nexec head -c 3M /dev/zero > big.bin\n"


def chk_fsize(r, ctx):
    assert r["signal"] == "SIGXFSZ", r["signal"]


MANY_FILES = py(r'''
t0 = time.time()
for i in range(100000):
    fd = os.open('f%06d' % i, os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b'x')
    os.close(fd)
say('MADE', 100000, round(time.time() - t0, 1))
''')


def assert_all_accounted(r, total):
    """Everything the job wrote is in the result: collected, refused by name, or counted."""
    accounted = len(r["files"]) + len(r["refused"]) + r["refused_more"]
    assert accounted == total, "%d entries written, %d in the result (files %d, refused %d, counted %d)" % (
        total, accounted, len(r["files"]), len(r["refused"]), r["refused_more"])


def chk_many(r, ctx):
    assert "MADE 100000" in stdout_of(r), "the job could not make the files: " + short(r)
    assert len(r["files"]) == 100, "%d files collected" % len(r["files"])
    assert all(why in ("over the file count limit", "over the total size limit")
               for why in refused_map(r).values()), set(refused_map(r).values())
    assert len(r["refused"]) <= 1000, "the refused list is not capped: %d entries" % len(r["refused"])
    inc = r["collection_incomplete"]
    assert inc == {"reason": "too many entries", "max_entries": 10000, "not_examined": 90000,
                   "stopped_in": "."}, inc
    assert_all_accounted(r, 100000)
    assert len([p for p in out_files(ctx)]) == 100
    assert ctx.elapsed < 45, "kiln run took %.1f s" % ctx.elapsed


# Issue 15 item 8: 50,000 small files and large ones. big.bin is written first (the
# job directory's tmpfs lists the newest names first, so a walk that stopped reading
# after 10,000 names never saw it) and sorts first; zz-late.bin sorts last, beyond the
# 10,000 entries examined. Neither may vanish: collected, or counted with the result
# saying the collection stopped early.
MANY_AND_LARGE = py(r'''
open('big.bin', 'wb').write(b'B' * (5 << 20))
os.makedirs('sub/deeper')
for i in range(50000):
    fd = os.open('f%05d' % i, os.O_WRONLY | os.O_CREAT, 0o644)
    os.write(fd, b'x')
    os.close(fd)
open('sub/deeper/inner.txt', 'w').write('inner')
open('zz-late.bin', 'wb').write(b'Z' * (3 << 20))
say('MADE')
''')


def chk_many_and_large(r, ctx):
    assert "MADE" in stdout_of(r), "the job could not make the files: " + short(r)
    listed = {f["name"]: f for f in r["files"]}
    assert "big.bin" in listed, "big.bin neither collected nor refused: %r" % sorted(listed)[:5]
    assert listed["big.bin"]["bytes"] == 5 << 20 and listed["big.bin"]["sha256"] == _sha(b"B" * (5 << 20))
    assert (ctx.out / "big.bin").stat().st_size == 5 << 20
    assert len(r["files"]) == 100 and sorted(listed)[1:] == ["f%05d" % i for i in range(99)], sorted(listed)[:3]
    # examined: the first 10,000 names, big.bin and f00000..f09998; not examined,
    # counted: f09999..f49999, sub with sub/deeper and sub/deeper/inner.txt, zz-late.bin
    inc = r["collection_incomplete"]
    assert inc == {"reason": "too many entries", "max_entries": 10000, "not_examined": 40001 + 4,
                   "stopped_in": "."}, inc
    assert "zz-late.bin" not in listed and "zz-late.bin" not in refused_map(r)
    assert "10000 directory entries" in r["message"] and "collection_incomplete" in r["message"], r["message"]
    assert_all_accounted(r, 50000 + 5)


# Issue 15 item 8, the issue's own case: a directory of 50,000 files beside a large file
# and a small one at the top. The top's files come first (a directory's own entries
# before its subdirectories'), and the large file's own refusal is listed however many
# count-cap refusals came before: those give way in the list, and every refusal is
# counted by its reason.
DIR_AND_LARGE = py(r'''
os.makedirs('many')
for i in range(50000):
    os.close(os.open('many/f%05d' % i, os.O_WRONLY | os.O_CREAT, 0o644))
with open('zbig.bin', 'wb') as f:
    f.truncate(40 << 20)
open('report.csv', 'w').write('a,b\n1,2\n')
say('MADE')
''')


def chk_dir_and_large(r, ctx):
    assert "MADE" in stdout_of(r), "the job could not make the files: " + short(r)
    listed = {f["name"] for f in r["files"]}
    assert "report.csv" in listed, "a file at the top lost to a subdirectory's: %r" % sorted(listed)[:3]
    refused = refused_map(r)
    assert refused.get("zbig.bin") == "file over the per-file limit", refused.get("zbig.bin")
    by = r["refused_by_reason"]
    assert by["file over the per-file limit"] == 1 and by["over the file count limit"] >= 9000, by
    listed_refusals = sum(1 for _ in r["refused"])
    assert sum(by.values()) == listed_refusals + r["refused_more"] - r["collection_incomplete"]["not_examined"], (by, r["refused_more"])
    assert_all_accounted(r, 50000 + 2)  # the directory itself is walked, not a file


# A refusal of its own reason is listed even after the list is full of count-cap ones:
# 300 small files sort first and fill the 100 files and the 100 refusals listed; the
# large file, last, takes a count-cap refusal's place.
FULL_LIST_THEN_LARGE = py(r'''
for i in range(300):
    open('a%03d' % i, 'w').write('x')
with open('zz.bin', 'wb') as f:
    f.truncate(40 << 20)
say('MADE')
''')


def chk_full_list_then_large(r, ctx):
    assert "MADE" in stdout_of(r), short(r)
    refused = refused_map(r)
    assert refused.get("zz.bin") == "file over the per-file limit", sorted(refused.items())[-3:]
    assert len(r["refused"]) == 100 and r["refused_by_reason"] == {
        "over the file count limit": 200, "file over the per-file limit": 1}, r["refused_by_reason"]
    assert_all_accounted(r, 301)


# Issue 15 item 9: a path is refused for its length, not as "too deep". Fifteen levels
# of 255-byte names (the depth limit is 16), then files whose names (paths relative to
# /mnt/data) are exactly the limit and one byte over: DIR/NAME at most 4095 bytes for
# the output directory DIR, /mnt/data/NAME too.
LONG_PATHS = py(r'''
limit = 4094 - max(@OUT_LEN@, len('/mnt/data'))
for i in range(15):
    n = chr(ord('a') + i) * 255
    os.mkdir(n)
    os.chdir(n)
leaf = limit - 15 * 256
open('x' * leaf, 'w').write('fits')
open('y' * (leaf + 1), 'w').write('over')
say('LIMIT', limit)
''')


def chk_long_paths(r, ctx):
    limit = 4094 - max(len(r["out_dir"]), len("/mnt/data"))
    assert "LIMIT %d" % limit in stdout_of(r), stdout_of(r)
    assert len(r["files"]) == 1 and len(r["files"][0]["name"]) == limit, [len(f["name"]) for f in r["files"]]
    assert r["files"][0]["sha256"] == _sha(b"fits")
    assert [(len(e["name"]), e["reason"]) for e in r["refused"]] == [(limit + 1, "path too long")], \
        [(len(e["name"]), e["reason"]) for e in r["refused"]]
    assert r["collection_incomplete"] is None


# ---------------------------------------------------------------- limits in force

PROC_COUNT = py(r"""
import signal
kids = []
for i in range(100):
    try:
        pid = os.fork()
    except OSError as e:
        say('FORK_FAILED_AT', len(kids), _err(e))
        break
    if pid == 0:
        time.sleep(30)
        os._exit(0)
    kids.append(pid)
say('CHILDREN', len(kids))
""")


def chk_proc_count(r, ctx):
    line = [ln for ln in stdout_of(r).splitlines() if ln.startswith("CHILDREN ")]
    assert line, stdout_of(r)
    n = int(line[0].split()[1])
    assert n < 16, "%d children forked under --processes 16" % n
    assert "FORK_FAILED_AT" in stdout_of(r) and "EAGAIN" in stdout_of(r)
    assert r["wall_seconds"] < 5


THREADS = py(r"""
import threading
ev = threading.Event()
ts = []
try:
    for i in range(200):
        t = threading.Thread(target=ev.wait, daemon=True)
        t.start()
        ts.append(t)
except RuntimeError as e:
    say('THREAD_FAILED_AT', len(ts))
say('THREADS', len(ts))
ev.set()
""")


def chk_threads(r, ctx):
    line = [ln for ln in stdout_of(r).splitlines() if ln.startswith("THREADS ")]
    assert line, stdout_of(r)
    assert int(line[0].split()[1]) < 16, "threads are not counted by --processes: " + line[0]


OPEN_FILES = py(r"""
import resource
fds = []
try:
    while len(fds) < 5000:
        fds.append(os.open('/dev/null', os.O_RDONLY))
except OSError as e:
    say('OPEN_FAILED', len(fds), _err(e))
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
say('NOFILE', soft, hard)
attempt('raise_nofile', lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (hard * 4, hard * 4)) or 'raised')
attempt('raise_fsize', lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (resource.RLIM_INFINITY,) * 2) or 'raised')
attempt('raise_nproc', lambda: resource.setrlimit(resource.RLIMIT_NPROC, (resource.RLIM_INFINITY,) * 2) or 'raised')
""")


def chk_open_files(r, ctx):
    out = stdout_of(r)
    line = [ln for ln in out.splitlines() if ln.startswith("OPEN_FAILED ")]
    assert line and line[0].split()[2] == "EMFILE", out
    assert int(line[0].split()[1]) <= 64, line[0]
    assert "NOFILE 64 64" in out, out
    blocked(ctx, "raise_nofile", "raise_fsize", "raise_nproc")


CEILING = py(r"""
def write(name, n):
    with open(name, 'wb') as f:
        left = n
        while left:
            k = min(left, 1 << 20)
            f.write(os.urandom(k))
            left -= k
write('at_ceiling.bin', 30 << 20)
write('over_ceiling.bin', (30 << 20) + 1)
say('WRITTEN')
""")


def chk_ceiling(r, ctx):
    assert "at_ceiling.bin" in file_names(r), r["files"]
    assert refused_map(r).get("over_ceiling.bin") == "file over the per-file limit", r["refused"]
    assert (ctx.out / "at_ceiling.bin").stat().st_size == 30 * MiB
    assert not (ctx.out / "over_ceiling.bin").exists()


TOTAL = py(r"""
for i in range(4):
    with open('part%d.bin' % i, 'wb') as f:
        f.write(os.urandom(29 << 20))
say('WRITTEN')
""")


def chk_total(r, ctx):
    assert len(r["files"]) == 3, file_names(r)
    assert sum(f["bytes"] for f in r["files"]) <= 100 * MiB
    assert list(refused_map(r).values()) == ["over the total size limit"], r["refused"]


# ---------------------------------------------------------------- rendering what a job saved

RENDER = py(r"""
import json
os.makedirs('.kiln')
def spec(path):
    return {"sheets": [{"name": "S", "data": {"path": path, "format": "csv", "header": False}}]}
def save(out, sp):
    with open('.kiln/%s.spec.json' % out, 'w') as f:
        json.dump(sp, f)
open('.kiln/ok.csv', 'w').write('a,b\n1,2\n')
save('good.xlsx', spec('ok.csv'))
save('abs.xlsx', spec('@CANARY@'))
save('dotdot.xlsx', spec('../../../../../../..@CANARY@'))
save('shadow.xlsx', spec('../../../../../../../etc/shadow'))
os.symlink('@CANARY@', '.kiln/link.csv')
save('link.xlsx', spec('link.csv'))
os.symlink('/etc', '.kiln/etc')
save('dirlink.xlsx', spec('etc/passwd'))
os.symlink('@CANARY@', '.kiln/symspec.xlsx.spec.json')          # the spec itself a symlink
save('planted.xlsx', spec('ok.csv'))
os.symlink('@CANARY@', 'planted.xlsx')                            # its output name a symlink
say('SPECS_SAVED')
""")


def _zip_texts(path):
    import zipfile
    try:
        with zipfile.ZipFile(path) as z:
            return b"".join(z.read(n) for n in z.namelist())
    except (zipfile.BadZipFile, OSError):
        return _read(path) or b""


def chk_render(r, ctx):
    assert "SPECS_SAVED" in stdout_of(r)
    docs = {d["name"]: d for d in r.get("documents", [])}
    assert "good.xlsx" in docs, "the honest spec did not render: %r / %r" % (docs, r.get("render_errors"))
    errs = {e["spec"] for e in r.get("render_errors", [])}
    for bad in ("abs", "dotdot", "shadow", "link", "dirlink"):
        assert bad + ".xlsx" not in docs, "%s.xlsx rendered from a path outside the job" % bad
        assert ".kiln/%s.xlsx.spec.json" % bad in errs, "no render error for %s: %r" % (bad, sorted(errs))
    assert "symspec.xlsx" not in docs
    for rel, p in out_files(ctx).items():
        if p.is_file() and not p.is_symlink():
            data = _zip_texts(p)
            assert ctx.secret.encode() not in data, "the canary reached out/%s" % rel
            for line in shadow_lines():
                assert line not in data, "a host /etc/shadow line reached out/%s" % rel
            assert _sha(data) != _passwd_sha()
    planted = ctx.out / "planted.xlsx"
    assert not planted.is_symlink()

# ---------------------------------------------------------------- faults

def chk_syntax(r, ctx):
    assert r["exit_code"] == 1 and r["signal"] is None
    assert "SyntaxError" in r["stderr"]["text"], r["stderr"]


def chk_exception(r, ctx):
    err = r["stderr"]["text"]
    assert r["exit_code"] == 1
    assert "Traceback (most recent call last)" in err and "ValueError: kiln-test-boom" in err, err
    assert 'main.py", line' in err, "the traceback names no line of main.py: " + err


def chk_exit3(r, ctx):
    assert r["exit_code"] == 3 and r["signal"] is None
    assert stdout_of(r) == "going\n"


def chk_segv(r, ctx):
    assert r["signal"] == "SIGSEGV" and r["exit_code"] is None, (r["signal"], r["exit_code"])
    assert not [n for n in file_names(r) if n.startswith("core")], "a core dump was written: %r" % file_names(r)


# =========================================================================== the table

CASES = [
    # ---- basics
    dict(id="basic-print", code="print(1)", status="ok", check=chk_print1),
    dict(id="basic-identity", code=IDENTITY, status="ok", check=chk_identity),
    dict(id="basic-files-inputs", code=FILES_CODE, setup=setup_files, status="ok", check=chk_files,
         args_fn=lambda ctx: ["-i", "%s:in.csv" % ctx.extra["input"]]),
    dict(id="basic-no-copy", code="open('n.txt','w').write('n')", status="ok", check=chk_nocopy, out=False),
    dict(id="basic-numpy-pandas-matplotlib", code=SCIENCE, status="ok", check=chk_science,
         args=["--timeout", "60"]),
    dict(id="basic-stdout-not-utf8", code=py("sys.stdout.buffer.write(b'ok\\xff\\xfe\\n\\n\\n')"),
         status="ok", check=chk_nonutf8),
    dict(id="basic-bash", language="bash", code="echo hi; id -u; pwd", status="ok",
         check=lambda r, ctx: stdout_of(r) == "hi\n1000\n/mnt/data\n" or pytest.fail(stdout_of(r))),
    # ---- network
    dict(id="net-tcp-listener-unix", code=NET_TCP, status="ok", check=chk_net_tcp),
    dict(id="net-dns", code=NET_DNS, status="ok", check=chk_net_dns),
    dict(id="net-raw-netlink-vsock", code=NET_RAW, status="ok", check=chk_net_raw),
    # ---- host files
    dict(id="host-read", code=HOST_READ, status="ok", check=chk_host_read),
    dict(id="host-other-job-dir", code=JOB_B, status="ok", check=chk_other_job, setup=setup_job_a,
         teardown=teardown_job_a),
    dict(id="host-write-outside", code=HOST_WRITE, status="ok", check=chk_host_write),
    dict(id="host-visible-tree", code=VISIBLE_TREE, status="ok", check=chk_visible_tree),
    dict(id="host-init-cmdline", code=INIT_CMDLINE, status="ok", check=chk_init_cmdline),
    dict(id="host-ro-bind", code=RO_BIND, status="ok", check=chk_ro_bind, setup=setup_ro_bind,
         args_fn=ro_bind_args),
    # ---- links
    dict(id="links-symlink-hardlink-dirlink", code=LINKS, status="ok", check=chk_links),
    dict(id="links-outdir-symlink-replaced", code="open('result.txt','w').write('job output\\n')",
         setup=setup_outdir_symlink, status="ok", check=chk_outdir_symlink),
    dict(id="collect-fifo-socket-nonutf8-deep", code=ODD_ENTRIES, status=("ok", "output_limit"),
         check=chk_odd),
    # ---- resource bombs
    dict(id="bomb-fork-python", code=FORK_BOMB_PY, args=["--timeout", "5", "--processes", "32"],
         status=("timeout", "error_exit", "signalled"), setup=setup_count_procs, check=chk_fork_bomb),
    dict(id="bomb-fork-bash", language="bash", code=FORK_BOMB_SH, args=["--timeout", "5", "--processes", "32"],
         status=("timeout", "error_exit", "signalled"), setup=setup_count_procs, check=chk_fork_bomb),
    dict(id="bomb-memory", code=MEM_BOMB, args=["--memory", "256M", "--timeout", "30"], status="memory_limit",
         check=chk_mem_bomb),
    dict(id="bomb-disk-mnt-data", code=fill_code("/mnt/data/fill.bin", "DISKFULL"), args=["--disk", "16M"],
         status="ok", setup=setup_free, check=chk_fill_data),
    dict(id="bomb-disk-tmp", code=fill_code("/tmp/fill-@TOKEN@.bin", "TMPFULL"), args=["--tmp", "16M"],
         status="ok", setup=setup_free, check=chk_fill(16 * MiB)),
    dict(id="bomb-disk-dev-shm", code=fill_code("/dev/shm/fill-@TOKEN@.bin", "SHMFULL"), args=["--tmp", "16M"],
         status="ok", setup=setup_free, check=chk_fill(16 * MiB)),
    dict(id="bomb-cpu-loop", code=CPU_LOOP, args=["--cpu", "2", "--timeout", "30"], status="timeout",
         check=chk_cpu),
    dict(id="bomb-sleep-wall", code=SLEEPER, args=["--timeout", "2"], status="timeout", check=chk_wall),
    dict(id="background-bash-sleep", language="bash", code=BG_SH, status="ok", check=chk_background),
    dict(id="background-python-daemon", code=BG_PY, status="ok", check=chk_background),
    # ---- privileges
    dict(id="priv-setuid-binaries", code=SETUID, status="ok", check=chk_setuid),
    dict(id="priv-kill-host-process", code=KILL_HOST, status="ok", check=chk_kill_host),
    dict(id="priv-controlling-tty", code=TTY, status=("ok", "seccomp_violation"), check=chk_tty, pty=True),
] + SECCOMP_CASES + [
    # ---- output floods
    dict(id="slow-stdout-1gib", code=STDOUT_GIB, status="output_limit", check=chk_stdout_gib,
         args=["--timeout", "30"]),
    dict(id="stdout-5mib-stderr-2mib", code=STDOUT_5M, status="ok", check=chk_stdout_5m),
    dict(id="sparse-200mib-over-ceiling", code=SPARSE_200M, status="output_limit", check=chk_sparse("sparse.bin")),
    dict(id="sparse-40gib", code=SPARSE_40G, status="output_limit", check=chk_sparse("huge.bin"),
         args=["--file-size", "64G"]),
    dict(id="file-size-rlimit-bash", language="bash", code=FSIZE_BASH, status="output_limit", check=chk_fsize,
         args=["--file-size", "1M"]),
    dict(id="slow-100k-files", code=MANY_FILES, status="output_limit", check=chk_many,
         args=["--disk", "512M", "--timeout", "60"], timeout=180),
    dict(id="collect-50k-files-and-large-ones", code=MANY_AND_LARGE, status="output_limit",
         check=chk_many_and_large, args=["--disk", "512M", "--timeout", "60"], timeout=180),
    dict(id="collect-dir-of-50k-and-a-large-file", code=DIR_AND_LARGE, status="output_limit",
         check=chk_dir_and_large, args=["--disk", "512M", "--timeout", "60"], timeout=180),
    dict(id="collect-full-list-then-large", code=FULL_LIST_THEN_LARGE, status="output_limit",
         check=chk_full_list_then_large, args=["--disk", "128M"]),
    dict(id="collect-path-too-long", code=LONG_PATHS, status="ok", check=chk_long_paths),
    # ---- limits in force
    dict(id="limit-processes-16", code=PROC_COUNT, args=["--processes", "16"], status="ok", check=chk_proc_count),
    dict(id="limit-threads-16", code=THREADS, args=["--processes", "16"], status="ok", check=chk_threads),
    dict(id="limit-open-files-64", code=OPEN_FILES, args=["--open-files", "64"], status="ok",
         check=chk_open_files),
    dict(id="limit-ceiling-30mib", code=CEILING, status="output_limit", check=chk_ceiling),
    dict(id="limit-total-100mib", code=TOTAL, args=["--disk", "200M"], status="output_limit", check=chk_total),
    # ---- rendering
    dict(id="render-host-paths-symlinks", code=RENDER, args=["--render"], status=("ok", "output_limit"),
         check=chk_render),
    # ---- faults
    dict(id="fault-syntax-error", code="print(\n", status="error_exit", check=chk_syntax),
    dict(id="fault-exception", code=py("\nraise ValueError('kiln-test-boom')\n"), status="error_exit",
         check=chk_exception),
    dict(id="fault-bash-exit-3", language="bash", code="echo going\nexit 3\n", status="error_exit", check=chk_exit3),
    dict(id="fault-sigsegv", code=py("import signal\nos.kill(os.getpid(), signal.SIGSEGV)\n"),
         status="signalled", check=chk_segv),
    dict(id="fault-real-segfault", code=py("import ctypes\nctypes.string_at(0)\n"), status="signalled",
         check=chk_segv),
]


# =========================================================================== the test

def _check_host_unchanged(ctx, before, r, proc):
    raw = proc.stdout + proc.stderr
    # canaries: unchanged, and never read out
    for p, (data, mtime, mode, uid, ino) in ctx.canaries.items():
        st = os.lstat(p)
        assert p.read_bytes() == data, "canary %s was changed" % p
        assert (st.st_mtime_ns, st.st_mode, st.st_uid, st.st_ino) == (mtime, mode, uid, ino), \
            "canary %s metadata changed" % p
        assert _sha(data).encode() not in raw, "the hash of canary %s reached the result" % p
    assert ctx.secret.encode() not in raw, "the canary text (or the host environment) reached the result"
    for rel, p in out_files(ctx).items():
        if p.is_file() and not p.is_symlink():
            assert ctx.secret.encode() not in p.read_bytes(), "canary text in out/%s" % rel
    # the real /etc/shadow: no line, no hash of a line
    for line in shadow_lines():
        assert line not in raw, "a line of the host's /etc/shadow reached the result"
        assert _sha(line).encode() not in raw, "the hash of a host /etc/shadow line reached the result"
    # listeners
    accepted = {k: v for k, v in ctx.listeners.accepted.items() if v}
    assert not accepted, "the test's listeners accepted connections from the job: %r" % accepted
    # the host's sleep
    assert ctx.sleep.poll() is None, "the host process the test started was killed"
    # host files and names
    after = host_fingerprint()
    for k, v in before.fingerprint.items():
        assert after[k] == v, "host %s changed" % k
    for pat in ATTACK_HOST_PATHS:
        p = ctx.subst(pat)
        if os.path.lexists(p):
            if os.path.isdir(p) and not os.path.islink(p):
                os.rmdir(p)
            else:
                os.unlink(p)
            pytest.fail("the job created %s on the host (removed now)" % p)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_sandbox_case(case, tmp_path, kiln_bin):
    before = Snapshot()
    ctx = Ctx(tmp_path)
    failure = None
    try:
        if case.get("setup"):
            case["setup"](ctx)
        args = list(case.get("args", []))
        if case.get("args_fn"):
            args += case["args_fn"](ctx)
        try:
            r, proc, elapsed = run_job(ctx, ctx.subst(case["code"]), language=case.get("language", "python"),
                                       args=args, timeout=case.get("timeout"), out=case.get("out", True),
                                       pty=case.get("pty", False))
        finally:
            if case.get("teardown"):
                case["teardown"](ctx)
        ctx.proc, ctx.elapsed = proc, elapsed
        ctx.probes = parse_probes(r)
        want = case["status"]
        want = (want,) if isinstance(want, str) else tuple(want)
        assert r.get("status") in want, "status %r, want %s\n%s" % (r.get("status"), " or ".join(want), short(r))
        # 0 for "ok"; 1 for any other status, and (cli/kiln.c) for "ok" with render errors
        want_rc = 0 if r["status"] == "ok" and not r.get("render_errors") else 1
        assert proc.returncode == want_rc, "kiln run exited %d for status %s (render errors: %d)" % (
            proc.returncode, r["status"], len(r.get("render_errors") or []))
        for k in ("message", "exit_code", "signal", "timeout", "wall_seconds", "cpu_seconds", "stdout", "stderr",
                  "files", "refused", "limits"):
            assert k in r, "the result has no %r: %s" % (k, short(r))
        if r["status"] == "timeout":
            assert r["timeout"] in ("wall", "cpu")
        else:
            assert r["timeout"] is None
        # every probe the job printed must be BLOCKED, whatever the case
        broken = {n: d for n, (v, d) in ctx.probes.items() if v == "BROKEN"}
        assert not broken, "probes with a bug of their own (fix the test): %r" % broken
        escaped = {n: d for n, (v, d) in ctx.probes.items() if v != "BLOCKED"}
        assert not escaped, "probes escaped the sandbox: %r" % escaped
        if case.get("check"):
            try:
                case["check"](r, ctx)
            except AssertionError as e:
                raise AssertionError("%s\n%s" % (e, short(r))) from None
        _check_host_unchanged(ctx, before, r, proc)
    except BaseException as e:
        failure = e
        raise
    finally:
        ctx.close()
        try:
            assert_host_clean(before, ctx.supervisors)
        except AssertionError as e2:
            if failure is None:
                raise
            if isinstance(failure, AssertionError):
                failure.args = ("%s\nALSO: %s" % (failure.args[0] if failure.args else "", e2),)
