#!/usr/bin/env python3
"""RSS of `rawko serve` with 50 workflows of 10 phases in the workspace (the workspace of
`cargo bench -p rawko --bench serve`), for any binary, so that two builds can be measured side by
side. Two points: right after the `initialize` response (the issue's "after initialize": nothing
is loaded yet), and after `initialized` and `rawko/listWorkflows` (the workflows loaded and
listed: the point `cargo bench --bench serve` reports).

Usage: scripts/measure-serve-rss.py BINARY [RUNS] [--maps]
Prints, per run and point, VmRSS and its anonymous and file-backed parts (the file-backed part is
mostly the binary's code, mapped as it runs, and varies from run to run with the page cache).
With --maps, also the resident KiB of each mapped file at the second point (from smaps).
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

    def status():
        out = {}
        with open(f"/proc/{p.pid}/status") as f:
            for line in f:
                key, _, value = line.partition(":")
                out[key] = (value.split() or [""])[0]
        return out

    def maps():
        # Resident KiB by mapped file (anonymous mappings under their kind).
        out, name = {}, None
        with open(f"/proc/{p.pid}/smaps") as f:
            for line in f:
                fields = line.split()
                if "-" in fields[0] and not fields[0].endswith(":"):
                    name = fields[5] if len(fields) > 5 else "[anonymous]"
                elif fields[0] == "Rss:":
                    out[name] = out.get(name, 0) + int(fields[1])
        return out

    request(1, "initialize", {"processId": None, "rootUri": "file://" + ws, "capabilities": {}})
    initialized = status()
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    listed = request(2, "rawko/listWorkflows", {})
    assert len(listed["result"]["workflows"]) == 50, listed
    after_list, mapped = status(), maps()
    p.stdin.close()
    p.wait()
    return initialized, after_list, mapped


def main():
    args = [a for a in sys.argv[1:] if a != "--maps"]
    show_maps = "--maps" in sys.argv[1:]
    binary = os.path.abspath(args[0])
    runs = int(args[1]) if len(args) > 1 else 3
    tmp = tempfile.mkdtemp()
    try:
        os.makedirs(os.path.join(tmp, "home"))
        workspace(os.path.join(tmp, "ws"))
        for _ in range(runs):
            initialized, listed, mapped = run(binary, tmp)
            for point, s in (("after initialize", initialized), ("after listWorkflows", listed)):
                print(f"{point}: VmRSS {s['VmRSS']} KiB (anonymous {s['RssAnon']}, file {s['RssFile']}), {s['Threads']} threads")
            if show_maps:
                for name, kib in sorted(mapped.items(), key=lambda kv: -kv[1]):
                    if kib:
                        print(f"    {kib:6d} KiB  {name}")
            time.sleep(0.2)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
