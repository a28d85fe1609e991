"""MCP servers that fail the ways real ones do, for the failure-mode tests.

    python misbehaving.py MODE [--tag TEXT]

Modes:
  exit          writes a reason on stderr and exits at once (status 3)
  exit-env NAME the same, its reason quoting the environment variable NAME (a secret in a log)
  garbage       writes non-JSON-RPC lines on stdout, then exits
  garbage-hang  writes non-JSON-RPC lines on stdout, then reads stdin and never answers
  hang          reads stdin and never answers (ignores SIGTERM-free EOF by sleeping on)
  init-error    answers ``initialize`` with a JSON-RPC error
  child-hang    starts a grandchild that sleeps, then never answers (tree kill check)

These speak raw newline-delimited JSON-RPC on purpose: the SDK will not misbehave. ``--tag`` is
ignored (tests put a unique tag on the command line to find the processes afterwards).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time


def _read_forever() -> None:
    for _line in sys.stdin:
        pass
    time.sleep(3600)  # stdin closed: keep hanging until killed


def main() -> None:
    mode = sys.argv[1]
    tag = sys.argv[sys.argv.index("--tag") + 1] if "--tag" in sys.argv else ""
    if mode == "exit":
        print("fatal: missing configuration for the test server", file=sys.stderr, flush=True)
        sys.exit(3)
    if mode == "exit-env":
        value = os.environ.get(sys.argv[2], "")
        print(f"fatal: the key {value} is refused", file=sys.stderr, flush=True)
        sys.exit(3)
    if mode in ("garbage", "garbage-hang"):
        print("Server starting... hello there", flush=True)
        print("{not json", flush=True)
        if mode == "garbage":
            return
        _read_forever()
    if mode == "hang":
        _read_forever()
    if mode == "init-error":
        for line in sys.stdin:
            request = json.loads(line)
            if "id" in request:
                error = {"code": -32603, "message": "initialization refused by test server"}
                reply = {"jsonrpc": "2.0", "id": request["id"], "error": error}
                print(json.dumps(reply), flush=True)
        return
    if mode == "child-hang":
        code = "import time; time.sleep(3600)"
        subprocess.Popen([sys.executable, "-c", code, "--tag", tag])
        _read_forever()
    raise SystemExit(f"unknown mode {mode}")


if __name__ == "__main__":
    main()
