"""Drives an interactive command through a pseudo-terminal, as a person at a keyboard would.

usage: compensate-pty.py STEPS_JSON -- ARGV...
STEPS_JSON is a list of {"expect": regex, "send": keys}: wait until the screen (ANSI codes
stripped) shows `expect` after the previous match, then type `send`. Prints one JSON object:
{"code": exit code or null, "screen": everything shown, "failedStep": index or null}.
"""
import json
import os
import pty
import re
import select
import sys
import time

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b[()][A-Za-z0-9]|\x1b[=>]|\r")
STEP_TIMEOUT = 40.0


def main() -> None:
    sep = sys.argv.index("--")
    steps = json.loads(sys.argv[1])
    argv = sys.argv[sep + 1 :]
    pid, fd = pty.fork()
    if pid == 0:
        os.execvpe(argv[0], argv, {**os.environ, "TERM": "xterm", "COLUMNS": "160", "LINES": "50"})
    raw = b""
    seen = 0
    failed = None

    def read(timeout: float) -> bool:
        nonlocal raw
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            return True
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            return False
        if not chunk:
            return False
        raw += chunk
        return True

    for index, step in enumerate(steps):
        pattern = re.compile(step["expect"], re.S)
        deadline = time.time() + STEP_TIMEOUT
        alive = True
        while True:
            screen = ANSI.sub("", raw.decode("utf-8", "replace"))
            match = pattern.search(screen, seen)
            if match:
                seen = match.end()
                break
            if not alive or time.time() > deadline:
                failed = index
                break
            alive = read(0.2)
        if failed is not None:
            break
        time.sleep(0.3)
        os.write(fd, step["send"].encode())
    deadline = time.time() + STEP_TIMEOUT
    while time.time() < deadline and read(0.2):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            while read(0.1):
                pass
            break
    else:
        status = None
    if status is None:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass
        _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status) if status is not None else None
    screen = ANSI.sub("", raw.decode("utf-8", "replace"))
    print(json.dumps({"code": code, "screen": screen, "failedStep": failed}))


main()
