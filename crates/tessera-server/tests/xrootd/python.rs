//! The XRootD Python bindings (Debian's python3-xrootd, run with
//! /usr/bin/python3): writes out of order, sync, truncate, stat on an open
//! handle, random reads and readv checked byte for byte; over root:// and
//! roots://.

use crate::Env;

const SCRIPT: &str = r#"
import os, random, sys
from XRootD import client
from XRootD.client.flags import OpenFlags
url, base = sys.argv[1], sys.argv[2]
random.seed(7)
data = os.urandom(3_000_000)
f = client.File()
st, _ = f.open(url + "//" + base + "/t1.bin", OpenFlags.NEW | OpenFlags.MAKEPATH)
assert st.ok, st
# Second half first: held until the gap is filled.
st, _ = f.write(data[1_000_000:], 1_000_000); assert st.ok, st
st, _ = f.write(data[:1_000_000], 0); assert st.ok, st
st, _ = f.sync(); assert st.ok, st
st, _ = f.truncate(3_500_000); assert st.ok, st
st, _ = f.close(); assert st.ok, st
want = data + b"\0" * 500_000

f = client.File()
st, _ = f.open(url + "//" + base + "/t1.bin", OpenFlags.READ); assert st.ok, st
st, info = f.stat(force=True); assert st.ok, st
assert info.size == len(want), info.size
for _ in range(300):
    off = random.randrange(0, len(want) + 10)
    n = random.randrange(0, 200_000)
    st, got = f.read(off, n); assert st.ok, st
    assert got == want[off:off + n], (off, n)
chunks = [(random.randrange(0, len(want) - 5000), random.randrange(1, 5000)) for _ in range(500)]
st, vr = f.vector_read(chunks); assert st.ok, st
assert len(vr.chunks) == len(chunks)
for (off, n), c in zip(chunks, vr.chunks):
    assert c.offset == off and c.length == n and c.buffer == want[off:off + n], (off, n)
# Sorted short elements, as ROOT asks for baskets: read in runs of
# neighbours (one storage read each), every element still exact.
runs = sorted(chunks) + [(len(want) - 3000, 3000), (0, 1), (1, 1), (2_000_000, 300_000)]
st, vr = f.vector_read(runs); assert st.ok, st
assert len(vr.chunks) == len(runs)
for (off, n), c in zip(runs, vr.chunks):
    assert c.offset == off and c.length == n and c.buffer == want[off:off + n], (off, n)
# A large readv (several reply parts).
big = [(random.randrange(0, len(want) - 1_000_000), 1_000_000) for i in range(20)]
st, vr = f.vector_read(big); assert st.ok, st
for (off, n), c in zip(big, vr.chunks):
    assert c.buffer == want[off:off + n]
# Elements that fill a reply part exactly with the last one: the last part
# still carries elements (XrdCl fails a readv whose final reply is empty).
fill = sorted((random.randrange(0, len(want) - 65536), 65536) for _ in range(128))
st, vr = f.vector_read(fill, timeout=20); assert st.ok, st
for (off, n), c in zip(fill, vr.chunks):
    assert c.buffer == want[off:off + n]
# An element reaching past the end fails the readv at once (kXR_FSError,
# as the reference answers; XrdCl would retry a short element for ever).
st, _ = f.vector_read([(0, 4), (len(want) - 2, 10)], timeout=20)
assert not st.ok and st.errno == 3005, st
st, _ = f.vector_read([(len(want) + 100, 4)], timeout=20)
assert not st.ok and st.errno == 3005, st
st, got = f.read(0, 4); assert st.ok and got == want[:4], st
st, _ = f.close(); assert st.ok

fs = client.FileSystem(url)
st, _ = fs.truncate("/" + base + "/t1.bin", 1000); assert st.ok, st
st, info = fs.stat("/" + base + "/t1.bin"); assert st.ok and info.size == 1000, info
with client.File() as g:
    st, _ = g.open(url + "//" + base + "/t1.bin"); assert st.ok, st
    st, got = g.read(0, 5000); assert got == data[:1000]
st, listing = fs.dirlist("/" + base, client.flags.DirListFlags.STAT)
assert st.ok and [e.name for e in listing] == ["t1.bin"], listing
assert listing.dirlist[0].statinfo.size == 1000
# query config, as uproot's XRootD source reads it: each value ends with a
# newline and parses as it is (the reference's form, no trailing NUL).
from XRootD.client.flags import QueryCode
st, r = fs.query(QueryCode.CONFIG, "readv_iov_max readv_ior_max"); assert st.ok, st
assert r.endswith(b"\n") and b"\0" not in r, r
iov, ior = [int(x) for x in r.split(b"\n")[:2]]
assert iov == 1024 and ior > 0, r
st, r = fs.query(QueryCode.CONFIG, "tpc nonsense"); assert st.ok, st
assert r == b"tpc\nnonsense\n", r
print("python ok")
"#;

#[test]
fn python_bindings() {
    let e = Env::start();
    let script = e.local("t.py");
    std::fs::write(&script, SCRIPT).unwrap();
    for (url, base) in [(&e.url, "py"), (&e.tls_url, "py-tls")] {
        let out = e.ok("/usr/bin/python3", &[script.to_str().unwrap(), url, base]);
        assert!(out.contains("python ok"), "{url}: {out}");
    }
}

const HELD: &str = r#"
import sys
from XRootD import client
from XRootD.client.flags import OpenFlags
url = sys.argv[1]
chunk = b"h" * (60 << 20)
def open_new(name):
    f = client.File()
    st, _ = f.open(url + "//held/" + name, OpenFlags.NEW | OpenFlags.MAKEPATH); assert st.ok, st
    return f
# One file: at most 64 MiB held out of order.
f = open_new("one")
st, _ = f.write(chunk, 1); assert st.ok, st
st, _ = f.write(b"x" * (8 << 20), (100 << 20)); assert not st.ok and st.errno == 3013, st
st, _ = f.close(); assert not st.ok, st
# One connection (XrdCl shares it between files): at most 256 MiB held.
files = [open_new("f%d" % i) for i in range(5)]
for i, f in enumerate(files[:4]):
    st, _ = f.write(chunk, 1); assert st.ok, (i, st)
st, _ = files[4].write(chunk, 1); assert not st.ok and st.errno == 3013, st
for f in files[:4]:
    st, _ = f.write(b"z", 0); assert st.ok, st
    st, _ = f.close(); assert st.ok, st
st, _ = files[4].close(); assert not st.ok
# Released: a new file may hold again.
g = open_new("again")
st, _ = g.write(chunk, 1); assert st.ok, st
st, _ = g.write(b"z", 0); assert st.ok, st
st, _ = g.close(); assert st.ok, st
st, info = client.FileSystem(url).stat("/held/again"); assert st.ok and info.size == len(chunk) + 1, info
print("held ok")
"#;

/// Out-of-order writes are held within bounds: 64 MiB per file, 256 MiB
/// per connection; past them the write fails (kXR_Unsupported) and only
/// that file is aborted; what a file held is released when it ends.
#[test]
fn out_of_order_writes_are_bounded() {
    let e = Env::start();
    let script = e.local("held.py");
    std::fs::write(&script, HELD).unwrap();
    let out = e.ok("/usr/bin/python3", &[script.to_str().unwrap(), &e.url]);
    assert!(out.contains("held ok"), "{out}");
    let root = Env::root();
    let gone = e.rt.block_on(e.core().stat(&root, Env::path("/held/f4")));
    assert!(gone.is_err(), "the refused file is not visible");
}
