"""What the worked loops of docs/assistants.md share: carry out a model's call of a Kiln
tool (`render_document`, `execute_code`, as docs/tools/ defines them) against a live
`kiln serve` with kiln_client, and give back the result in a form each vendor's loop turns
into its own tool-result message: text, images (PNG, base64) and file references.

    runner = ToolRunner(kiln_client.Client(url, key))
    result = runner.call("execute_code", {"code": "print(6 * 7)"})
    result.text, result.images, result.files, result.is_error

The text is the text `kiln mcp` gives the same call (docs/mcp.md, "What a result
shows"): stdout, then `[stderr]` and stderr, the last value as `Out[N]: ...`, the
traceback, a status note, every file the cell made as a line, cut at TEXT_LIMIT
characters with a note; the first call says the session it started. Where MCP has a
`kiln://files/{id}` resource link, the line here has a signed download link (the model
cannot read kiln:// URIs; the person it talks to can follow a link, and the id is in it).
A failed cell, a bad spec or a Kiln error is `is_error`, a bad spec's errors one
"pointer: message" line each, so the model can fix what it sent. Standard library only,
as kiln_client.
"""
import argparse
import json
import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
sys.path.insert(0, str(HERE.parent / "python"))

import kiln_client  # noqa: E402

TEXT_LIMIT = 20000          # characters of text in one result, as kiln mcp's
IMAGES_MAX = 8              # figures in one result, and their base64 in all, as kiln mcp's
IMAGE_BYTES_MAX = 4 << 20
LINK_SECONDS = 3600

STATUS_NOTES = {
    "interrupted": "the cell was interrupted",
    "timeout": "the cell passed its time limit and was interrupted",
    "memory_limit": "a process of the cell was killed: the session's memory limit",
    "output_limit": "the cell wrote more output than a cell may and was interrupted",
    "session_lost": "the session ended under the cell: its variables and files are gone (the "
                    "next call without session_id starts a new session)",
}


class ToolResult:
    """A tool call's outcome: text (str), images ([(media_type, base64 data)]), files
    ([{id, filename, media_type, bytes, url}]), is_error (bool) and structured (the Kiln
    object it came from: a render's file object, a cell record with its session_id, or
    {"errors": [...], "dropped": n} for a bad spec)."""

    def __init__(self, text, images=(), files=(), is_error=False, structured=None):
        self.text = text
        self.images = list(images)
        self.files = list(files)
        self.is_error = is_error
        self.structured = structured

    def __repr__(self):
        return "ToolResult(is_error=%r, %d images, %d files, %r)" % (
            self.is_error, len(self.images), len(self.files), self.text[:80])


class _Text:
    """The result's text, cut at TEXT_LIMIT characters (what is left out counted)."""

    def __init__(self):
        self.parts, self.length, self.left_out = [], 0, 0

    def add(self, s):
        room = max(TEXT_LIMIT - self.length, 0)
        if len(s) > room:
            self.left_out += len(s) - room
            s = s[:room]
        self.parts.append(s)
        self.length += len(s)

    def text(self):
        out = "".join(self.parts)
        if self.left_out:
            out += ("[%d characters of this text not shown]\n" % self.left_out)
        return out


class ToolRunner:
    """Runs Kiln tool calls for one conversation: execute_code without a session_id uses
    the conversation's own session (started on the first such call, and again after it
    ended; closed by close())."""

    def __init__(self, client):
        self.client = client
        self.session = None

    def close(self):
        """End the conversation's session (the files it made stay stored)."""
        if self.session is not None:
            self.session.close()
            self.session = None

    def call(self, name, args):
        """Carry out one call: args is the tool's arguments in Kiln's form (absent
        members left out)."""
        try:
            if name == "render_document":
                return self.render_document(args)
            if name == "execute_code":
                return self.execute_code(args)
            return ToolResult("unknown tool %r (the tools are execute_code and "
                              "render_document)" % name, is_error=True)
        except kiln_client.InvalidSpec as e:
            return self.spec_errors(e)
        except kiln_client.SessionGone as e:
            return ToolResult("The session has ended (%s): its variables and files are gone; "
                              "call execute_code without session_id to start a new one."
                              % (e.reason or "gone"), is_error=True)
        except kiln_client.KilnError as e:
            return ToolResult("Kiln refused the call: %s" % e, is_error=True)

    @staticmethod
    def spec_errors(e):
        """A bad spec: every error at its pointer into `spec`, as kiln mcp says it."""
        more = e.details.get("more_errors") or 0
        lines = ["The spec is not valid: %d error(s), each at a JSON Pointer into `spec`. Fix "
                 "them all and call render_document again." % len(e.errors)]
        lines += ["%s: %s" % (x.get("pointer") or "(spec)", x.get("message", ""))
                  for x in e.errors]
        if more:
            lines.append("[%d more error(s) not listed]" % more)
        return ToolResult("\n".join(lines) + "\n", is_error=True,
                          structured={"errors": e.errors, "dropped": more})

    def file_ref(self, file_object):
        """A produced file as the model is told of it: a signed link that downloads it
        without a key (the model cannot read kiln:// URIs; the person it talks to can
        follow a link)."""
        link = self.client.link(file_object["id"], expires_in=LINK_SECONDS)
        return {"id": file_object["id"], "filename": file_object["filename"],
                "media_type": file_object["media_type"], "bytes": file_object["bytes"],
                "url": link["url"]}

    def render_document(self, args):
        doc = self.client.render(args.get("format"), args["spec"], args.get("filename"))
        ref = self.file_ref(doc)
        text = "Rendered %s (%d bytes): %s" % (doc["filename"], doc["bytes"], ref["url"])
        for w in doc.get("warnings") or []:
            text += "\nwarning: %s" % w.get("message", w.get("code"))
        return ToolResult(text, files=[ref], structured=doc)

    def execute_code(self, args):
        sid, fresh = args.get("session_id"), False
        if sid:
            session = self.client.session(sid)
        else:
            if self.session is None:
                self.session, fresh = self.client.create_session(), True
            session = self.session
        try:
            record = session.run_cell(args["code"], language=args.get("language"),
                                      timeout=args.get("timeout_seconds"))
        except kiln_client.SessionGone:
            if session is self.session:
                self.session = None        # the next call starts a new one, and says so
            raise
        status = record.get("status") or "error"
        if status == "session_lost" and session is self.session:
            self.session = None
        record = dict(record, session_id=session.id)
        return self.cell_result(record, fresh)

    def cell_result(self, record, fresh):
        """A cell record as text, figures and links: kiln mcp's text (docs/mcp.md, "What a
        result shows"), with a signed link for each file's kiln:// URI."""
        t, images, files = _Text(), [], []
        status = record.get("status") or "error"
        if fresh:
            t.add("[a new session was started: session_id %s]\n" % record["session_id"])
        for name, label in (("stdout", ""), ("stderr", "[stderr]\n")):
            stream = record.get(name) or {}
            if not stream.get("text"):
                continue
            t.add(label + stream["text"] + ("" if stream["text"].endswith("\n") else "\n"))
            if stream.get("truncated"):
                t.add("[%s: %d bytes in all; the session kept the first %d]\n"
                      % (name, stream.get("bytes", 0), len(stream["text"])))
        not_shown, image_bytes = 0, 0
        for out in record.get("outputs") or []:
            data = out.get("data") or {}
            png = data.get("image/png")
            if isinstance(png, str):
                if len(images) < IMAGES_MAX and image_bytes + len(png) <= IMAGE_BYTES_MAX:
                    images.append(("image/png", png))
                    image_bytes += len(png)
                else:
                    not_shown += 1
                continue
            if isinstance(data.get("text/plain"), str):
                if out.get("type") == "result":
                    t.add("Out[%d]: " % record.get("execution_count", 0))
                t.add(data["text/plain"] + "\n")
        if not_shown:
            t.add("[%d figure(s) not shown: a result carries at most %d images, %d MiB]\n"
                  % (not_shown, IMAGES_MAX, IMAGE_BYTES_MAX >> 20))
        error = record.get("error")
        if isinstance(error, dict):
            tb = error.get("traceback") or []
            if tb:
                t.add("".join(x if x.endswith("\n") else x + "\n" for x in tb))
            else:
                t.add("%s: %s\n" % (error.get("ename") or "Error", error.get("evalue") or ""))
        if status in STATUS_NOTES:
            t.add("[status %s: %s]\n" % (status, STATUS_NOTES[status]))
        for entry in record.get("files") or []:
            if isinstance(entry.get("file"), dict):
                ref = self.file_ref(entry["file"])
                files.append(ref)
                what = "document" if entry.get("source") == "document" else "file"
                t.add("%s %s (%d bytes): %s\n" % (what, entry["name"], ref["bytes"], ref["url"]))
        for doc in record.get("documents") or []:
            if doc.get("ok") is False or doc.get("errors"):
                t.add("document %s was not rendered:\n" % doc.get("name", "?"))
                for e in doc.get("errors") or []:
                    t.add("  %s: %s\n" % (e.get("pointer") or "(spec)", e.get("message", "")))
        text = t.text()
        if not text and status == "ok":
            text = "[the cell printed nothing]\n"
        return ToolResult(text, images, files, is_error=status != "ok", structured=record)


def arguments(description, turn_name):
    """The command line every loop takes: --url/--key (else KILN_URL/KILN_API_KEY) and
    --turn (the recorded model turn, default recorded/TURN_NAME)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--url", default=os.environ.get("KILN_URL"),
                   help="kiln serve's base URL (default $KILN_URL)")
    p.add_argument("--key", default=os.environ.get("KILN_API_KEY"),
                   help="an API key of the server (default $KILN_API_KEY)")
    p.add_argument("--turn", default=str(HERE / "recorded" / turn_name),
                   help="the recorded model turn to carry out (default %(default)s)")
    a = p.parse_args()
    if not a.url or not a.key:
        p.error("give the server with --url and --key, or KILN_URL and KILN_API_KEY")
    return a


def load_json(path):
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def say(text):
    """Progress, on standard error (standard output carries the request body only)."""
    print(text, file=sys.stderr)
