"""What the worked loops of docs/assistants.md share: carry out a model's call of a Kiln
tool (`render_document`, `execute_code`, as docs/tools/ defines them) against a live
`kiln serve` with kiln_client, and give back the result in a form each vendor's loop turns
into its own tool-result message: text, images (PNG, base64) and file references.

    runner = ToolRunner(kiln_client.Client(url, key))
    result = runner.call("execute_code", {"code": "print(6 * 7)"})
    result.text, result.images, result.files, result.is_error

The text follows the MCP tool contract (docs/mcp.md): stdout, stderr, the last value's
text/plain and the traceback, each cut with a note past TEXT_LIMIT characters; every file
a cell or a render made as a line with its name, size, type, id and a signed download link
(the model cannot read kiln:// URIs, a person can follow the link); the session's id, so a
later call may pass it back. A failed cell, a bad spec or a Kiln error is `is_error`, the
spec's errors one "pointer: message" line each, so the model can fix what it sent.
Standard library only, as kiln_client.
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

TEXT_LIMIT = 20000          # characters of each stream the model is shown
LINK_SECONDS = 3600


class ToolResult:
    """A tool call's outcome: text (str), images ([(media_type, base64 data)]), files
    ([{id, filename, media_type, bytes, url}]), is_error (bool) and structured (the Kiln
    object it came from: a render's file object, a cell record with its session_id, or
    {"errors": [...]} for a bad spec)."""

    def __init__(self, text, images=(), files=(), is_error=False, structured=None):
        self.text = text
        self.images = list(images)
        self.files = list(files)
        self.is_error = is_error
        self.structured = structured

    def __repr__(self):
        return "ToolResult(is_error=%r, %d images, %d files, %r)" % (
            self.is_error, len(self.images), len(self.files), self.text[:80])


def cut(text, limit=TEXT_LIMIT, what="output"):
    """text, cut to limit characters with a note saying how much was left out."""
    if len(text) <= limit:
        return text
    return text[:limit] + "\n[... %d more characters of %s cut]" % (len(text) - limit, what)


class ToolRunner:
    """Runs Kiln tool calls for one conversation: execute_code without a session_id uses
    the conversation's own session (started on the first call, closed by close())."""

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
            return ToolResult("Unknown tool %r: the tools are render_document and "
                              "execute_code." % name, is_error=True)
        except kiln_client.InvalidSpec as e:
            lines = ["%s: %s" % (x.get("pointer", ""), x.get("message", "")) for x in e.errors]
            more = e.details.get("more_errors") or 0
            if more:
                lines.append("(%d more errors not listed)" % more)
            return ToolResult("The spec has %d error(s); fix each and call again:\n%s"
                              % (len(e.errors) + more, "\n".join(lines)), is_error=True,
                              structured={"errors": e.errors, "dropped": more})
        except kiln_client.SessionGone as e:
            return ToolResult("That session has ended (%s): call execute_code without a "
                              "session_id to start a new one (variables are lost; files it "
                              "made are still stored)." % (e.reason or "gone"), is_error=True)
        except kiln_client.KilnError as e:
            return ToolResult("Kiln refused the call: %s" % e, is_error=True)

    def file_ref(self, file_object):
        """A produced file as the model is told of it (a signed link to download it)."""
        link = self.client.link(file_object["id"], expires_in=LINK_SECONDS)
        return {"id": file_object["id"], "filename": file_object["filename"],
                "media_type": file_object["media_type"], "bytes": file_object["bytes"],
                "url": link["url"]}

    @staticmethod
    def file_line(ref):
        return "- %s (%d bytes, %s), id %s: %s" % (ref["filename"], ref["bytes"],
                                                   ref["media_type"], ref["id"], ref["url"])

    def render_document(self, args):
        doc = self.client.render(args.get("format"), args["spec"], args.get("filename"))
        ref = self.file_ref(doc)
        text = "Rendered %s.\n%s" % (doc["filename"], self.file_line(ref))
        for w in doc.get("warnings") or []:
            text += "\nwarning: %s" % w.get("message", w.get("code"))
        return ToolResult(text, files=[ref], structured=doc)

    def execute_code(self, args):
        sid = args.get("session_id")
        if sid:
            session = self.client.session(sid)
        else:
            if self.session is None:
                self.session = self.client.create_session()
            session = self.session
        record = session.run_cell(args["code"], language=args.get("language"),
                                  timeout=args.get("timeout_seconds"))
        record = dict(record, session_id=session.id)
        parts, images, files = [], [], []
        for stream in ("stdout", "stderr"):
            s = record.get(stream) or {}
            if s.get("text"):
                text = cut(s["text"].rstrip("\n"), what=stream)
                if s.get("truncated"):
                    text += "\n[%s was cut at the session's limit: %d bytes in all]" % (
                        stream, s.get("bytes", 0))
                parts.append("%s:\n%s" % (stream, text))
        for out in record.get("outputs") or []:
            data = out.get("data") or {}
            if "image/png" in data:
                images.append(("image/png", data["image/png"]))
            elif out.get("type") == "result" and "text/plain" in data:
                parts.append("result:\n%s" % cut(data["text/plain"], what="the value"))
        if record.get("error"):
            err = record["error"]
            parts.append(cut("\n".join(err.get("traceback") or [])
                             or "%s: %s" % (err.get("ename"), err.get("evalue")),
                             what="the traceback"))
        for f in (record.get("files") or []):
            if isinstance(f.get("file"), dict):
                files.append(self.file_ref(f["file"]))
        if files:
            parts.append("files:\n" + "\n".join(self.file_line(r) for r in files))
        if images:
            parts.append("%d figure(s), attached as images." % len(images))
        status = record.get("status")
        head = "status: %s" % status + ("" if status == "ok" else " (the cell did not finish "
                                                                 "cleanly)")
        text = "\n\n".join([head] + parts + ["session_id: %s" % session.id])
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
