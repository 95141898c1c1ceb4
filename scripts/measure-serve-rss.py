#!/usr/bin/env python3
"""RSS of `rawko serve` after `initialize` and `rawko/listWorkflows`, with 50 workflows of 10
phases in the workspace (the workspace of `cargo bench -p rawko --bench serve`), for any binary,
so that two builds can be measured side by side.

Usage: scripts/measure-serve-rss.py BINARY [RUNS]
Prints, per run, VmRSS and its anonymous and file-backed parts (the file-backed part is mostly
the binary's code, mapped as it runs, and varies from run to run with the page cache).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time


def workspace(root):
    for w in range(50):
        d = os.path.join(root, ".rawko", "workflows", f"wf{w}")
        os.makedirs(d)
        yaml = f"name: Workflow {w}\ncommandName: wf{w}\ninitialMessage: start {{description}}\nphases:\n"
        for p in range(10):
            yaml += f"  - p{p}.md\n"
            with open(os.path.join(d, f"p{p}.md"), "w") as f:
                f.write(f"---\nid: p{p}\nname: Phase {p}\nemoji: 🔧\ntools:\n  blacklist: [Write]\n---\nDo step {p} of {{description}}.\n")
        with open(os.path.join(d, "workflow.yaml"), "w") as f:
            f.write(yaml)


def run(binary, tmp):
    ws, home = os.path.join(tmp, "ws"), os.path.join(tmp, "home")
    env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=home + "/.config",
               XDG_STATE_HOME=home + "/.state", PI_CODING_AGENT_DIR=home + "/.pi")
    p = subprocess.Popen([binary, "serve", "--workspace", ws], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

    def send(m):
        b = json.dumps(m).encode()
        p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)
        p.stdin.flush()

    def read():
        n = None
        while True:
            line = p.stdout.readline().strip()
            if not line:
                break
            if line.lower().startswith(b"content-length:"):
                n = int(line.split(b":")[1])
        return json.loads(p.stdout.read(n))

    def request(id, method, params):
        send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
        while True:
            r = read()
            if r.get("id") == id and "method" not in r:
                return r

    request(1, "initialize", {"processId": None, "rootUri": "file://" + ws, "capabilities": {}})
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    listed = request(2, "rawko/listWorkflows", {})
    assert len(listed["result"]["workflows"]) == 50, listed
    status = {}
    with open(f"/proc/{p.pid}/status") as f:
        for line in f:
            key, _, value = line.partition(":")
            status[key] = (value.split() or [""])[0]
    p.stdin.close()
    p.wait()
    return status


def main():
    binary = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    tmp = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(tmp, "home"))
        workspace(os.path.join(tmp, "ws"))
        for _ in range(runs):
            s = run(binary, tmp)
            print(f"VmRSS {s['VmRSS']} KiB (anonymous {s['RssAnon']}, file {s['RssFile']}), {s['Threads']} threads")
            time.sleep(0.2)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
