"""Tests of the Python runtime of a session (exec/python/kiln_session.py), outside any
sandbox: each runtime is this machine's Python started as the session's sandbox starts
it (`import kiln_session; kiln_session.serve(3, 4)` with the control channel on fd 3 and
the event channel on fd 4), driven through the protocol of docs/session-results.md.

One runtime serves the tests whose cells only add state (`rt`); tests that break things
(closing fds, caps, interrupts of the event stream) start their own. Every chart model a
figure gives is checked against what was plotted and validated with `kiln validate`.
"""
import base64
import json
import os
import re
import select
import signal
import struct
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest

from jobs_checks import chart_series
from conftest import REPO, SANITIZED, assert_ooxml_ok, describe, external_reader, run_kiln, write_spec

# The runtime is Python, run here outside any sandbox: what ASan could check is only the
# few `kiln validate` and `kiln render` calls, which the other tests make under it too.
pytestmark = pytest.mark.skipif(SANITIZED, reason="the session runtime is Python; the plain "
                                "build's run (make e2e) tests it")

PYTHON = "/usr/bin/python3"
SERVE = ("import sys; sys.path[:0] = [%r]; import kiln_session; kiln_session.serve(3, 4)"
         % str(REPO / "exec" / "python"))
# The zygote imports these before it forks a session: the same start, warm.
WARM = ("import matplotlib; matplotlib.use('Agg'); import matplotlib.pyplot, pandas, numpy; "
        + SERVE)
CAPS = {"display_bytes": 8 << 20, "display_items": 50, "table_rows": 100,
        "frame_bytes": 16 << 20}
TIMEOUT = 60


def strict_json(line):
    """json.loads that refuses what is not JSON (NaN, Infinity) and lone surrogates."""
    def bad_constant(name):
        raise ValueError("not JSON: %s" % name)
    text = line.decode("utf-8")     # strict: a frame is valid UTF-8
    obj = json.loads(text, parse_constant=bad_constant)
    return obj


class Runtime:
    """A kiln_session runtime in a child process; frames and its stdout/stderr kept."""

    def __init__(self, tmp, caps=None, env=None, command=SERVE, init=True):
        self.dir = Path(tmp)
        self.dir.mkdir(parents=True, exist_ok=True)
        ctl_r, self.ctl = os.pipe()
        self.ev, ev_w = os.pipe()

        def child():    # the pipes onto fds 3 and 4, as the sandbox hands them over
            os.dup2(ctl_r, 3)
            os.dup2(ev_w, 4)
        self.env = dict(env if env is not None else os.environ, MPLBACKEND="Agg")
        self.proc = subprocess.Popen([PYTHON, "-c", command], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     pass_fds=(3, 4), preexec_fn=child, cwd=self.dir,
                                     env=self.env)
        os.close(ctl_r)
        os.close(ev_w)
        self.out = {"stdout": b"", "stderr": b""}
        self.pipes = {self.proc.stdout.fileno(): "stdout", self.proc.stderr.fileno(): "stderr"}
        for fd in self.pipes:
            os.set_blocking(fd, False)
        self.buf = b""
        self.lines = []         # every frame line as read, raw
        self.cell = 0
        self.ready = None
        if init:
            self.send({"op": "init", "env": self.env, "caps": caps or CAPS})
            self.ready = self.frame()

    def send(self, obj):
        os.write(self.ctl, (json.dumps(obj) + "\n").encode("utf-8"))

    def _drain(self):
        for fd, name in self.pipes.items():
            while True:
                try:
                    chunk = os.read(fd, 1 << 16)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                self.out[name] += chunk

    def frame(self, timeout=TIMEOUT):
        """The next event frame; before it is returned, the stdout and stderr written
        before it are read (the runtime flushes them before each frame)."""
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("no frame within %ss; stderr: %s" % (
                    timeout, self.out["stderr"][-3000:]))
            r, _, _ = select.select([self.ev] + list(self.pipes), [], [], left)
            if self.ev in r:
                chunk = os.read(self.ev, 1 << 20)
                if not chunk:
                    raise EOFError("event channel closed; exit %s; stderr: %s" % (
                        self.proc.poll(), self.out["stderr"][-3000:]))
                self.buf += chunk
            self._drain()
        line, self.buf = self.buf.split(b"\n", 1)
        self._drain()
        self.lines.append(line)
        ev = strict_json(line)
        ev["_stdout"] = self.out["stdout"]     # at least what was printed before it
        return ev

    def start(self, code, language="python"):
        self.cell += 1
        self.out = {"stdout": b"", "stderr": b""}
        self.send({"op": "execute", "cell": self.cell, "language": language, "code": code})
        return self.cell

    def finish(self, timeout=TIMEOUT):
        """The cell's frames to its done. A cell the runtime runs starts with one
        `running` frame (the host holds interrupts until it); Cell.events are the
        others."""
        events = []
        while True:
            ev = self.frame(timeout)
            assert ev.get("cell") == self.cell, ev
            if ev["ev"] == "running":
                assert events == [] and not getattr(self, "_running", False), ev
                self._running = True
                continue
            events.append(ev)
            if ev["ev"] == "done":
                cell = Cell(events, self.out, getattr(self, "_running", False))
                self._running = False
                return cell

    def run(self, code, language="python", timeout=TIMEOUT):
        self.start(code, language)
        return self.finish(timeout)

    def close(self):
        try:
            self.send({"op": "exit"})
        except OSError:
            pass
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for fd in (self.ctl, self.ev):
            try:
                os.close(fd)
            except OSError:
                pass
        self.proc.stdout.close()
        self.proc.stderr.close()


class Cell:
    def __init__(self, events, out, running):
        self.running = running      # the runtime said `running` before the user's code
        self.events = events
        self.done = events[-1]
        self.status = self.done["status"]
        self.stdout = out["stdout"].decode("utf-8", "replace")
        self.stderr = out["stderr"].decode("utf-8", "replace")

    def of(self, kind):
        return [e for e in self.events if e["ev"] == kind]

    @property
    def result(self):
        r = self.of("result")
        assert len(r) <= 1, self.events
        return r[0] if r else None

    @property
    def error(self):
        r = self.of("error")
        assert len(r) == 1, self.events
        return r[0]

    @property
    def displays(self):
        return self.of("display")

    def ok(self):
        assert self.status == "ok", "%s\nstderr: %s" % (self.events, self.stderr)
        assert self.running, "no running frame before the cell's code"
        return self


@pytest.fixture(scope="module")
def rt(tmp_path_factory):
    r = Runtime(tmp_path_factory.mktemp("session"), command=SERVE)
    yield r
    r.close()


@pytest.fixture
def fresh(tmp_path):
    """Runtimes of one test, closed after it: fresh(caps=..., command=...)."""
    made = []

    def make(**kw):
        r = Runtime(tmp_path / ("rt%d" % len(made)), **kw)
        made.append(r)
        return r
    yield make
    for r in made:
        r.close()


def png_size(b64):
    png = base64.b64decode(b64)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", png[16:24])


# --------------------------------------------------------------------------- protocol

def test_ready_then_exit(fresh):
    r = fresh()
    assert r.ready["ev"] == "ready"
    assert r.ready["pid"] == r.proc.pid
    assert r.ready["python"] == "%d.%d.%d" % sys.version_info[:3]
    r.send({"op": "exit"})
    assert r.proc.wait(10) == 0


def test_eof_on_the_control_channel_ends_the_runtime(fresh):
    r = fresh()
    os.close(r.ctl)
    assert r.proc.wait(10) == 0


def test_init_replaces_the_environment(fresh):
    r = fresh(env={"PATH": "/usr/bin:/bin", "KILN_TEST_VAR": "from init"})
    c = r.run("import os; sorted(k for k in os.environ if k.startswith('KILN_TEST')), "
              "os.environ.get('HOME')").ok()
    assert c.result["data"]["text/plain"] == "(['KILN_TEST_VAR'], None)"
    c = r.run("echo \"$KILN_TEST_VAR\"", "bash").ok()
    assert c.stdout == "from init\n"


def test_bad_requests_are_reported_not_fatal(fresh):
    r = fresh()
    os.write(r.ctl, b"this is not json\n[1, 2]\n{\"op\": \"frobnicate\"}\n")
    c = r.run("1 + 1").ok()
    assert c.result["data"]["text/plain"] == "2"
    assert "not JSON" in c.stderr or "ignoring" in c.stderr
    r.cell += 1
    r.send({"op": "execute", "cell": r.cell, "language": "ruby", "code": "puts 1"})
    c = r.finish()
    assert c.status == "error"
    assert c.error["ename"] == "KilnRuntimeError"
    assert "ruby" in c.error["evalue"]
    r.cell += 1
    r.send({"op": "execute", "cell": r.cell, "language": "python", "code": 42})
    c = r.finish()
    assert c.status == "error" and c.error["ename"] == "KilnRuntimeError"
    assert r.run("2 + 2").ok().result["data"]["text/plain"] == "4"


# --------------------------------------------------------------------------- cells

def test_state_survives_across_cells(rt):
    rt.run("x = 41\ndef inc(v):\n    return v + 1").ok()
    c = rt.run("inc(x)").ok()
    assert c.result["data"] == {"text/plain": "42"}
    assert c.result["metadata"] == {}
    assert rt.run("_ * 2").ok().result["data"]["text/plain"] == "84"


def test_last_expression_only_and_not_none(rt):
    c = rt.run("y = 3\ny * 2\ny * 3").ok()
    assert [e["ev"] for e in c.events] == ["result", "done"]
    assert c.result["data"]["text/plain"] == "9"
    c = rt.run("None").ok()
    assert c.of("result") == []
    c = rt.run("y * 4;").ok()       # a trailing semicolon hides it, as in IPython
    assert c.of("result") == []
    c = rt.run("'é' * 2 ;  # hidden").ok()
    assert c.of("result") == []
    c = rt.run("y; 'é' * 2  # shown; not hidden").ok()
    assert c.result["data"]["text/plain"] == "'éé'"
    c = rt.run("y * 5  # comment").ok()
    assert c.result["data"]["text/plain"] == "15"
    c = rt.run("for i in range(2):\n    i").ok()
    assert c.of("result") == []


def test_main_module_and_pickle(rt):
    c = rt.run("import pickle\nclass Point:\n    def __init__(s, x): s.x = x\n"
               "pickle.loads(pickle.dumps(Point(7))).x, __name__").ok()
    assert c.result["data"]["text/plain"] == "(7, '__main__')"


def test_top_level_await(rt):
    c = rt.run("import asyncio\nawait asyncio.sleep(0)\nasync def f():\n    return 5\n"
               "await f()").ok()
    assert c.result["data"]["text/plain"] == "5"


def test_stdout_order_with_frames(rt):
    """What a cell printed before a frame is in the stdout pipe when the frame arrives:
    the cell waits on a FIFO after its display, so nothing later can be there yet."""
    fifo = rt.dir / "order.fifo"
    os.mkfifo(fifo)
    rt.start("import sys\nprint('before')\nsys.stderr.write('err')\ndisplay('shown')\n"
             "open(%r).close()\nprint('after', end='')\n'value'" % str(fifo))
    assert rt.frame()["ev"] == "running"
    rt._running = True
    d = rt.frame()
    assert d["ev"] == "display" and d["data"] == {"text/plain": "'shown'"}
    assert d["_stdout"] == b"before\n"
    assert rt.out["stderr"] == b"err"            # stderr is flushed before a frame too
    open(fifo, "w").close()
    c = rt.finish().ok()
    assert c.result["_stdout"] == b"before\nafter"
    assert c.stdout == "before\nafter"


# --------------------------------------------------------------------------- errors

def test_error_has_user_frames_only(rt):
    rt.run("def inner():\n    return 1 / 0\n").ok()
    c = rt.run("def outer():\n    return inner()\nouter()")
    assert c.status == "error"
    e = c.error
    assert e["ename"] == "ZeroDivisionError"
    assert e["evalue"] == "division by zero"
    tb = e["traceback"]
    assert tb[0] == "Traceback (most recent call last):"
    assert tb[1].startswith('  File "<cell %d>", line 3, in <module>' % rt.cell)
    assert "    outer()" in tb
    assert any(l.startswith('  File "<cell %d>", line 2, in inner' % (rt.cell - 1)) for l in tb)
    assert "    return 1 / 0" in tb               # the source of an earlier cell
    assert tb[-1] == "ZeroDivisionError: division by zero"
    assert not any("kiln_session" in l for l in tb), tb
    assert not any("\x1b" in l for l in tb)
    assert all("\n" not in l for l in tb)


def test_error_keeps_library_frames(rt):
    c = rt.run("import json\njson.loads('{')")
    tb = c.error["traceback"]
    assert c.error["ename"] == "JSONDecodeError"
    assert tb[1].startswith('  File "<cell %d>", line 2' % rt.cell)
    assert any("json/decoder.py" in l for l in tb)
    assert not any("kiln_session" in l for l in tb)


def test_chained_exception_from_library_code_keeps_its_frames(rt):
    """An exception a library raised and caught itself has no cell frame: its frames
    are all the library's, and stay."""
    (rt.dir / "chainlib.py").write_text(
        "def parse(s):\n    try:\n        return int(s)\n    except ValueError:\n"
        "        raise RuntimeError('cannot parse')\n")
    c = rt.run("import sys\nsys.path.insert(0, '.')\nimport chainlib\nchainlib.parse('x')")
    tb = c.error["traceback"]
    during = tb.index("During handling of the above exception, another exception occurred:")
    assert tb[:3] == ["Traceback (most recent call last):",
                      '  File "%s", line 3, in parse' % (rt.dir / "chainlib.py"),
                      "    return int(s)"]
    assert tb[during - 2] == "ValueError: invalid literal for int() with base 10: 'x'"
    assert tb[during + 3].startswith('  File "<cell %d>", line 4' % rt.cell)
    assert tb[-1] == "RuntimeError: cannot parse"
    assert not any("kiln_session" in l for l in tb)


def test_chained_exception(rt):
    c = rt.run("try:\n    {}['k']\nexcept KeyError as e:\n    raise ValueError('bad') from e")
    tb = c.error["traceback"]
    assert c.error["ename"] == "ValueError"
    assert "KeyError: 'k'" in tb
    assert any("direct cause" in l for l in tb)
    assert not any("kiln_session" in l for l in tb)


def test_syntax_error_shows_line_and_caret(rt):
    c = rt.run("x = 1\ny = (2 +\n")
    e = c.error
    assert c.status == "error"
    assert e["ename"] == "SyntaxError"
    tb = e["traceback"]
    assert tb[0] == '  File "<cell %d>", line 2' % rt.cell
    assert tb[1] == "    y = (2 +"
    assert tb[2].strip() == "^"
    assert tb[-1].startswith("SyntaxError: ")
    c = rt.run("if True:\nprint(1)")
    assert c.error["ename"] == "IndentationError"


def test_system_exit_is_an_error_not_the_end(rt):
    c = rt.run("import sys\nsys.exit(3)")
    assert c.status == "error"
    assert c.error["ename"] == "SystemExit"
    assert c.error["evalue"] == "3"
    assert rt.run("'alive'").ok().result["data"]["text/plain"] == "'alive'"
    c = rt.run("exit()")
    assert c.error["ename"] == "SystemExit"
    assert rt.proc.poll() is None


def test_error_output_goes_before_error_frame(rt):
    c = rt.run("print('partial')\nraise RuntimeError('boom')")
    assert c.error["_stdout"] == b"partial\n"
    assert c.error["evalue"] == "boom"


# --------------------------------------------------------------------------- display

RICH = r'''
import base64
class Rich:
    def __repr__(self): return "Rich()"
    def _repr_html_(self): return "<b>rich</b>"
    def _repr_markdown_(self): return "**rich**"
    def _repr_svg_(self): return "<svg xmlns='http://www.w3.org/2000/svg'/>"
    def _repr_png_(self): return b"\x89PNG fake"
    def _repr_jpeg_(self): return (b"\xff\xd8jpeg", {"width": 3, "height": 2})
    def _repr_latex_(self): return r"$x^2$"
    def _repr_json_(self): return {"a": [1, 2.5, None, "s"]}
class Bundle:
    def _repr_mimebundle_(self, include=None, exclude=None):
        return ({"text/plain": "custom plain", "application/x-thing+json": {"k": 1},
                 "text/html": "<i>b</i>"}, {"application/x-thing+json": {"v": 2}})
class Broken:
    def __repr__(self): return "Broken()"
    def _repr_html_(self): raise ValueError("html repr broke")
    def _repr_markdown_(self): return "*fine*"
class Liar:
    def __getattr__(self, name): return 42      # answers every attribute, callable none
    def __repr__(self): return "Liar()"
'''


def test_display_bundle_of_every_repr(rt):
    rt.run(RICH).ok()
    c = rt.run("display(Rich())").ok()
    d = c.displays[0]["data"]
    assert d["text/plain"] == "Rich()"
    assert d["text/html"] == "<b>rich</b>"
    assert d["text/markdown"] == "**rich**"
    assert d["image/svg+xml"].startswith("<svg")
    assert base64.b64decode(d["image/png"]) == b"\x89PNG fake"
    assert base64.b64decode(d["image/jpeg"]) == b"\xff\xd8jpeg"
    assert c.displays[0]["metadata"] == {"image/jpeg": {"width": 3, "height": 2}}
    assert d["text/latex"] == "$x^2$"
    assert d["application/json"] == {"a": [1, 2.5, None, "s"]}     # a value, not text
    assert c.of("result") == []


def test_display_mimebundle_include_exclude_raw_metadata(rt):
    rt.run(RICH).ok()
    c = rt.run("display(Bundle())").ok()
    d = c.displays[0]
    assert d["data"] == {"text/plain": "custom plain", "application/x-thing+json": {"k": 1},
                         "text/html": "<i>b</i>"}
    assert d["metadata"] == {"application/x-thing+json": {"v": 2}}
    c = rt.run("display(Rich(), include=['text/html'])").ok()
    assert set(c.displays[0]["data"]) == {"text/plain", "text/html"}
    c = rt.run("display(Rich(), exclude=['image/png', 'image/jpeg', 'text/plain'])").ok()
    assert "image/png" not in c.displays[0]["data"]
    assert c.displays[0]["data"]["text/plain"] == "Rich()"    # always there
    c = rt.run("display({'text/markdown': '# hi', 'text/plain': 'hi'}, raw=True, "
               "metadata={'tag': 1})\ndisplay(1, 'two', metadata={'m': True})").ok()
    assert c.displays[0]["data"] == {"text/markdown": "# hi", "text/plain": "hi"}
    assert c.displays[0]["metadata"] == {"tag": 1}
    assert [x["data"] for x in c.displays[1:]] == [{"text/plain": "1"}, {"text/plain": "'two'"}]
    assert c.displays[2]["metadata"] == {"m": True}
    c = rt.run("display(42, raw=True)")
    assert c.error["ename"] == "TypeError"
    c = rt.run("display({'application/json': {1, 2}}, raw=True)")
    assert c.error["ename"] == "TypeError" and "'application/json' value is not JSON" in c.error["evalue"]
    c = rt.run("display({'application/json': float('nan')}, raw=True)")
    assert c.error["ename"] == "TypeError"
    c = rt.run("display('x', display_id=True, transient={})").ok()
    assert c.displays[0]["data"] == {"text/plain": "'x'"}


def test_bundles_keep_to_what_the_host_takes(rt):
    """At most 16 MIME types, each type/subtype, text values but for JSON types: what
    a repr gives beyond that is left out (said on stderr); raw bundles are refused."""
    c = rt.run("class Odd:\n    def _repr_mimebundle_(self, **kw):\n"
               "        d = {'nonsense': 'x', 'text/html': 5, 'a b/c': 'x', 'text/csv': 'a,b',\n"
               "             'application/x+json': {'k': [1]}}\n"
               "        d.update(('x/t%02d' % i, 'v') for i in range(20))\n        return d\n"
               "display(Odd())").ok()
    data = c.displays[0]["data"]
    assert len(data) == 16
    assert list(data)[:3] == ["text/plain", "text/csv", "application/x+json"]
    assert "nonsense" not in data and "text/html" not in data and "a b/c" not in data
    assert "'nonsense' left out" in c.stderr and "'text/html' left out" in c.stderr
    assert "past the 16 MIME types" in c.stderr
    for bad, why in (("{'nonsense': 'x'}", "not a MIME type"),
                     ("{'text/html': 5}", "not text"),
                     ("{'x/t%02d' % i: 'v' for i in range(17)}", "at most 16")):
        c = rt.run("display(%s, raw=True)" % bad)
        assert c.error["ename"] == "TypeError" and why in c.error["evalue"], c.error


def test_failing_repr_is_skipped_not_fatal(rt):
    rt.run(RICH).ok()
    c = rt.run("display(Broken())\nBroken()").ok()
    for bundle in (c.displays[0], c.result):
        assert bundle["data"] == {"text/markdown": "*fine*", "text/plain": "Broken()"}
    assert "html repr broke" in c.stderr
    c = rt.run("display(Liar(), Rich)").ok()     # an object answering anything, a class
    assert c.displays[0]["data"] == {"text/plain": "Liar()"}
    assert c.displays[1]["data"] == {"text/plain": "<class '__main__.Rich'>"}


def test_display_importable_and_restored(rt):
    c = rt.run("from kiln_session import display as d2\nd2('via import')").ok()
    assert c.displays[0]["data"] == {"text/plain": "'via import'"}
    rt.run("del display").ok()
    c = rt.run("display('back')").ok()
    assert c.displays[0]["data"] == {"text/plain": "'back'"}


def test_ipython_display_functions(fresh):
    """Code written for Jupyter: IPython's display(), its HTML/Markdown objects and
    _ipython_display_ reach the session (outside its shell IPython would only print)."""
    r = fresh()
    c = r.run("from IPython.display import display, HTML, Markdown, clear_output\n"
              "display(HTML('<b>x</b>'), Markdown('# t'))\nclear_output()\n"
              "class Self:\n    def _ipython_display_(self):\n"
              "        display({'text/plain': 'self', 'text/html': '<i>self</i>'}, raw=True)\n"
              "display(Self())\nHTML('<p>r</p>')").ok()
    assert [d["data"] for d in c.displays] == [
        {"text/html": "<b>x</b>", "text/plain": "<IPython.core.display.HTML object>"},
        {"text/markdown": "# t", "text/plain": "<IPython.core.display.Markdown object>"},
        {"text/plain": "self", "text/html": "<i>self</i>"}]
    assert c.result["data"]["text/html"] == "<p>r</p>"
    assert c.stdout == ""
    # IPython imported by the zygote before serve(): patched at once
    r = fresh(command="import IPython.display; " + SERVE)
    c = r.run("import IPython.display\nIPython.display.display(IPython.display.HTML('<b>y</b>'))").ok()
    assert c.displays[0]["data"]["text/html"] == "<b>y</b>"


def test_display_from_thread(rt):
    c = rt.run("import threading\n"
               "ts = [threading.Thread(target=lambda i=i: [display(('t', i, j)) for j in range(20)])"
               " for i in range(4)]\n"
               "[t.start() for t in ts]; [t.join() for t in ts];").ok()
    assert len(c.displays) == CAPS["display_items"]
    assert c.done["dropped"]["displays"] == 80 - CAPS["display_items"]
    seen = {d["data"]["text/plain"] for d in c.displays}
    assert len(seen) == len(c.displays)


# --------------------------------------------------------------------------- pandas

FRAME = """
import pandas as pd, numpy as np
df = pd.DataFrame({"region": ["N", "S", "E"] * 100,
                   "revenue": np.arange(300) * 1.5,
                   "when": pd.date_range("2026-01-01", periods=300, freq="D"),
                   "note": [None, "x", "y"] * 100})
df.loc[1, "revenue"] = np.nan
"""


def test_dataframe_bundle(rt):
    rt.run(FRAME).ok()
    c = rt.run("df").ok()
    d = c.result["data"]
    assert set(d) == {"text/plain", "text/html", "application/vnd.dataresource+json"}
    assert d["text/plain"] == rt.run("print(repr(df), end='')").stdout
    # the HTML is pandas' notebook table, capped like display.max_rows (60: 10 shown)
    assert d["text/html"].count("<tr>") == 10 + 1
    assert "300 rows × 4 columns" in d["text/html"]
    t = d["application/vnd.dataresource+json"]
    assert t["schema"]["fields"] == [
        {"name": "index", "type": "integer"}, {"name": "region", "type": "string"},
        {"name": "revenue", "type": "number"}, {"name": "when", "type": "datetime"},
        {"name": "note", "type": "string"}]
    assert t["schema"]["primaryKey"] == ["index"]
    assert t["schema"]["pandas_version"] == "1.4.0"
    assert t["total_rows"] == 300
    assert t["truncated"] is True
    assert len(t["data"]) == CAPS["table_rows"]
    assert t["data"][0] == {"index": 0, "region": "N", "revenue": 0.0,
                            "when": "2026-01-01T00:00:00.000", "note": None}
    assert t["data"][1]["revenue"] is None            # NaN -> null, strict JSON
    assert t["data"][99]["when"] == "2026-04-10T00:00:00.000"


def test_small_frame_series_and_multiindex(rt):
    rt.run(FRAME).ok()
    c = rt.run("df.head(3)").ok()
    t = c.result["data"]["application/vnd.dataresource+json"]
    assert t["total_rows"] == 3 and t["truncated"] is False and len(t["data"]) == 3
    c = rt.run("df['revenue'].head(2)").ok()
    t = c.result["data"]["application/vnd.dataresource+json"]
    assert [f["name"] for f in t["schema"]["fields"]] == ["index", "revenue"]
    assert t["data"] == [{"index": 0, "revenue": 0.0}, {"index": 1, "revenue": None}]
    assert "<table" in c.result["data"]["text/html"]
    assert c.result["data"]["text/plain"].startswith("0    0.0\n1    NaN")
    c = rt.run("df.groupby('region').agg({'revenue': ['sum', 'max']})").ok()
    t = c.result["data"]["application/vnd.dataresource+json"]
    assert [f["name"] for f in t["schema"]["fields"]] == ["region", "revenue sum", "revenue max"]
    assert t["total_rows"] == 3
    # frames pandas' writer refuses or garbles: their table is still faithful JSON
    c = rt.run("pd.DataFrame([[1, 2, 3, b'\\xff\\x00']], columns=['a', 'a', 0, 'index'])").ok()
    t = c.result["data"]["application/vnd.dataresource+json"]
    assert [f["name"] for f in t["schema"]["fields"]] == ["index (index)", "a", "a.1", "0", "index"]
    assert t["data"] == [{"index (index)": 0, "a": 1, "a.1": 2, "0": 3, "index": "b'\\xff\\x00'"}]
    c = rt.run("pd.DataFrame({'k': [5]}, index=pd.Index(['r'], name='k'))").ok()
    t = c.result["data"]["application/vnd.dataresource+json"]
    assert t["data"] == [{"k (index)": "r", "k": 5}] and t["schema"]["primaryKey"] == ["k (index)"]
    c = rt.run("display(df.head(1), exclude=['text/html'])").ok()
    assert set(c.displays[0]["data"]) == {"text/plain", "application/vnd.dataresource+json"}


# --------------------------------------------------------------------------- figures

# Each plot, and the chart model Kiln must read from it (colors aside).
CHARTS = {
    "column": ("fig, ax = plt.subplots()\nax.bar(['N', 'S', 'E'], [4, 5.5, float('nan')], label='Q1')\n"
               "ax.set_title('Revenue'); ax.set_xlabel('Region'); ax.set_ylabel('EUR k')\n"
               "ax.legend(loc='lower center')",
               {"kind": "column", "title": "Revenue", "categories": ["N", "S", "E"],
                "series": [{"name": "Q1", "values": [4, 5.5, None]}],
                "x_axis": {"title": "Region"}, "y_axis": {"title": "EUR k"},
                "legend": "bottom"}),
    "column_grouped_pandas": (
        "pd.DataFrame({'q1': [1, 2], 'q2': [3, 4]}, index=['N', 'S']).plot.bar()",
        {"kind": "column", "categories": ["N", "S"],
         "series": [{"name": "q1", "values": [1, 2]}, {"name": "q2", "values": [3, 4]}],
         "legend": "right"}),
    "column_stacked": ("fig, ax = plt.subplots()\nax.bar([1, 2], [1, 2])\n"
                       "ax.bar([1, 2], [3, 4], bottom=[1, 2])",
                       {"kind": "column", "stacked": True, "categories": [1, 2],
                        "series": [{"values": [1, 2]}, {"values": [3, 4]}], "legend": "none"}),
    "bar_stacked_pandas": (
        "ax = pd.DataFrame({'a': [1, 2], 'b': [3, -1]}, index=['x', 'y'])"
        ".plot.barh(stacked=True, title='H')\nax.set_xlabel('value')",
        {"kind": "bar", "stacked": True, "title": "H", "categories": ["x", "y"],
         "series": [{"name": "a", "values": [1, 2]}, {"name": "b", "values": [3, -1]}],
         "y_axis": {"title": "value"}, "legend": "right"}),
    "line_dates": ("pd.DataFrame({'a': [1.0, 2, 3], 'b': [2, None, 1]}, "
                   "index=pd.date_range('2026-03-30', periods=3)).plot(title='Trend')",
                   {"kind": "line", "title": "Trend",
                    "categories": ["2026-03-30", "2026-03-31", "2026-04-01"],
                    "series": [{"name": "a", "values": [1, 2, 3]},
                               {"name": "b", "values": [2, None, 1]}], "legend": "right"}),
    "line_numeric": ("plt.plot([0, 1, 2], [1.5, 2.5, 0.5])\nplt.plot([0, 1, 2], [1, 1, 1], label='flat')\n"
                     "plt.axhline(0.5)",
                     {"kind": "line", "categories": [0, 1, 2],
                      "series": [{"values": [1.5, 2.5, 0.5]}, {"name": "flat", "values": [1, 1, 1]}],
                      "legend": "none"}),
    "line_strings_mpl_dates": (
        "import datetime as dt\nfig, ax = plt.subplots()\n"
        "ax.plot([dt.datetime(2026, 1, 1, 6), dt.datetime(2026, 1, 1, 12)], [1, 2], label='t')",
        {"kind": "line", "categories": ["2026-01-01 06:00:00", "2026-01-01 12:00:00"],
         "series": [{"name": "t", "values": [1, 2]}], "legend": "none"}),
    "line_monthly_pandas": (
        "pd.Series([1, 2], index=pd.date_range('2026-01-31', periods=2, freq='M'), name='m')"
        ".plot(legend=True)",
        {"kind": "line", "categories": ["2026-01", "2026-02"],      # periods: as pandas shows them
         "series": [{"name": "m", "values": [1, 2]}], "legend": "right"}),
    "line_names_pandas": ("pd.Series([3, 1, 2], index=['a', 'b', 'c']).plot()",
                          {"kind": "line", "categories": ["a", "b", "c"],
                           "series": [{"values": [3, 1, 2]}], "legend": "none"}),
    "line_hours": ("pd.Series([1, 2], index=pd.date_range('2026-01-01', periods=2, freq='H')).plot()",
                   {"kind": "line", "categories": ["2026-01-01 00:00:00", "2026-01-01 01:00:00"],
                    "series": [{"values": [1, 2]}], "legend": "none"}),
    "bar_categorical_mpl": ("fig, ax = plt.subplots()\nax.barh(['low', 'high'], [1, 9])\n"
                            "ax.set_ylabel('level')",
                            {"kind": "bar", "categories": ["low", "high"],
                             "series": [{"values": [1, 9]}], "x_axis": {"title": "level"},
                             "legend": "none"}),
    "scatter": ("plt.scatter([1, 2.5], [3, 4], label='a')\nplt.scatter([5], [6], label='b')\n"
                "plt.legend(loc='upper left')",
                {"kind": "scatter", "categories": [1, 2.5, 5],
                 "series": [{"name": "a", "values": [3, 4, None]},
                            {"name": "b", "values": [None, None, 6]}], "legend": "left"}),
    "scatter_markers": ("plt.plot([3, 1, 2], [9, 8, 7], 'o')",
                        {"kind": "scatter", "categories": [3, 1, 2],
                         "series": [{"values": [9, 8, 7]}], "legend": "none"}),
    "pie": ("fig, ax = plt.subplots()\nax.pie([1, 1, 2], labels=['a', 'b', 'c'])\n"
            "ax.set_title('Share')",
            {"kind": "pie", "title": "Share", "categories": ["a", "b", "c"],
             "series": [{"values": [0.25, 0.25, 0.5]}], "legend": "right"}),
    "pie_unlabelled": ("plt.pie([1, 3])",
                       {"kind": "pie", "categories": ["Slice 1", "Slice 2"],
                        "series": [{"values": [0.25, 0.75]}], "legend": "none"}),
    "area_stacked": ("fig, ax = plt.subplots()\n"
                     "ax.stackplot([1, 2, 3], [1, 2, 3], [2, 2, 2], labels=['u', 'v'])\n"
                     "ax.legend(loc='upper center')",
                     {"kind": "area", "stacked": True, "categories": [1, 2, 3],
                      "series": [{"name": "u", "values": [1, 2, 3]},
                                 {"name": "v", "values": [2, 2, 2]}], "legend": "top"}),
    "area_pandas": ("pd.DataFrame({'a': [1, 2, 0], 'b': [2, 1, 3]}, index=['p', 'q', 'r']).plot.area()",
                    {"kind": "area", "stacked": True, "categories": ["p", "q", "r"],
                     "series": [{"name": "a", "values": [1, 2, 0]},
                                {"name": "b", "values": [2, 1, 3]}],
                     "legend": "right"}),
    "area_fill_between": ("fig, ax = plt.subplots()\nax.fill_between([1, 2, 3], [4, 5, 6], label='f')",
                          {"kind": "area", "categories": [1, 2, 3],
                           "series": [{"name": "f", "values": [4, 5, 6]}], "legend": "none"}),
}

# Figures that have no chart: the PNG only.
NO_CHART = {
    "two_axes": "fig, (a, b) = plt.subplots(1, 2)\na.plot([1, 2]); b.bar([1], [2])",
    "image": "plt.imshow([[0, 1], [1, 0]])",
    "band": "fig, ax = plt.subplots()\nax.fill_between([1, 2], [3, 4], [1, 1])",
    "bar_and_line": "fig, ax = plt.subplots()\nax.bar([1, 2], [3, 4])\nax.plot([1, 2], [1, 2])",
    "lines_on_other_x": "plt.plot([1, 2], [1, 2])\nplt.plot([3, 4], [1, 2])",
    "waterfall": "fig, ax = plt.subplots()\nax.bar([1, 2], [3, 4], bottom=[1, 5])",
    "errorbars": "plt.errorbar([1, 2], [3, 4], yerr=[0.1, 0.2])",
    "too_many_points": "plt.plot(range(10001))",
}


def strip_colors(chart):
    out = dict(chart)
    out["series"] = [{k: v for k, v in s.items() if k != "color"} for s in chart["series"]]
    return out


@pytest.fixture(scope="module")
def chart_cells(rt):
    """Every plot of CHARTS and NO_CHART run as a cell of its own: {name: Cell}."""
    rt.run("import matplotlib.pyplot as plt, pandas as pd").ok()
    cells = {}
    for name, (code, _) in CHARTS.items():
        cells[name] = rt.run(code + "\npass").ok()
    for name, code in NO_CHART.items():
        cells[name] = rt.run(code + "\npass").ok()
    return cells


@pytest.mark.parametrize("name", sorted(CHARTS))
def test_figure_chart_model(chart_cells, name):
    c = chart_cells[name]
    assert len(c.displays) == 1, c.events
    d = c.displays[0]
    assert d["data"]["text/plain"] == "<Figure size 640x480 with 1 Axes>"
    w, h = png_size(d["data"]["image/png"])
    assert d["metadata"]["image/png"] == {"width": w, "height": h}
    assert 300 < w <= 640 and 200 < h <= 480     # dpi 100, tight box
    chart = d["data"]["application/vnd.kiln.chart+json"]
    expect = dict(CHARTS[name][1], width=640, height=480)
    assert strip_colors(chart) == expect
    assert all(s["color"].startswith("#") and len(s["color"]) == 7 for s in chart["series"]
               if "color" in s)


@pytest.mark.parametrize("name", sorted(NO_CHART))
def test_figure_without_chart_gets_png_only(chart_cells, name):
    c = chart_cells[name]
    assert len(c.displays) == 1, c.events
    data = c.displays[0]["data"]
    assert set(data) == {"text/plain", "image/png"}
    png_size(data["image/png"])


def test_chart_models_validate(chart_cells, tmp_path):
    """Every chart model is a chart of Kiln's spec: one document of them all validates
    and renders as a document that passes ooxml-check, each chart's values in it."""
    blocks = []
    for name in sorted(CHARTS):
        chart = chart_cells[name].displays[0]["data"]["application/vnd.kiln.chart+json"]
        blocks.append(dict(chart, type="chart", caption=name))
    spec = write_spec(tmp_path, {"blocks": blocks})
    proc = run_kiln("validate", spec)
    assert proc.returncode == 0, describe(proc)
    docx = tmp_path / "charts.docx"
    proc = run_kiln("render", spec, "-o", docx)
    assert proc.returncode == 0, describe(proc)
    # the document's charts, in the blocks' order, cache each series' values
    with zipfile.ZipFile(docx) as z:
        parts = sorted((n for n in z.namelist() if re.fullmatch(r"word/charts/chart\d+\.xml", n)),
                       key=lambda n: int(re.search(r"\d+", n).group()))
        cached = [chart_series(z.read(n)) for n in parts]
    assert len(cached) == len(blocks)
    for block, series in zip(blocks, cached):
        if block["kind"] == "scatter":
            continue        # x/y values, not c:val
        want = [[v for v in s["values"] if v is not None] for s in block["series"]]
        assert [vals for _name, _cats, vals in series] == want, block["caption"]
    external_reader("ooxml-check")
    assert_ooxml_ok(docx)


def test_figures_closed_after_cell_and_show(rt):
    rt.run("import matplotlib.pyplot as plt").ok()
    c = rt.run("plt.plot([1, 2])\nprint('a')\nplt.show()\nprint('b')\n"
               "fig = plt.figure(); plt.bar([1], [1])\nlen(plt.get_fignums())").ok()
    # shown where show() ran, before the result; show() closed the first figure
    assert [e["ev"] for e in c.events] == ["display", "result", "display", "done"]
    assert c.result["data"]["text/plain"] == "1"
    assert rt.run("plt.get_fignums()").ok().result["data"]["text/plain"] == "[]"
    # display(fig) shows it once: not again at the end of the cell
    c = rt.run("fig, ax = plt.subplots(); ax.plot([3, 4])\ndisplay(fig)\nprint('x')").ok()
    assert len(c.displays) == 1
    assert "application/vnd.kiln.chart+json" in c.displays[0]["data"]
    c = rt.run("fig = plt.figure(); plt.plot([1, 2])\nfig").ok()     # the result, once
    assert c.displays == [] and "image/png" in c.result["data"]
    # a figure shown then closed, and a new one that may get its id: both shown
    c = rt.run("import gc\nfor i in range(5):\n    f = plt.figure(); plt.plot([i])\n"
               "    display(f); plt.close(f); del f; gc.collect()\n"
               "plt.figure(); plt.plot([1, 2]);").ok()
    assert len(c.displays) == 6
    # a cell that fails still shows what it drew
    c = rt.run("plt.plot([1, 3])\n1 / 0")
    assert c.status == "error" and len(c.displays) == 1


def test_show_patched_when_pyplot_preloaded(fresh):
    r = fresh(command=WARM)
    c = r.run("import matplotlib.pyplot as plt\nplt.plot([1, 2]); plt.show(); print('after')\n"
              "len(plt.get_fignums())").ok()
    assert [e["ev"] for e in c.events] == ["display", "result", "done"]
    assert c.result["data"]["text/plain"] == "0"
    assert c.stdout == "after\n"
    assert "non-GUI" not in c.stderr and "cannot be shown" not in c.stderr


def test_serve_reseeds_random_state(fresh):
    """A session forked from the zygote draws its own random numbers: serve() reseeds
    what the zygote seeded (here with 0, as every fork would inherit it)."""
    r = fresh(command="import numpy, random; numpy.random.seed(0); random.seed(0); " + SERVE)
    c = r.run("import numpy, random\nnumpy.random.random(), random.random()").ok()
    import random
    import numpy
    numpy.random.seed(0)
    random.seed(0)
    inherited = (numpy.random.random(), random.random())
    drawn = eval(c.result["data"]["text/plain"])
    assert drawn[0] != inherited[0] and drawn[1] != inherited[1]


# --------------------------------------------------------------------------- interrupt

def gone(pid, timeout=5):
    """Waits for the process to end (a zombie waiting for its reaper has ended); False
    if it is still running after `timeout` s. SIGKILL is delivered asynchronously."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            stat = Path("/proc/%d/stat" % pid).read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return True
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)


def wait_stdout(r, text, timeout=TIMEOUT):
    deadline = time.monotonic() + timeout
    while text not in r.out["stdout"]:
        assert time.monotonic() < deadline, "no %r on stdout" % text
        select.select(list(r.pipes), [], [], 0.05)
        r._drain()


def interrupt(r, code, marker, language="python"):
    """Start a cell, SIGINT the runtime once the cell printed `marker`: (Cell, seconds
    from the signal to the cell's end)."""
    r.start(code, language)
    wait_stdout(r, marker)
    t0 = time.monotonic()
    os.kill(r.proc.pid, signal.SIGINT)
    c = r.finish()
    return c, time.monotonic() - t0


def test_interrupt_keeps_state(rt):
    rt.run("x = 5").ok()
    c, took = interrupt(rt, "import time\nx = 6\nprint('started', flush=True)\ntime.sleep(60)\n"
                        "x = 7", b"started")
    assert took < 5
    assert c.status == "interrupted"
    assert c.error["ename"] == "KeyboardInterrupt"
    assert c.error["traceback"][1].startswith('  File "<cell %d>", line ' % rt.cell)
    assert rt.run("x").ok().result["data"]["text/plain"] == "6"


def test_interrupt_in_the_results_repr(rt):
    rt.run("import time\nclass Slow:\n    def __repr__(self):\n"
           "        print('in repr', flush=True)\n        time.sleep(60)\n").ok()
    c, took = interrupt(rt, "kept_too = 1\nSlow()", b"in repr")
    assert c.status == "interrupted" and c.of("result") == []
    assert rt.run("kept_too").ok().result["data"]["text/plain"] == "1"


def test_output_appears_as_it_is_written(rt):
    """print() without flush reaches the pipe at the end of its line, while the cell
    still runs (here: blocked on a FIFO the test opens once it has seen the output)."""
    fifo = rt.dir / "lines.fifo"
    os.mkfifo(fifo)
    rt.start("import sys\nprint('tick')\nsys.stderr.write('tock\\n')\nopen(%r).close()"
             % str(fifo))
    deadline = time.monotonic() + TIMEOUT
    while not (rt.out["stdout"] == b"tick\n" and rt.out["stderr"] == b"tock\n"):
        assert time.monotonic() < deadline, rt.out
        select.select(list(rt.pipes), [], [], 0.05)
        rt._drain()
    open(fifo, "w").close()
    rt.finish().ok()


def test_sigint_between_cells_is_ignored(rt):
    rt.run("kept = 'yes'").ok()
    for _ in range(5):
        os.kill(rt.proc.pid, signal.SIGINT)
    # pending signals are handled before the runtime reads the next request
    c = rt.run("kept").ok()
    assert c.result["data"]["text/plain"] == "'yes'"


def test_interrupt_never_tears_a_frame(fresh):
    """SIGINTs while the cell writes frames: each frame stays whole, the cell stops."""
    r = fresh(caps=dict(CAPS, display_items=1000000, display_bytes=1 << 30))
    # big frames fill the pipe: the runtime spends its time blocked in writing them
    r.start("print('go', flush=True)\nwhile True:\n    display('x' * 200000)")
    wait_stdout(r, b"go")
    frames = 0
    while True:
        os.kill(r.proc.pid, signal.SIGINT)
        ev = r.frame()          # strict JSON, or this fails
        frames += 1
        if ev["ev"] == "done":
            break
    assert ev["status"] == "interrupted"
    assert frames >= 2
    assert r.run("'still here'").ok().result["data"]["text/plain"] == "'still here'"


def test_user_handler_is_the_users_business(fresh):
    r = fresh()
    r.run("import signal\nhit = []\n"
          "signal.signal(signal.SIGINT, lambda *a: (hit.append(1), print('mine', flush=True)))").ok()
    r.start("import time\nprint('go', flush=True)\nfor i in range(6000):\n    if hit:\n"
            "        break\n    time.sleep(0.01)\n'end'")
    wait_stdout(r, b"go")
    os.kill(r.proc.pid, signal.SIGINT)
    c = r.finish()
    assert c.status == "ok" and c.result["data"]["text/plain"] == "'end'"
    assert "mine" in c.stdout


# --------------------------------------------------------------------------- bash

def test_bash_cells(rt):
    rt.run("open('from_python.txt', 'w').write('hello')").ok()
    c = rt.run("cat from_python.txt; echo; pwd; echo err >&2; [ -t 0 ] || echo no-tty", "bash").ok()
    assert c.stdout == "hello\n%s\nno-tty\n" % rt.dir
    assert c.stderr == "err\n"
    assert c.of("result") == []
    c = rt.run("echo out; exit 3", "bash")
    assert c.status == "error"
    assert c.error == dict(c.error, ename="BashError", evalue="exit status 3")
    assert c.stdout == "out\n"
    c = rt.run("kill -KILL $$", "bash")
    assert c.error["evalue"] == "killed by signal SIGKILL"
    c = rt.run("echo made > from_bash.txt", "bash").ok()
    assert rt.run("open('from_bash.txt').read()").ok().result["data"]["text/plain"] == "'made\\n'"


def test_bash_long_script(rt):
    code = "x=0\n" + "x=$((x+1))\n" * 20000 + "echo $x\n"    # over execve's 128 KiB argument
    c = rt.run(code, "bash").ok()
    assert c.stdout == "20000\n"


def test_bash_interrupt(rt):
    # "go" comes from the foreground child itself, once it waits: the SIGINT finds it (a
    # child forked just after the signal, or a shell's exec racing it, would miss it and
    # live on to the SIGKILL grace)
    c, took = interrupt(rt, "/usr/bin/python3 -c \"import time; print('go', flush=True); "
                        "time.sleep(60)\"; echo never", b"go", "bash")
    # SIGINT ends it, not the SIGKILL after the grace: the child's own KeyboardInterrupt
    # (a behaviour, where a bound on the time only flaked on a loaded machine)
    assert "KeyboardInterrupt" in c.stderr, (took, c.stderr)
    assert c.status == "interrupted"
    assert c.error["ename"] == "KeyboardInterrupt"
    assert "never" not in c.stdout


def test_bash_ignoring_sigint_is_killed_with_its_group(rt):
    pidfile = rt.dir / "child.pid"
    c, took = interrupt(rt, "trap '' INT\nsleep 60 &\necho $! > %s\necho go\nwait\nwait"
                        % pidfile, b"go", "bash")
    child = int(pidfile.read_text())
    assert c.status == "interrupted"
    # the background child that ignores SIGINT goes with its group's SIGKILL after the
    # grace (the grace's length is not asserted: a bound on time flaked on a loaded machine)
    assert gone(child), (took, c.events, c.stdout, c.stderr)
    assert rt.run("1").ok()


# --------------------------------------------------------------------------- caps

def test_many_figures_are_capped_fast(fresh):
    r = fresh(caps=dict(CAPS, display_items=5))
    c = r.run("import time, warnings\nwarnings.simplefilter('ignore')\n"
              "import matplotlib.pyplot as plt\n"
              "for i in range(10000):\n    plt.figure()\nplt.plot([1, 2])\n"
              "print(time.monotonic(), end='')", timeout=300).ok()
    after = time.monotonic()
    ended = float(c.stdout)
    assert after - ended < 10, "the runtime took %.1f s over 10,000 figures" % (after - ended)
    assert len(c.displays) == 5
    assert c.done["dropped"]["displays"] == 9995
    assert r.run("len(plt.get_fignums())").ok().result["data"]["text/plain"] == "0"


def test_display_count_cap(fresh):
    r = fresh(caps=dict(CAPS, display_items=3))
    c = r.run("for i in range(10):\n    display(i)\n'result is not a display'").ok()
    assert [d["data"]["text/plain"] for d in c.displays] == ["0", "1", "2"]
    assert c.result["data"]["text/plain"] == "'result is not a display'"
    assert c.done["dropped"]["displays"] == 7
    assert c.done["dropped"]["bytes"] > 0
    c = r.run("display(1)").ok()          # per cell
    assert len(c.displays) == 1 and c.done["dropped"] == {"displays": 0, "bytes": 0}


def vm_hwm(pid):
    for line in Path("/proc/%d/status" % pid).read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def test_huge_display_is_capped_not_built(fresh):
    r = fresh(caps=dict(CAPS, display_bytes=1 << 20, frame_bytes=1 << 20))
    r.run("big = 'y' * (100 << 20)\nbig_u = 'é' * (20 << 20)").ok()
    before = vm_hwm(r.proc.pid)
    c = r.run("display({'text/plain': 'short', 'text/html': big}, raw=True)\n"
              "display({'text/plain': big_u}, raw=True)\n"
              "display('fits')").ok()
    grew = vm_hwm(r.proc.pid) - before
    assert grew < 50 << 20, "peak memory grew by %d MB" % (grew >> 20)
    d = c.displays
    assert d[0]["data"] == {"text/plain": "short"}
    assert d[0]["metadata"] == {"kiln": {"truncated": True}}
    assert d[1]["data"] == {"text/plain": "'fits'"}
    assert len(d) == 2
    dropped = c.done["dropped"]
    assert dropped["displays"] == 1                      # big_u: even text/plain is over
    assert dropped["bytes"] >= (100 << 20) + (20 << 20)
    assert all(len(l) + 1 <= 1 << 20 for l in r.lines)
    # a result whose repr could never fit is dropped without its repr being built
    before = vm_hwm(r.proc.pid)
    c = r.run("big").ok()
    assert c.result is None
    assert c.done["dropped"]["displays"] == 1 and c.done["dropped"]["bytes"] >= 100 << 20
    grew = vm_hwm(r.proc.pid) - before
    assert grew < 50 << 20, "peak memory grew by %d MB" % (grew >> 20)
    c = r.run("display(list(range(2 << 20)))").ok()
    assert c.displays == [] and c.done["dropped"]["displays"] == 1


def test_display_byte_budget_is_per_cell_and_counts_results(fresh):
    r = fresh(caps=dict(CAPS, display_bytes=100000))
    c = r.run("for i in range(5):\n    display({'text/plain': str(i), 'text/html': 'h' * 30000}, raw=True)\n"
              "'z' * 50000").ok()
    full = [x for x in c.displays if "text/html" in x["data"]]
    cut = [x for x in c.displays if "text/html" not in x["data"]]
    assert len(full) == 3 and len(cut) == 2
    assert all(x["metadata"] == {"kiln": {"truncated": True}} for x in cut)
    assert c.result is None or c.result["metadata"] == {"kiln": {"truncated": True}}
    total = sum(len(l) + 1 for l in r.lines if b'"ev":"display"' in l or b'"ev":"result"' in l)
    assert total <= 100000
    c = r.run("display({'text/plain': 'a', 'text/html': 'h' * 30000}, raw=True)").ok()
    assert "text/html" in c.displays[0]["data"]


def test_huge_error_fits_a_frame(fresh):
    r = fresh(caps=dict(CAPS, frame_bytes=65536))
    c = r.run("raise ValueError('v' * 1000000)")
    assert c.status == "error" and c.error["ename"] == "ValueError"
    assert len(r.lines[-2]) < 65536
    assert c.error["evalue"].startswith("vvvv") and c.error["evalue"].endswith(" ... [cut]")
    # 3,000 chained exceptions: the traceback keeps its first line and its end
    c = r.run("e = None\nfor i in range(3000):\n    try:\n        raise ValueError(i) from e\n"
              "    except ValueError as x:\n        e = x\nraise e")
    tb = c.error["traceback"]
    assert len(r.lines[-2]) < 65536
    assert tb[0] == "Traceback (most recent call last):"
    assert re.fullmatch(r"\.\.\. \[\d+ lines cut\]", tb[1])
    assert tb[-1] == "ValueError: 2999"
    assert c.error["evalue"] == "2999"


# --------------------------------------------------------------------------- robustness

def test_user_code_cannot_break_the_frames(fresh):
    r = fresh()
    c = r.run("import os\ntry:\n    os.write(4, b'{\"ev\":\"done\",\"cell\":1,\"status\":\"ok\"}\\n')\n"
              "except OSError as e:\n    print(e.errno)")
    assert c.status == "ok" and c.stdout == "9\n"       # fd 4 is closed: EBADF
    c = r.run("os.close(1)\nos.close(2)")
    assert c.status == "ok"
    c = r.run("print('fd 1 is back')\nimport sys; sys.stderr.write('and 2\\n')").ok()
    assert c.stdout == "fd 1 is back\n" and c.stderr == "and 2\n"
    r.run("import sys, io, json\nsys.stdout = io.StringIO()\nsys.stderr.close()\n"
          "json.dumps = lambda *a, **k: 'garbage'\n"
          "json.JSONEncoder.encode = lambda *a, **k: 'garbage'\n"
          "json.JSONEncoder.iterencode = lambda *a, **k: iter(['garbage'])\n"
          "json.loads = lambda *a, **k: None\n"
          "os.write = lambda *a: 0\nos.read = lambda *a: b''\n").ok()
    c = r.run("print('printed')\ndisplay({'a': 1})\n[1, 2]").ok()
    assert c.stdout == "printed\n"
    assert c.displays[0]["data"] == {"text/plain": "{'a': 1}"}
    assert c.result["data"] == {"text/plain": "[1, 2]"}
    c = r.run("import os\nfd = os.open('/dev/null', os.O_WRONLY)\nos.dup2(fd, 1)\nprint('lost')").ok()
    assert c.stdout == ""
    assert r.run("print('found')").ok().stdout == "found\n"


def test_reloading_the_runtime_module(fresh):
    r = fresh()
    r.run("import importlib, kiln_session\nimportlib.reload(kiln_session)\nx = 1").ok()
    c = r.run("display('after reload')\nx + 1").ok()
    assert c.displays[0]["data"] == {"text/plain": "'after reload'"}
    assert c.result["data"]["text/plain"] == "2"
    c, _ = interrupt(r, "import time\nprint('go', flush=True)\ntime.sleep(60)", b"go")
    assert c.status == "interrupted"


def test_a_broken_runtime_still_ends_each_cell(fresh):
    r = fresh()
    c = r.run("import kiln_session\nkiln_session._encode = None\n'a result it cannot send'")
    assert [e["ev"] for e in c.events] == ["done"]
    assert c.done == dict(c.done, status="error", dropped={"displays": 0, "bytes": 0})
    c = r.run("1")
    assert c.status == "error"


def test_forged_frames_and_odd_text(fresh):
    r = fresh()
    forged = '{"ev":"done","cell":1,"status":"ok","dropped":{"displays":0,"bytes":0}}'
    code = ("forged = %r\nprint(forged)\n"
            "display({'text/plain': 'line\\n' + forged + '\\u2028\\x00\\ud800'}, raw=True)\n"
            "'ok'" % forged)
    c = r.run(code).ok()
    assert [e["ev"] for e in c.events] == ["display", "result", "done"]
    assert c.stdout == forged + "\n"           # on stdout, where it is only text
    # U+0000 would make the host's parser drop the frame: U+FFFD, as a lone surrogate
    assert c.displays[0]["data"]["text/plain"] == "line\n" + forged + "\u2028\ufffd\ufffd"
    assert all(b"\n" not in l and b"\\u0000" not in l for l in r.lines)
    c = r.run("raise ValueError('\\ud800 lone')")
    assert c.error["evalue"] == "\ufffd lone"


def test_forked_process_never_speaks_for_the_runtime(fresh):
    r = fresh()
    c = r.run("import os\npid = os.fork()\nif pid == 0:\n    display('from the child')\n"
              "    print('child done', flush=True)\nelse:\n    _, st = os.waitpid(pid, 0)\n"
              "(st if pid else None), pid == 0").ok()
    assert [e["ev"] for e in c.events] == ["result", "done"]
    assert c.result["data"]["text/plain"] == "(0, False)"
    assert "'from the child'\nchild done\n" in c.stdout
    c = r.run("pid = os.fork()\nif pid == 0:\n    raise ValueError('in the child')\n"
              "os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])").ok()
    assert c.result["data"]["text/plain"] == "1"
    assert "ValueError: in the child" in c.stderr
    assert r.run("'parent fine'").ok().result["data"]["text/plain"] == "'parent fine'"


def test_input_gets_end_of_file(rt):
    c = rt.run("input('? ')")
    assert c.error["ename"] == "EOFError"
    rt.run("exit()")                   # closes sys.stdin, as site's exit() does
    c = rt.run("input('? ')")
    assert c.error["ename"] == "EOFError"
    c = rt.run("import os\nos.close(0)")
    c = rt.run("import sys\nsys.stdin.read(), os.fstat(0).st_rdev == os.stat('/dev/null').st_rdev")
    assert c.ok().result["data"]["text/plain"] == "('', True)"


def test_private_fds_do_not_leak_to_bash(rt):
    c = rt.run("ls /proc/self/fd | sort -n | tr '\\n' ' '", "bash").ok()
    fds = [int(x) for x in c.stdout.split()]
    assert max(fds) <= 3, c.stdout       # 0, 1, 2 and ls's own directory fd


def test_default_caps_when_init_names_none(fresh):
    r = fresh(init=False)
    r.send({"op": "init", "env": r.env})
    assert r.frame()["ev"] == "ready"
    c = r.run("for i in range(101):\n    display(i)").ok()
    assert len(c.displays) == 100                        # docs/session-results.md "Limits"
    assert c.done["dropped"]["displays"] == 1


# --------------------------------------------------------------------------- docs

DOC = REPO / "docs" / "session-results.md"


def doc_examples():
    """(code, expected) of each ```python block that a ```json block follows."""
    blocks, lang, buf = [], None, []
    for line in DOC.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            if lang is None:
                lang, buf = line[3:].strip(), []
            else:
                blocks.append((lang, "\n".join(buf)))
                lang = None
            continue
        if lang is not None:
            buf.append(line)
    return [(code, json.loads(expected)) for (l1, code), (l2, expected) in zip(blocks, blocks[1:])
            if l1 == "python" and l2 == "json"]


def test_doc_examples_are_what_the_runtime_gives(fresh):
    examples = doc_examples()
    assert len(examples) == 3
    for code, expected in examples:
        c = fresh().run(code)
        if "schema" in expected:
            got = c.result["data"]["application/vnd.dataresource+json"]
        elif "kind" in expected:
            got = c.displays[0]["data"]["application/vnd.kiln.chart+json"]
        else:
            got = {k: c.error[k] for k in ("ename", "evalue", "traceback")}
        assert got == expected, code
