#!/usr/bin/env python3
"""A test collector of the XRootD monitoring stream, as WLCG's collectors
read it: packets decoded by xrootdlib (PyPI, an independent decoder of
XrdXrootdMonData.hh), joined as the OSG collector joins them (a user's
`u` map, then an `f`-stream open of a file id, then its close), one
transfer record per closed file.

usage: collector.py PORTFILE OUTFILE STOPFILE
Binds 127.0.0.1:0, writes its port to PORTFILE, collects until STOPFILE
exists and no packet came for 2 s, then writes OUTFILE: {"idents": [...],
"records": [...], "packets": N, "sources": [...], "errors": [...]}.
"""
import json
import os
import socket
import sys
import time
import urllib.parse

from xrootdlib.structs.XrdXrootdMon import Packet

portfile, outfile, stopfile = sys.argv[1:4]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0))
s.settimeout(0.2)
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
os.rename(portfile + ".tmp", portfile)

users, paths, opens = {}, {}, {}
out = {"idents": [], "records": [], "packets": 0, "sources": [], "errors": [], "stods": []}
last = time.time()


def text(b):
    return b.decode() if isinstance(b, bytes) else b


def uid(u):
    return {"prot": text(u.prot), "user": text(u.user), "pid": u.pid, "sid": u.sid, "host": text(u.host)}


def handle(data, src):
    p = Packet.from_buffer(data)
    h = p.header
    if h.plen != len(data):
        out["errors"].append(f"plen {h.plen} != {len(data)}")
    if src not in out["sources"]:
        out["sources"].append(src)
    if h.stod not in out["stods"]:
        out["stods"].append(h.stod)
    code = text(h.code)
    r = p.record
    if code == "=":
        si = r.payload
        out["idents"].append({"userid": uid(r.userid), "pgm": text(si.pgm), "ver": text(si.ver),
                              "inst": text(si.inst), "port": si.port, "site": text(si.site)})
    elif code == "u":
        # The user's text after the id, read as the OSG collector reads it
        # (parse_qsl): xrootdlib 0.3.0 looks its keys up by long names.
        info = data[12:].decode()
        cgi = info.split("\n", 1)[1] if "\n" in info else ""
        users[r.dictid] = {"userid": uid(r.userid),
                           "auth": dict(urllib.parse.parse_qsl(cgi.lstrip("&"), keep_blank_values=True))}
    elif code == "d":
        paths[r.dictid] = text(r.payload.path)
    elif code == "f":
        tod = r.tod
        if tod.records_total != len(r.records):
            out["errors"].append(f"TOD says {tod.records_total} records, {len(r.records)} decoded")
        for rec in r.records:
            kind = type(rec).__name__
            if kind == "FileOPN":
                opens[rec.fileid] = rec
            elif kind == "FileCLS":
                o = opens.pop(rec.fileid, None)
                if o is None:
                    out["errors"].append(f"close of file {rec.fileid} never opened")
                    continue
                u = users.get(o.user)
                out["records"].append({
                    "filename": text(o.lfn) if o.flags & 0x01 else paths.get(rec.fileid),
                    "d_path": paths.get(rec.fileid),
                    "filesize": o.fsz,
                    "write_open": bool(o.flags & 0x02),
                    "read": rec.read, "readv": rec.readv, "write": rec.write,
                    "forced": bool(rec.flags & 0x01),
                    "ops": None if rec.ops is None else {
                        "read": rec.ops.read, "readv": rec.ops.readv, "write": rec.ops.write},
                    "user": u,
                    "sid_matches": u is not None and u["userid"]["sid"] == tod.sid,
                })
            elif kind == "FileDSC":
                out.setdefault("disconnects", []).append(rec.dictid)


while True:
    try:
        data, addr = s.recvfrom(65536)
    except socket.timeout:
        if os.path.exists(stopfile) and time.time() - last > 2.0:
            break
        continue
    last = time.time()
    out["packets"] += 1
    try:
        handle(data, f"{addr[0]}:{addr[1]}")
    except Exception as e:  # a packet the decoder refuses is the test's failure
        out["errors"].append(f"{type(e).__name__}: {e} in {data.hex()}")
with open(outfile, "w") as f:
    json.dump(out, f, indent=1)
