"""The in-sandbox side of a Kiln session (minimal runtime; docs/session.md)."""
import json
import os
import signal
import sys

_write = os.write


def _send(fd, obj):
    data = (json.dumps(obj, ensure_ascii=False, separators=(",", ":")) + "\n").encode()
    while data:
        n = _write(fd, data)
        data = data[n:]


def warm():
    sys.argv = [""]


def serve(ctl_fd, ev_fd):
    running = [False]

    def on_sigint(signum, frame):
        if running[0]:
            raise KeyboardInterrupt

    signal.signal(signal.SIGINT, on_sigint)
    ns = {"__name__": "__main__", "__builtins__": __builtins__}
    ctl = os.fdopen(ctl_fd, "rb", buffering=0)
    buf = b""
    while True:
        while b"\n" not in buf:
            chunk = ctl.read(65536)
            if not chunk:
                return
            buf += chunk
        line, buf = buf.split(b"\n", 1)
        msg = json.loads(line)
        op = msg.get("op")
        if op == "init":
            os.environ.clear()
            os.environ.update(msg.get("env", {}))
            _send(ev_fd, {"ev": "ready", "pid": os.getpid()})
        elif op == "exit":
            return
        elif op == "execute":
            cell = msg["cell"]
            status = "ok"
            try:
                running[0] = True
                exec(compile(msg["code"], "<cell %d>" % cell, "exec"), ns)
            except KeyboardInterrupt:
                status = "interrupted"
            except BaseException as e:  # noqa: B902
                status = "error"
                running[0] = False
                _send(ev_fd, {"ev": "error", "cell": cell, "ename": type(e).__name__,
                              "evalue": str(e), "traceback": []})
            finally:
                running[0] = False
            sys.stdout.flush()
            sys.stderr.flush()
            _send(ev_fd, {"ev": "done", "cell": cell, "status": status})
