#!/usr/bin/python3
"""Soak test (scripts/soak; not in CI): one dev-mode tesserad under a mixed
workload for MINUTES: uploads, overwrites, renames, deletes and reads over
XRootD (xrdcp, xrdfs) and HTTPS (curl), checked against a shadow model,
with kill -9 and a restart at random moments. Every 30 s it records the
server's RSS, open descriptors and threads (to OUT/samples.csv). At the
end every file the model holds must read back identical and nothing else
may exist; the samples say whether memory levels off.

With --clients N (N > 1) N clients run at once, each on names of its
own, and the server is never killed (--no-kill does that for one client):
the run for memory over time. Each sample also records what the server's
caches and buffers hold (`tessera_memory_bytes` by part, and the request
memory budget in use) from its /metrics.

Usage: scripts/soak.py BIN_DIR OUT_DIR MINUTES [SEED] [--clients N] [--no-kill]
"""

import hashlib
import os
import random
import signal
import subprocess
import sys
import time

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
FLAGS = sys.argv[1:]
BIN, OUT, MINUTES = ARGS[0], ARGS[1], float(ARGS[2])
CLIENTS = int(FLAGS[FLAGS.index("--clients") + 1]) if "--clients" in FLAGS else 1
if "--clients" in FLAGS:
    ARGS.remove(str(CLIENTS))
SEED = int(ARGS[3]) if len(ARGS) > 3 else int(time.time())
KILLS = CLIENTS == 1 and "--no-kill" not in FLAGS
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
        self.metrics = f["metrics"]
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

    def parts(self):
        """What the caches and buffers hold now, kB, by part (MEMORY_PARTS)."""
        r = run(["curl", "-s", f"http://{self.metrics}/metrics"])
        text = r.stdout.decode()
        got = {}
        for line in text.splitlines():
            if line.startswith("tessera_memory_bytes{part=\""):
                name = line.split('"')[1]
                got[name] = int(float(line.split()[-1])) // 1024
            elif line.startswith("tessera_buffers_in_use_bytes "):
                got["budget_in_use"] = int(float(line.split()[-1])) // 1024
        return [got.get(p, 0) for p in MEMORY_PARTS]


def run(args, **kw):
    return subprocess.run(args, capture_output=True, timeout=300, **kw)


MEMORY_PARTS = ["rocksdb_memtables", "rocksdb_block_cache", "rocksdb_table_readers",
                "meta_record_caches", "read_pool_idle", "read_blocks_kept", "budget_in_use",
                "allocator_in_use", "allocator_free"]


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


def put(srv, path, data, proto, tag=""):
    src = os.path.join(OUT, f"up{tag}.tmp")
    with open(src, "wb") as f:
        f.write(data)
    if proto == "xroot":
        r = run(["xrdcp", "-f", "-s", src, f"{srv.xroot}/{BASE}{path}"], env=ENV)
    else:
        r = run(["curl", "-sS", "-f", "--cacert", CA, "-H", "Authorization: Bearer " + ENV["BEARER_TOKEN"], "-T", src, f"{srv.https}{BASE}{path}"])
    return r.returncode == 0


def get(srv, path, proto, tag=""):
    dst = os.path.join(OUT, f"down{tag}.tmp")
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
    r = run(["xrdfs", srv.xroot, "ls", "-R", BASE], env=ENV)
    out = (l.strip()[len(BASE):] for l in r.stdout.decode().splitlines() if l.strip())
    return sorted(p for p in out if p.count("/") == 2 or not p.startswith("/c"))


class Client:
    """One client's names, model and operations (its rnd of its own)."""

    def __init__(self, k, seed):
        self.k, self.rnd = k, random.Random(seed)
        self.prefix = f"/c{k}" if CLIENTS > 1 else ""
        self.names = [f"{self.prefix}/f{i:03d}" for i in range(60)]
        self.model, self.maybe, self.ops = {}, {}, 0
        self.failure = None

    def step(self, srv):
        r = self.rnd
        op = r.choice(["put", "put", "get", "get", "get", "mv", "rm"])
        proto = r.choice(["xroot", "https"])
        path = r.choice(self.names)
        tag = str(self.k)
        self.ops += 1
        if op == "put":
            data = r.randbytes(r.choice([0, 1, 4096, 100_000, r.randint(1, 6 << 20)]))
            if put(srv, path, data, proto, tag):
                self.model[path] = digest(data)
                self.maybe.pop(path, None)
            else:
                log(f"upload of {path} over {proto} failed")
        elif op == "get":
            if path in self.maybe or path not in self.model:
                return
            got = get(srv, path, proto, tag)
            if got is None:
                self.failure = f"FAIL: {path} over {proto} cannot be read (seed {SEED})"
            elif digest(got) != self.model[path]:
                self.failure = f"FAIL: {path} over {proto} reads back wrong (seed {SEED})"
        elif op == "mv" and path in self.model and path not in self.maybe:
            dst = r.choice(self.names)
            if dst != path and dst not in self.maybe and xrdfs(srv, "mv", BASE + path, BASE + dst):
                self.model[dst] = self.model.pop(path)
        elif op == "rm" and path in self.model and path not in self.maybe:
            if xrdfs(srv, "rm", BASE + path):
                del self.model[path]

    def settle(self, srv):
        """What kill -9 left open: each must be one of its possibilities."""
        for path, possible in self.maybe.items():
            got = get(srv, path, "xroot")
            d = None if got is None else digest(got)
            if d not in possible:
                sys.exit(f"FAIL: {path} after kill -9 is neither before nor after (seed {SEED})")
            if d is None:
                self.model.pop(path, None)
            else:
                self.model[path] = d
        for path, d in self.model.items():
            got = get(srv, path, self.rnd.choice(["xroot", "https"]))
            if got is None or digest(got) != d:
                sys.exit(f"FAIL: {path} reads back wrong at the end (seed {SEED})")


def kill_during_upload(srv, c):
    """kill -9 while an upload is in flight (it runs as a child we do not
    wait for), then restart."""
    path = c.rnd.choice(c.names)
    data = body(c.rnd.randint(1, 8 << 20))
    src = os.path.join(OUT, "cut.tmp")
    open(src, "wb").write(data)
    p = subprocess.Popen(["xrdcp", "-f", "-s", src, f"{srv.xroot}/{BASE}{path}"], env=ENV,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(c.rnd.uniform(0.0, 0.3))
    log(f"kill -9 (upload of {path} in flight)")
    srv.kill9()
    # The dev issuer's URL names the HTTPS port, new at each start.
    ENV["BEARER_TOKEN"] = token()
    p.wait()
    c.maybe[path] = {c.model.get(path), digest(data)}


def main():
    import threading
    srv = Server()
    ENV["BEARER_TOKEN"] = token()
    clients = [Client(k, SEED * 7919 + k) for k in range(CLIENTS)]
    for c in clients:
        if not xrdfs(srv, "mkdir", "-p", BASE + c.prefix):
            sys.exit("cannot make " + BASE + c.prefix)
    end = time.time() + MINUTES * 60
    samples = open(os.path.join(OUT, "samples.csv"), "a")
    samples.write("elapsed_s,rss_kb,fds,threads," + ",".join(f"{p}_kb" for p in MEMORY_PARTS) + "\n")
    t0 = time.time()

    def sample():
        rss, fds, threads = srv.sample()
        parts = srv.parts()
        samples.write(f"{time.time() - t0:.0f},{rss},{fds},{threads}," + ",".join(map(str, parts)) + "\n")
        samples.flush()
        ops = sum(c.ops for c in clients)
        log(f"sample: rss {rss} kB, fds {fds}, threads {threads}, ops {ops}, parts {parts}")

    def work(c):
        while time.time() < end and c.failure is None:
            c.step(srv)

    if KILLS:
        c = clients[0]
        next_sample, next_kill = 0, time.time() + c.rnd.uniform(60, 240)
        while time.time() < end and c.failure is None:
            if time.time() >= next_sample:
                sample()
                next_sample = time.time() + 30
            if time.time() >= next_kill:
                kill_during_upload(srv, c)
                next_kill = time.time() + c.rnd.uniform(60, 240)
                continue
            c.step(srv)
    else:
        threads = [threading.Thread(target=work, args=(c,)) for c in clients]
        for t in threads:
            t.start()
        while any(t.is_alive() for t in threads):
            sample()
            for t in threads:
                t.join(timeout=max(0.0, 30 / len(threads)))
    for c in clients:
        if c.failure:
            sys.exit(c.failure)
        c.settle(srv)
    held = {p for c in clients for p in c.model}
    extra = set(listing(srv)) - held
    if extra:
        sys.exit(f"FAIL: files the model does not hold: {sorted(extra)} (seed {SEED})")
    sample()
    srv.stop()
    log(f"ok: {sum(c.ops for c in clients)} operations, {len(held)} files checked, seed {SEED}")


if __name__ == "__main__":
    main()
