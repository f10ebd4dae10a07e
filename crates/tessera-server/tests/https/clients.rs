//! curl, davix and gfal2 against the gateway.

use crate::{adler32, data, evict_page_cache, reads_in_line, reads_in_line_after, Env};

#[test]
fn curl_methods_and_ranges() {
    let e = Env::start();
    let body = data(3_000_017, 1);
    let f = e.file("up", &body);
    let u = format!("{}/c/space%20and%20%C3%BCmlaut.bin", e.url);
    // PUT (parents created), then GET byte for byte.
    assert_eq!(e.curl(&["-T", f.to_str().unwrap(), &u]).0, 201);
    let (code, got) = e.curl(&[&u]);
    assert_eq!(code, 200);
    assert!(got == body);
    // Overwrite: 204.
    assert_eq!(e.curl(&["-T", f.to_str().unwrap(), &u]).0, 204);
    // One range, several ranges.
    let (code, got) = e.curl(&["-r", "6-10", &u]);
    assert_eq!((code, got.as_slice()), (206, &body[6..=10]));
    let (code, got) = e.curl(&["-r", "2999990-", &u]);
    assert_eq!((code, got.as_slice()), (206, &body[2_999_990..]));
    let (code, got) = e.curl(&["-H", "Range: bytes=0-1,1000000-1000009,-5", &u]);
    assert_eq!(code, 206);
    let text = String::from_utf8_lossy(&got);
    assert!(text.contains("Content-Range: bytes 0-1/3000017"), "{text}");
    assert!(
        text.contains("Content-Range: bytes 2999012-2999016/3000017")
            || text.contains("Content-Range: bytes 3000012-3000016/3000017")
    );
    for (f, l) in [
        (0usize, 1usize),
        (1_000_000, 1_000_009),
        (3_000_012, 3_000_016),
    ] {
        let want = &body[f..=l];
        assert!(got.windows(want.len()).any(|w| w == want), "part {f}-{l}");
    }
    // The same on a small file (served from memory).
    let small = data(5000, 9);
    let sf = e.file("small", &small);
    let su = format!("{}/c/small", e.url);
    assert_eq!(e.curl(&["-T", sf.to_str().unwrap(), &su]).0, 201);
    assert!(e.curl(&[&su]).1 == small);
    let (code, got) = e.curl(&["-r", "10-20", &su]);
    assert_eq!((code, got.as_slice()), (206, &small[10..=20]));
    let (code, got) = e.curl(&["-H", "Range: bytes=0-3,-4", &su]);
    assert_eq!(code, 206);
    assert!(String::from_utf8_lossy(&got).contains("Content-Range: bytes 4996-4999/5000"));
    assert!(got.windows(4).any(|w| w == &small[4996..]));
    // Unsatisfiable and bogus ranges: 416.
    assert_eq!(e.curl(&["-r", "5000000-5000001", &u]).0, 416);
    assert_eq!(e.curl(&["-H", "Range: bytes=9-3", &u]).0, 416);
    // HEAD with a digest, conditional GET.
    let o = e.curl_ok(&["-I", "-H", "Want-Digest: ADLER32", &u]);
    assert!(
        o.contains(&format!("digest: adler32={}", adler32(&body))),
        "{o}"
    );
    assert!(o.contains("content-length: 3000017"), "{o}");
    // crc32c as Digest (base64, RFC 3230) and as Repr-Digest (RFC 9530).
    let b64 = b64(&crc32c::crc32c(&body).to_be_bytes());
    let head = |hdr: &str| e.curl_ok(&["-I", "-H", hdr, &u]);
    let o = head("Want-Digest: adler32;q=0.3, crc32c;q=0.8");
    assert!(o.contains(&format!("digest: crc32c={}", b64)), "{o}");
    let o = head("Want-Repr-Digest: crc32c=9, adler=2");
    assert!(o.contains(&format!("repr-digest: crc32c=:{}:", b64)), "{o}");
    let o = head("Want-Digest: md5");
    assert!(!o.contains("digest:"), "{o}");
    let etag = o
        .lines()
        .find_map(|l| l.strip_prefix("etag: "))
        .expect("etag")
        .trim()
        .to_string();
    assert_eq!(
        e.curl(&["-H", &format!("If-None-Match: {etag}"), &u]).0,
        304
    );
    // MKCOL, PROPFIND depth 0 and 1, MOVE, DELETE.
    assert_eq!(e.curl(&["-X", "MKCOL", &format!("{}/c/sub", e.url)]).0, 201);
    assert_eq!(e.curl(&["-X", "MKCOL", &format!("{}/c/sub", e.url)]).0, 405);
    assert_eq!(
        e.curl(&["-X", "MKCOL", &format!("{}/nothere/sub", e.url)])
            .0,
        409
    );
    let (code, xml) = e.curl(&["-X", "PROPFIND", "-H", "Depth: 1", &format!("{}/c/", e.url)]);
    let xml = String::from_utf8_lossy(&xml).into_owned();
    assert_eq!(code, 207, "{xml}");
    let first = xml.find("<D:href>/c/</D:href>").expect("the collection");
    let file = xml
        .find("<D:href>/c/space%20and%20%C3%BCmlaut.bin</D:href>")
        .expect("the file");
    assert!(first < file, "the collection comes first");
    assert!(xml.contains("<D:getcontentlength>3000017</D:getcontentlength>"));
    let (code, xml) = e.curl(&["-X", "PROPFIND", "-H", "Depth: 0", &u]);
    assert_eq!(code, 207);
    assert_eq!(
        String::from_utf8_lossy(&xml)
            .matches("<D:response>")
            .count(),
        1
    );
    // Depth infinity is refused as RFC 4918 allows (not answered as 1);
    // no Depth at all is answered as 1; a bogus one is a 400.
    let c = format!("{}/c/", e.url);
    let (code, xml) = e.curl(&["-X", "PROPFIND", "-H", "Depth: infinity", &c]);
    assert_eq!(code, 403);
    assert!(String::from_utf8_lossy(&xml).contains("<D:propfind-finite-depth/>"));
    let (code, xml) = e.curl(&["-X", "PROPFIND", &c]);
    assert_eq!(code, 207);
    assert!(String::from_utf8_lossy(&xml).contains("space%20and%20%C3%BCmlaut.bin"));
    assert_eq!(e.curl(&["-X", "PROPFIND", "-H", "Depth: 2", &c]).0, 400);
    // A MOVE to another server is refused, the file stays.
    assert_eq!(
        e.curl(&[
            "-X",
            "MOVE",
            "-H",
            "Destination: https://elsewhere.example/c/x.bin",
            &u
        ])
        .0,
        502
    );
    let moved = format!("{}/c/sub/moved.bin", e.url);
    assert_eq!(
        e.curl(&["-X", "MOVE", "-H", &format!("Destination: {moved}"), &u])
            .0,
        201
    );
    assert_eq!(e.curl(&[&u]).0, 404);
    // DELETE of a collection takes everything under it (RFC 4918 §9.6.1).
    assert_eq!(
        e.curl(&["-X", "DELETE", &format!("{}/c/sub", e.url)]).0,
        204,
        "a collection with a file"
    );
    assert_eq!(e.curl(&[&moved]).0, 404);
    assert_eq!(
        e.curl(&["-X", "DELETE", &format!("{}/c/sub", e.url)]).0,
        404
    );
    let (code, _) = e.curl(&["-X", "OPTIONS", &e.url]);
    assert_eq!(code, 200);
}

/// COPY inside the namespace (a Destination on this server, no
/// third-party-copy headers): the bytes and both checksums arrive, and the
/// WebDAV answers: 201, 204, 412, 409, 403, 404.
#[test]
fn curl_copy_inside_the_namespace() {
    let e = Env::start();
    let body = data(9_000_011, 3);
    let f = e.file("up", &body);
    let a = format!("{}/cp/a.bin", e.url);
    assert_eq!(e.curl(&["-T", f.to_str().unwrap(), &a]).0, 201);
    let copy = |dest: &str, extra: &[&str]| {
        let d = format!("Destination: {dest}");
        let mut h = vec![d.as_str()];
        h.extend_from_slice(extra);
        e.copy(&a, &h)
    };
    let b = format!("{}/cp/b.bin", e.url);
    assert_eq!(copy(&b, &[]), (201, String::new()));
    assert!(e.curl(&[&b]).1 == body, "copied bytes differ");
    let digest = |u: &str| {
        let (_, h) = e.curl(&["-I", "-H", "Want-Digest: adler32, crc32c", "-D", "-", u]);
        String::from_utf8_lossy(&h)
            .lines()
            .find(|l| l.to_ascii_lowercase().starts_with("digest:"))
            .map(|l| l.to_string())
    };
    let want = digest(&a).expect("a digest");
    assert!(want.contains(&adler32(&body)), "{want}");
    assert_eq!(digest(&b), Some(want));
    assert_eq!(copy(&b, &[]).0, 204, "replaced");
    assert_eq!(copy(&b, &["Overwrite: F"]).0, 412);
    assert_eq!(copy("/cp/c.bin", &[]).0, 201, "a path as Destination");
    assert!(e.curl(&[&format!("{}/cp/c.bin", e.url)]).1 == body);
    let orphan = format!("{}/nothere/x.bin", e.url);
    assert_eq!(copy(&orphan, &[]).0, 409, "no parent directory");
    assert_eq!(e.curl(&[&orphan]).0, 404, "nothing left behind");
    assert_eq!(copy(&a, &[]).0, 403, "onto itself");
    // A collection: the whole tree (Depth infinity), or only itself.
    let dir = format!("{}/cp", e.url);
    assert_eq!(
        e.copy(&dir, &[&format!("Destination: {}/cp2", e.url)]).0,
        201
    );
    assert!(e.curl(&[&format!("{}/cp2/c.bin", e.url)]).1 == body);
    assert_eq!(
        e.copy(&dir, &[&format!("Destination: {}/cp3", e.url), "Depth: 0"])
            .0,
        201
    );
    assert_eq!(e.curl(&[&format!("{}/cp3/c.bin", e.url)]).0, 404);
    assert_eq!(
        e.copy(&dir, &[&format!("Destination: {}/cp/in", e.url)]).0,
        403,
        "into itself"
    );
    let gone = format!("{}/cp/gone.bin", e.url);
    assert_eq!(e.copy(&gone, &[&format!("Destination: {b}")]).0, 404);
    assert!(e.curl(&[&b]).1 == body, "b unchanged by the failed copies");
}

#[test]
fn davix_and_gfal2() {
    let e = Env::start();
    let body = data(1_234_567, 2);
    let f = e.file("up", &body);
    let capath = e.ca_dir.to_str().unwrap().to_string();
    let u = format!("{}/dv/x.bin", e.url);
    e.ok("davix-put", &["--capath", &capath, f.to_str().unwrap(), &u]);
    let ls = e.ok(
        "davix-ls",
        &["-l", "--capath", &capath, &format!("{}/dv/", e.url)],
    );
    assert!(ls.contains("1234567") && ls.contains("x.bin"), "{ls}");
    let back = e.local("back");
    e.ok(
        "davix-get",
        &["--capath", &capath, &u, back.to_str().unwrap()],
    );
    assert!(std::fs::read(&back).unwrap() == body);
    e.ok(
        "davix-mkdir",
        &["--capath", &capath, &format!("{}/dv/sub", e.url)],
    );
    e.ok(
        "davix-rm",
        &["--capath", &capath, &format!("{}/dv/sub", e.url)],
    );
    // gfal2 (http plugin): copy in and out, ls, stat, sum, rm.
    let g = format!("{}/gf/y.bin", e.url);
    e.ok("gfal-mkdir", &["-p", &format!("{}/gf", e.url)]);
    e.ok("gfal-copy", &["-f", &format!("file://{}", f.display()), &g]);
    let st = e.ok("gfal-stat", &[&g]);
    assert!(st.contains("1234567"), "{st}");
    let sum = e.ok("gfal-sum", &[&g, "ADLER32"]);
    assert!(sum.trim().ends_with(&adler32(&body)), "{sum}");
    // gfal2 shows the Digest value as sent: base64 for crc32c (RFC 3230).
    let sum = e.ok("gfal-sum", &[&g, "CRC32C"]);
    let crc = crc32c::crc32c(&body).to_be_bytes();
    assert!(sum.trim().ends_with(&b64(&crc)), "{sum}");
    let ls = e.ok("gfal-ls", &[&format!("{}/gf", e.url)]);
    assert_eq!(ls.trim(), "y.bin");
    let back2 = e.local("back2");
    e.ok(
        "gfal-copy",
        &["-f", &g, &format!("file://{}", back2.display())],
    );
    assert!(std::fs::read(&back2).unwrap() == body);
    e.ok("gfal-rm", &[&g]);
    assert_eq!(e.curl(&[&g]).0, 404);
}

/// Base64 of `b`, computed by Python's standard library (independent of
/// the server's encoder).
fn b64(b: &[u8]) -> String {
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    let out = std::process::Command::new("/usr/bin/python3")
        .args([
            "-c",
            "import base64,sys; print(base64.b64encode(bytes.fromhex(sys.argv[1])).decode())",
            &hex,
        ])
        .output()
        .expect("python3");
    String::from_utf8(out.stdout).unwrap().trim().to_string()
}

/// PROPFIND bodies: a `prop` list gets what it names (unknown properties in
/// a 404 propstat), `propname` gets names only, `allprop` (and no body)
/// everything; LCGDM's mode, owner and group, which davix reads, so that
/// `gfal-ls -l` and `gfal-stat` show the real permissions. Bodies that are
/// not well-formed, or carry a DTD (XML bombs), are a 400.
#[test]
fn propfind_bodies() {
    let e = Env::start();
    let f = e.file("a.txt", b"hello");
    let u = format!("{}/pf/a.txt", e.url);
    assert_eq!(e.curl(&["-T", f.to_str().unwrap(), &u]).0, 201);
    assert_eq!(e.curl(&["-X", "MKCOL", &format!("{}/pf/d", e.url)]).0, 201);
    let dir = format!("{}/pf/", e.url);
    let find = |depth: &str, body: &str, url: &str| {
        let (code, xml) = e.curl(&[
            "-X",
            "PROPFIND",
            "-H",
            &format!("Depth: {depth}"),
            "-H",
            "Content-Type: application/xml",
            "--data-binary",
            body,
            url,
        ]);
        (code, String::from_utf8_lossy(&xml).into_owned())
    };
    // davix's listing body.
    let davix = r#"<?xml version="1.0" encoding="utf-8" ?><D:propfind xmlns:D="DAV:" xmlns:L="LCGDM:"><D:prop><D:displayname/><D:getlastmodified/><D:creationdate/><D:getcontentlength/><D:quota-used-bytes/><D:resourcetype/><L:mode/><L:owner/><L:group/></D:prop></D:propfind>"#;
    let (code, xml) = find("1", davix, &dir);
    assert_eq!(code, 207, "{xml}");
    let core = e.core();
    let stat = |p: &str| {
        e.rt.block_on(core.stat(&Env::root(), Env::path(p)))
            .unwrap()
    };
    let (fi, di) = (stat("/pf/a.txt"), stat("/pf/d"));
    assert!(xml.find("<D:href>/pf/</D:href>") < xml.find("<D:href>/pf/a.txt</D:href>"));
    let fmode = format!("<L:mode>{:o}</L:mode>", 0o100000 | fi.mode);
    let dmode = format!("<L:mode>{:o}</L:mode>", 0o040000 | di.mode);
    assert!(xml.contains(&fmode) && xml.contains(&dmode), "{xml}");
    assert!(
        xml.contains(&format!("<L:owner>{}</L:owner>", fi.uid)),
        "{xml}"
    );
    assert!(xml.contains("<D:getcontentlength>5</D:getcontentlength>"));
    // What we do not have is named in a 404 propstat, once per response.
    assert_eq!(
        xml.matches("<D:quota-used-bytes/></D:prop><D:status>HTTP/1.1 404 Not Found")
            .count(),
        3,
        "{xml}"
    );
    // Only what is asked for.
    let one = r#"<propfind xmlns="DAV:"><prop><getcontentlength/><x:color xmlns:x="urn:x"/></prop></propfind>"#;
    let (code, xml) = find("0", one, &u);
    assert_eq!(code, 207);
    assert!(
        xml.contains("<D:getcontentlength>5</D:getcontentlength>"),
        "{xml}"
    );
    assert!(!xml.contains("getlastmodified"), "{xml}");
    assert!(xml.contains(r#"<color xmlns="urn:x"/>"#), "{xml}");
    // Names only.
    let names = r#"<D:propfind xmlns:D="DAV:"><D:propname/></D:propfind>"#;
    let (code, xml) = find("0", names, &u);
    assert_eq!(code, 207);
    assert!(
        xml.contains("<D:getcontentlength/>") && xml.contains("<L:mode/>"),
        "{xml}"
    );
    assert!(!xml.contains("<D:getcontentlength>"), "{xml}");
    // Not well-formed, or a DTD: 400, with the reason.
    for bad in [
        "<propfind xmlns=\"DAV:\"><prop></propfind>",
        "<!DOCTYPE lolz [<!ENTITY lol \"lol\"><!ENTITY lol2 \"&lol;&lol;&lol;\">]><propfind xmlns=\"DAV:\"><prop>&lol2;</prop></propfind>",
        "<D:propfind><D:allprop/></D:propfind>",
        "hello",
    ] {
        let (code, text) = find("0", bad, &u);
        assert_eq!(code, 400, "{bad}: {text}");
        assert!(text.contains("PROPFIND body"), "{text}");
    }
    // gfal2 (through davix) shows the permissions and owner we store.
    let st = e.ok("gfal-stat", &[&u]);
    assert!(st.contains(&format!("Access: ({:04o}/", fi.mode)), "{st}");
    let ls = e.ok("gfal-ls", &["-l", &dir]);
    let line = ls
        .lines()
        .find(|l| l.trim_end().ends_with("a.txt"))
        .expect(&ls);
    let rwx: String = (0..9)
        .map(|b| match (fi.mode >> (8 - b)) & 1 {
            0 => '-',
            _ => ['r', 'w', 'x'][b % 3],
        })
        .collect();
    assert!(line.starts_with(&format!("-{rwx}")), "{rwx}: {ls}");
    let line = ls
        .lines()
        .find(|l| l.trim_end().ends_with(" d"))
        .expect(&ls);
    assert!(line.starts_with('d'), "{ls}");
}

/// A GET of a file the kernel holds in memory is served on the request's
/// own thread; with its stripe out of the page cache it goes to the
/// blocking pool (the same bytes), and is in memory for the next GET.
/// (A non-blocking read that misses starts the kernel's read-ahead, and on
/// a busy machine that I/O can finish before the same call looks again:
/// the first GET after the eviction may then be in line too, with the
/// same bytes. Never anything else.)
#[test]
fn gets_of_files_in_memory_are_served_in_line() {
    let e = Env::start();
    let body = data(40_000, 4);
    let f = e.file("up", &body);
    let u = format!("{}/m/f", e.url);
    assert_eq!(e.curl(&["-T", f.to_str().unwrap(), &u]).0, 201);
    assert_eq!(reads_in_line(e.core(), "https"), 0);
    assert!(e.curl(&[&u]).1 == body);
    assert_eq!(reads_in_line_after(e.core(), "https", 1), 1);
    // A range of it, in line too.
    let (code, got) = e.curl(&["-r", "100-199", &u]);
    assert_eq!((code, got.as_slice()), (206, &body[100..200]));
    assert_eq!(reads_in_line_after(e.core(), "https", 2), 2);
    evict_page_cache(&e.dir.path().join("data"));
    assert!(e.curl(&[&u]).1 == body, "read from the disk");
    assert!(e.curl(&[&u]).1 == body, "in memory again");
    let n = reads_in_line_after(e.core(), "https", 3);
    assert!(n == 3 || n == 4, "{n} GETs in line");
}
