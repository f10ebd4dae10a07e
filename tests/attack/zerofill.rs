//! Issue 35, item 9: a 40-byte request cannot make the server write
//! unbounded zeros. A truncate that grows a file (by path or by handle),
//! a write far past a file's end, and an update doing either add at most
//! 1 GiB of zeros (`kXR_Unsupported` beyond, at once, nothing changed);
//! and a truncate by path whose client leaves is given up, the file as
//! it was.

use crate::proc::Proc;
use crate::raw::{handle, Raw, ERROR, OK, OPEN_NEW};
use std::time::{Duration, Instant};

use tessera_xrdproto::req::TRUNCATE as KXR_TRUNCATE;
const UNSUPPORTED: i32 = 3013;
const TIB: u64 = 1 << 40;

fn truncate(r: &mut Raw, fh: [u8; 4], path: &str, size: u64) -> crate::raw::Reply {
    let mut p = [0u8; 16];
    p[0..4].copy_from_slice(&fh);
    p[4..12].copy_from_slice(&size.to_be_bytes());
    r.call(KXR_TRUNCATE, p, path.as_bytes())
}

fn size_of(p: &Proc, path: &str) -> u64 {
    let o = p.cli(&["-m", "stat", path]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    out.split_whitespace()
        .find_map(|kv| kv.strip_prefix("size="))
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("size in {out}"))
}

#[test]
fn zeros_are_bounded_per_request_and_stop_with_their_client() {
    let p = Proc::start(None, "");
    let tok = p.token("storage.modify:/data storage.read:/data");
    let mut r = Raw::login(p.xrootd, None, "writer");
    let q = |path: &str| format!("{path}?authz=Bearer%20{tok}");
    // A small file to truncate by path.
    let rep = r.open(&q("/data/z"), OPEN_NEW, 0o644);
    assert_eq!(rep.status, OK, "{}", rep.text());
    let fz = handle(&rep);
    assert_eq!(r.write(fz, 0, b"0123456789").status, OK);
    assert_eq!(r.close(fz).status, OK);
    let refused = |rep: &crate::raw::Reply, what: &str| {
        assert_eq!(
            (rep.status, rep.errnum()),
            (ERROR, UNSUPPORTED),
            "{what}: {}",
            rep.text()
        );
        assert!(rep.text().contains("zeros"), "{what}: {}", rep.text());
    };
    // By path, to 1 TiB: refused at once.
    let t = Instant::now();
    refused(
        &truncate(&mut r, [0; 4], &q("/data/z"), TIB),
        "truncate by path",
    );
    assert!(t.elapsed() < Duration::from_secs(5));
    assert_eq!(size_of(&p, "/data/z"), 10);
    // By handle on a new file; a write 1 TiB out.
    let rep = r.open(&q("/data/h"), OPEN_NEW, 0o644);
    let fh = handle(&rep);
    refused(&truncate(&mut r, fh, "", TIB), "truncate by handle");
    let rep = r.open(&q("/data/w"), OPEN_NEW, 0o644);
    let fw = handle(&rep);
    refused(&r.write(fw, TIB, b"far"), "a far write");
    // An update of the small file, growing it by far.
    let rep = r.open(&q("/data/z"), 0x0020, 0);
    assert_eq!(rep.status, OK, "update: {}", rep.text());
    let fu = handle(&rep);
    refused(&r.write(fu, TIB, b"far"), "an update's far write");
    drop(r);
    assert_eq!(size_of(&p, "/data/z"), 10);
    // Within the bound (900 MiB of zeros), but the client leaves at once:
    // the rewrite is given up and the file stays as it was.
    let mut r = Raw::login(p.xrootd, None, "writer");
    let mut params = [0u8; 16];
    params[4..12].copy_from_slice(&(900u64 << 20).to_be_bytes());
    let path = q("/data/z");
    r.send(KXR_TRUNCATE, params, path.len() as i32, path.as_bytes());
    std::thread::sleep(Duration::from_millis(200));
    drop(r);
    std::thread::sleep(Duration::from_secs(8));
    assert_eq!(
        size_of(&p, "/data/z"),
        10,
        "the truncate went on after its client left"
    );
}
