"""A client for the HTTP API of `kiln serve` (docs/serve.md, docs/openapi.json).

One file, Python's standard library only (3.7+): copy it next to your code, or put
clients/python on sys.path.

    from kiln_client import Client, InvalidSpec

    kiln = Client("http://127.0.0.1:8080", open("kiln-data/api-key").read().strip())
    doc = kiln.render("xlsx", {"sheets": [{"name": "Hi", "rows": [["Hello", 42]]}]},
                      filename="hello.xlsx")
    kiln.download(doc["id"], "hello.xlsx")

    with kiln.create_session() as s:            # a live interpreter (the server runs as root)
        s.run_cell("x = 41")
        for event in s.execute("print(x + 1)"):  # the events as they happen, the record last
            print(event["event"], event.get("text", ""))

What it covers, one method per operation of the API:

- files: `upload`, `list_files` / `iter_files`, `get_file`, `download` (to a path or as
  bytes, a byte range optional), `delete_file`, `link` (a signed link that needs no key)
  and `fetch` (download such a link);
- `render` (a document spec to .xlsx/.docx/.pptx/.pdf) and `run` (code in the sandbox);
- sessions: `create_session` -> `Session` (`execute` streams a cell's events, `run_cell`
  returns its record, `interrupt`, `files`, `put`, `get`, `info`, `close`, and `with`),
  `session` (an existing one by id), `list_sessions`;
- `health`.

Every result is the API's JSON object as a dict (a file object, a render result, a run
result, a cell record, ...), exactly as docs/openapi.json describes it. Every error reply,
`{"error": {"code", "message", "details"}}`, is raised as a `KilnError` subclass chosen by
its code (`InvalidSpec` with `.errors`, `NotFound`, `Gone`, `SessionGone`, `RateLimited`
with `.retry_after`, ...; `ERROR_CLASSES` maps every code the API documents); a
connection that fails is `ConnectionFailed`.

Batches are not in the API yet (issue 19), so this client has nothing for them.

Each request opens its own connection, so one `Client` may be used from several threads
(a `Session.interrupt` from one thread while another reads `execute`'s events, say).
"""

import http.client
import json
import os
import ssl
import tempfile
import time
import urllib.parse

__version__ = "1.0"

__all__ = [
    "Client", "Session", "KilnError", "ConnectionFailed", "InvalidRequest", "InvalidJSON",
    "InvalidSpec", "InvalidRun", "InvalidSession", "InvalidBatch", "InvalidCell", "Unauthorized", "Forbidden",
    "InvalidSignature", "LinkExpired", "NotFound", "MethodNotAllowed", "Conflict", "FileInUse",
    "SessionBusy", "Gone", "SessionGone", "TooLarge", "UnsupportedMediaType",
    "RangeNotSatisfiable", "RateLimited", "TooManySessions", "TooManyBatches", "ServerError", "InternalError",
    "Unavailable", "SandboxUnavailable", "SessionsDisabled", "SessionUnavailable",
    "ERROR_CLASSES", "error_from_body",
]

_CHUNK = 64 * 1024


# --------------------------------------------------------------------------- errors

class KilnError(Exception):
    """An error reply of the API (or, as ConnectionFailed, no reply at all).

    Attributes:
        status: the HTTP status (None when there was no HTTP reply).
        code: the API's error code ("invalid_spec", "not_found", ...), None without one.
        message: the reply's one sentence.
        details: the reply's `details` object ({} when it has none).
        errors: details["errors"], every error found ([{pointer, code, message}, ...]),
            [] when the reply has none (only 422s list them).
        pointers: the JSON Pointers the error names: each of errors' pointers, and a 400's
            details["pointer"].
        request_id: the reply's X-Request-Id (the server's access log has the same).
    """

    def __init__(self, status, code, message, details=None, pointers=None, request_id=None):
        self.status = status
        self.code = code
        self.message = message or ""
        self.details = details if isinstance(details, dict) else {}
        errors = self.details.get("errors")
        self.errors = [e for e in errors if isinstance(e, dict)] if isinstance(errors, list) else []
        if pointers is None:
            pointers = [e["pointer"] for e in self.errors if isinstance(e.get("pointer"), str)]
            one = self.details.get("pointer")
            if isinstance(one, str) and one not in pointers:
                pointers.append(one)
        self.pointers = list(pointers)
        self.request_id = request_id
        super().__init__(self._text())

    def _text(self):
        head = "%s %s" % (self.status, self.code) if self.status else (self.code or "error")
        text = "%s: %s" % (head, self.message)
        for e in self.errors[:20]:
            text += "\n  %s: %s" % (e.get("pointer", ""), e.get("message", ""))
        if len(self.errors) > 20:
            text += "\n  ... %d more" % (len(self.errors) - 20)
        return text


class ConnectionFailed(KilnError):
    """The server could not be reached, or the connection broke before a reply
    (status and code None; the OSError is the exception's __cause__)."""


class InvalidRequest(KilnError):
    """invalid_request: a member of the request is wrong (400, details.pointer; or 422 with
    details.errors). The parent of every invalid_* error."""


class InvalidJSON(InvalidRequest):
    """invalid_json (400): the body is not JSON; .line and .column say where."""

    @property
    def line(self):
        """The line of the syntax error."""
        return self.details.get("line")

    @property
    def column(self):
        """The column of the syntax error."""
        return self.details.get("column")


class InvalidSpec(InvalidRequest):
    """invalid_spec (422): the document spec has errors, every one in .errors with its JSON
    Pointer into the spec ({pointer, code, message}); details.more_errors counts the ones
    past the list's cap."""


class InvalidRun(InvalidRequest):
    """invalid_run (422): a run request (limits, inputs, ...) is wrong; .errors by pointer."""


class InvalidSession(InvalidRequest):
    """invalid_session (422): a session request is wrong; .errors by pointer."""


class InvalidBatch(InvalidRequest):
    """invalid_batch (422): a batch's jobs (or its merge) refused before it was queued;
    .errors has each error with its pointer into the request (/jobs/3/render/format)."""


class InvalidCell(InvalidRequest):
    """invalid_cell (422): a cell request is wrong; .errors by pointer."""


class Unauthorized(KilnError):
    """unauthorized (401): no key, or a key the server does not know."""


class Forbidden(KilnError):
    """403: a signed link that does not hold (InvalidSignature, LinkExpired)."""


class InvalidSignature(Forbidden):
    """invalid_signature (403): a signed link tampered with, or for another file."""


class LinkExpired(Forbidden):
    """link_expired (403): a signed link past its expiry."""


class NotFound(KilnError):
    """not_found (404): no such file, session or route, or another tenant's."""


class MethodNotAllowed(KilnError):
    """method_not_allowed (405): a known route, the wrong method."""


class Conflict(KilnError):
    """409: FileInUse or SessionBusy."""


class FileInUse(Conflict):
    """file_in_use (409): the file is an input of a queued or running render or run."""


class SessionBusy(Conflict):
    """session_busy (409): a cell runs and 16 more wait in the session."""


class Gone(KilnError):
    """gone (410): the file expired (.expired_at says when). SessionGone is its child."""

    @property
    def expired_at(self):
        """When the file expired (RFC 3339), or None."""
        return self.details.get("expired_at")


class SessionGone(Gone):
    """session_gone (410): the session has ended; .session is {reason, message, at}
    (reason: closed, idle_timeout, lifetime, memory_limit, session_lost, server_restart,
    ...)."""

    @property
    def session(self):
        """details.session: why and when the session ended."""
        s = self.details.get("session")
        return s if isinstance(s, dict) else {}

    @property
    def reason(self):
        """Why the session ended ("closed", "idle_timeout", ...), or None."""
        return self.session.get("reason")


class TooLarge(KilnError):
    """too_large (413): a body or document over a limit; .limit is the limit in bytes."""

    @property
    def limit(self):
        """details.limit, in bytes."""
        return self.details.get("limit")


class UnsupportedMediaType(KilnError):
    """unsupported_media_type (415): a JSON route got a body that is not application/json."""


class RangeNotSatisfiable(KilnError):
    """range_not_satisfiable (416): the byte range asked for is outside the file."""


class RateLimited(KilnError):
    """too_many_requests (429): the job queue is full; .retry_after is the Retry-After
    header's seconds (None without one). TooManySessions is its child."""

    def __init__(self, *args, retry_after=None, **kw):
        self.retry_after = retry_after
        super().__init__(*args, **kw)


class TooManySessions(RateLimited):
    """too_many_sessions (429): the server's or the tenant's sessions are all open."""


class TooManyBatches(RateLimited):
    """too_many_batches (429): the tenant's batches queued and running are at the limit."""


class ServerError(KilnError):
    """5xx: the server's trouble (InternalError, Unavailable and its children)."""


class InternalError(ServerError):
    """internal (500): the server failed; its log has the detail under request_id."""


class Unavailable(ServerError):
    """unavailable (503): the server is stopping (or cannot take the request now)."""


class SandboxUnavailable(Unavailable):
    """sandbox_unavailable (503): runs and sessions need the server to run as root."""


class SessionsDisabled(Unavailable):
    """sessions_disabled (503): the server runs with --sessions off."""


class SessionUnavailable(Unavailable):
    """session_unavailable (503): a session's sandbox could not start."""


# Every code of docs/openapi.json's Error schema (and docs/serve.md) -> its class.
ERROR_CLASSES = {
    "invalid_request": InvalidRequest,
    "invalid_json": InvalidJSON,
    "invalid_spec": InvalidSpec,
    "invalid_run": InvalidRun,
    "invalid_session": InvalidSession,
    "invalid_cell": InvalidCell,
    "invalid_batch": InvalidBatch,
    "unauthorized": Unauthorized,
    "invalid_signature": InvalidSignature,
    "link_expired": LinkExpired,
    "not_found": NotFound,
    "method_not_allowed": MethodNotAllowed,
    "file_in_use": FileInUse,
    "session_busy": SessionBusy,
    "gone": Gone,
    "session_gone": SessionGone,
    "too_large": TooLarge,
    "unsupported_media_type": UnsupportedMediaType,
    "range_not_satisfiable": RangeNotSatisfiable,
    "too_many_requests": RateLimited,
    "too_many_sessions": TooManySessions,
    "too_many_batches": TooManyBatches,
    "internal": InternalError,
    "unavailable": Unavailable,
    "sandbox_unavailable": SandboxUnavailable,
    "sessions_disabled": SessionsDisabled,
    "session_unavailable": SessionUnavailable,
}

# A code this client does not know (a newer server's): the class of its status.
_STATUS_CLASSES = {
    400: InvalidRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound,
    405: MethodNotAllowed, 409: Conflict, 410: Gone, 413: TooLarge,
    415: UnsupportedMediaType, 416: RangeNotSatisfiable, 422: InvalidRequest,
    429: RateLimited, 500: InternalError, 503: Unavailable,
}

# A session's own refusal inside an event stream (a `rejected` event) carries the
# contract's codes (docs/session.md): the status and API code the plain reply has for each
# (service/sessions.c maps them so).
_CONTRACT_CODES = {
    "session_busy": (409, "session_busy"), "session_gone": (410, "session_gone"),
    "too_large": (413, "too_large"), "not_found": (404, "not_found"),
    "gone": (410, "session_gone"),
}
_CONTRACT_422 = {"usage", "invalid_run", "invalid_session", "invalid_cell", "limit_exceeded",
                 "unreadable_input"}


def _error_class(status, code):
    cls = ERROR_CLASSES.get(code)
    if cls is None:
        cls = _STATUS_CLASSES.get(status)
    if cls is None:
        cls = ServerError if status and status >= 500 else KilnError
    return cls


def error_from_body(status, body, headers=None):
    """The KilnError for an error reply: status, its body (bytes, str or the parsed dict)
    and its headers (a mapping or http.client's message; for X-Request-Id and
    Retry-After). A body that is not the API's error shape (a proxy's page, libmicrohttpd's
    own HTML answer) gives the class of the status with code None and the body's start as
    the message."""
    obj = body
    if isinstance(body, (bytes, bytearray)):
        body = bytes(body).decode("utf-8", "replace")
    if isinstance(body, str):
        try:
            obj = json.loads(body)
        except ValueError:
            obj = None
    err = obj.get("error") if isinstance(obj, dict) else None
    if isinstance(err, dict):
        code, message, details = err.get("code"), err.get("message"), err.get("details")
    else:
        text = body.strip() if isinstance(body, str) else ""
        code, message, details = None, text[:300] or "HTTP %s" % status, {}
    get = (lambda name: headers.get(name)) if headers is not None else (lambda name: None)
    kw = {"request_id": get("X-Request-Id")}
    cls = _error_class(status, code)
    if issubclass(cls, RateLimited):
        value = get("Retry-After")
        try:
            kw["retry_after"] = int(value) if value is not None else None
        except ValueError:
            kw["retry_after"] = None
    return cls(status, code, message, details, **kw)


def _rejected_error(event):
    """A `rejected` event of a cell's stream, as the error the plain reply would raise."""
    errors = event.get("errors") if isinstance(event.get("errors"), list) else []
    first = errors[0] if errors and isinstance(errors[0], dict) else {}
    code = first.get("code")
    status, code = _CONTRACT_CODES.get(code) or ((422, "invalid_request") if code in _CONTRACT_422
                                                 else (500, "internal"))
    details = {"errors": errors, "more_errors": event.get("more_errors", 0)}
    if isinstance(event.get("session"), dict):
        details["session"] = event["session"]
    return _error_class(status, code)(status, code,
                                      first.get("message") or "The session refused the cell.",
                                      details)


# --------------------------------------------------------------------------- the client

def _file_id(value):
    """A file id from an id or a file object (a dict with "id")."""
    if isinstance(value, dict):
        value = value.get("id")
    if not isinstance(value, str):
        raise TypeError("a file id (a string) or a file object, not %r" % (value,))
    return value


def _ids(values):
    return None if values is None else [_file_id(v) for v in values]


def _drop_none(obj):
    return {k: v for k, v in obj.items() if v is not None}


class _Reply:
    """A whole reply: status, headers, body bytes."""

    def __init__(self, status, headers, body):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        return json.loads(self.body.decode("utf-8")) if self.body else None


class Client:
    """A connection to one `kiln serve`, as one tenant (its API key).

    Args:
        base_url: the server's address, "http://127.0.0.1:8080" (https:// works too; a path
            after the host, "https://example.com/kiln", is kept in front of every route).
        api_key: the tenant's key (`kiln-data/api-key` after a first start, or one of
            KILN_API_KEYS); sent as "Authorization: Bearer KEY".
        timeout: seconds any one wait on the socket may last (connecting, or between two
            pieces of a reply). A run or a cell that says its time limit
            (limits.wall_seconds, a cell's timeout) waits that plus 30 s when longer.
        ssl_context: for https, an ssl.SSLContext (default: the system's trust store).
    """

    def __init__(self, base_url, api_key, timeout=300, ssl_context=None):
        u = urllib.parse.urlsplit(base_url)
        if u.scheme not in ("http", "https") or not u.hostname:
            raise ValueError("base_url must be http://HOST[:PORT] or https://...: %r" % base_url)
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self._scheme = u.scheme
        self._host = u.hostname
        self._port = u.port
        self._prefix = u.path.rstrip("/")
        self._ssl = ssl_context

    def __repr__(self):
        return "Client(%r)" % self.base_url

    # ---------------------------------------------------------------- plumbing

    def _connection(self, timeout=None, scheme=None, host=None, port=None):
        """A new connection to the server (or, for a signed link, to the link's host)."""
        timeout = self.timeout if timeout is None else timeout
        if host is None:
            scheme, host, port = self._scheme, self._host, self._port
        if scheme == "https":
            ctx = self._ssl or ssl.create_default_context()
            return http.client.HTTPSConnection(host, port, timeout=timeout, context=ctx)
        return http.client.HTTPConnection(host, port, timeout=timeout)

    def _headers(self, extra=None, auth=True):
        h = {"User-Agent": "kiln-client/" + __version__, "Accept": "application/json"}
        if auth and self.api_key is not None:
            h["Authorization"] = "Bearer " + self.api_key
        h.update(extra or {})
        return h

    def _open(self, method, path, body=None, headers=None, timeout=None, auth=True, conn=None):
        """Send a request; returns (connection, response) with the body unread. An error
        reply is read and raised. path is the route (the base URL's path is put before
        it), unless conn is given: then it is the whole target."""
        target = path if conn else self._prefix + path
        conn = conn or self._connection(timeout)
        try:
            conn.request(method, target, body=body, headers=self._headers(headers, auth))
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            raise ConnectionFailed(None, None, "%s %s: %s" % (method, path, e)) from e
        if resp.status >= 400:
            try:
                data = resp.read()
            except (OSError, http.client.HTTPException):
                data = b""
            conn.close()
            raise error_from_body(resp.status, data, resp.headers)
        return conn, resp

    def _request(self, method, path, body=None, headers=None, timeout=None):
        """A whole exchange: a _Reply (the body read); a dict body is sent as JSON."""
        h = dict(headers or {})
        if isinstance(body, dict):
            body = json.dumps(body).encode("utf-8")
            h["Content-Type"] = "application/json"
        conn, resp = self._open(method, path, body, h, timeout)
        try:
            data = resp.read()
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionFailed(None, None, "%s %s: %s" % (method, path, e)) from e
        finally:
            conn.close()
        return _Reply(resp.status, resp.headers, data)

    def _json(self, method, path, body=None, timeout=None):
        return self._request(method, path, body, timeout=timeout).json()

    @staticmethod
    def _q(value):
        return urllib.parse.quote(value, safe="")

    # ---------------------------------------------------------------- files

    def upload(self, source, filename=None, media_type=None):
        """Store a file; returns its file object ({id, filename, bytes, sha256,
        media_type, created_at, expires_at, source: "input"}).

        Args:
            source: a path (str or os.PathLike), bytes, or a binary file object (read from
                where it stands to its end; it must have a fileno or be seekable).
            filename: its name (default: a path's base name; required otherwise).
            media_type: its Content-Type (default: the server guesses from the name's
                extension, else application/octet-stream).
        """
        close = None
        if isinstance(source, (str, os.PathLike)):
            if filename is None:
                filename = os.path.basename(os.fspath(source))
            source = close = open(source, "rb")
        if not filename:
            raise ValueError("upload needs a filename for bytes or a file object")
        try:
            if isinstance(source, (bytes, bytearray, memoryview)):
                body, length = bytes(source), len(source)
            else:
                try:
                    length = os.fstat(source.fileno()).st_size - source.tell()
                except (AttributeError, OSError, ValueError):
                    here = source.tell()
                    length = source.seek(0, os.SEEK_END) - here
                    source.seek(here)
                body = source
            h = {"Content-Length": str(length)}
            if media_type:
                h["Content-Type"] = media_type
            return self._request("POST", "/v1/files?filename=" + self._q(filename), body,
                                 h).json()
        finally:
            if close:
                close.close()

    def list_files(self, limit=None, offset=None):
        """One page of the tenant's files, newest first: {files, total, limit, offset}
        (limit 1..1000, default 100)."""
        q = urllib.parse.urlencode(_drop_none({"limit": limit, "offset": offset}))
        return self._json("GET", "/v1/files" + ("?" + q if q else ""))

    def iter_files(self, page_size=1000):
        """Every file of the tenant, newest first, a page at a time."""
        offset = 0
        while True:
            page = self.list_files(limit=page_size, offset=offset)
            for f in page["files"]:
                yield f
            offset += len(page["files"])
            if not page["files"] or offset >= page["total"]:
                return

    def get_file(self, file_id):
        """A file's object (its metadata). NotFound, or Gone once it expired."""
        return self._json("GET", "/v1/files/" + self._q(_file_id(file_id)))

    def delete_file(self, file_id):
        """Delete a file, its row and its body (FileInUse while a job reads it)."""
        self._request("DELETE", "/v1/files/" + self._q(_file_id(file_id)))

    def link(self, file_id, expires_in=None):
        """A signed link that downloads the file without a key: {url, path, expires_at}.
        expires_in: seconds (default 3600, at most 7 days, never past the file's own
        expiry)."""
        body = _drop_none({"expires_in": expires_in})
        return self._json("POST", "/v1/files/%s/link" % self._q(_file_id(file_id)), body)

    def download(self, file_id, path=None, range=None):
        """A file's body: as bytes, or written to path (returned).

        Args:
            file_id: the id (or the file object).
            path: where to write it (a temporary file beside it, renamed into place once
                whole); None returns the bytes.
            range: (first, last) byte offsets, both included (last None: to the end), or
                the header's own text ("bytes=-100"): only those bytes (a 206).
                RangeNotSatisfiable when outside the file.
        """
        h = {}
        if range is not None:
            if isinstance(range, str):
                h["Range"] = range if range.startswith("bytes=") else "bytes=" + range
            else:
                first, last = range
                h["Range"] = "bytes=%d-%s" % (first, "" if last is None else "%d" % last)
        return self._body("/v1/files/%s/content" % self._q(_file_id(file_id)), path, h)

    def fetch(self, url, path=None):
        """Download a signed link (link()["url"], or its "path"), without the key: bytes,
        or written to path."""
        u = urllib.parse.urlsplit(url)
        if u.scheme:
            target = u.path + ("?" + u.query if u.query else "")
            conn = self._connection(scheme=u.scheme, host=u.hostname, port=u.port)
            return self._body(target, path, {}, auth=False, conn=conn)
        return self._body(url, path, {}, auth=False)

    def _body(self, target, path, headers, auth=True, conn=None):
        conn, resp = self._open("GET", target, None, headers, auth=auth, conn=conn)

        def read(n=None):
            try:
                return resp.read() if n is None else resp.read(n)
            except (OSError, http.client.HTTPException) as e:
                raise ConnectionFailed(None, None, "GET %s: the body broke off: %s"
                                       % (target.split("?")[0], e)) from e
        try:
            if path is None:
                return read()
            path = os.fspath(path)
            fd, tmp = tempfile.mkstemp(prefix=".kiln-", dir=os.path.dirname(os.path.abspath(path)))
            try:
                with os.fdopen(fd, "wb") as out:
                    while True:
                        piece = read(_CHUNK)
                        if not piece:
                            break
                        out.write(piece)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
            return path
        finally:
            conn.close()

    # ---------------------------------------------------------------- render, run

    def render(self, format, spec, filename=None, inputs=None):
        """Render a document spec (docs/spec.md) into a stored file; returns its file
        object (source "document"), with "warnings" when the writer reported any.

        Args:
            format: "xlsx", "docx", "pptx" or "pdf" (None: from filename's extension).
            spec: the spec, a dict.
            filename: the document's name (default document.<ext>).
            inputs: the files the spec names (images, CSV data), as ids or file objects;
                the spec gives each one's id as its "path".

        InvalidSpec (every error with its pointer in .errors) when the spec is wrong.
        """
        body = _drop_none({"format": format, "spec": spec, "filename": filename,
                           "inputs": _ids(inputs)})
        return self._json("POST", "/v1/render", body)

    def run(self, code, language=None, inputs=None, limits=None, render=None, args=None):
        """Run a program in the sandbox (docs/run.md); returns the run's result ({status,
        exit_code, stdout, stderr, files, documents, ...}: every produced file stored, each
        entry's "file" its file object). A run that fails is still a result: its status
        says how it ended.

        Args:
            code: the program.
            language: "python" (default) or "bash".
            inputs: files put in /mnt/data under their stored names (ids or file objects).
            limits: {"wall_seconds": 30, "memory_bytes": ..., ...} (docs/openapi.json
                RunLimits), each at most the server's maximum (InvalidRun past it).
            render: False leaves the specs `import kiln` saved unrendered (default True).
            args: the program's arguments (a list of strings).
        """
        body = _drop_none({"code": code, "language": language, "inputs": _ids(inputs),
                           "limits": limits, "render": render, "args": args})
        return self._json("POST", "/v1/runs", body, timeout=self._job_timeout(limits))

    def _job_timeout(self, limits, cell_timeout=None):
        wall = cell_timeout
        if wall is None and isinstance(limits, dict):
            wall = limits.get("wall_seconds")
        return self.timeout if not wall else max(self.timeout, float(wall) + 30)

    # ---------------------------------------------------------------- batches

    def create_batch(self, jobs=None, input_file_id=None, template=None, data_file_id=None,
                     format=None, name=None, missing=None):
        """Start a batch (docs/serve.md, "Batches"; docs/batch.md for the jobs): give jobs
        (a list of {"id", "render": {...}} / {"id", "run": {...}}, a run's inputs as file
        ids), or input_file_id (an uploaded JSON Lines of them), or a mail merge: template
        (a spec with {{field}}s), data_file_id (an uploaded CSV or JSON Lines), name (the
        file name pattern), format and missing ("error" or "empty"). Returns the batch
        object {id, status, counts, ...} (202); InvalidBatch with every pointer when a job
        is wrong, TooManyBatches when the tenant has as many as it may."""
        body = _drop_none({"jobs": jobs, "input_file_id": _file_id(input_file_id)
                           if input_file_id else None, "template": template,
                           "data_file_id": _file_id(data_file_id) if data_file_id else None,
                           "format": format, "name": name, "missing": missing})
        return self._json("POST", "/v1/batches", body)

    def get_batch(self, batch_id):
        """The batch object: {id, status (queued, running, completed, cancelled, failed),
        counts {total, ok, failed}, created_at, ...}."""
        return self._json("GET", "/v1/batches/" + self._q(batch_id))

    def list_batches(self, limit=None, offset=None):
        """The tenant's batches, newest first: {"batches": [batch...], "total", "limit",
        "offset"}."""
        query = "&".join("%s=%d" % (k, v) for k, v in (("limit", limit), ("offset", offset))
                         if v is not None)
        return self._json("GET", "/v1/batches" + ("?" + query if query else ""))

    def cancel_batch(self, batch_id):
        """Stop a batch: no new jobs, running ones killed, finished results kept."""
        return self._json("POST", "/v1/batches/%s/cancel" % self._q(batch_id), {})

    def batch_results(self, batch_id):
        """The results of the jobs finished so far: a list of journal entries (docs/batch.md,
        "The results journal"), each file with its stored file object as "file"."""
        reply = self._request("GET", "/v1/batches/%s/results" % self._q(batch_id))
        return [json.loads(line) for line in reply.body.decode("utf-8").splitlines()
                if line.strip()]

    def wait_batch(self, batch_id, timeout=600, interval=0.5):
        """Poll until the batch has ended (completed, cancelled or failed); its object.
        TimeoutError when it has not ended within timeout seconds."""
        deadline = time.monotonic() + timeout
        while True:
            batch = self.get_batch(batch_id)
            if batch["status"] in ("completed", "cancelled", "failed") and \
                    batch.get("finished_at"):
                return batch
            if time.monotonic() > deadline:
                raise TimeoutError("batch %s still %s after %ss" % (batch_id, batch["status"],
                                                                    timeout))
            time.sleep(interval)

    def health(self):
        """GET /healthz: {"status": "ok"} (Unavailable while the server stops)."""
        return self._json("GET", "/healthz")

    # ---------------------------------------------------------------- sessions

    def create_session(self, language=None, inputs=None, limits=None, render=None,
                       idle_timeout=None, lifetime=None):
        """Start a session (a live interpreter, docs/serve.md "Sessions"); returns a
        Session once it is ready. Every argument is optional:

            language: the cells' default, "python" or "bash";
            inputs: files put in /mnt/data first (ids or file objects);
            limits: as run()'s (wall_seconds and cpu_seconds are each cell's);
            render: False leaves saved specs unrendered;
            idle_timeout, lifetime: seconds (defaults the server's, 20 min and 12 h).

        A request without limits takes a ready session from the server's pool.
        SandboxUnavailable when the server is not root, SessionsDisabled with
        --sessions off, TooManySessions at the server's or the tenant's limit.
        """
        body = _drop_none({"language": language, "inputs": _ids(inputs), "limits": limits,
                           "render": render, "idle_timeout": idle_timeout,
                           "lifetime": lifetime})
        info = self._json("POST", "/v1/sessions", body)
        s = Session(self, info["id"], info)
        for fid in body.get("inputs") or []:
            s._inputs.append(fid)
        return s

    def session(self, session_id):
        """A Session object for an existing session's id (no request is made)."""
        return Session(self, session_id)

    def list_sessions(self):
        """The tenant's sessions, newest first, ended ones too (session objects)."""
        return self._json("GET", "/v1/sessions")["sessions"]


class Session:
    """A live session: its variables and /mnt/data last from one cell to the next.

    Made by Client.create_session() (or Client.session(id)); a context manager that
    closes the session at the end of the `with`. `id` is the session's id, `last_info`
    the session object last seen (create's reply, or info()'s).
    """

    def __init__(self, client, session_id, info=None):
        self.client = client
        self.id = session_id
        self.last_info = info
        self._stored = {}        # name in /mnt/data -> (file id, sha256) known to be in the store
        self._inputs = []        # ids given at create, matched to names when get() needs them

    def __repr__(self):
        return "Session(%r)" % self.id

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def _path(self, tail=""):
        return "/v1/sessions/" + Client._q(self.id) + tail

    def _note_record(self, record):
        for f in record.get("files") or []:
            stored = f.get("file")
            if isinstance(stored, dict) and stored.get("id"):
                self._stored[f["name"]] = (stored["id"], f.get("sha256") or stored.get("sha256"))

    # ---------------------------------------------------------------- cells

    def execute(self, code, language=None, timeout=None):
        """Run a cell, yielding its events as the server sends them (Server-Sent Events):
        each a dict with "event" ("queued", "started", "stdout", "stderr", "display",
        "result", "error", then "cell", whose dict is the cell's record; "lost" when the
        session ends under the cell), as docs/session.md describes them.

        The generator ends after the "cell" event. A cell the session refuses raises
        (SessionBusy, SessionGone, InvalidCell, ...); a stream that ends without a record
        (the session was lost) raises SessionGone. Closing the generator early closes the
        connection (the cell goes on running: interrupt() stops it).

        Args:
            code: the cell's code.
            language: "python" or "bash" (default: the session's).
            timeout: the cell's wall time limit in seconds (default and maximum: the
                session's wall_seconds).
        """
        body = json.dumps(_drop_none({"code": code, "language": language,
                                      "timeout": timeout})).encode("utf-8")
        conn, resp = self.client._open(
            "POST", self._path("/cells"), body,
            {"Content-Type": "application/json", "Accept": "text/event-stream"},
            timeout=self.client._job_timeout(None, timeout or 0))
        lost = None
        try:
            ctype = (resp.getheader("Content-Type") or "").split(";")[0].strip()
            if ctype != "text/event-stream":
                # A server that answered with the record itself.
                record = json.loads(resp.read().decode("utf-8"))
                record.setdefault("event", "cell")
                self._note_record(record)
                yield record
                return
            for name, data in _sse_events(resp):
                if not isinstance(data, dict):
                    continue
                data.setdefault("event", name)
                if data["event"] == "rejected":
                    raise _rejected_error(data)
                if data["event"] == "lost":
                    lost = data
                if data["event"] == "cell":
                    self._note_record(data)
                    yield data
                    return
                yield data
        except (OSError, http.client.HTTPException) as e:
            raise ConnectionFailed(None, None, "the cell's event stream broke: %s" % e) from e
        finally:
            conn.close()
        session = (lost or {}).get("session") or {}
        raise SessionGone(410, "session_gone", session.get("message") or
                          "The session ended before the cell's record came.",
                          {"session": session} if session else {})

    def run_cell(self, code, language=None, timeout=None):
        """Run a cell and return its record once it has ended (docs/session.md "The cell
        record": status, stdout, stderr, outputs, error, files with their stored file
        objects, ...). A cell that fails is still a record: its status says so."""
        body = _drop_none({"code": code, "language": language, "timeout": timeout})
        record = self.client._json("POST", self._path("/cells"), body,
                                   timeout=self.client._job_timeout(None, timeout or 0))
        self._note_record(record)
        return record

    def interrupt(self):
        """Interrupt the running cell (KeyboardInterrupt; the variables stay): True when a
        cell was running."""
        return bool(self.client._json("POST", self._path("/interrupt"))["interrupted"])

    # ---------------------------------------------------------------- files

    def files(self):
        """Every file in the session's /mnt/data: [{name, bytes, media_type, sha256}]."""
        return self.client._json("GET", self._path("/files"))["files"]

    def put(self, source=None, name=None, file_id=None, media_type=None):
        """Put a file into /mnt/data; returns {name, bytes, media_type, sha256}.

        Either source (a path, bytes or a binary file object: uploaded first, as
        Client.upload, then put) or file_id (a stored file: its id or file object).
        name: its name in /mnt/data (default: a path's base name, or the stored filename);
        bytes need one.
        """
        if (source is None) == (file_id is None):
            raise ValueError("put takes a source or a file_id")
        if source is not None:
            upload_name = name
            if upload_name is None and isinstance(source, (str, os.PathLike)):
                upload_name = os.path.basename(os.fspath(source))
            file_id = self.client.upload(source, upload_name, media_type)["id"]
        fid = _file_id(file_id)
        body = _drop_none({"file_id": fid, "name": name})
        put = self.client._json("POST", self._path("/files"), body)["file"]
        self._stored[put["name"]] = (fid, put.get("sha256"))
        return put

    def get(self, name, path=None):
        """A file of /mnt/data by its name (as files() lists it): its bytes, or written to
        path (returned).

        The API stores what a session's cells make, and has no route that reads
        /mnt/data itself: this finds the stored copy of the file as files() lists it now
        (the same SHA-256), among the files this object put or saw a cell make, the
        session's inputs, and then the tenant's files, and downloads it. NotFound (status
        None) when /mnt/data has no such file or the store holds no copy of its bytes (a
        file the store refused, or one changed without a cell, as by a put under another
        name)."""
        listed = [f for f in self.files() if f.get("name") == name]
        if not listed:
            raise NotFound(None, "not_found", "The session's /mnt/data has no file %r." % name)
        sha = listed[0].get("sha256")
        fid = self._find_stored(name, sha)
        if fid is None:
            raise NotFound(None, "not_found",
                           "No stored copy of %s (sha256 %s) was found: only files a cell made, "
                           "or that were put in, are in the store." % (name, sha))
        return self.client.download(fid, path)

    def _find_stored(self, name, sha):
        known = self._stored.get(name)
        if known and known[1] == sha:
            return known[0]
        for fid, digest in self._stored.values():
            if digest == sha:
                return fid
        for fid in self._inputs:
            try:
                f = self.client.get_file(fid)
            except (NotFound, Gone):
                continue
            if f.get("sha256") == sha:
                return f["id"]
        for f in self.client.iter_files():
            if f.get("sha256") == sha:
                return f["id"]
        return None

    # ---------------------------------------------------------------- life

    def info(self):
        """The session object now ({id, status, language, limits, cells, cells_waiting,
        created_at, expires_at, ...}); SessionGone once it has ended."""
        self.last_info = self.client._json("GET", self._path())
        return self.last_info

    def close(self):
        """End the session (its interpreter and sandbox; the files it made stay stored).
        Closing a session that has already ended does nothing; afterwards every other
        method raises SessionGone."""
        try:
            self.client._request("DELETE", self._path())
        except SessionGone:
            pass


def _sse_events(resp):
    """(event name, parsed data) of a text/event-stream body, read as it arrives."""
    name, data = None, []
    while True:
        raw = resp.readline()
        if not raw:
            break
        line = raw.decode("utf-8").rstrip("\r\n")
        if line == "":
            if data:
                text = "\n".join(data)
                try:
                    value = json.loads(text)
                except ValueError:
                    value = text
                yield name or "message", value
            name, data = None, []
        elif line.startswith(":"):
            continue
        else:
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
