#!/usr/bin/python3
"""Starts N ranks of a Python script on this host with torchrun-style variables
(Debian's torchrun fails on Python 3.11) and checks every exit code.

    launch.py -n 4 [--init env|tcp|file] [--dead RANK] [--timeout S] script.py [args]

Each rank gets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT (a free port) and
TORCH_CHORUS_TEST_INIT / TORCH_CHORUS_TEST_FILE for the init method (not CHORUS_ names:
those are Chorus's settings, and Chorus warns about any it does not know). Exit 0 when
every rank exits 0, except --dead RANK, which must exit non-zero (it kills itself on
purpose), and no rank warned of an unknown CHORUS_ variable (its stderr is passed through
and read). On a time-out every rank is killed and the launcher fails naming the ranks
still running.
"""
import argparse
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time

UNKNOWN_SETTING = b"is not a Chorus setting"


def free_port():
    """A free loopback port below the kernel's ephemeral range: a port the kernel handed out
    (bind to 0) can be taken by an outgoing connection before the rank binds it."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            low = int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        low = 32768
    for k in range(500):
        port = 20000 + (os.getpid() * 131 + k * 7919) % (low - 20000)
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                continue
    raise RuntimeError("no free loopback port below the ephemeral range")


def relay(stream, lock, unknown):
    """Copies a rank's stderr to ours line by line, keeping the unknown-setting warnings."""
    for line in iter(stream.readline, b""):
        with lock:
            sys.stderr.buffer.write(line)
            sys.stderr.buffer.flush()
            if UNKNOWN_SETTING in line:
                unknown.append(line.decode(errors="replace").strip())
    stream.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, required=True)
    ap.add_argument("--init", default="env", choices=["env", "tcp", "file"])
    ap.add_argument("--dead", type=int, default=-1)
    ap.add_argument("--timeout", type=float, default=150)
    ap.add_argument("script")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="chorus-torch-")
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(free_port()),
               WORLD_SIZE=str(a.n), TORCH_CHORUS_TEST_INIT=a.init,
               TORCH_CHORUS_TEST_FILE=os.path.join(tmp, "rendezvous"))
    procs, relays, lock, unknown = [], [], threading.Lock(), []
    for r in range(a.n):
        e = dict(env, RANK=str(r), LOCAL_RANK=str(r))
        procs.append(subprocess.Popen([sys.executable, a.script] + a.args, env=e,
                                      stderr=subprocess.PIPE))
        relays.append(threading.Thread(target=relay, args=(procs[-1].stderr, lock, unknown)))
        relays[-1].start()
    deadline = time.monotonic() + a.timeout
    while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
        time.sleep(0.05)
    running = [r for r, p in enumerate(procs) if p.poll() is None]
    for r in running:
        procs[r].kill()
        procs[r].wait()
    for t in relays:
        t.join(timeout=10)
    failed = [f"a rank warned: {w}" for w in unknown]
    for r, p in enumerate(procs):
        if r in running:
            failed.append(f"rank {r} still running after {a.timeout:.0f} s (killed)")
        elif r == a.dead and p.returncode == 0:
            failed.append(f"rank {r} was to die but exited 0")
        elif r != a.dead and p.returncode != 0:
            failed.append(f"rank {r} exited with {p.returncode}")
    for f in failed:
        print("launch.py: " + f, file=sys.stderr)
    print(f"launch.py: {a.n} ranks of {os.path.basename(a.script)}: "
          + ("FAILED" if failed else "ok"), file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
