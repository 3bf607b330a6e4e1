"""The Python runtime of a Kiln session (docs/session.md, docs/session-results.md).

The session's sandbox forks this interpreter from a warm one (pandas, numpy, matplotlib
with the Agg backend and ``kiln`` already imported) and calls::

    import kiln_session; kiln_session.serve(3, 4)

fd 3 carries requests from the host, fd 4 events back, one JSON object a line (UTF-8, at
most caps.frame_bytes an event, newline included); fds 1 and 2 are the cell's stdout and
stderr, read by the host directly (flushed before every event). One cell runs at a time,
in one namespace that lives as long as the session. Requests::

    {"op": "init", "env": {...}, "caps": {"display_bytes": N, "display_items": N,
                                          "table_rows": N, "frame_bytes": N}}
    {"op": "execute", "cell": N, "language": "python" | "bash", "code": "..."}
    {"op": "exit"}                       (or EOF on fd 3: serve() returns)

Events: ``init`` is answered by ``{"ev": "ready", "pid": P, "python": "3.11.2"}``; a cell N
by ``{"ev": "running", "cell": N}`` just before its code runs (the host holds an interrupt
back until then: one sent before would find no cell), any number of
``{"ev": "display", "cell": N, "data": {MIME: value}, "metadata": {...}}``, at most one
``{"ev": "result", ...}`` (the same members), at most one
``{"ev": "error", "cell": N, "ename": .., "evalue": .., "traceback": [lines]}``, then always
``{"ev": "done", "cell": N, "status": "ok" | "error" | "interrupted",
"dropped": {"displays": K, "bytes": B}}``. A request that is not JSON, or an unknown op, is
ignored with a line on stderr. docs/session-results.md says what the bundles hold.

SIGINT raises KeyboardInterrupt in a running cell and does nothing otherwise (serve()
installs the handler first). What serve() expects of the zygote that forked it: stdout and
stderr flushed before the fork, fds 1 and 2 already the session's pipes; it enables the
garbage collector (the zygote freezes and disables it before forking) and reseeds
``random`` and numpy's global generator (a fork inherits the zygote's state).

Only the standard library is needed at import: numpy, pandas and matplotlib objects are
recognised when those packages are in ``sys.modules`` (a cell has imported them, or the
zygote did), and every use of them is guarded, so a broken package costs a MIME type, never
a cell.

What user code can break is kept out of its reach: the protocol fds are moved to private
close-on-exec descriptors (fds 3 and 4 are closed), frames are written with ``os.write`` and
an encoder captured at import, and every cell starts with its stdout/stderr restored, so a
cell that closes fd 1, replaces ``sys.stdout``, deletes ``display`` or monkeypatches
``json`` breaks only itself.
"""

import ast
import base64
import builtins
import datetime as _dt
import fcntl
import io
import json
import linecache
import math
import os
import platform
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tokenize
import traceback
import types

__all__ = ["serve", "display"]

# Captured at import: a cell that monkeypatches os or json must not reach the frames.
_write = os.write
_read = os.read
_getpid = os.getpid


class _Encoder(json.JSONEncoder):
    """json.JSONEncoder's methods bound to this class, so patching json.JSONEncoder (a
    common way to teach json about numpy types) does not change the frames."""
    encode = json.JSONEncoder.encode
    iterencode = json.JSONEncoder.iterencode
    default = json.JSONEncoder.default


class _Decoder(json.JSONDecoder):
    decode = json.JSONDecoder.decode
    raw_decode = json.JSONDecoder.raw_decode


_encode = _Encoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
_decode = _Decoder().decode

#: Defaults for the caps the host sends in `init` (docs/session-results.md "Limits").
DEFAULT_CAPS = {"display_bytes": 32 << 20, "display_items": 100, "table_rows": 1000,
                "frame_bytes": 64 << 20}
#: Figures whose chart would have more points than this get the PNG only.
MAX_CHART_POINTS = 10000
#: Kiln's limit of series per chart (docs/spec.md "Limits").
MAX_CHART_SERIES = 255
#: A bash cell's code longer than this (bytes) runs from a script file in /tmp: one
#: argument of execve is at most 128 KiB (MAX_ARG_STRLEN).
BASH_ARG_MAX = 100000
#: How long a bash cell's process group has after SIGINT before SIGKILL.
BASH_GRACE = 1.0
#: Room a frame needs beyond its bundle's data (the envelope, metadata).
_ENVELOPE = 256

_MIME_PLAIN = "text/plain"
MIME_TABLE = "application/vnd.dataresource+json"
MIME_CHART = "application/vnd.kiln.chart+json"

# The repr methods display() asks for, IPython's names, in the order it asks.
_REPR_METHODS = (
    ("text/html", "_repr_html_", "text"),
    ("text/markdown", "_repr_markdown_", "text"),
    ("image/svg+xml", "_repr_svg_", "text"),
    ("image/png", "_repr_png_", "binary"),
    ("image/jpeg", "_repr_jpeg_", "binary"),
    ("text/latex", "_repr_latex_", "text"),
    ("application/json", "_repr_json_", "json"),
)


class _HostGone(Exception):
    """The event channel is closed: nobody reads the session's results any more."""


# --------------------------------------------------------------------------- state

class _Session:
    """What serve() keeps for the session's whole life."""

    def __init__(self, ctl, ev, caps):
        self.ctl = ctl               # private fd of the control channel
        self.ev = ev                 # private fd of the event channel
        self.caps = caps
        self.buf = bytearray()       # control bytes read but not yet a line
        self.scanned = 0             # how much of buf has no newline
        self.eof = False
        self.namespace = None        # the cell namespace (__main__'s dict)
        self.main_module = None
        self.workdir = os.getcwd()   # /mnt/data in the sandbox: bash cells run there
        self.std_fds = {}            # fd 1/2 -> (private dup, (st_dev, st_ino))
        self.streams = {}            # "stdout"/"stderr" -> the runtime's text stream
        self.loop = None             # asyncio loop for cells with top-level await
        self.cell = None             # the running cell's state (_Cell) or None
        self.pid = _getpid()         # a process forked by a cell is not the runtime


class _Cell:
    """Per-cell counters: what was sent and what the caps dropped."""

    def __init__(self, number, caps):
        self.number = number
        self.items_left = caps["display_items"]
        self.bytes_left = caps["display_bytes"]
        self.dropped_displays = 0
        self.dropped_bytes = 0
        # figures displayed during the cell, by id(); holding them keeps their ids theirs
        self.shown_figures = {}


# importlib.reload() runs this file again in the same module dict, under a running
# serve(): the session's state is kept, not reset.
_session = globals().get("_session")

# SIGINT: a KeyboardInterrupt in the running cell, nothing between cells. While the
# runtime writes a frame (or cleans up after a bash cell) the interrupt waits (_pending)
# and is raised as soon as the runtime's critical section ends.
_interruptible = globals().get("_interruptible", False)
_masked = globals().get("_masked", 0)
_pending = globals().get("_pending", False)


def _on_sigint(signum, frame):
    global _pending
    if not _interruptible:
        return
    if _masked:
        _pending = True
        return
    raise KeyboardInterrupt


class _Masked:
    """A section the interrupt waits for (a frame is never half written). A thread of
    the cell may write frames too: the interrupt still goes to the main thread."""

    def __enter__(self):
        global _masked
        _masked += 1

    def __exit__(self, *exc):
        global _masked, _pending
        _masked -= 1
        if not _masked and _pending and _interruptible:
            _pending = False
            if exc[0] is None and threading.current_thread() is threading.main_thread():
                raise KeyboardInterrupt
            # another thread, or an exception on its way out: the interrupt is not lost,
            # it reaches the main thread as soon as it runs Python again
            import _thread
            _thread.interrupt_main(signal.SIGINT)
        return False


_send_lock = globals().get("_send_lock") or threading.Lock()
_publish_lock = globals().get("_publish_lock") or threading.RLock()


# --------------------------------------------------------------------------- frames

def _flush_std():
    """Flush what the cell printed before a frame is written, so the host, which drains
    the stdout/stderr pipes when a frame arrives, keeps the order."""
    for name in ("stdout", "stderr"):
        for stream in (getattr(sys, name, None), _session.streams.get(name) if _session else None):
            try:
                if stream is not None:
                    stream.flush()
            except Exception:
                pass


_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean_text(s):
    """A str as it can travel in UTF-8 JSON: each lone surrogate becomes U+FFFD."""
    try:
        s.encode("utf-8")
        return s
    except UnicodeEncodeError:
        return _SURROGATE.sub("\ufffd", s)


def _no_nul(value):
    """value with every U+0000 in its strings (keys too) as U+FFFD: the host's JSON
    parser refuses a string holding one, and would drop the whole frame."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, dict):
        return {_no_nul(k): _no_nul(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_no_nul(v) for v in value]
    return value


def _frame_bytes(obj):
    line = _encode(obj)
    if "\\u0000" in line:      # rare: only then walk the frame
        line = _encode(_no_nul(obj))
    try:
        data = line.encode("utf-8")
    except UnicodeEncodeError:
        data = _clean_text(line).encode("utf-8")
    return data + b"\n"


def _forked_return(exc=None):
    """A process a cell forked (os.fork) that comes back into the runtime ends there,
    as a script would: it never writes frames or reads requests of its parent's."""
    if _session is None or _getpid() == _session.pid:
        return
    _flush_std()
    if exc is not None:
        try:
            traceback.print_exception(type(exc), exc, exc.__traceback__)
            sys.stderr.flush()
        except Exception:
            pass
    os._exit(0 if exc is None or (isinstance(exc, SystemExit) and not exc.code) else 1)


def _after_fork_in_child():
    # the protocol's fds are the runtime's, not its children's
    if _session is not None:
        for fd in (_session.ctl, _session.ev):
            try:
                os.close(fd)
            except OSError:
                pass


def _send_bytes(data):
    _forked_return()
    with _Masked(), _send_lock:
        _flush_std()
        view = memoryview(data)
        while view:
            try:
                n = _write(_session.ev, view)
            except (BrokenPipeError, ConnectionResetError) as e:
                raise _HostGone() from e
            except OSError as e:
                if e.errno in (9, 32):   # EBADF (closed under us), EPIPE
                    raise _HostGone() from e
                raise
            view = view[n:]


def _send(obj):
    """Write one frame; a frame over caps.frame_bytes is never written (the host would
    discard it): callers shrink what they send first, this is the last guard."""
    data = _frame_bytes(obj)
    if len(data) > _session.caps["frame_bytes"]:
        raise ValueError("frame of %d bytes over caps.frame_bytes" % len(data))
    _send_bytes(data)


# --------------------------------------------------------------------------- sizes

def _estimate(value):
    """The JSON bytes of a bundle value, cheaply and from below or close to it (escapes
    aside): never builds the text of a huge value to measure it."""
    if isinstance(value, _Oversize):
        return value.size
    if isinstance(value, str):
        n = len(value)
        if value.isascii():
            return n + 2
        # UTF-8 is at least one byte a code point: past 16 Mi characters that bound will do
        return (n if n > (1 << 24) else len(value.encode("utf-8", "surrogatepass"))) + 2
    if isinstance(value, (bytes, bytearray)):
        return 4 * ((len(value) + 2) // 3) + 2
    if isinstance(value, dict):
        return sum(_estimate(k) + _estimate(v) + 2 for k, v in value.items()) + 2
    if isinstance(value, (list, tuple)):
        return sum(_estimate(v) + 1 for v in value) + 2
    return 24


def _bundle_size(data, metadata):
    return _estimate(data) + _estimate(metadata) + _ENVELOPE


# --------------------------------------------------------------------------- display

def _warn(what):
    """A repr method or formatter that failed: its traceback to stderr, the bundle
    goes on without that MIME type."""
    try:
        err = sys.stderr
        err.write("kiln_session: %s failed; the output goes without it:\n" % what)
        err.write("".join(traceback.format_exception(*sys.exc_info())))
        err.flush()
    except Exception:
        pass


class _Oversize(str):
    """The text/plain of an object whose repr cannot fit any frame (a 1 GB string, a list
    of a billion items), stood for by its least size: the repr is never built."""

    def __new__(cls, obj, size):
        self = super().__new__(cls, "<%s of %d items>" % (type(obj).__name__, len(obj)))
        self.size = size
        return self


def _repr_text(obj):
    # Every character and item of these costs at least a byte of their repr (exact
    # types: a subclass may print itself shorter).
    if type(obj) in (str, bytes, bytearray, list, tuple, dict, set, frozenset):
        caps = _session.caps if _session is not None else DEFAULT_CAPS
        limit = min(caps["frame_bytes"], caps["display_bytes"])
        try:
            n = len(obj)
        except Exception:
            n = 0
        if n > limit:
            return _Oversize(obj, n)
    try:
        return repr(obj)
    except Exception:
        _warn("repr()")
        try:
            return object.__repr__(obj)
        except Exception:
            return "<unrepresentable object>"


def _method(obj, name):
    """A repr method of obj, looked up as IPython does: never on a class (its methods are
    unbound), never something that is not callable (an object answering every
    attribute)."""
    if isinstance(obj, type):
        return None
    try:
        m = getattr(obj, name, None)
    except Exception:
        return None
    return m if callable(m) else None


def _split_md(ret):
    """A repr method may return data or (data, metadata)."""
    if isinstance(ret, tuple) and len(ret) == 2 and isinstance(ret[1], dict):
        return ret[0], ret[1]
    return ret, None


def _as_mime_value(kind, value):
    """A repr method's value as it goes in a bundle, or None to skip it."""
    if value is None:
        return None
    if kind == "text":
        if isinstance(value, (bytes, bytearray)):
            value = bytes(value).decode("utf-8", "replace")
        return value if isinstance(value, str) else None
    if kind == "binary":
        if isinstance(value, str):
            return value        # already base64, as IPython accepts
        if isinstance(value, (bytes, bytearray, memoryview)):
            return base64.b64encode(bytes(value)).decode("ascii")
        return None
    # json: a JSON value, checked by encoding it (NaN is not JSON)
    _encode(value)
    return value


def _json_safe(value):
    """Metadata as JSON: what cannot be encoded is dropped."""
    try:
        _encode(value)
        return value
    except Exception:
        return None


def _pandas():
    return sys.modules.get("pandas")


def _is_figure(obj):
    fig_mod = sys.modules.get("matplotlib.figure")
    return fig_mod is not None and isinstance(obj, getattr(fig_mod, "Figure", ()))


def _table_frame(pd, head):
    """The rows of a table as a frame pandas' Table Schema writer takes and writes
    faithfully: a Series as one column ("values" when unnamed); column names as text,
    MultiIndex levels joined by spaces, repeated names numbered ("a", "a.1") as
    read_csv does; an index named like a column renamed "NAME (index)"; bytes as their
    repr (the writer would put raw bytes in the JSON)."""
    if isinstance(head, pd.Series):
        head = head.to_frame(name="values" if head.name is None else head.name)
    else:
        head = head.copy()
    if isinstance(head.columns, pd.MultiIndex):
        names = [" ".join(str(p) for p in c if str(p) != "") for c in head.columns]
    else:
        names = [str(c) for c in head.columns]
    seen, unique = {}, []
    for n in names:
        k = seen.get(n, 0)
        seen[n] = k + 1
        unique.append(n if k == 0 else "%s.%d" % (n, k))
    head.columns = unique
    taken = set(unique)
    index_names = [None if n is None else str(n) for n in head.index.names]
    if index_names == [None] and "index" in taken:
        index_names = ["index"]     # pandas would call it "index" too, and refuse
    head.index = head.index.set_names([n + " (index)" if n in taken else n for n in index_names])
    for col in range(head.shape[1]):
        values = head.iloc[:, col]
        if values.dtype == object and any(isinstance(v, (bytes, bytearray)) for v in values):
            head.isetitem(col, [repr(v) if isinstance(v, (bytes, bytearray)) else v
                                for v in values])
    return head


def _table_resource(pd, obj, rows):
    """pandas' Table Schema of the first `rows` rows, plus total_rows and truncated."""
    head = obj.head(rows) if len(obj) > rows else obj
    text = _table_frame(pd, head).to_json(orient="table", default_handler=str)
    table = _decode(text)
    table["total_rows"] = len(obj)
    table["truncated"] = len(obj) > len(head)
    return table


def _pandas_bundle(obj, data):
    """text/html and the Table Schema of a DataFrame or Series (a one-column table)."""
    pd = _pandas()
    frame = obj if isinstance(obj, pd.DataFrame) else obj.to_frame()
    try:
        html = frame._repr_html_()
        if html is None:    # display.notebook_repr_html off: the same table without it
            html = frame.to_html(max_rows=pd.get_option("display.max_rows"),
                                 min_rows=pd.get_option("display.min_rows"),
                                 max_cols=pd.get_option("display.max_columns"),
                                 show_dimensions=pd.get_option("display.show_dimensions"))
        data["text/html"] = html
    except Exception:
        _warn("the DataFrame's HTML")
    try:
        data[MIME_TABLE] = _table_resource(pd, obj, _session.caps["table_rows"] if _session
                                           else DEFAULT_CAPS["table_rows"])
    except Exception:
        _warn("the DataFrame's table schema")


def _format(obj, include=None, exclude=None):
    """obj as a MIME bundle (data, metadata), IPython's conventions: text/plain always,
    then what the object's repr methods give, _repr_mimebundle_ over the others."""
    data, metadata = {}, {}
    pd = _pandas()
    if pd is not None and isinstance(obj, (pd.DataFrame, pd.Series)):
        _pandas_bundle(obj, data)
    elif _is_figure(obj):
        fig_data, fig_md = _figure_bundle(obj)
        data.update(fig_data)
        metadata.update(fig_md)
    else:
        for mime, name, kind in _REPR_METHODS:
            m = _method(obj, name)
            if m is None:
                continue
            try:
                value, md = _split_md(m())
                value = _as_mime_value(kind, value)
            except Exception:
                _warn("%s.%s()" % (type(obj).__name__, name))
                continue
            if value is not None:
                data[mime] = value
                if md:
                    metadata[mime] = md
    m = _method(obj, "_repr_mimebundle_")
    if m is not None:
        try:
            ret = m(include=include, exclude=exclude)
            bundle, md = _split_md(ret)
            if isinstance(bundle, dict):
                for k, v in bundle.items():
                    if isinstance(k, str) and v is not None and _json_safe(v) is not None:
                        data[k] = v
            if isinstance(md, dict):
                metadata.update(md)
        except Exception:
            _warn("%s._repr_mimebundle_()" % type(obj).__name__)
    if not isinstance(data.get(_MIME_PLAIN), str):
        data[_MIME_PLAIN] = _repr_text(obj)
    data = _fit_bundle(data, "the output of %s" % type(obj).__name__)
    if include:
        data = {k: v for k, v in data.items() if k in include or k == _MIME_PLAIN}
    if exclude:
        data = {k: v for k, v in data.items() if k not in exclude or k == _MIME_PLAIN}
    metadata = {k: v for k, v in metadata.items() if isinstance(k, str)}
    return data, (_json_safe(metadata) or {})


# What the host takes as a bundle (exec/frames.c): at most 16 MIME types, each
# "type/subtype" of printable ASCII, 3..127 characters; a string value, or any JSON
# value for application/json and the "+json" types. A bundle that breaks these never
# reaches the user, so the runtime keeps to them.
MAX_BUNDLE_TYPES = 16
_MIME_RE = re.compile(r"[!-.0-~]+/[!-.0-~]+")


def _mime_ok(mime):
    return isinstance(mime, str) and 3 <= len(mime) <= 127 and bool(_MIME_RE.fullmatch(mime))


def _json_mime(mime):
    return mime == "application/json" or mime.endswith("+json")


def _fit_bundle(data, what):
    """data as the host takes it: MIME types it would refuse left out (a line on
    stderr says which), text/plain first, at most MAX_BUNDLE_TYPES."""
    out = {_MIME_PLAIN: data[_MIME_PLAIN]}
    for k, v in data.items():
        if k == _MIME_PLAIN:
            continue
        if not _mime_ok(k):
            why = "is not a MIME type (type/subtype)"
        elif not _json_mime(k) and not isinstance(v, str):
            why = "is not text (only application/json and +json types hold other values)"
        elif len(out) >= MAX_BUNDLE_TYPES:
            why = "is past the %d MIME types of a bundle" % MAX_BUNDLE_TYPES
        else:
            out[k] = v
            continue
        try:
            sys.stderr.write("kiln_session: %s: %r left out: it %s\n" % (what, k, why))
        except Exception:
            pass
    return out


def _raw_bundle(obj, metadata):
    if not isinstance(obj, dict):
        raise TypeError("display(raw=True) takes MIME bundles (dicts), not %s"
                        % type(obj).__name__)
    if len(obj) > MAX_BUNDLE_TYPES:
        raise TypeError("display(raw=True): %d MIME types; a bundle holds at most %d"
                        % (len(obj), MAX_BUNDLE_TYPES))
    data = {}
    for k, v in obj.items():
        if not _mime_ok(k):
            raise TypeError("display(raw=True): %r is not a MIME type (type/subtype)" % (k,))
        if isinstance(v, (bytes, bytearray)):
            v = base64.b64encode(bytes(v)).decode("ascii")
        elif not _json_mime(k) and not isinstance(v, str):
            raise TypeError("display(raw=True): the %r value is %s, not text"
                            % (k, type(v).__name__))
        elif not isinstance(v, str):
            try:
                _encode(v)
            except (TypeError, ValueError) as e:
                raise TypeError("display(raw=True): the %r value is not JSON (%s)" % (k, e)) from None
        data[k] = v
    if not isinstance(data.get(_MIME_PLAIN), str):
        data[_MIME_PLAIN] = _repr_text(obj)
    return data, metadata


def _publish(ev, data, metadata, count_item=True):
    """Send a bundle within the cell's caps; what is over is dropped and counted."""
    with _publish_lock:     # threads of a cell share its counts
        return _publish_locked(ev, data, metadata, count_item)


def _publish_locked(ev, data, metadata, count_item):
    cell = _session.cell
    if cell is None or _getpid() != _session.pid:
        # a thread of a cell that has ended, a process the cell forked: no cell to show it in
        print(data.get(_MIME_PLAIN, ""))
        return False
    if count_item and cell.items_left <= 0:
        cell.dropped_displays += 1
        cell.dropped_bytes += _bundle_size(data, metadata)
        return False
    room = min(cell.bytes_left, _session.caps["frame_bytes"])
    size = _bundle_size(data, metadata)
    frame = None
    if isinstance(data.get(_MIME_PLAIN), _Oversize):     # not even its text/plain fits
        cell.dropped_displays += 1
        cell.dropped_bytes += size
        return False
    if size <= room + 4 * _ENVELOPE:   # the estimate may be high: measure it
        frame = _frame_bytes({"ev": ev, "cell": cell.number, "data": data, "metadata": metadata})
        if len(frame) > room:
            frame = None
    if frame is None:
        plain = {_MIME_PLAIN: data.get(_MIME_PLAIN, "")}
        md = {"kiln": {"truncated": True}}
        if _bundle_size(plain, md) <= room + 4 * _ENVELOPE:
            frame = _frame_bytes({"ev": ev, "cell": cell.number, "data": plain, "metadata": md})
            if len(frame) > room:
                frame = None
        if frame is None:
            cell.dropped_displays += 1
            cell.dropped_bytes += size
            return False
        cell.dropped_bytes += max(0, size - len(frame))
    # counted before it is sent: an interrupt held during the write is raised as the
    # write ends, and the frame is out by then
    cell.bytes_left -= len(frame)
    if count_item:
        cell.items_left -= 1
    _send_bytes(frame)
    return True


def display(*objs, raw=False, metadata=None, include=None, exclude=None, display_id=None,
            transient=None, **kwargs):
    """Show objects as outputs of the running cell (IPython's display()).

    Each object becomes a MIME bundle: text/plain (its repr) plus what its repr methods
    give (_repr_html_, _repr_markdown_, _repr_svg_, _repr_png_, _repr_jpeg_,
    _repr_latex_, _repr_json_, _repr_mimebundle_); a pandas DataFrame or Series its HTML
    table and Table Schema; a matplotlib Figure its PNG and, where Kiln can chart it, the
    chart. raw=True: each object is already a bundle {MIME: value}. include/exclude limit
    the MIME types (text/plain always stays). IPython's display_id and transient are
    taken and ignored (a session's outputs are not updated in place). Outside a session
    it prints text/plain."""
    if metadata is not None and not isinstance(metadata, dict):
        raise TypeError("display(metadata=...) takes a dict, not %s" % type(metadata).__name__)
    md_extra = _json_safe(metadata) or {} if metadata else {}
    for obj in objs:
        if not raw:
            # IPython's protocol: an object that displays itself (widgets, some plots)
            m = _method(obj, "_ipython_display_")
            if m is not None:
                try:
                    m()
                    continue
                except Exception:
                    _warn("%s._ipython_display_()" % type(obj).__name__)
        if raw:
            data, md = _raw_bundle(obj, dict(md_extra))
        else:
            if _is_figure(obj) and _session is not None and _session.cell is not None:
                _session.cell.shown_figures[id(obj)] = obj
            data, md = _format(obj, include=include, exclude=exclude)
            md.update(md_extra)
        if _session is None or _session.cell is None:
            print(data.get(_MIME_PLAIN, ""))
            continue
        _publish("display", data, md)


# --------------------------------------------------------------------------- figures

def _figure_text(fig):
    try:
        return repr(fig)
    except Exception:
        return "<Figure>"


def _figure_bundle(fig):
    """A figure's PNG (dpi 100, tight box), text/plain and, when one Axes holds a plot
    Kiln can chart, its chart model."""
    data = {_MIME_PLAIN: _figure_text(fig)}
    metadata = {}
    try:
        buf = io.BytesIO()
        fig.savefig(buf, format="png", bbox_inches="tight", dpi=100)
        png = buf.getvalue()
        data["image/png"] = base64.b64encode(png).decode("ascii")
        if png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) >= 24:
            metadata["image/png"] = {"width": int.from_bytes(png[16:20], "big"),
                                     "height": int.from_bytes(png[20:24], "big")}
    except Exception:
        _warn("rendering the figure")
    try:
        chart = _chart_of(fig)
        if chart is not None:
            data[MIME_CHART] = chart
    except Exception:
        pass    # a figure whose chart cannot be read gets the PNG only
    return data, metadata


def _open_figures():
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is None or "matplotlib.pyplot" not in sys.modules:
        return []
    return [m.canvas.figure for m in list(helpers.Gcf.get_all_fig_managers())]


def _close_figures(figs):
    plt = sys.modules.get("matplotlib.pyplot")
    if plt is None:
        return
    helpers = sys.modules.get("matplotlib._pylab_helpers")
    if helpers is not None and len(figs) == len(helpers.Gcf.figs):
        plt.close("all")
        return
    for fig in figs:
        try:
            plt.close(fig)
        except Exception:
            pass


def _show_figures(skip_shown):
    """Display every open pyplot figure, then close them all: plt.show() and the end of
    a cell. A figure over the cell's display count is closed without being rendered."""
    cell = _session.cell
    figs = _open_figures()
    try:
        for i, fig in enumerate(figs):
            if skip_shown and id(fig) in cell.shown_figures:
                continue
            if cell.items_left <= 0:
                rest = [f for f in figs[i:] if not (skip_shown and id(f) in cell.shown_figures)]
                cell.dropped_displays += len(rest)
                break
            cell.shown_figures[id(fig)] = fig
            data, md = _figure_bundle(fig)
            _publish("display", data, md)
    finally:
        _close_figures(figs)


def _patched_show(*args, **kwargs):
    """pyplot.show() in a session: the open figures become display outputs, then close."""
    if _session is None or _session.cell is None:
        return _patched_show.original(*args, **kwargs)
    _show_figures(skip_shown=False)


def _patch_pyplot(plt):
    if getattr(plt.show, "__module__", None) == __name__:
        return
    _patched_show.original = plt.show
    plt.show = _patched_show


def _clear_output(wait=False):
    """IPython's clear_output(): a session's outputs are never updated in place."""


def _patch_ipython(mod):
    """IPython's display() outside its shell only prints each object's repr: in a
    session, `from IPython.display import display` is this module's display()."""
    mod.display = display
    mod.clear_output = _clear_output
    # a module that bound them from this one before the patch (IPython.display)
    m = sys.modules.get("IPython.display")
    if m is not None:
        for name, value in (("display", display), ("clear_output", _clear_output)):
            if name in vars(m):
                setattr(m, name, value)


# Modules patched as soon as they are imported (serve() patches those already loaded).
_IMPORT_PATCHES = {"matplotlib.pyplot": _patch_pyplot,
                   "IPython.core.display_functions": _patch_ipython}


class _ImportHook:
    """A meta path finder that patches a module of _IMPORT_PATCHES right after a cell
    first imports it, before anything else binds its names."""

    def find_spec(self, name, path=None, target=None):
        patch = _IMPORT_PATCHES.get(name)
        if patch is None:
            return None
        import importlib.machinery
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        orig_exec = loader.exec_module

        def exec_module(module):
            orig_exec(module)
            try:
                patch(module)
            except Exception:
                pass
        loader.exec_module = exec_module
        return spec


# --------------------------------------------------------------------------- charts

_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _text(s):
    """Chart text: one line, without the characters a spec refuses."""
    s = _CONTROL.sub("", str(s)).replace("\r\n", " ").replace("\n", " ").replace("\r", " ")
    return s.strip()


def _label(artist):
    """A series name from an artist's label; matplotlib's automatic labels ("_child0",
    "_container1", "_nolegend_") and empty ones give none."""
    try:
        label = artist.get_label()
    except Exception:
        return None
    if not isinstance(label, str) or not label or label.startswith("_"):
        return None
    return _text(label) or None


def _number(v):
    """A chart value: a finite float as int when whole, NaN/inf/masked as None."""
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    if not math.isfinite(f):
        return None
    f = float("%.15g" % f)      # 0.1 + 0.2 as 0.3: float noise is not data
    if f.is_integer() and abs(f) < 2 ** 53:
        return int(f)
    return f


def _series(artist, values, color):
    """A chart series: its values, the artist's label as its name, its color."""
    s = {"values": values}
    name = _label(artist)
    if name:
        s["name"] = name
    color = _hex(color) if color is not None else None
    if color:
        s["color"] = color
    return s


def _face(collection):
    """The first face color of a collection (an area, a scatter), or None."""
    try:
        faces = collection.get_facecolor()
        return faces[0] if len(faces) else None
    except Exception:
        return None


def _hex(color):
    try:
        import matplotlib.colors as mcolors
        return mcolors.to_hex(color, keep_alpha=False).upper()
    except Exception:
        return None


def _iso_dates(dates):
    """Dates and datetimes as categories: "YYYY-MM-DD" when every one is a whole day (a
    date axis in Kiln), else all as "YYYY-MM-DD HH:MM:SS" (labels). Zones are dropped:
    the wall-clock time is what the figure shows."""
    out = []
    for d in dates:
        if isinstance(d, _dt.datetime):
            if d.tzinfo is not None:
                d = d.replace(tzinfo=None)
        else:
            d = _dt.datetime(d.year, d.month, d.day)
        out.append(d)
    if all(d.time() == _dt.time(0) for d in out):
        return [d.date().isoformat() for d in out]
    spec = "microseconds" if any(d.microsecond for d in out) else "seconds"
    return [d.isoformat(sep=" ", timespec=spec) for d in out]


# pandas periods of a day or less are instants; longer ones (a month, a quarter) are
# spans, which a date would misplace (month-end data would show as the 1st): their text
_SHORT_PERIODS = re.compile(r"^(D|B|C|H|BH|CBH|T|min|S|L|ms|U|us|N)$")


def _dates_of(values):
    """Date-like x values (datetime64, datetime, date, pandas Timestamp/Period) as
    category text (_iso_dates); None when they are not all dates. Periods of more than a
    day are their own text ("2026-01", "2026Q1")."""
    np = sys.modules.get("numpy")
    pd = _pandas()
    out = []
    periods = []
    for v in values:
        if pd is not None and isinstance(v, pd.Period):
            periods.append(v)
            continue
        if pd is not None and isinstance(v, pd.Timestamp):
            if v is pd.NaT:
                return None
            v = v.to_pydatetime()
        elif np is not None and isinstance(v, np.datetime64):
            if np.isnat(v):
                return None
            v = pd.Timestamp(v).to_pydatetime() if pd is not None else v.astype("datetime64[us]").item()
        if not isinstance(v, _dt.date):
            return None
        out.append(v)
    if periods:
        if out:
            return None
        codes = {getattr(p.freq, "name", "").split("-")[0] for p in periods}
        if all(_SHORT_PERIODS.match(c) for c in codes):
            return _iso_dates([p.to_timestamp().to_pydatetime() for p in periods])
        return [str(p) for p in periods]
    return _iso_dates(out)


def _is_date_axis(axis):
    try:
        conv = axis.get_converter() if hasattr(axis, "get_converter") else axis.converter
    except Exception:
        conv = getattr(axis, "converter", None)
    if conv is None:
        return False
    name = type(conv).__name__
    mod = type(conv).__module__ or ""
    return ("Date" in name and ("matplotlib.dates" in mod or "pandas" in mod))


def _tick_labels(axis):
    """Tick position -> label text, as drawn (the figure has been drawn by savefig)."""
    try:
        locs = axis.get_majorticklocs()
        labels = [t.get_text() for t in axis.get_majorticklabels()]
    except Exception:
        return {}
    if len(locs) != len(labels):
        return {}
    return {float(p): _text(t) for p, t in zip(locs, labels)}


def _strip_midnight(labels):
    """pandas labels a bar chart's dates "2026-01-31 00:00:00": whole days as dates."""
    if labels and all(re.fullmatch(r"\d{4}-\d{2}-\d{2} 00:00:00", s) for s in labels):
        return [s[:10] for s in labels]
    return labels


def _categories(axis, positions, orig=None):
    """Category values for x positions on an axis: the original values when matplotlib
    kept them (strings, dates), category names of a categorical axis, dates of a date
    axis, the tick labels where the positions are labelled ticks, else the numbers."""
    if orig is not None and len(orig) == len(positions):
        orig_list = list(orig)
        if orig_list and all(isinstance(v, str) for v in orig_list):
            return [_text(v) for v in orig_list]
        dates = _dates_of(orig_list)
        if dates is not None:
            return dates
    units = getattr(axis, "units", None)
    mapping = getattr(units, "_mapping", None)
    if mapping:
        inverse = {float(v): k for k, v in mapping.items()}
        names = [inverse.get(float(p)) for p in positions]
        if all(n is not None for n in names):
            return [_text(n) for n in names]
    if _is_date_axis(axis):
        import matplotlib.dates as mdates
        try:
            return _iso_dates(mdates.num2date([float(p) for p in positions]))
        except Exception:
            return None
    fmt = axis.get_major_formatter()
    if type(fmt).__name__ == "FuncFormatter":
        # pandas labels a bar or area chart's positions 0..n-1 with the index this way
        try:
            names = [_text(fmt(float(p), i)) for i, p in enumerate(positions)]
        except Exception:
            names = []
        if names and all(names):
            return _strip_midnight(names)
    ticks = _tick_labels(axis)
    if ticks:
        fixed = type(fmt).__name__ == "FixedFormatter"      # set_xticks(..., labels)
        names = []
        for p in positions:
            match = None
            for loc, text in ticks.items():
                if abs(loc - float(p)) < 1e-6 * max(1.0, abs(float(p))):
                    match = text
                    break
            names.append(match)
        if fixed and all(n for n in names):
            return _strip_midnight(names)
    nums = [_number(p) for p in positions]
    if any(n is None for n in nums):
        return None
    return nums


def _data_lines(ax):
    """The Axes' lines that plot data: not reference lines (axhline, axvline) drawn in
    axes coordinates, not invisible ones."""
    out = []
    for line in ax.lines:
        if not line.get_visible():
            continue
        try:
            if line.get_transform() != ax.transData:
                continue
        except Exception:
            continue
        out.append(line)
    return out


def _same(a, b):
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x != y and not (isinstance(x, float) and isinstance(y, float) and
                           math.isnan(x) and math.isnan(y)):
            return False
    return True


def _line_chart(ax, lines):
    np = sys.modules["numpy"]
    xs0 = lines[0].get_xdata(orig=True)
    xconv0 = None
    series = []
    for line in lines:
        xy = np.asarray(line.get_xydata(), dtype=float)    # in axis units, NaN for masked
        if xy.ndim != 2 or xy.shape[1] != 2 or not 0 < len(xy) <= MAX_CHART_POINTS:
            return None
        x = xy[:, 0].tolist()
        if xconv0 is None:
            xconv0 = x
        elif not _same(x, xconv0):
            return None     # lines on different x values: no category chart holds them
        series.append(_series(line, [_number(v) for v in xy[:, 1]], line.get_color()))
    cats = _categories(ax.xaxis, xconv0, xs0)
    if cats is None:
        return None
    markers_only = all(str(l.get_linestyle()) in ("None", "", " ", "none") for l in lines)
    if markers_only and all(isinstance(c, (int, float)) for c in cats):
        return {"kind": "scatter", "categories": cats, "series": series}
    return {"kind": "line", "categories": cats, "series": series}


def _bar_chart(ax, containers):
    vertical = all(getattr(c, "orientation", "vertical") != "horizontal" for c in containers)
    horizontal = all(getattr(c, "orientation", None) == "horizontal" for c in containers)
    if not (vertical or horizontal):
        return None
    n = len(containers[0].patches)
    if not 0 < n <= MAX_CHART_POINTS or any(len(c.patches) != n for c in containers):
        return None
    centers, values, bottoms = [], [], []
    for c in containers:
        cen, val, bot = [], [], []
        for p in c.patches:
            if vertical:
                cen.append(p.get_x() + p.get_width() / 2.0)
                val.append(p.get_height())
                bot.append(p.get_y())
            else:
                cen.append(p.get_y() + p.get_height() / 2.0)
                val.append(p.get_width())
                bot.append(p.get_x())
        centers.append(cen)
        values.append(val)
        bottoms.append(bot)
    # Stacked: every container at the same positions, each bar starting where the ones
    # below end (matplotlib's bottom=, or pandas' stacking of positives and negatives
    # apart); side by side (grouped) or overlaid bars start at zero. Grouped bars sit at
    # their category's position plus one offset per series.
    same_pos = all(_close_list(c, centers[0]) for c in centers)
    if not same_pos:
        for c in centers[1:]:
            offset = c[0] - centers[0][0]
            if not _close_list([x - offset for x in c], centers[0]):
                return None
    stacked = False
    if any(abs(b) > 1e-12 for bot in bottoms for b in bot if _number(b) is not None):
        if not same_pos:
            return None
        for k in range(len(containers)):
            for j in range(n):
                below = [values[i][j] for i in range(k) if _number(values[i][j]) is not None]
                plain = sum(below)
                same_sign = sum(v for v in below if (v >= 0) == (values[k][j] >= 0))
                b = bottoms[k][j]
                if _number(values[k][j]) in (None, 0):
                    continue    # an empty bar sits anywhere
                if not (_close(b, plain) or _close(b, same_sign)):
                    return None
        stacked = True
    positions = [sum(c[j] for c in centers) / len(centers) for j in range(n)]
    axis = ax.xaxis if vertical else ax.yaxis
    cats = _categories(axis, positions, None)
    if cats is None:
        return None
    series = [_series(c, [_number(v) for v in val], c.patches[0].get_facecolor())
              for c, val in zip(containers, values)]
    chart = {"kind": "column" if vertical else "bar", "categories": cats, "series": series}
    if stacked:
        chart["stacked"] = True
    return chart


def _close(a, b):
    return abs(float(a) - float(b)) <= 1e-9 * max(1.0, abs(float(a)), abs(float(b)))


def _close_list(a, b):
    return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b))


def _pie_chart(ax, wedges):
    cats, values = [], []
    for i, w in enumerate(wedges):
        cats.append(_label(w) or "Slice %d" % (i + 1))
        values.append(_number(round((w.theta2 - w.theta1) / 360.0, 6)))
    return {"kind": "pie", "categories": cats, "series": [{"values": values}]}


def _poly_xy(coll):
    """(x, top, bottom) of a fill_between/stackplot area, rebuilt from its polygons:
    each is (x0, bottom0), (x_i, top_i)..., (x_n, bottom_n), (x_i, bottom_i) reversed."""
    np = sys.modules["numpy"]
    xs, tops, bots = [], [], []
    for path in coll.get_paths():
        v = np.asarray(path.vertices, dtype=float)
        codes = path.codes
        if codes is not None and len(codes) and codes[-1] == 79:   # CLOSEPOLY
            v = v[:-1]
        if len(v) % 2 or len(v) < 4:
            return None
        n = (len(v) - 2) // 2
        x = v[1:n + 1, 0]
        top = v[1:n + 1, 1]
        bottom = v[n + 2:, 1][::-1]
        if not np.allclose(v[n + 2:, 0][::-1], x):
            return None
        xs.extend(x.tolist())
        tops.extend(top.tolist())
        bots.extend(bottom.tolist())
    return xs, tops, bots


def _area_chart(ax, colls, lines):
    parts = []
    if sum(len(p.vertices) for c in colls for p in c.get_paths()) > 2 * MAX_CHART_POINTS + 8:
        return None
    for c in colls:
        xy = _poly_xy(c)
        if xy is None:
            return None
        parts.append(xy)
    # the x values of every area, in order (a NaN splits an area into polygons)
    allx = sorted({x for xs, _, _ in parts for x in xs})
    index = {x: i for i, x in enumerate(allx)}
    tops, bots = [], []
    for xs, top, bot in parts:
        t = [None] * len(allx)
        b = [None] * len(allx)
        for x, y1, y2 in zip(xs, top, bot):
            t[index[x]] = y1
            b[index[x]] = y2
        tops.append(t)
        bots.append(b)
    # Each area starts at zero (side by side) or where the one before ends (stacked);
    # fill_between's two edges can come in either order (stackplot gives the base first).
    stacked = False
    for k in range(len(parts)):
        prev = tops[k - 1] if k else None
        for base, top in ((bots[k], tops[k]), (tops[k], bots[k])):
            on_zero = all(b is None or _close(b, 0.0) for b in base)
            on_prev = prev is not None and all(
                b is None or (p is not None and _close(b, p)) for b, p in zip(base, prev))
            if on_zero or on_prev:
                break
        else:
            return None     # a band between two curves: no area chart draws it
        tops[k], bots[k] = top, base
        stacked = stacked or (on_prev and not on_zero)
    # pandas draws a line on each area's top edge: those lines are the same data
    for line in lines:
        y = [float(v) for v in line.get_ydata()]
        x = [float(v) for v in line.get_xdata()]
        if not any(_area_top_matches(x, y, allx, t) for t in tops):
            return None
    series = []
    for k, c in enumerate(colls):
        vals = []
        for j in range(len(allx)):
            if tops[k][j] is None:
                vals.append(None)
            else:
                base = bots[k][j] if bots[k][j] is not None else 0.0
                vals.append(_number(tops[k][j] - base))
        series.append(_series(c, vals, _face(c)))
    orig = lines[0].get_xdata(orig=True) if lines else None
    if orig is not None and len(orig) != len(allx):
        orig = None
    cats = _categories(ax.xaxis, allx, orig)
    if cats is None:
        return None
    chart = {"kind": "area", "categories": cats, "series": series}
    if stacked:
        chart["stacked"] = True
    return chart


def _area_top_matches(x, y, allx, top):
    if len(x) != len(allx):
        return False
    for xi, yi, ax_, t in zip(x, y, allx, top):
        if not _close(xi, ax_):
            return False
        if t is None:
            if not math.isnan(yi):
                return False
        elif math.isnan(yi) or not _close(yi, t):
            return False
    return True


def _scatter_chart(ax, colls):
    np = sys.modules["numpy"]
    parts = []
    for c in colls:
        off = np.ma.filled(np.ma.asarray(c.get_offsets(), dtype=float), np.nan)
        if off.ndim != 2 or off.shape[1] != 2 or not len(off):
            return None
        parts.append(off)
    if sum(len(p) for p in parts) > MAX_CHART_POINTS:
        return None
    if _is_date_axis(ax.xaxis) or getattr(getattr(ax.xaxis, "units", None), "_mapping", None):
        return None     # Kiln's scatter takes numeric x values, not dates or names
    same = all(p.shape == parts[0].shape and np.array_equal(p[:, 0], parts[0][:, 0],
                                                            equal_nan=True) for p in parts)
    if same:
        xs = parts[0][:, 0].tolist()
        values = [[_number(v) for v in p[:, 1]] for p in parts]
    else:
        # series on different x values: one x list, each series' points where its own are
        xs, values = [], []
        total = sum(len(p) for p in parts)
        start = 0
        for p in parts:
            vals = [None] * total
            for i, y in enumerate(p[:, 1]):
                vals[start + i] = _number(y)
            xs.extend(p[:, 0].tolist())
            values.append(vals)
            start += len(p)
    cats = [_number(x) for x in xs]
    if any(c is None for c in cats):
        return None
    series = [_series(c, vals, _face(c)) for c, vals in zip(colls, values)]
    return {"kind": "scatter", "categories": cats, "series": series}


_LEGEND_LOCS = {1: "right", 2: "left", 3: "left", 4: "right", 5: "right", 6: "left",
                7: "right", 8: "bottom", 9: "top", 10: "right", 0: "right"}


def _chart_of(fig):
    """The chart model of a figure with one Axes holding one kind of plot, or None."""
    if "numpy" not in sys.modules:
        return None
    axes = [a for a in fig.axes if a.get_visible()]
    if len(axes) != 1:
        return None
    ax = axes[0]
    import matplotlib.collections as mcoll
    import matplotlib.container as mcont
    import matplotlib.patches as mpatches
    lines = _data_lines(ax)
    bars = [c for c in ax.containers if isinstance(c, mcont.BarContainer)]
    others = [c for c in ax.containers if not isinstance(c, mcont.BarContainer)]
    colls = [c for c in ax.collections if c.get_visible()]
    polys = [c for c in colls if type(c) is mcoll.PolyCollection or
             type(c).__name__ == "FillBetweenPolyCollection"]
    points = [c for c in colls if isinstance(c, mcoll.PathCollection)]
    bar_patches = {id(p) for c in bars for p in c.patches}
    loose = [p for p in ax.patches if id(p) not in bar_patches and p.get_visible()]
    wedges = [p for p in loose if isinstance(p, mpatches.Wedge)]
    if others:
        return None
    chart = None
    if bars and not lines and not colls and not loose:
        chart = _bar_chart(ax, bars)
    elif wedges and len(wedges) == len(loose) and not lines and not colls and not bars:
        chart = _pie_chart(ax, wedges)
    elif polys and len(polys) == len(colls) and not bars and not loose:
        chart = _area_chart(ax, polys, lines)
    elif points and len(points) == len(colls) and not lines and not bars and not loose:
        chart = _scatter_chart(ax, points)
    elif lines and not colls and not bars and not loose:
        chart = _line_chart(ax, lines)
    if chart is None or not chart["categories"] or not chart["series"]:
        return None
    if len(chart["series"]) > MAX_CHART_SERIES or len(chart["categories"]) > MAX_CHART_POINTS:
        return None
    if chart["kind"] == "pie":
        chart["series"] = chart["series"][:1]
    title = _text(ax.get_title()) or _text(ax.get_title("left")) or _text(
        getattr(getattr(fig, "_suptitle", None), "get_text", lambda: "")())
    if title:
        chart["title"] = title
    if chart["kind"] != "pie":
        xl, yl = _text(ax.get_xlabel()), _text(ax.get_ylabel())
        if chart["kind"] == "bar":      # x_axis titles the category axis, vertical here
            xl, yl = yl, xl
        if xl:
            chart["x_axis"] = {"title": xl}
        if yl:
            chart["y_axis"] = {"title": yl}
    legend = ax.get_legend()
    if chart["kind"] == "pie" and (legend is None or not legend.get_visible()) and any(
            _label(w) for w in wedges):
        # matplotlib writes a pie's labels by its wedges; Kiln's pie names its slices
        # in the legend
        chart["legend"] = "right"
    elif legend is None or not legend.get_visible():
        chart["legend"] = "none"
    else:
        chart["legend"] = _LEGEND_LOCS.get(getattr(legend, "_loc", 0), "right")
    try:
        w, h = fig.get_size_inches()
        chart["width"] = min(8192, max(16, int(round(w * 100))))
        chart["height"] = min(8192, max(16, int(round(h * 100))))
    except Exception:
        pass
    # members in the order docs/spec.md writes them
    chart["series"] = [{k: s[k] for k in ("name", "values", "color") if k in s}
                       for s in chart["series"]]
    return {k: chart[k] for k in _CHART_ORDER if k in chart}


_CHART_ORDER = ("kind", "title", "stacked", "categories", "series", "x_axis", "y_axis",
                "legend", "width", "height")


# --------------------------------------------------------------------------- errors

def _user_tb(tb):
    """The traceback from the first frame of a cell on: the runtime's frames go (all of
    them when no cell code ran: an interrupt while compiling, a bash cell)."""
    t = tb
    while t is not None and not t.tb_frame.f_code.co_filename.startswith("<cell "):
        t = t.tb_next
    return t


def _trim_chain(exc):
    """_user_tb on an exception and every exception chained to it (a chain can be
    thousands long: no recursion). A chained exception raised and caught inside library
    code has no cell frame: all its frames are the library's, kept."""
    seen, todo = set(), [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if e.__traceback__ is not None:
            tb = _user_tb(e.__traceback__)
            if tb is not None or e is exc:
                e.__traceback__ = tb
        todo.append(e.__cause__)
        todo.append(e.__context__)


def _error_frame(cell, exc, ename=None):
    """{ename, evalue, traceback} of an exception, the user's frames only, plain text."""
    try:
        ename = ename or type(exc).__name__
        if isinstance(exc, _RuntimeProblem):
            ename = "KilnRuntimeError"
    except Exception:
        ename = "Exception"
    try:
        evalue = str(exc)
    except Exception:
        evalue = "<exception str() failed>"
    try:
        if isinstance(exc, (SyntaxError, _RuntimeProblem)):
            lines = traceback.format_exception_only(type(exc), exc)
        elif ename == "KilnRuntimeError":   # the runtime's own failure: all of it
            lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        else:
            _trim_chain(exc)
            lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
        tb = "".join(lines).splitlines()
    except Exception:
        tb = ["%s: %s" % (ename, evalue)]
    return {"ev": "error", "cell": cell, "ename": _clean_text(ename),
            "evalue": _clean_text(evalue), "traceback": [_clean_text(l) for l in tb]}


def _cut(text, n):
    return text if len(text) <= n else text[:n] + " ... [cut]"


def _send_error(frame):
    """An error frame always fits caps.frame_bytes: a long evalue is cut, and so are the
    middle lines of a long traceback (its first line and its end say the most)."""
    limit = _session.caps["frame_bytes"]
    data = _frame_bytes(frame)
    if len(data) > limit:
        frame["evalue"] = _cut(frame["evalue"], max(64, limit // 8))
        tb = [_cut(line, 1000) for line in frame["traceback"]]
        room = limit - len(_frame_bytes(dict(frame, traceback=[]))) - 64
        head = tb[:1]
        room -= sum(len(_frame_bytes(line)) for line in head)
        tail = []
        for line in reversed(tb[1:]):
            room -= len(_frame_bytes(line))
            if room < 0:
                break
            tail.append(line)
        cut = len(tb) - len(head) - len(tail)
        frame["traceback"] = head + (["... [%d lines cut]" % cut] if cut else []) + tail[::-1]
        data = _frame_bytes(frame)
        if len(data) > limit:
            frame["evalue"] = _cut(frame["evalue"], 256)
            frame["traceback"] = []
            data = _frame_bytes(frame)
    _send_bytes(data)


# --------------------------------------------------------------------------- cells

def _suppressed(lines, node):
    """A cell whose last expression is followed by ';' shows no result (IPython's rule).
    Only the text after that expression is read: whitespace, ';' and comments."""
    if node.end_lineno is None or node.end_lineno > len(lines):
        return False
    # ast's column offsets count UTF-8 bytes
    rest = lines[node.end_lineno - 1].encode("utf-8", "surrogatepass")[node.end_col_offset:]
    rest = rest.decode("utf-8", "replace") + "".join(lines[node.end_lineno:])
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(rest).readline))
    except Exception:
        return False
    return any(t.type == tokenize.OP and t.string == ";" for t in toks)


def _run_code(code_obj, ns):
    """exec/eval a compiled piece; a coroutine (top-level await) runs to its end."""
    value = eval(code_obj, ns)
    if code_obj.co_flags & 0x80:     # CO_COROUTINE: the cell awaited at top level
        import asyncio
        if _session.loop is None or _session.loop.is_closed():
            _session.loop = asyncio.new_event_loop()
        value = _session.loop.run_until_complete(value)
    return value


def _python_cell(cell, code):
    """Run Python code in the session namespace; returns the last expression's value."""
    ns = _session.namespace
    filename = "<cell %d>" % cell.number
    lines = code.splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    linecache.cache[filename] = (len(code), None, lines, filename)
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = compile(code, filename, "exec", ast.PyCF_ONLY_AST | flags, dont_inherit=True)
    last = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last_node = tree.body.pop().value
        last = ast.Expression(last_node)
    body = compile(tree, filename, "exec", flags, dont_inherit=True)
    expr = compile(last, filename, "eval", flags, dont_inherit=True) if last else None
    _run_code(body, ns)
    if expr is None:
        return None
    value = _run_code(expr, ns)
    if _suppressed(lines, last_node):
        return None
    return value


def _signal_name(num):
    try:
        return signal.Signals(num).name
    except ValueError:
        return "signal %d" % num


def _group_alive(pgid):
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def _bash_cell(cell, code):
    """Run a bash cell in its own process group; returns an exception to report, or None."""
    script = None
    if len(code.encode("utf-8", "surrogateescape")) > BASH_ARG_MAX:
        fd, script = tempfile.mkstemp(prefix="kiln-cell-", suffix=".sh", dir="/tmp")
        with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(code)
        argv = ["/bin/bash", script]
    else:
        argv = ["/bin/bash", "-c", code]
    _flush_std()
    try:
        proc = subprocess.Popen(argv, cwd=_session.workdir, stdin=subprocess.DEVNULL,
                                env=dict(os.environ), process_group=0)
        try:
            # waitpid, not Popen.wait(): on KeyboardInterrupt that one waits 0.25 s more
            # for a child it assumes got the SIGINT too (this one is in its own group)
            _, status = os.waitpid(proc.pid, 0)
            rc = proc.returncode = os.waitstatus_to_exitcode(status)
        except KeyboardInterrupt:
            with _Masked():
                _stop_group(proc)
            raise
    finally:
        if script:
            try:
                os.unlink(script)
            except OSError:
                pass
    if rc == 0:
        return None
    if rc < 0:
        return _BashError("killed by signal %s" % _signal_name(-rc))
    return _BashError("exit status %d" % rc)


def _stop_group(proc):
    """SIGINT to the cell's process group, SIGKILL after BASH_GRACE if any is left."""
    pgid = proc.pid
    try:
        os.killpg(pgid, signal.SIGINT)
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + BASH_GRACE
    while time.monotonic() < deadline:
        if proc.poll() is not None and not _group_alive(pgid):
            break
        time.sleep(0.01)
    if _group_alive(pgid):
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    proc.wait()


class _BashError(Exception):
    pass


def _restore_std():
    """Each cell starts with fds 0, 1 and 2 as the session had them (/dev/null, the
    host's pipes) and sys.stdin/stdout/stderr the runtime's streams, whatever the cell
    before did to them (exit() closes sys.stdin, for one)."""
    for fd, (priv, ident) in _session.std_fds.items():
        try:
            st = os.fstat(fd)
            same = (st.st_dev, st.st_ino) == ident
        except OSError:
            same = False
        if not same:
            try:
                os.dup2(priv, fd, inheritable=True)
            except OSError:
                pass
    for fd, name in _STD:
        if fd not in _session.std_fds:
            continue
        stream = _session.streams.get(name)
        if stream is None or stream.closed:
            stream = _session.streams[name] = _text_stream(fd)
        if getattr(sys, name, None) is not stream:
            setattr(sys, name, stream)


def _text_stream(fd):
    if fd == 0:
        return io.TextIOWrapper(io.FileIO(0, "r", closefd=False), encoding="utf-8",
                                errors="replace")
    return io.TextIOWrapper(io.FileIO(fd, "w", closefd=False), encoding="utf-8",
                            errors="backslashreplace", line_buffering=True,
                            write_through=True)


def _execute(req):
    """Run one cell; done is always the last frame for it."""
    global _interruptible, _pending
    number = req.get("cell")
    if not isinstance(number, int) or isinstance(number, bool):
        number = -1
    cell = _session.cell = _Cell(number, _session.caps)
    status = "ok"
    try:
        try:
            _restore_std()
            ns = _session.namespace
            if "display" not in ns:
                ns["display"] = display
            language = req.get("language", "python")
            code = req.get("code")
            if not isinstance(code, str):
                raise _RuntimeProblem("execute: \"code\" must be a string")
            if language not in ("python", "bash"):
                raise _RuntimeProblem("execute: unknown language %r (python or bash)" % (language,))
            try:
                _pending = False
                _interruptible = True
                try:
                    # the host holds an interrupt back until this frame: one sent
                    # before would reach the runtime, not the cell
                    _send({"ev": "running", "cell": number})
                    failure = None
                    if language == "python":
                        value = _python_cell(cell, code)
                        # the result's repr and the figures are the cell's work:
                        # an interrupt stops them too
                        result = None
                        if value is not None:
                            _session.namespace["_"] = value
                            if _is_figure(value):   # shown as the result, not again
                                cell.shown_figures[id(value)] = value
                            result = _format(value)
                    else:
                        failure = _bash_cell(cell, code)
                finally:
                    _interruptible = False
            except KeyboardInterrupt as e:
                _interruptible = False
                _forked_return(e)
                status = "interrupted"
                _send_error(_error_frame(number, e))
            except _HostGone:
                raise
            except BaseException as e:    # SystemExit too: an error of the cell
                _interruptible = False
                _forked_return(e)
                status = "error"
                _send_error(_error_frame(number, e))
            else:
                _forked_return()
                if failure is not None:
                    status = "error"
                    _send_error({"ev": "error", "cell": number, "ename": "BashError",
                                 "evalue": str(failure), "traceback": []})
                elif language == "python" and result is not None:
                    _publish("result", result[0], result[1], count_item=False)
            if language == "python":
                status = _after_cell(status, number)
        except _HostGone:
            raise
        except BaseException as e:
            _interruptible = False
            status = "error"
            try:
                _send_error(_error_frame(number, e, "KilnRuntimeError"))
            except _HostGone:
                raise
            except BaseException:
                pass
        try:
            _send({"ev": "done", "cell": number, "status": status,
                   "dropped": {"displays": cell.dropped_displays, "bytes": cell.dropped_bytes}})
        except _HostGone:
            raise
        except BaseException:
            # the runtime is broken (a cell reached into it): still end the cell, with
            # a frame built from nothing but integers
            _send_bytes(b'{"ev":"done","cell":%d,"status":"error","dropped":'
                        b'{"displays":%d,"bytes":%d}}\n'
                        % (number, cell.dropped_displays, cell.dropped_bytes))
    finally:
        _interruptible = False
        _session.cell = None


class _RuntimeProblem(Exception):
    """A request the runtime cannot run (reported as KilnRuntimeError)."""


def _after_cell(status, number):
    """The figures the cell left open become displays (interruptible: rendering is the
    cell's work), then close."""
    global _interruptible
    if not _open_figures():
        return status
    try:
        _interruptible = status == "ok"
        try:
            _show_figures(skip_shown=True)
        finally:
            _interruptible = False
    except KeyboardInterrupt as e:
        _send_error(_error_frame(number, e))
        return "interrupted"
    return status


# --------------------------------------------------------------------------- serve

def _private_fd(fd):
    """fd duplicated to a high close-on-exec descriptor, out of the cell's way."""
    try:
        soft = __import__("resource").getrlimit(__import__("resource").RLIMIT_NOFILE)[0]
    except Exception:
        soft = 1024
    for base in (900, 500, 200, 64, 10):
        if soft == -1 or base < soft - 8:
            try:
                return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, base)
            except OSError:
                continue
    return fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 0)


def _read_request():
    """The next request line from the host, decoded; None at EOF."""
    _forked_return()
    s = _session
    while True:
        nl = s.buf.find(b"\n", s.scanned)
        if nl < 0:
            s.scanned = len(s.buf)     # a long cell comes in many reads: scan each once
        else:
            line = bytes(s.buf[:nl])
            del s.buf[:nl + 1]
            s.scanned = 0
            if not line.strip():
                continue
            try:
                req = _decode(line.decode("utf-8"))
            except ValueError as e:
                _log("ignoring a request that is not JSON (%s)" % e)
                continue
            if not isinstance(req, dict):
                _log("ignoring a request that is not an object")
                continue
            return req
        if s.eof:
            return None
        try:
            chunk = _read(s.ctl, 1 << 16)
        except OSError:
            chunk = b""
        if not chunk:
            s.eof = True
            if s.buf.strip():
                s.buf += b"\n"
            continue
        s.buf += chunk


def _log(msg):
    try:
        _write(2, ("kiln_session: %s\n" % msg).encode("utf-8", "replace"))
    except OSError:
        pass


def _caps_of(caps):
    out = dict(DEFAULT_CAPS)
    if isinstance(caps, dict):
        for k in out:
            v = caps.get(k)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                out[k] = v
    out["frame_bytes"] = max(out["frame_bytes"], 4096)
    return out


def _init(req):
    env = req.get("env")
    if isinstance(env, dict):
        os.environ.clear()
        os.environ.update({str(k): str(v) for k, v in env.items()})
    _session.caps = _caps_of(req.get("caps"))
    _send({"ev": "ready", "pid": _getpid(), "python": platform.python_version()})


def _setup_namespace():
    main = types.ModuleType("__main__")
    main.__dict__.update({"__builtins__": builtins, "display": display})
    # pickle (and everything built on it) finds a cell's classes and functions in __main__
    sys.modules["__main__"] = main
    _session.main_module = main
    _session.namespace = main.__dict__


_STD = ((0, "stdin"), (1, "stdout"), (2, "stderr"))


def _setup_streams():
    for fd, name in _STD:
        try:
            st = os.fstat(fd)
            _session.std_fds[fd] = (_private_fd(fd), (st.st_dev, st.st_ino))
        except OSError:
            continue
        stream = getattr(sys, "__%s__" % name, None)
        if fd == 0:
            _session.streams[name] = stream if stream is not None else _text_stream(0)
            continue
        try:
            if stream is None or stream.fileno() != fd:
                raise ValueError
            stream.reconfigure(encoding="utf-8", errors="backslashreplace",
                               line_buffering=True, write_through=True)
        except Exception:
            stream = _text_stream(fd)
        _session.streams[name] = stream
        setattr(sys, name, stream)


def _reseed():
    """Forked sessions share the zygote's random state: each draws its own."""
    rnd = sys.modules.get("random")
    if rnd is not None:
        try:
            rnd.seed()
        except Exception:
            pass
    np = sys.modules.get("numpy")
    if np is not None:
        try:
            np.random.seed()
        except Exception:
            pass


def serve(ctl_fd=3, ev_fd=4):
    """Serve the session protocol: requests on ctl_fd, events on ev_fd, until `exit` or
    EOF. Returns then (the caller exits)."""
    global _session
    # first: from here on a SIGINT outside a cell does nothing (Python's own handler
    # would raise KeyboardInterrupt and end the runtime before its first request)
    signal.signal(signal.SIGINT, _on_sigint)
    import gc
    gc.enable()     # the zygote froze and disabled it before forking
    ctl = _private_fd(ctl_fd)
    ev = _private_fd(ev_fd)
    for fd in (ctl_fd, ev_fd):
        try:
            os.close(fd)
        except OSError:
            pass
    _session = _Session(ctl, ev, dict(DEFAULT_CAPS))
    sys.argv = [""]     # as an interactive interpreter has it (not the zygote's command)
    os.register_at_fork(after_in_child=_after_fork_in_child)
    _setup_streams()
    _setup_namespace()
    _reseed()
    for name, patch in _IMPORT_PATCHES.items():
        if name in sys.modules:
            patch(sys.modules[name])
    sys.meta_path.insert(0, _ImportHook())
    try:
        while True:
            req = _read_request()
            if req is None:
                return
            op = req.get("op")
            if op == "exit":
                return
            if op == "init":
                _init(req)
            elif op == "execute":
                _execute(req)
            else:
                _log("ignoring unknown request op %r" % (op,))
    except _HostGone:
        return
    finally:
        _flush_std()
