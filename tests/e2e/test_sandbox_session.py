"""The sandbox's attack table (test_sandbox.py) run as cells of a session.

The session's sandbox is built as kiln run's is and its interpreter is forked from a
shared zygote, so every probe must be blocked there too, the host must be unchanged, and
nothing may outlive the session's close. A file of its own, so that it is an xdist group
of its own, beside the sandbox files (what it leaves is named after the session's
supervisor, which their host checks tell from their own).
"""
import json
import os
import subprocess

import pytest

from conftest import SANITIZED
from test_sandbox import (CASES, DEFAULT_WALL, SECCOMP_CASES, Ctx, Snapshot, _check_host_unchanged,
                          assert_host_clean, parse_probes, short)

# The cases whose setup or check is about kiln run's own
# options or result (an output directory, --no-copy, --ro-bind, --render, the collection's
# refusals) are not here; the rest run with their checks, on a result built from the cell
# record in kiln run's terms.

SESSION_STATUS = {"ok": "ok", "error": "error_exit", "timeout": "timeout", "memory_limit": "memory_limit",
                  "output_limit": "output_limit", "session_lost": "signalled", "interrupted": "interrupted"}

SESSION_CASE_IDS = [
    "basic-print", "basic-identity", "basic-numpy-pandas-matplotlib", "basic-stdout-not-utf8", "basic-bash",
    "net-tcp-listener-unix", "net-dns", "net-raw-netlink-vsock",
    "host-read", "host-other-job-dir", "host-write-outside", "host-visible-tree", "host-init-cmdline",
    "links-symlink-hardlink-dirlink",
    "bomb-fork-python", "bomb-fork-bash", "bomb-memory", "bomb-disk-mnt-data", "bomb-disk-tmp",
    "bomb-disk-dev-shm", "bomb-cpu-loop", "bomb-sleep-wall",
    "priv-setuid-binaries", "priv-kill-host-process",
    "slow-stdout-1gib", "stdout-5mib-stderr-2mib",
    "limit-processes-16", "limit-threads-16", "limit-open-files-64",
    "fault-exception", "fault-bash-exit-3", "fault-sigsegv", "fault-real-segfault",
    # what a cell leaves running lives until the session's close, which must end it
    "background-bash-sleep", "background-python-daemon",
    "file-size-rlimit-bash", "fault-syntax-error",
] + [c["id"] for c in SECCOMP_CASES]

# Checks that read what only kiln run's result has (its exit code, signal, message or
# collected files); the case still runs, with every probe held to BLOCKED.
SESSION_SKIP_CHECK = {"basic-identity", "fault-exception", "fault-bash-exit-3", "fault-sigsegv",
                      "fault-real-segfault", "bomb-memory", "bomb-cpu-loop", "bomb-sleep-wall",
                      "bomb-fork-python", "bomb-fork-bash", "slow-stdout-1gib", "bomb-disk-mnt-data",
                      "links-symlink-hardlink-dirlink", "host-other-job-dir", "background-bash-sleep",
                      "background-python-daemon", "file-size-rlimit-bash", "fault-syntax-error"}

# What a cell of these cases ends as: a crash of the interpreter loses the session.
SESSION_WANT = {"fault-exception": ("error_exit",), "fault-bash-exit-3": ("error_exit",),
                "fault-sigsegv": ("signalled",), "fault-real-segfault": ("signalled",),
                "bomb-memory": ("memory_limit",), "bomb-fork-python": ("timeout", "error_exit", "signalled", "ok"),
                "bomb-fork-bash": ("timeout", "error_exit", "ok"),
                "background-bash-sleep": ("ok",), "background-python-daemon": ("ok",),
                "file-size-rlimit-bash": ("error_exit",), "fault-syntax-error": ("error_exit",)}


@pytest.fixture(scope="module")
def session_zygote():
    from session_helpers import Zygote
    z = Zygote()
    yield z.path
    z.close()


def run_in_session(ctx, zygote, code, language="python", args=()):
    """The code as one cell of a fresh session (the case's limit options given to kiln
    session); returns a result in kiln run's terms and the cell record."""
    from session_helpers import Session
    args = list(args)
    if "--timeout" not in args:
        args += ["--timeout", str(DEFAULT_WALL)]
    wall = float(args[args.index("--timeout") + 1])
    env = dict(os.environ, KILN_TEST_HOST_SECRET=ctx.secret)
    s = Session(*args, zygote=zygote, env=env)
    ctx.supervisors.add(s.p.pid)
    limits = s.ready["session"]["limits"]
    try:
        rec, _ = s.execute(code, language=language, wait=wall + 60)
        # the cell's files, fetched as a client would, where kiln run would copy them
        for f in rec.get("files", []) if not rec.get("session") else []:
            dest = ctx.out / f["name"]
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(s.get(f["name"]))
    finally:
        rc = s.close()
    assert rc in (0, 8), "kiln session exited %d" % rc
    ended = rec.get("session") or {}
    status = SESSION_STATUS.get(rec["status"], rec["status"])
    signal_name = ended.get("signal")
    if ended.get("reason") == "seccomp_violation":
        status = "seccomp_violation"
    elif language == "bash" and rec["error"] and "SIGSYS" in rec["error"]["evalue"]:
        # the bash cell's process was killed; the session lives on
        status, signal_name = "seccomp_violation", "SIGSYS"
    r = {"status": status, "stdout": rec["stdout"],
         "stderr": rec["stderr"], "files": rec.get("files", []), "refused": [], "render_errors": [],
         "timeout": ("wall" if rec["status"] == "timeout" else None),
         "exit_code": 0 if rec["status"] == "ok" else None, "signal": signal_name,
         "language": language,
         "limits": limits, "refused_more": 0,
         "wall_seconds": rec.get("wall_seconds"), "cpu_seconds": rec.get("cpu_seconds"), "session": rec}
    return r, rec


@pytest.mark.parametrize("case", [c for c in CASES if c["id"] in SESSION_CASE_IDS],
                         ids=[c["id"] for c in CASES if c["id"] in SESSION_CASE_IDS])
def test_sandbox_case_in_a_session(case, tmp_path, kiln_bin, session_zygote):
    if SANITIZED:
        # The sandbox is the same code as kiln run's (its table runs under ASan), and
        # test_session.py drives the session's own C under ASan; here the probes are the
        # kernel's answers, which the plain build's run (make e2e) has checked.
        pytest.skip("the attack table in a session runs in the plain build (make e2e)")
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
            r, rec = run_in_session(ctx, session_zygote, ctx.subst(case["code"]),
                                    language=case.get("language", "python"), args=args)
        finally:
            if case.get("teardown"):
                case["teardown"](ctx)
        ctx.proc = subprocess.CompletedProcess([], 0, json.dumps(rec).encode(), b"")
        ctx.probes = parse_probes(r)
        want = SESSION_WANT.get(case["id"], case["status"])
        want = (want,) if isinstance(want, str) else tuple(want)
        assert r["status"] in want, "status %r (%s), want %s\n%s" % (
            r["status"], rec["status"], " or ".join(want), short(r))
        broken = {n: d for n, (v, d) in ctx.probes.items() if v == "BROKEN"}
        assert not broken, "probes with a bug of their own (fix the test): %r" % broken
        escaped = {n: d for n, (v, d) in ctx.probes.items() if v != "BLOCKED"}
        assert not escaped, "probes escaped the session's sandbox: %r" % escaped
        if case.get("check") and case["id"] not in SESSION_SKIP_CHECK:
            try:
                case["check"](r, ctx)
            except AssertionError as e:
                raise AssertionError("%s\n%s" % (e, short(r))) from None
        _check_host_unchanged(ctx, before, r, ctx.proc)
    except BaseException as e:
        failure = e
        raise
    finally:
        ctx.close()
        try:
            assert_host_clean(before, ctx.supervisors)
        except AssertionError:
            if failure is None:
                raise
