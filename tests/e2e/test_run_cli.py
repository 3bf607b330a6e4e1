"""`kiln run` as a command: options, exit statuses, where files go (docs/run.md).

The attack and fault cases are in test_sandbox.py; the sample jobs in
test_run_samples.py. These are the command's own contract.
"""
import json
import os
import subprocess
from pathlib import Path

import pytest

from conftest import KILN_BIN, describe, run_kiln


def run_json(*args, **kw):
    proc = run_kiln("run", *args, **kw)
    try:
        return proc, json.loads(proc.stdout)
    except ValueError:
        pytest.fail("kiln run printed no JSON\n" + describe(proc))


def test_print_and_exit_zero(tmp_path):
    proc, r = run_json("-n", "-c", "print(6 * 7)")
    assert proc.returncode == 0, describe(proc)
    assert r["status"] == "ok" and r["exit_code"] == 0 and r["signal"] is None
    assert r["stdout"] == {"text": "42\n", "bytes": 3, "truncated": False}
    assert r["language"] == "python" and r["out_dir"] is None
    assert r["wall_seconds"] > 0 and r["cpu_seconds"] > 0 and r["peak_memory_bytes"] > 0


def test_code_from_stdin_and_file_and_args(tmp_path):
    proc, r = run_json("-n", "-", input="import sys; print('stdin', sys.argv[1:])")
    assert r["stdout"]["text"] == "stdin []\n", describe(proc)
    prog = tmp_path / "job.py"
    prog.write_text("import sys\nprint(sys.argv[1:])\n")
    proc, r = run_json("-n", prog, "--", "a b", "--flag")
    assert r["stdout"]["text"] == "['a b', '--flag']\n", describe(proc)


def test_bash_by_extension_and_by_flag(tmp_path):
    prog = tmp_path / "job.sh"
    prog.write_text('echo "$BASH_VERSION" | cut -c1; echo "args: $*"\n')
    proc, r = run_json("-n", prog, "--", "x", "y")
    assert r["language"] == "bash" and r["stdout"]["text"].endswith("args: x y\n"), describe(proc)
    proc, r = run_json("-n", "-l", "bash", "-c", "exit 3")
    assert proc.returncode == 1 and r["status"] == "error_exit" and r["exit_code"] == 3


def test_pretty_is_indented():
    proc = run_kiln("run", "-n", "--pretty", "-c", "pass")
    assert proc.stdout.startswith(b"{\n  \"status\""), describe(proc)


def test_inputs_and_out_dir(tmp_path):
    data = tmp_path / "in.csv"
    data.write_text("a,b\n1,2\n")
    out = tmp_path / "out"
    proc, r = run_json("-o", out, "-i", data, "-i", "%s:renamed.txt" % data, "-c",
                       "import os\nprint(sorted(os.listdir('.')))\n"
                       "open('result.txt', 'w').write(open('in.csv').read().upper())")
    assert r["status"] == "ok", describe(proc)
    assert r["stdout"]["text"] == "['in.csv', 'renamed.txt']\n"
    names = [f["name"] for f in r["files"]]
    assert names == ["in.csv", "renamed.txt", "result.txt"]
    assert (out / "result.txt").read_text() == "A,B\n1,2\n"
    assert r["out_dir"] == str(out.resolve())


def test_default_out_dir_is_kiln_out(tmp_path):
    proc, r = run_json("-c", "open('x.txt', 'w').write('x')", cwd=tmp_path)
    assert r["status"] == "ok", describe(proc)
    assert (tmp_path / "kiln-out" / "x.txt").read_text() == "x"


def test_no_copy_lists_only(tmp_path):
    proc, r = run_json("-n", "-c", "open('x.txt', 'w').write('x')", cwd=tmp_path)
    assert [f["name"] for f in r["files"]] == ["x.txt"]
    assert not (tmp_path / "kiln-out").exists()


@pytest.mark.parametrize("args, needle", [
    (["-l", "ruby", "-c", "pass"], "unknown language"),
    (["--timeout", "0", "-c", "pass"], "--timeout"),
    (["--timeout", "abc", "-c", "pass"], "--timeout"),
    (["--memory", "12Q", "-c", "pass"], "--memory"),
    (["--processes", "-1", "-c", "pass"], "--processes"),
    (["--memory", "1M", "-c", "pass"], "--memory: must be at least 16M"),
    (["--bogus"], "unknown option"),
    (["-c"], "needs a value"),
    (["-c", "pass", "file.py"], "not both"),
    (["-c", "pass", "extra", "more"], "unexpected argument"),
])
def test_usage_errors_exit_2(args, needle):
    proc = run_kiln("run", "-n", *args)
    assert proc.returncode == 2, describe(proc)
    assert needle in proc.stderr.decode(), describe(proc)


@pytest.mark.parametrize("path, needle", [
    ("relative/dir", "must be absolute"),
    ("/usr/lib/", "without a symlink, '.', '..', '//' or a final '/' in it: '/usr/lib'"),
    ("/usr//lib", ": '/usr/lib'"),
    ("/usr/lib/../share", ": '/usr/share'"),
    ("/", "the path holds /proc"),
    ("/etc", "the path holds /etc/passwd"),
    ("/etc/passwd", "the path is /etc/passwd"),
    ("/var", "the path holds /var/run"),
    ("/proc/sys", "the path is in /proc"),
    ("/sys/kernel", "the path is in /sys"),
    ("/dev/shm", "the path is in /dev"),
    ("/tmp", "the path is /tmp"),
    ("/run", "the path is /run"),
    ("/dev/null", "only a directory or a regular file"),
])
def test_ro_bind_paths_are_checked_exit_2(path, needle):
    """--ro-bind takes an absolute path as it is (no symlink, ., .., // or final / in it),
    of a directory or regular file, not of the sandbox's own parts (docs/run.md)."""
    proc = run_kiln("run", "-n", "--ro-bind", path, "-c", "pass")
    assert proc.returncode == 2, describe(proc)
    assert ("--ro-bind '%s'" % path).encode() in proc.stderr, describe(proc)
    assert needle.encode() in proc.stderr, describe(proc)
    assert proc.stdout == b"", describe(proc)


def test_ro_bind_symlinks_fifos_missing_hidden_and_too_many(tmp_path):
    os.symlink("/usr/share", tmp_path / "link")
    proc = run_kiln("run", "-n", "--ro-bind", tmp_path / "link", "-c", "pass")
    assert proc.returncode == 2 and b": '/usr/share'" in proc.stderr, describe(proc)
    os.mkfifo(tmp_path / "fifo")
    proc = run_kiln("run", "-n", "--ro-bind", tmp_path / "fifo", "-c", "pass")
    assert proc.returncode == 2 and b"only a directory or a regular file" in proc.stderr, describe(proc)
    proc = run_kiln("run", "-n", "--ro-bind", "/nonexistent-kiln-test", "-c", "pass")
    assert proc.returncode == 5 and b"No such file or directory" in proc.stderr, describe(proc)
    # pytest's own directories are 0700: the sandbox could not reach what is below them
    (tmp_path / "d").mkdir()
    proc = run_kiln("run", "-n", "--ro-bind", tmp_path / "d", "-c", "pass")
    assert proc.returncode == 5 and b"is not searchable by others" in proc.stderr, describe(proc)
    args = [a for _ in range(17) for a in ("--ro-bind", "/usr/share")]
    proc = run_kiln("run", "-n", *args, "-c", "pass")
    assert proc.returncode == 2 and b"--ro-bind: at most 16 paths" in proc.stderr, describe(proc)
    args = [a for _ in range(16) for a in ("--ro-bind", "/usr/share")]
    proc, r = run_json("-n", *args, "-c", "import os; print(os.path.isdir('/usr/share'))")
    assert r["status"] == "ok" and r["stdout"]["text"] == "True\n", describe(proc)


def test_unreadable_program_and_input_exit_5(tmp_path):
    proc = run_kiln("run", "-n", tmp_path / "missing.py")
    assert proc.returncode == 5 and b"cannot read the program" in proc.stderr, describe(proc)
    proc = run_kiln("run", "-n", "-i", tmp_path / "missing.csv", "-c", "pass")
    assert proc.returncode == 5 and b"missing.csv" in proc.stderr, describe(proc)


def test_two_inputs_with_one_name_is_a_usage_error(tmp_path):
    a = tmp_path / "a"
    a.mkdir()
    (a / "x.csv").write_text("1")
    proc = run_kiln("run", "-n", "-i", a / "x.csv", "-i", a / "x.csv", "-c", "pass")
    assert proc.returncode == 2 and b"two inputs have that name" in proc.stderr, describe(proc)


def test_out_dir_not_writable_exit_6(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = run_kiln("run", "-o", blocker / "sub", "-c", "pass")
    assert proc.returncode == 6, describe(proc)


def test_not_root_is_a_setup_error_exit_70(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("needs root to drop to another user")
    proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                           str(KILN_BIN), "run", "-n", "-c", "pass"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                          cwd="/")
    assert proc.returncode == 70, describe(proc)
    assert b"needs root" in proc.stderr, describe(proc)


def test_help_lists_every_limit():
    proc = run_kiln("run", "--help")
    assert proc.returncode == 0
    for flag in ["--timeout", "--cpu", "--memory", "--processes", "--disk", "--tmp",
                 "--file-size", "--open-files", "--stream-keep", "--stream-kill",
                 "--max-files", "--max-file-bytes", "--max-total-bytes", "--render", "--ro-bind"]:
        assert flag.encode() in proc.stdout, flag
    assert run_kiln("help", "run").stdout == proc.stdout


def test_limits_echoed_in_result():
    proc, r = run_json("-n", "--memory", "512M", "--timeout", "7.5", "--processes", "10",
                       "--max-files", "3", "-c", "pass")
    assert r["limits"]["memory_bytes"] == 512 << 20
    assert r["limits"]["wall_seconds"] == 7.5
    assert r["limits"]["processes"] == 10
    assert r["limits"]["output_files"] == 3


def test_render_errors_listed_and_exit_1(tmp_path):
    code = ("import os, json\nos.makedirs('.kiln', exist_ok=True)\n"
            "json.dump({'sheets': 'nope'}, open('.kiln/bad.xlsx.spec.json', 'w'))\n"
            "json.dump({'sheets': []}, open('.kiln/odd.txt.spec.json', 'w'))\n")
    proc, r = run_json("-n", "--render", "-c", code)
    assert proc.returncode == 1 and r["status"] == "ok", describe(proc)
    errs = {e["spec"]: e for e in r["render_errors"]}
    assert set(errs) == {".kiln/bad.xlsx.spec.json", ".kiln/odd.txt.spec.json"}
    bad = errs[".kiln/bad.xlsx.spec.json"]["errors"]
    assert bad and bad[0]["pointer"] == "/sheets", bad
    assert "must end in" in errs[".kiln/odd.txt.spec.json"]["errors"][0]["message"]
    assert r["documents"] == [] and r["files"] == []


def test_import_kiln_saves_to_a_mnt_data_path(tmp_path):
    """save("/mnt/data/report.docx"), the path assistants write, is the job directory's
    report.docx (issue 15 item 13); a path outside /mnt/data is still refused."""
    code = ("import kiln\n"
            "doc = kiln.Document(title='Report')\n"
            "doc.paragraph('hello')\n"
            "print(doc.save('/mnt/data/report.docx'))\n"
            "try:\n"
            "    doc.save('/tmp/report.docx')\n"
            "except ValueError as e:\n"
            "    print('refused:', e)\n")
    out = tmp_path / "out"
    proc, r = run_json("--render", "-o", out, "-c", code)
    assert proc.returncode == 0 and r["status"] == "ok", describe(proc)
    lines = r["stdout"]["text"].splitlines()
    assert lines[0] == "/mnt/data/.kiln/report.docx.spec.json", lines
    assert lines[1].startswith("refused: out: '/tmp/report.docx' is not in the job directory /mnt/data")
    assert [d["name"] for d in r["documents"]] == ["report.docx"], r["documents"]
    assert (out / "report.docx").read_bytes()[:2] == b"PK"


def test_saved_specs_render_by_default(tmp_path):
    """A job that saves a document gets the document without asking (issue 15 item 15):
    the spec is rendered, listed under documents, copied out; --no-render leaves it a
    plain file, and the last of --render and --no-render counts."""
    code = ("import kiln\nwb = kiln.Workbook()\nwb.sheet([{'a': 1}], name='S')\n"
            "wb.save('a.xlsx')\n")
    out = tmp_path / "out"
    proc, r = run_json("-o", out, "-c", code)
    assert proc.returncode == 0 and r["status"] == "ok", describe(proc)
    assert [d["name"] for d in r["documents"]] == ["a.xlsx"], r
    assert r["files"] == [] and (out / "a.xlsx").read_bytes()[:2] == b"PK"
    for flags in (("--no-render",), ("--render", "--no-render")):
        proc, r = run_json("-n", *flags, "-c", code)
        assert proc.returncode == 0, describe(proc)
        assert [f["name"] for f in r["files"]] == [".kiln/a.xlsx.spec.json"], describe(proc)
        assert r["documents"] == []
    proc, r = run_json("-n", "--no-render", "--render", "-c", code)
    assert [d["name"] for d in r["documents"]] == ["a.xlsx"], describe(proc)


def test_out_dir_made_with_its_parents(tmp_path):
    out = tmp_path / "not" / "there" / "yet"
    proc, r = run_json("-o", out, "-c", "open('a.txt', 'w').write('x')")
    assert proc.returncode == 0 and r["out_dir"] == str(out), describe(proc)
    assert (out / "a.txt").read_text() == "x"


def test_without_render_specs_are_plain_files(tmp_path):
    code = ("import os, json\nos.makedirs('.kiln', exist_ok=True)\n"
            "json.dump({'sheets': [{'name': 'S', 'rows': [[1]]}]}, "
            "open('.kiln/a.xlsx.spec.json', 'w'))\n")
    proc, r = run_json("-n", "--no-render", "-c", code)
    assert [f["name"] for f in r["files"]] == [".kiln/a.xlsx.spec.json"], describe(proc)
    assert r["documents"] == []


ARGS_CODE = "import sys; print(sys.argv[1:])"


@pytest.mark.parametrize("argv", [
    ["-n", "-c", ARGS_CODE, "--", "a", "b"],                 # -c with -- (item 10)
    ["-n", "JOB", "--", "a", "b"],
    ["JOB", "-n", "--", "a", "b"],                           # options after FILE (item 11)
    ["JOB", "-n", "--timeout", "10", "--", "a", "b"],
    ["--timeout=10", "JOB", "-n", "--", "a", "b"],
    ["-", "-n", "--", "a", "b"],                             # standard input
])
def test_program_arguments_after_double_dash(tmp_path, argv):
    """`--` ends the options whatever comes before it, and options may follow FILE, as
    GNU tools take them: the program sees exactly what follows `--`."""
    job = tmp_path / "job.py"
    job.write_text(ARGS_CODE + "\n")
    argv = [str(job) if a == "JOB" else a for a in argv]
    proc, r = run_json(*argv, input=ARGS_CODE.encode() if "-" in argv[:1] else None)
    assert proc.returncode == 0 and r["status"] == "ok", describe(proc)
    assert r["stdout"]["text"] == "['a', 'b']\n", r["stdout"]


def test_double_dash_arguments_may_look_like_options(tmp_path):
    """What follows `--` is the program's even when it reads as one of kiln's options, and
    a `--` that is an option's value ends nothing."""
    job = tmp_path / "job.py"
    job.write_text(ARGS_CODE + "\n")
    proc, r = run_json(str(job), "-n", "--", "-o", "x", "--", "--pretty")
    assert proc.returncode == 0 and r["stdout"]["text"] == "['-o', 'x', '--', '--pretty']\n", r
    proc, r = run_json("-n", "-l", "bash", "-c", 'echo "$@"', "--", "-c", "--")
    assert proc.returncode == 0 and r["stdout"]["text"] == "-c --\n", describe(proc)
    # a FILE and -c together, or two FILEs, are still refused (exit 2)
    for argv in (["-n", "-c", "print(1)", str(job)], ["-n", str(job), str(job)]):
        proc = run_kiln("run", *argv)
        assert proc.returncode == 2, describe(proc)


def test_leftovers_of_a_killed_supervisor_are_swept(tmp_path):
    """A supervisor killed with SIGKILL cannot remove its cgroups or its
    job directory's mount point; the next run removes them (only empty ones
    whose supervisor pid is gone)."""
    if os.geteuid() != 0:
        pytest.skip("needs root")
    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that no longer exists (reuse within the test is unlikely)
    stale = []
    for hierarchy in ["pids", "cpuacct"]:
        base = Path("/sys/fs/cgroup") / hierarchy
        if (base / "cgroup.procs").exists() and not (Path("/sys/fs/cgroup") / "cgroup.controllers").exists():
            d = base / ("kiln-%d" % dead.pid)
            d.mkdir()
            stale.append(d)
    job = Path("/tmp") / ("kiln-job-%d-test12" % dead.pid)
    job.mkdir()
    stale.append(job)
    live = Path("/tmp") / ("kiln-job-%d-test12" % os.getpid())  # our own pid: alive
    live.mkdir()
    try:
        proc, r = run_json("-n", "-c", "pass")
        assert r["status"] == "ok", describe(proc)
        for d in stale:
            assert not d.exists(), d
        assert live.exists()
    finally:
        for d in stale + [live]:
            if d.exists():
                d.rmdir()


def test_matplotlib_font_list_is_made_once_and_never_taken_from_a_job(tmp_path):
    """The font list comes from Kiln's own warm-up sandbox, is kept in
    $KILN_CACHE_DIR, handed to each Python job in /tmp/.matplotlib (owned by
    the job), and a job that rewrites its copy does not change the cache."""
    cache = tmp_path / "cache"
    env = dict(os.environ, KILN_CACHE_DIR=str(cache))
    probe = ("import os, glob\n"
             "fl = glob.glob('/tmp/.matplotlib/fontlist-*.json')\n"
             "print(len(fl), os.stat(fl[0]).st_uid if fl else -1)\n"
             "if fl: open(fl[0], 'w').write('poisoned')\n")
    proc, r = run_json("-n", "-c", probe, env=env)
    assert r["status"] == "ok", describe(proc)
    lists = list(cache.glob("matplotlib-*/fontlist-*.json"))
    assert len(lists) == 1, list(cache.rglob("*"))
    assert r["stdout"]["text"] == "1 1000\n"
    before = lists[0].read_bytes()
    assert json.loads(before), "the cached list is matplotlib's JSON"
    proc, r = run_json("-n", "-c", probe + "import matplotlib.pyplot\n", env=env)
    assert r["status"] == "ok", describe(proc)
    assert lists[0].read_bytes() == before
    assert r["files"] == [], "the warm-up leaves nothing in /mnt/data"
    # bash jobs get no copy
    proc, r = run_json("-n", "-l", "bash", "-c", "ls -A /tmp", env=env)
    assert r["stdout"]["text"] == "", describe(proc)


def test_writers_are_loaded_on_demand(tmp_path):
    """The writers live in kiln-writers.so beside the executable: `kiln run`
    without --render never needs them, and a missing one is a clear error
    (exit 70 from render; a render_errors entry from run --render)."""
    env = dict(os.environ, KILN_WRITERS=str(tmp_path / "missing.so"))
    proc, r = run_json("-n", "-c", "print('no writers needed')", env=env)
    assert r["status"] == "ok" and proc.returncode == 0, describe(proc)
    spec = tmp_path / "s.json"
    spec.write_text('{"sheets": [{"name": "S", "rows": [[1]]}]}')
    proc = run_kiln("render", spec, "-o", tmp_path / "s.xlsx", env=env)
    assert proc.returncode == 70, describe(proc)
    assert b"cannot load the document writers" in proc.stderr
    assert not (tmp_path / "s.xlsx").exists()
    code = ("import os, json\nos.makedirs('.kiln', exist_ok=True)\n"
            "json.dump({'sheets': [{'name': 'S', 'rows': [[1]]}]}, open('.kiln/a.xlsx.spec.json', 'w'))\n")
    proc, r = run_json("-n", "--render", "-c", code, env=env)
    assert proc.returncode == 1, describe(proc)
    assert "cannot load the document writers" in r["render_errors"][0]["errors"][0]["message"]


def test_a_spec_that_is_not_a_regular_file_is_reported_not_read(tmp_path):
    code = ("import os, json\nos.makedirs('.kiln', exist_ok=True)\n"
            "json.dump({'sheets': [{'name': 'S', 'rows': [[1]]}]}, open('real.json', 'w'))\n"
            "os.symlink('/mnt/data/real.json', '.kiln/linked.xlsx.spec.json')\n"
            "os.mkdir('.kiln/dir.xlsx.spec.json')\n")
    proc, r = run_json("-n", "--render", "-c", code)
    assert proc.returncode == 1, describe(proc)
    errs = {e["spec"]: e for e in r["render_errors"]}
    assert set(errs) == {".kiln/linked.xlsx.spec.json", ".kiln/dir.xlsx.spec.json"}, errs
    assert errs[".kiln/linked.xlsx.spec.json"]["name"] == "linked.xlsx"
    assert "not a regular file" in errs[".kiln/linked.xlsx.spec.json"]["errors"][0]["message"]
    assert r["documents"] == []


def test_a_symlinked_directory_in_the_out_dir_is_never_written_through(tmp_path):
    """The copy runs as root: a directory symlink someone planted in a shared
    output directory must not carry a job's file out of it."""
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "elsewhere"
    target.mkdir()
    (out / "sub").symlink_to(target)
    proc = run_kiln("run", "-o", out, "-c",
                    "import os\nos.makedirs('sub', exist_ok=True)\nopen('sub/x.txt', 'w').write('x')")
    assert proc.returncode == 6, describe(proc)
    assert b"symlink" in proc.stderr, describe(proc)
    assert list(target.iterdir()) == []


def test_the_font_list_warm_up_cannot_be_steered_by_inputs(tmp_path):
    """The warm-up runs before the inputs are copied in, in isolated mode: an
    input named like the module it imports cannot run in its place and put
    its own list in the host-wide cache."""
    cache = tmp_path / "cache"
    env = dict(os.environ, KILN_CACHE_DIR=str(cache))
    fake = tmp_path / "matplotlib.py"
    fake.write_text("import os\nos.makedirs(os.environ['MPLCONFIGDIR'], exist_ok=True)\n"
                    "open(os.path.join(os.environ['MPLCONFIGDIR'], 'fontlist-v999.json'), 'w')"
                    ".write('{\"poisoned\": true}')\n"
                    "font_manager = None\n")
    proc, r = run_json("-n", "-i", fake, "-c", "print('job ran')", env=env)
    assert r["status"] == "ok", describe(proc)
    lists = list(cache.glob("matplotlib-*/fontlist-*.json"))
    assert len(lists) == 1, lists
    assert "poisoned" not in lists[0].read_text()
    assert "ttflist" in lists[0].read_text()
    assert [f["name"] for f in r["files"]] == ["matplotlib.py"]


def test_descriptors_the_caller_left_open_do_not_reach_the_job(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("host secret")
    with open(secret) as f:
        proc = subprocess.run([str(KILN_BIN), "run", "-n", "-c",
                               "import os\nprint(sorted(os.listdir('/proc/self/fd')))"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60,
                              pass_fds=(f.fileno(),))
    r = json.loads(proc.stdout)
    # 0, 1, 2 and the descriptor listdir itself opens
    assert r["stdout"]["text"] == "['0', '1', '2', '3']\n", describe(proc)


def test_a_program_near_the_16_mib_limit_runs_and_one_past_it_is_refused(tmp_path):
    big = tmp_path / "big.py"
    filler = "# " + "x" * 1000 + "\n"
    big.write_text(filler * (15 * 1024) + "print('big ran')\n")   # about 15 MiB
    proc, r = run_json("-n", big)
    assert r["status"] == "ok" and r["stdout"]["text"] == "big ran\n", describe(proc)
    big.write_text(filler * (17 * 1024))
    proc = run_kiln("run", "-n", big)
    assert proc.returncode == 5 and b"larger than 16 MiB" in proc.stderr, describe(proc)


def test_inputs_larger_than_the_job_directory_exit_3(tmp_path):
    big = tmp_path / "big.bin"
    with open(big, "wb") as f:
        f.truncate(20 << 20)
    proc = run_kiln("run", "-n", "--disk", "16M", "-i", big, "-c", "pass")
    assert proc.returncode == 3, describe(proc)
    assert b"does not fit in the job directory" in proc.stderr


def test_a_kiln_dir_that_is_a_symlink_is_reported(tmp_path):
    code = "import os\nos.makedirs('real')\nos.symlink('real', '.kiln')\n"
    proc, r = run_json("-n", "--render", "-c", code)
    assert proc.returncode == 1, describe(proc)
    assert r["render_errors"][0]["spec"] == ".kiln"
    assert "not a directory" in r["render_errors"][0]["errors"][0]["message"]


def test_request_document_is_the_whole_job(tmp_path):
    """--request FILE: the code, language, args, inputs, limits and render of one JSON
    document (docs/run.md, "Job requests"); an input's name may hold ':' (no PATH:NAME)."""
    data = tmp_path / "in.csv"
    data.write_text("a,b\n")
    request = tmp_path / "job.json"
    request.write_text(json.dumps({
        "code": "import sys\nprint(sys.argv[1:], open('10:30 notes.csv').read())",
        "args": ["--x", "y"],
        "inputs": [{"path": str(data), "name": "10:30 notes.csv"}],
        "limits": {"wall_seconds": 7.5, "memory_bytes": 256 << 20, "stream_kill_bytes": 1 << 20},
        "render": False}))
    proc, r = run_json("-n", "--request", str(request))
    assert r["status"] == "ok", describe(proc)
    assert r["stdout"]["text"] == "['--x', 'y'] a,b\n\n"
    assert r["limits"]["wall_seconds"] == 7.5
    assert r["limits"]["memory_bytes"] == 256 << 20
    assert r["limits"]["stream_kill_bytes"] == 1 << 20
    assert r["limits"]["processes"] == 64  # left out: the default


def test_request_from_stdin_with_bash():
    proc = subprocess.run([KILN_BIN, "run", "-n", "--request", "-"],
                          input=json.dumps({"code": "echo $0-ok", "language": "bash"}).encode(),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    r = json.loads(proc.stdout)
    assert proc.returncode == 0, describe(proc)
    assert r["language"] == "bash" and r["stdout"]["text"].endswith("-ok\n")


def test_request_errors_name_their_pointers_exit_2(tmp_path):
    request = tmp_path / "job.json"
    request.write_text(json.dumps({
        "code": 7, "language": "ruby", "args": ["ok", 3], "extra": 1,
        "inputs": [{"path": ""}, "id"],
        "limits": {"wall_seconds": 86401, "processes": 1.5, "memory_bytes": 1, "bogus": 1}}))
    proc = run_kiln("run", "-n", "--request", str(request))
    assert proc.returncode == 2, describe(proc)
    err = proc.stderr.decode()
    for pointer in ["/code", "/language", "/args/1", "/extra", "/inputs/0/path", "/inputs/1",
                    "/limits/wall_seconds", "/limits/processes", "/limits/memory_bytes",
                    "/limits/bogus"]:
        assert "kiln: error: %s: " % pointer in err, (pointer, err)
    assert "wall_seconds may be at most 86400" in err
    assert "memory_bytes must be at least 16M" in err
    assert proc.stdout == b""


@pytest.mark.parametrize("extra", [["-c", "pass"], ["--timeout", "5"], ["-l", "bash"],
                                   ["-i", "/etc/hostname"], ["--no-render"], ["prog.py"],
                                   ["--", "arg"]])
def test_request_with_job_flags_is_a_usage_error(tmp_path, extra):
    request = tmp_path / "job.json"
    request.write_text('{"code": "pass"}')
    proc = run_kiln("run", "-n", "--request", str(request), *extra)
    assert proc.returncode == 2, describe(proc)
    assert "--request gives the whole job" in proc.stderr.decode()


def test_request_not_json_or_unreadable(tmp_path):
    request = tmp_path / "job.json"
    request.write_text('{"code": ')
    proc = run_kiln("run", "-n", "--request", str(request))
    assert proc.returncode == 2, describe(proc)
    assert "the request is not valid JSON at line 1" in proc.stderr.decode()
    proc = run_kiln("run", "-n", "--request", str(tmp_path / "missing.json"))
    assert proc.returncode == 5, describe(proc)


@pytest.mark.parametrize("flag, value, member, want", [
    ("--timeout", "2m", "wall_seconds", 120.0),
    ("--timeout", "1.5", "wall_seconds", 1.5),
    ("--cpu", "90s", "cpu_seconds", 90.0),
    ("--memory", "512M", "memory_bytes", 512 << 20),
    ("--stream-kill", "2M", "stream_kill_bytes", 2 << 20),
])
def test_limit_flags_take_the_table_units(flag, value, member, want):
    proc, r = run_json("-n", flag, value, "-c", "pass")
    assert r["limits"][member] == want, describe(proc)
