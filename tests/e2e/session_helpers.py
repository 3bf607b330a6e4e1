"""Driving `kiln session` from tests: a session as a Python object.

A reader thread parses every line `kiln session` writes (each must be one JSON object:
anything else on its stdout fails the test), so a test can wait for an event with a
timeout while it sends requests, as a client would.
"""
import base64
import itertools
import json
import os
import queue
import subprocess
import tempfile
import threading
import time

import pytest

from conftest import KILN_BIN

_ids = itertools.count(1)


class Session:
    def __init__(self, *args, zygote=None, env=None, start_timeout=90):
        argv = [str(KILN_BIN), "session"] + (["--zygote", zygote] if zygote else []) + list(args)
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=env)
        self.q = queue.Queue()
        self.bad_lines = []
        self.stderr = b""
        self._out = threading.Thread(target=self._read_stdout, daemon=True)
        self._err = threading.Thread(target=self._read_stderr, daemon=True)
        self._out.start()
        self._err.start()
        self.ready = self.next(timeout=start_timeout)
        assert self.ready.get("event") == "ready", "kiln session did not start: %r %s" % (
            self.ready, self.stderr.decode(errors="replace"))

    def _read_stdout(self):
        for line in self.p.stdout:
            try:
                ev = json.loads(line)
            except ValueError:
                self.bad_lines.append(line)
                continue
            if not isinstance(ev, dict) or "event" not in ev:
                self.bad_lines.append(line)
                continue
            self.q.put(ev)
        self.q.put(None)

    def _read_stderr(self):
        for line in self.p.stderr:
            self.stderr += line

    def send(self, **req):
        self.send_raw((json.dumps(req) + "\n").encode())

    def send_raw(self, data):
        self.p.stdin.write(data)
        self.p.stdin.flush()

    def next(self, timeout=30):
        try:
            ev = self.q.get(timeout=timeout)
        except queue.Empty:
            pytest.fail("no event from kiln session within %ss" % timeout)
        assert ev is not None, "kiln session ended (status %r): %s" % (
            self.p.poll(), self.stderr.decode(errors="replace"))
        return ev

    def until(self, pred, timeout=30):
        """Events up to and including the first for which pred is true."""
        got, end = [], time.monotonic() + timeout
        while True:
            ev = self.next(timeout=max(0.1, end - time.monotonic()))
            got.append(ev)
            if pred(ev):
                return got

    def request(self, op, timeout=30, **members):
        """Send one request and return its answer (the first event with its id)."""
        rid = next(_ids)
        self.send(op=op, id=rid, **members)
        return self.until(lambda e: e.get("id") == rid, timeout=timeout)[-1]

    def execute(self, code, wait=60, **members):
        """Run a cell (members: language, timeout); returns (its record, the events up to
        it: the cell's own and any without an id, such as "lost")."""
        rid = next(_ids)
        self.send(op="execute", id=rid, code=code, **members)
        events = self.until(lambda e: e.get("id") == rid and e["event"] in ("cell", "rejected"),
                            timeout=wait)
        mine = [e for e in events if e.get("id") in (rid, None)]
        return mine[-1], mine

    def put(self, name, data):
        return self.request("put", name=name, content_base64=base64.b64encode(data).decode())

    def get(self, name):
        ev = self.request("get", name=name)
        assert ev["event"] == "file", ev
        return base64.b64decode(ev["content_base64"])

    def close(self, timeout=30):
        if self.p.poll() is None:
            try:
                self.send(op="close")
            except (BrokenPipeError, OSError):
                pass
            try:
                self.p.stdin.close()
            except OSError:
                pass
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            rc = self.p.wait()
            pytest.fail("kiln session did not end within %ss of close" % timeout)
        self._out.join(timeout=5)
        assert not self.bad_lines, "kiln session wrote lines that are not events: %r" % self.bad_lines[:3]
        return rc

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        if self.p.poll() is None:
            self.close()


class Zygote:
    """A shared zygote (`kiln zygote SOCKET`) in a root-only directory."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="kt-zygote-")
        os.chmod(self.dir, 0o700)
        self.path = os.path.join(self.dir, "zygote.sock")
        self.p = subprocess.Popen([str(KILN_BIN), "zygote", self.path], stderr=subprocess.PIPE)
        end = time.monotonic() + 60
        while not os.path.exists(self.path):
            if self.p.poll() is not None or time.monotonic() > end:
                pytest.fail("kiln zygote did not start: %s" % self.p.stderr.read().decode())
            time.sleep(0.02)

    def close(self):
        self.p.kill()
        self.p.wait()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
        os.rmdir(self.dir)
