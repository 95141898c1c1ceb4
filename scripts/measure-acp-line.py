#!/usr/bin/env python3
"""Peak memory of `rawko acp` when its client sends one huge line (issue 30, part 4).

Sends initialize, one line of MIB MiB (a client's answer to a request rawko never made), then
initialize again, and prints what rawko answered (clipped) and its peak RSS (/usr/bin/time -v).

    scripts/measure-acp-line.py [RAWKO_BINARY] [MIB]     (default: target/debug/rawko 64)
"""
import json
import os
import subprocess
import sys
import tempfile
import threading
import time

rawko = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/debug/rawko")
mib = int(sys.argv[2]) if len(sys.argv) > 2 else 64
with tempfile.TemporaryDirectory() as home:
    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=f"{home}/.config",
               XDG_STATE_HOME=f"{home}/.local/state", XDG_RUNTIME_DIR=f"{home}/run")
    os.makedirs(f"{home}/ws")
    p = subprocess.Popen(["/usr/bin/time", "-v", rawko, "acp"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=f"{home}/ws", env=env)
    answers = []
    reader = threading.Thread(target=lambda: answers.extend(line[:200] for line in p.stdout))
    reader.start()

    def initialize(i):
        return (json.dumps({"jsonrpc": "2.0", "id": i, "method": "initialize",
                            "params": {"protocolVersion": 1, "clientCapabilities": {}}}) + "\n").encode()

    p.stdin.write(initialize(1))
    p.stdin.write(b'{"jsonrpc":"2.0","id":99,"result":{"content":"')
    chunk = b"x" * (1 << 20)
    for _ in range(mib):
        p.stdin.write(chunk)
    p.stdin.write(b'"}}\n')
    p.stdin.write(initialize(2))
    p.stdin.flush()
    time.sleep(3)
    p.stdin.close()
    p.wait()
    reader.join()
    for line in answers:
        print(line.decode(errors="replace").strip())
    for line in p.stderr.read().decode(errors="replace").splitlines():
        if "Maximum resident" in line or "Exit status" in line:
            print(line.strip())
