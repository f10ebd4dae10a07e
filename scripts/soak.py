#!/usr/bin/python3
"""Soak test (scripts/soak; not in CI): one dev-mode tesserad under a mixed
workload for MINUTES: uploads, overwrites, renames, deletes and reads over
XRootD (xrdcp, xrdfs) and HTTPS (curl), checked against a shadow model,
with kill -9 and a restart at random moments. Every 30 s it records the
server's RSS, open descriptors and threads (to OUT/samples.csv). At the
end every file the model holds must read back identical and nothing else
may exist; the samples say whether memory levels off.

Usage: scripts/soak.py BIN_DIR OUT_DIR MINUTES [SEED]
"""

import hashlib
import os
import random
import signal
import subprocess
import sys
import time

BIN, OUT, MINUTES = sys.argv[1], sys.argv[2], float(sys.argv[3])
SEED = int(sys.argv[4]) if len(sys.argv) > 4 else int(time.time())
rnd = random.Random(SEED)
DATA = os.path.join(OUT, "data")
os.makedirs(OUT, exist_ok=True)
LOG = open(os.path.join(OUT, "soak.log"), "a")


def log(msg):
    line = f"{time.strftime('%H:%M:%S')} {msg}"
    print(line, flush=True)
    LOG.write(line + "\n")
    LOG.flush()


class Server:
    def __init__(self):
        self.proc = None
        self.start()

    def start(self):
        self.proc = subprocess.Popen(
            [os.path.join(BIN, "tesserad"), "serve", "--dev", "--data-dir", DATA,
             "--admin-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0",
             "--xrootd-addr", "127.0.0.1:0", "--https-addr", "127.0.0.1:0"],
            stdout=subprocess.PIPE, stderr=open(os.path.join(OUT, "server.err"), "a"),
            text=True)
        first = self.proc.stdout.readline()
        if not first.startswith("tesserad ready"):
            sys.exit(f"server did not start: {first!r}")
        f = dict(w.split("=", 1) for w in first.split() if "=" in w)
        # roots:// (a bearer token needs TLS), by name (the dev certificate).
        self.xroot = "roots://" + f["xrootd"].replace("127.0.0.1", "localhost")
        self.https = "https://" + f["https"].replace("127.0.0.1", "localhost")
        # Drain the rest of stdout (the banner) so the server never blocks.
        subprocess.Popen(["cat"], stdin=self.proc.stdout, stdout=subprocess.DEVNULL)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()
        self.start()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=120)

    def sample(self):
        pid = self.proc.pid
        status = open(f"/proc/{pid}/status").read()
        get = lambda k: int(next(l.split()[1] for l in status.splitlines() if l.startswith(k)))
        return get("VmRSS:"), len(os.listdir(f"/proc/{pid}/fd")), get("Threads:")


def run(args, **kw):
    return subprocess.run(args, capture_output=True, timeout=300, **kw)


CA = os.path.join(DATA, "dev", "ca.pem")
ENV = dict(os.environ, XRD_CONNECTIONRETRY="1", XRD_REQUESTTIMEOUT="60",
           X509_CERT_DIR=os.path.join(DATA, "dev", "certificates"))
BASE = "/data/soak"   # the dev token's user (uid 1000) owns /data


def token():
    """A dev-issuer token for both protocols (every operation as one user)."""
    r = subprocess.run([os.path.join(BIN, "tessera"), "token", "issue", "--data-dir", DATA,
                        "--sub", "soak", "--lifetime", "86400",
                        "--scope", "storage.read:/ storage.modify:/data storage.create:/data"],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def body(n):
    return rnd.randbytes(n)


def digest(b):
    return hashlib.sha256(b).hexdigest()


def put(srv, path, data, proto):
    src = os.path.join(OUT, "up.tmp")
    with open(src, "wb") as f:
        f.write(data)
    if proto == "xroot":
        r = run(["xrdcp", "-f", "-s", src, f"{srv.xroot}/{BASE}{path}"], env=ENV)
    else:
        r = run(["curl", "-sS", "-f", "--cacert", CA, "-H", "Authorization: Bearer " + ENV["BEARER_TOKEN"], "-T", src, f"{srv.https}{BASE}{path}"])
    return r.returncode == 0


def get(srv, path, proto):
    dst = os.path.join(OUT, "down.tmp")
    if os.path.exists(dst):
        os.remove(dst)
    if proto == "xroot":
        r = run(["xrdcp", "-f", "-s", f"{srv.xroot}/{BASE}{path}", dst], env=ENV)
    else:
        r = run(["curl", "-sS", "-f", "--cacert", CA, "-H", "Authorization: Bearer " + ENV["BEARER_TOKEN"], "-o", dst, f"{srv.https}{BASE}{path}"])
    if r.returncode != 0:
        return None
    return open(dst, "rb").read()


def xrdfs(srv, *args):
    return run(["xrdfs", srv.xroot, *args], env=ENV).returncode == 0


def listing(srv):
    r = run(["xrdfs", srv.xroot, "ls", BASE], env=ENV)
    return sorted(l.strip()[len(BASE):] for l in r.stdout.decode().splitlines() if l.strip())


def main():
    srv = Server()
    ENV["BEARER_TOKEN"] = token()
    if not xrdfs(srv, "mkdir", "-p", BASE):
        sys.exit("cannot make " + BASE)
    model = {}          # path -> sha256 of what it holds
    maybe = {}          # path -> set of digests possible (an op cut by kill -9)
    names = [f"/f{i:03d}" for i in range(60)]
    end = time.time() + MINUTES * 60
    next_sample = 0
    next_kill = time.time() + rnd.uniform(60, 240)
    samples = open(os.path.join(OUT, "samples.csv"), "a")
    samples.write("elapsed_s,rss_kb,fds,threads\n")
    t0 = time.time()
    ops = 0
    while time.time() < end:
        if time.time() >= next_sample:
            rss, fds, threads = srv.sample()
            samples.write(f"{time.time() - t0:.0f},{rss},{fds},{threads}\n")
            samples.flush()
            log(f"sample: rss {rss} kB, fds {fds}, threads {threads}, ops {ops}, files {len(model)}")
            next_sample = time.time() + 30
        killing = time.time() >= next_kill
        op = rnd.choice(["put", "put", "get", "get", "get", "mv", "rm"])
        proto = rnd.choice(["xroot", "https"])
        path = rnd.choice(names)
        if killing:
            # kill -9 while an upload is in flight (a thread-free way: the
            # upload runs as a child we do not wait for).
            data = body(rnd.randint(1, 8 << 20))
            src = os.path.join(OUT, "cut.tmp")
            open(src, "wb").write(data)
            p = subprocess.Popen(["xrdcp", "-f", "-s", src, f"{srv.xroot}/{BASE}{path}"], env=ENV,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(rnd.uniform(0.0, 0.3))
            log(f"kill -9 (upload of {path} in flight)")
            srv.kill9()
            # The dev issuer's URL names the HTTPS port, new at each start.
            ENV["BEARER_TOKEN"] = token()
            p.wait()
            before = model.get(path)
            maybe[path] = {before, digest(data)}
            next_kill = time.time() + rnd.uniform(60, 240)
            continue
        ops += 1
        if op == "put":
            data = body(rnd.choice([0, 1, 4096, 100_000, rnd.randint(1, 6 << 20)]))
            if put(srv, path, data, proto):
                model[path] = digest(data)
                maybe.pop(path, None)
            else:
                log(f"upload of {path} over {proto} failed")
        elif op == "get":
            if path in maybe or path not in model:
                continue
            got = get(srv, path, proto)
            if got is None:
                sys.exit(f"FAIL: {path} over {proto} cannot be read (seed {SEED})")
            if digest(got) != model[path]:
                sys.exit(f"FAIL: {path} over {proto} reads back wrong (seed {SEED})")
        elif op == "mv" and path in model and path not in maybe:
            dst = rnd.choice(names)
            if dst != path and dst not in maybe and xrdfs(srv, "mv", BASE + path, BASE + dst):
                model[dst] = model.pop(path)
        elif op == "rm" and path in model and path not in maybe:
            if xrdfs(srv, "rm", BASE + path):
                del model[path]
    # Settle what kill -9 left open: each must be one of its possibilities.
    for path, possible in maybe.items():
        got = get(srv, path, "xroot")
        d = None if got is None else digest(got)
        if d not in possible:
            sys.exit(f"FAIL: {path} after kill -9 is neither before nor after (seed {SEED})")
        if d is None:
            model.pop(path, None)
        else:
            model[path] = d
    for path, d in model.items():
        got = get(srv, path, rnd.choice(["xroot", "https"]))
        if got is None or digest(got) != d:
            sys.exit(f"FAIL: {path} reads back wrong at the end (seed {SEED})")
    extra = set(listing(srv)) - set(model)
    if extra:
        sys.exit(f"FAIL: files the model does not hold: {sorted(extra)} (seed {SEED})")
    rss, fds, threads = srv.sample()
    samples.write(f"{time.time() - t0:.0f},{rss},{fds},{threads}\n")
    srv.stop()
    log(f"ok: {ops} operations, {len(model)} files checked, seed {SEED}")


if __name__ == "__main__":
    main()
