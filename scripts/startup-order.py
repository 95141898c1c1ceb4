#!/usr/bin/env python3
"""Writes the order file of `rawko`'s start (server/startup.order): the functions a `rawko serve`
runs from its start to its answer to `initialize` and then `rawko/listWorkflows`, in that order
(the start's first, then what initialize adds, then what the listing adds), by their symbol
names, found by running a release binary under callgrind.

The linker places these functions first in .text, side by side (build.rs passes the file to
lld's --symbol-ordering-file), so the start faults in a megabyte of code that sits together
instead of a few hundred KiB scattered over the whole 14 MB of .text, each fault mapping the
large page-cache folio around it. A stale file costs only that: a name no longer in the binary
is skipped, a function missing from the file is placed as before. Run it again after a change
to what the start runs, from a release build:

    cargo build --release && scripts/startup-order.py target/release/rawko > server/startup.order

The names carry hashes that change when rawko's crate metadata changes (a dependency, the
profile, the toolchain), so after such a change the file matches next to nothing and needs
writing again, then a second build. `--check` tells how much of the file a binary still has:

    scripts/startup-order.py --check target/release/rawko server/startup.order

The workspace is the one of scripts/measure-serve-rss.py (50 workflows of 10 phases).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time



def workspace(root):
    # The same files as scripts/measure-serve-rss.py.
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


def functions(path, binary):
    """The functions of `binary` a callgrind dump says ran, by their (mangled) names."""
    names, out, current = {}, [], None
    objects = {}
    for line in open(path, errors="replace"):
        m = re.match(r"(c?ob|c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if not m:
            continue
        kind, index, name = m.groups()
        # A name is given once, at its first use, by fn= or cfn= (ob= or cob=).
        table = objects if kind.endswith("ob") else names
        if name:
            table[index] = name
        if kind == "ob":
            current = objects.get(index)
        elif kind == "fn" and current and os.path.realpath(current) == binary:
            # Not a symbol: valgrind's "(below main)" and addresses without one.
            if re.match(r"[A-Za-z_.$][\w.$]*$", names[index]):
                out.append(names[index])
    return out


def check(binary, order):
    """How many of the order file's functions `binary` has, and where they lie in .text."""
    symbols = {}
    for line in subprocess.run(["nm", "-S", binary], capture_output=True, text=True,
                               check=True).stdout.splitlines():
        fields = line.split()
        if len(fields) == 4:
            symbols[fields[3]] = (int(fields[0], 16), int(fields[1], 16))
    names = [n.strip() for n in open(order) if n.strip()]
    found = [symbols[n] for n in names if n in symbols]
    print(f"{len(found)} of {len(names)} functions in the binary, {sum(s for _, s in found)} bytes", end="")
    if found:
        start, end = min(a for a, _ in found), max(a + s for a, s in found)
        print(f", at {start:#x}..{end:#x} ({end - start} bytes)")
    else:
        print()


def main():
    if sys.argv[1] == "--check":
        check(sys.argv[2], sys.argv[3])
        return
    binary = os.path.realpath(sys.argv[1])
    tmp = tempfile.mkdtemp()
    try:
        ws, home = os.path.join(tmp, "ws"), os.path.join(tmp, "home")
        os.makedirs(home)
        workspace(ws)
        env = dict(os.environ, HOME=home, XDG_CONFIG_HOME=home + "/.config",
                   XDG_STATE_HOME=home + "/.state", PI_CODING_AGENT_DIR=home + "/.pi")
        out = os.path.join(tmp, "callgrind.out")
        p = subprocess.Popen(["valgrind", "--tool=callgrind", "--demangle=no", f"--callgrind-out-file={out}",
                              binary, "serve", "--workspace", ws],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)

        def send(m):
            b = json.dumps(m).encode()
            p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(b) + b)
            p.stdin.flush()

        def request(id, method, params):
            send({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
            while True:
                n = None
                while True:
                    line = p.stdout.readline().strip()
                    if not line:
                        break
                    if line.lower().startswith(b"content-length:"):
                        n = int(line.split(b":")[1])
                r = json.loads(p.stdout.read(n))
                if r.get("id") == id and "method" not in r:
                    return r

        def dump(name):
            time.sleep(1)
            subprocess.run(["callgrind_control", "-d", name, str(p.pid)], check=True,
                           stdout=subprocess.DEVNULL)

        # The start: under valgrind it takes a few seconds, then the server waits on stdin.
        time.sleep(10)
        dump("start")
        request(1, "initialize", {"processId": None, "rootUri": "file://" + ws, "capabilities": {}})
        dump("initialize")
        send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        listed = request(2, "rawko/listWorkflows", {})
        assert len(listed["result"]["workflows"]) == 50, listed
        dump("list")
        p.stdin.close()
        p.wait()
        seen, order = set(), []
        for part in (1, 2, 3):
            for name in sorted(functions(f"{out}.{part}", binary)):
                if name not in seen:
                    seen.add(name)
                    order.append(name)
        sys.stdout.write("".join(n + "\n" for n in order))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
