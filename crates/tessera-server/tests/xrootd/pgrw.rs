//! `kXR_pgread` and `kXR_pgwrite`: stock xrdcp moves plain-`root://` data
//! with them (the server says 0x511 and `kXR_suppgrw`), and a raw client
//! checks what the clients rely on: the `kXR_status` frames and their
//! CRC, pages aligned to file offsets with the stored CRCs, the damaged
//! pages of a pgwrite named for a retry, a close with pages still missing
//! refused (nothing visible), and a damaged page on disk answered with an
//! error (plain) or rebuilt (RAIN), never with wrong bytes.

use crate::bounds::Raw;
use crate::{data, write_file, Env};
use std::io::{Read, Write};
use std::sync::atomic::Ordering;
use tessera_xrdproto::{err, req, status};

const PAGE: usize = 4096;

/// An error reply: status and body.
type Refusal = (u16, Vec<u8>);

/// One `kXR_status` frame, checked: (response type, offset, data).
#[derive(Debug)]
struct Frame {
    kind: u8,
    offset: u64,
    data: Vec<u8>,
}

/// Send request `code` on the open file with the header bytes 16..20 and
/// `payload`.
fn send(r: &mut Raw, code: u16, offset: u64, p16: [u8; 4], payload: &[u8]) {
    let mut q = vec![0u8; 24];
    q[0..2].copy_from_slice(&7u16.to_be_bytes());
    q[2..4].copy_from_slice(&code.to_be_bytes());
    q[4..8].copy_from_slice(&r.fh);
    q[8..16].copy_from_slice(&offset.to_be_bytes());
    q[16..20].copy_from_slice(&p16);
    q[20..24].copy_from_slice(&(payload.len() as i32).to_be_bytes());
    q.extend_from_slice(payload);
    r.s.write_all(&q).unwrap();
}

/// The next reply: a status frame (its CRC checked), or another status
/// with its body.
fn next(r: &mut Raw, code: u16) -> Result<Frame, Refusal> {
    let mut h = [0u8; 8];
    r.s.read_exact(&mut h).unwrap();
    let st = u16::from_be_bytes([h[2], h[3]]);
    let mut b = vec![0u8; u32::from_be_bytes(h[4..8].try_into().unwrap()) as usize];
    r.s.read_exact(&mut b).unwrap();
    if st != status::STATUS {
        return Err((st, b));
    }
    assert_eq!(b.len(), 24, "status body and offset");
    let crc = u32::from_be_bytes(b[..4].try_into().unwrap());
    assert_eq!(crc, crc32c::crc32c(&b[4..]), "status body CRC");
    assert_eq!(&b[4..6], &h[..2], "stream id in the status body");
    // The request id: the code less kXR_1stRequest (kXR_auth's).
    assert_eq!(b[6] as u16, code - req::AUTH, "request id");
    let dlen = u32::from_be_bytes(b[12..16].try_into().unwrap()) as usize;
    let mut data = vec![0u8; dlen];
    r.s.read_exact(&mut data).unwrap();
    Ok(Frame {
        kind: b[7],
        offset: u64::from_be_bytes(b[16..24].try_into().unwrap()),
        data,
    })
}

/// A pgread of `len` at `offset`: the bytes (every page's CRC checked),
/// and the frames' offsets; or the error reply.
fn pgread(r: &mut Raw, offset: u64, len: i32) -> Result<(Vec<u8>, Vec<u64>), Refusal> {
    send(r, req::PGREAD, offset, len.to_be_bytes(), &[0, 0]);
    let (mut out, mut offsets) = (Vec::new(), Vec::new());
    loop {
        let f = next(r, req::PGREAD)?;
        assert_eq!(f.offset, offset + out.len() as u64, "frames in order");
        offsets.push(f.offset);
        let (mut at, mut pos) = (0, f.offset as usize);
        while at < f.data.len() {
            let n = (PAGE - pos % PAGE).min(f.data.len() - at - 4);
            let crc = u32::from_be_bytes(f.data[at..at + 4].try_into().unwrap());
            let page = &f.data[at + 4..at + 4 + n];
            assert_eq!(crc, crc32c::crc32c(page), "page CRC at {pos}");
            out.extend_from_slice(page);
            at += 4 + n;
            pos += n;
        }
        if f.kind == 0 {
            return Ok((out, offsets));
        }
        assert_eq!(f.kind, 1, "partial");
    }
}

/// `data` at `offset` as pgwrite pages; the pages numbered in `damage`
/// with a wrong CRC.
fn pages(offset: u64, data: &[u8], damage: &[usize]) -> Vec<u8> {
    let mut out = Vec::new();
    let (mut pos, mut i, mut k) = (offset as usize, 0, 0);
    while i < data.len() {
        let n = (PAGE - pos % PAGE).min(data.len() - i);
        let mut crc = crc32c::crc32c(&data[i..i + n]);
        if damage.contains(&k) {
            crc ^= 0x10;
        }
        out.extend_from_slice(&crc.to_be_bytes());
        out.extend_from_slice(&data[i..i + n]);
        (i, pos, k) = (i + n, pos + n, k + 1);
    }
    out
}

/// A pgwrite (`retry`: `kXR_pgRetry`): the pages the server wants again.
fn pgwrite(r: &mut Raw, offset: u64, payload: &[u8], retry: bool) -> Vec<(u64, usize)> {
    send(r, req::PGWRITE, offset, [0, u8::from(retry), 0, 0], payload);
    let f = next(r, req::PGWRITE).unwrap_or_else(|(st, b)| panic!("pgwrite: {st} {b:?}"));
    assert_eq!((f.kind, f.offset), (0, offset));
    if f.data.is_empty() {
        return Vec::new();
    }
    let crc = u32::from_be_bytes(f.data[..4].try_into().unwrap());
    assert_eq!(crc, crc32c::crc32c(&f.data[4..]), "CSE CRC");
    let first = i16::from_be_bytes([f.data[4], f.data[5]]) as usize;
    let last = i16::from_be_bytes([f.data[6], f.data[7]]) as usize;
    let offs: Vec<u64> = f.data[8..]
        .chunks(8)
        .map(|c| u64::from_be_bytes(c.try_into().unwrap()))
        .collect();
    let n = offs.len();
    offs.into_iter()
        .enumerate()
        .map(|(i, o)| {
            (
                o,
                if i == 0 {
                    first
                } else if i == n - 1 {
                    last
                } else {
                    PAGE
                },
            )
        })
        .collect()
}

fn close(r: &mut Raw) -> (u16, Vec<u8>) {
    r.call(req::CLOSE, 0, 0, &[])
}

fn stats(e: &Env) -> &tessera_xrootd::Stats {
    e.server.as_ref().unwrap().xrootd_stats.as_ref().unwrap()
}

#[test]
fn xrdcp_moves_plain_root_data_in_checksummed_pages() {
    let e = Env::start();
    e.rain_dir("/rain");
    for (i, path) in ["/pg/plain", "/rain/f"].iter().enumerate() {
        let body = data(20 * 1_048_576 + 4321, 40 + i as u64);
        let f = e.local(&format!("f{i}"));
        write_file(&f, &body);
        let url = format!("{}/{path}", e.url);
        let writes = stats(&e).pgwrites.load(Ordering::Relaxed);
        e.ok("xrdcp", &["-s", "--posc", f.to_str().unwrap(), &url]);
        assert!(
            stats(&e).pgwrites.load(Ordering::Relaxed) > writes,
            "{path}: pgwrite used"
        );
        let back = e.local(&format!("b{i}"));
        let (reads, stored) = (
            stats(&e).pgreads.load(Ordering::Relaxed),
            stats(&e).page_crcs_stored.load(Ordering::Relaxed),
        );
        e.ok("xrdcp", &["-s", &url, back.to_str().unwrap()]);
        assert!(std::fs::read(&back).unwrap() == body, "{path}");
        assert!(
            stats(&e).pgreads.load(Ordering::Relaxed) > reads,
            "{path}: pgread used"
        );
        // Every whole page but those of a RAIN file's last group went out
        // with the CRC its stripe stores.
        let sent = stats(&e).page_crcs_stored.load(Ordering::Relaxed) - stored;
        assert!(
            sent as usize >= body.len() / PAGE - 2048,
            "{path}: {sent} stored CRCs sent"
        );
    }
}

#[test]
fn pgread_sends_aligned_pages_in_status_frames() {
    let e = Env::start();
    let body = data(9 * 1_048_576 + 1000, 7);
    let f = e.local("f");
    write_file(&f, &body);
    e.ok(
        "xrdcp",
        &["-s", f.to_str().unwrap(), &format!("{}//pg/r", e.url)],
    );
    let mut r = Raw::open(&e, "/pg/r");
    // Unaligned start, longer than one frame: the next frame starts on a
    // page boundary.
    let (got, frames) = pgread(&mut r, 1000, 9 << 20).unwrap();
    assert!(got == body[1000..], "bytes from 1000");
    assert!(
        frames.len() >= 2 && frames[1..].iter().all(|o| o % PAGE as u64 == 0),
        "{frames:?}"
    );
    // The end of the file: a short last page; past the end: no data.
    let size = body.len() as u64;
    let (got, _) = pgread(&mut r, size - 10, 8192).unwrap();
    assert!(got == body[body.len() - 10..]);
    let (got, frames) = pgread(&mut r, size + 5, 100).unwrap();
    assert_eq!((got.len(), frames), (0, vec![size + 5]));
    // A zero length is refused (kXR_ArgInvalid).
    send(&mut r, req::PGREAD, 0, 0i32.to_be_bytes(), &[]);
    let (st, b) = next(&mut r, req::PGREAD).expect_err("refused");
    assert_eq!(
        (st, crate::bounds::errnum(&b)),
        (status::ERROR, err::ARG_INVALID)
    );
}

#[test]
fn pgwrite_names_damaged_pages_and_takes_them_again() {
    let e = Env::start();
    let body = data(5 * PAGE + 700, 9);
    // Page 0 is 96 bytes (offset 4000 of the first page): pages 2 and 4
    // (file 8192 and 16384) arrive damaged.
    let mut r = Raw::create(&e, "/pg/w");
    let mut file = vec![0u8; 0];
    let head = data(4000, 1);
    assert!(pgwrite(&mut r, 0, &pages(0, &head, &[]), false).is_empty());
    file.extend_from_slice(&head);
    let bad = pgwrite(&mut r, 4000, &pages(4000, &body, &[2, 4]), false);
    assert_eq!(bad, vec![(8192, PAGE), (16384, PAGE)]);
    file.extend_from_slice(&body);
    // Resent (kXR_pgRetry), one page a request as XrdCl does.
    for (off, len) in bad {
        let at = (off - 4000) as usize;
        let fix = pages(off, &body[at..at + len], &[]);
        assert!(
            pgwrite(&mut r, off, &fix, true).is_empty(),
            "retry at {off}"
        );
    }
    assert_eq!(close(&mut r).0, 0, "close");
    let back = e.local("back");
    e.ok(
        "xrdcp",
        &["-s", &format!("{}//pg/w", e.url), back.to_str().unwrap()],
    );
    assert!(std::fs::read(&back).unwrap() == file, "content");
    assert!(stats(&e).page_crc_errors.load(Ordering::Relaxed) >= 2);

    // Not resent: the close fails with kXR_ChkSumErr and nothing is there.
    let mut r = Raw::create(&e, "/pg/lost");
    assert_eq!(pgwrite(&mut r, 0, &pages(0, &body, &[1]), false).len(), 1);
    let (st, b) = close(&mut r);
    assert_eq!(
        (st, crate::bounds::errnum(&b)),
        (status::ERROR, err::CHKSUM_ERR)
    );
    let out = e.fails("xrdfs", &[&e.url, "stat", "/pg/lost"]);
    assert!(
        out.contains("3011") || out.contains("No such file"),
        "{out}"
    );
}

#[test]
fn a_damaged_page_on_disk_is_an_error_or_rebuilt_never_wrong_bytes() {
    // RAIN 4+2: rebuilt from parity, the right bytes with right CRCs.
    let e = Env::start();
    e.rain_dir("/rain");
    let body = data(6 * 1_048_576, 3);
    let f = e.local("f");
    write_file(&f, &body);
    e.ok(
        "xrdcp",
        &["-s", f.to_str().unwrap(), &format!("{}//rain/d", e.url)],
    );
    e.corrupt_first_stripe();
    let mut r = Raw::open(&e, "/rain/d");
    let (got, _) = pgread(&mut r, 0, 64 << 10).unwrap();
    assert!(got == body[..64 << 10], "rebuilt");
    let (got, _) = pgread(&mut r, 0, 4 << 20).unwrap();
    assert!(got == body[..4 << 20], "rebuilt");
    drop(r);
    drop(e);

    // Plain: nothing to rebuild from; an error, not the damaged bytes.
    let e = Env::start();
    let f = e.local("f");
    write_file(&f, &body);
    e.ok(
        "xrdcp",
        &["-s", f.to_str().unwrap(), &format!("{}//pg/d", e.url)],
    );
    let stripe = walk(&e.dir.path().join("data").join("fs"));
    let mut raw = std::fs::read(&stripe).unwrap();
    raw[4096 + 5000] ^= 0x08; // block 0, page 1
    std::fs::write(&stripe, &raw).unwrap();
    let mut r = Raw::open(&e, "/pg/d");
    for (off, len) in [(4096u64, 4096), (0, 1 << 20)] {
        let (st, b) = pgread(&mut r, off, len).expect_err("refused");
        assert_eq!(st, status::ERROR, "{off}: {}", String::from_utf8_lossy(&b));
    }
    // The pages that are not damaged still read.
    let (got, _) = pgread(&mut r, 2 << 20, 8192).unwrap();
    assert!(got == body[2 << 20..(2 << 20) + 8192]);
}

/// The only stripe file under `dir`.
fn walk(dir: &std::path::Path) -> std::path::PathBuf {
    let mut found = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                todo.push(p);
            } else if !e.file_name().to_string_lossy().starts_with('.') {
                found.push(p);
            }
        }
    }
    assert_eq!(found.len(), 1, "{found:?}");
    found.pop().unwrap()
}
