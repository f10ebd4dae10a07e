//! WebDAV beyond litmus: every conditional header with curl (RFC 9110
//! §13), collection DELETE/MOVE/COPY and dead properties as a client sees
//! them, and rclone's WebDAV backend syncing a tree up and down.

use crate::{data, Env};

/// The ETag and Last-Modified of `url` (from a HEAD).
fn validators(e: &Env, url: &str) -> (String, String) {
    let (_, h) = e.curl(&["-I", "-D", "-", url]);
    let h = String::from_utf8_lossy(&h).into_owned();
    let get = |name: &str| {
        h.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
            })
            .unwrap_or_else(|| panic!("no {name} in {h}"))
    };
    (get("etag"), get("last-modified"))
}

#[test]
fn conditional_requests_with_curl() {
    let e = Env::start();
    let f = e.file("up", b"first");
    let u = format!("{}/cond/a.txt", e.url);
    assert_eq!(e.curl(&["-T", f.to_str().unwrap(), &u]).0, 201);
    let (tag, modified) = validators(&e, &u);
    let get = |hdr: &str| e.curl(&["-H", hdr, &u]).0;
    // If-Match: strong comparison; a wrong or weak tag fails.
    assert_eq!(get("If-Match: \"nope\""), 412);
    assert_eq!(get(&format!("If-Match: {tag}")), 200);
    assert_eq!(get(&format!("If-Match: \"x\", {tag}")), 200);
    assert_eq!(get(&format!("If-Match: W/{tag}")), 412);
    assert_eq!(get("If-Match: *"), 200);
    // If-None-Match: 304 for GET and HEAD.
    assert_eq!(get(&format!("If-None-Match: {tag}")), 304);
    assert_eq!(get(&format!("If-None-Match: W/{tag}")), 304);
    assert_eq!(get("If-None-Match: \"other\""), 200);
    // Dates, in each of the three HTTP forms.
    let past = [
        "Sat, 05 Nov 1994 08:49:37 GMT",
        "Saturday, 05-Nov-94 08:49:37 GMT",
        "Sat Nov  5 08:49:37 1994",
    ];
    let future = ["Fri, 01 Jan 2100 00:00:00 GMT", "Fri Jan  1 00:00:00 2100"];
    for d in past {
        assert_eq!(get(&format!("If-Modified-Since: {d}")), 200, "{d}");
        assert_eq!(get(&format!("If-Unmodified-Since: {d}")), 412, "{d}");
    }
    for d in future {
        assert_eq!(get(&format!("If-Modified-Since: {d}")), 304, "{d}");
        assert_eq!(get(&format!("If-Unmodified-Since: {d}")), 200, "{d}");
    }
    assert_eq!(get(&format!("If-Modified-Since: {modified}")), 304);
    // If-Match wins over If-Unmodified-Since; a date that does not parse
    // is ignored.
    assert_eq!(
        e.curl(&[
            "-H",
            &format!("If-Match: {tag}"),
            "-H",
            &format!("If-Unmodified-Since: {}", past[0]),
            &u
        ])
        .0,
        200
    );
    assert_eq!(get("If-Unmodified-Since: soon"), 200);
    // Unsafe methods: a failed condition changes nothing.
    std::fs::write(&f, b"second").unwrap();
    let put = |hdr: &str, to: &str| e.curl(&["-T", f.to_str().unwrap(), "-H", hdr, to]).0;
    assert_eq!(put("If-Match: \"stale\"", &u), 412);
    assert_eq!(put("If-None-Match: *", &u), 412, "create-only");
    assert_eq!(e.curl(&[&u]).1, b"first");
    assert_eq!(put(&format!("If-Match: {tag}"), &u), 204);
    assert_eq!(e.curl(&[&u]).1, b"second");
    let fresh = format!("{}/cond/new.txt", e.url);
    assert_eq!(put("If-None-Match: *", &fresh), 201);
    assert_eq!(put(&format!("If-Match: {tag}"), &fresh), 412, "old tag");
    let (tag2, _) = validators(&e, &u);
    assert_ne!(tag, tag2, "the ETag follows the content");
    let method = |m: &str, hdrs: &[&str], url: &str| {
        let mut a = vec!["-X", m];
        for x in hdrs {
            a.extend_from_slice(&["-H", x]);
        }
        a.push(url);
        e.curl(&a).0
    };
    let dest = format!("Destination: {}/cond/b.txt", e.url);
    assert_eq!(method("DELETE", &["If-Match: \"stale\""], &u), 412);
    assert_eq!(method("MOVE", &[&dest, "If-Match: \"stale\""], &u), 412);
    assert_eq!(
        method(
            "COPY",
            &[&dest, "If-Unmodified-Since: Sat, 05 Nov 1994 08:49:37 GMT"],
            &u
        ),
        412
    );
    assert_eq!(e.curl(&[&u]).1, b"second", "still there");
    assert_eq!(
        method("COPY", &[&dest, &format!("If-Match: {tag2}")], &u),
        201
    );
    assert_eq!(method("DELETE", &[&format!("If-Match: {tag2}")], &u), 204);
    assert_eq!(e.curl(&[&u]).0, 404);
}

#[test]
fn collections_and_dead_properties_with_curl() {
    let e = Env::start();
    let f = e.local("up");
    let body = data(300_000, 9);
    std::fs::write(&f, &body).unwrap();
    for p in ["t/a.bin", "t/sub/b.bin", "t/sub/deep/c.bin"] {
        let u = format!("{}/{p}", e.url);
        assert_eq!(e.curl(&["-T", f.to_str().unwrap(), &u]).0, 201);
    }
    let t = format!("{}/t/", e.url);
    // A dead property on the collection, then MOVE and COPY carry it.
    let patch = "<?xml version=\"1.0\"?><D:propertyupdate xmlns:D=\"DAV:\" \
                 xmlns:Z=\"urn:tessera:test\"><D:set><D:prop><Z:run>42 &amp; more</Z:run>\
                 </D:prop></D:set></D:propertyupdate>";
    let (code, out) = e.curl(&["-X", "PROPPATCH", "--data-binary", patch, &t]);
    assert_eq!(code, 207, "{}", String::from_utf8_lossy(&out));
    let live = "<D:propertyupdate xmlns:D=\"DAV:\"><D:set><D:prop>\
                <D:getetag>x</D:getetag></D:prop></D:set></D:propertyupdate>";
    let (code, out) = e.curl(&["-X", "PROPPATCH", "--data-binary", live, &t]);
    let out = String::from_utf8_lossy(&out).into_owned();
    assert_eq!(code, 207);
    assert!(
        out.contains("403") && out.contains("cannot-modify-protected-property"),
        "{out}"
    );
    let find = "<D:propfind xmlns:D=\"DAV:\"><D:prop><run xmlns=\"urn:tessera:test\"/>\
                </D:prop></D:propfind>";
    let prop_of = |url: &str| {
        let (code, out) = e.curl(&[
            "-X",
            "PROPFIND",
            "-H",
            "Depth: 0",
            "--data-binary",
            find,
            url,
        ]);
        assert_eq!(code, 207);
        String::from_utf8_lossy(&out).into_owned()
    };
    assert!(
        prop_of(&t).contains("42 &amp; more</run>"),
        "{}",
        prop_of(&t)
    );
    let moved = format!("{}/t2/", e.url);
    let (code, _) = e.curl(&["-X", "MOVE", "-H", &format!("Destination: {moved}"), &t]);
    assert_eq!(code, 201);
    assert_eq!(e.curl(&[&format!("{moved}sub/deep/c.bin")]).1, body);
    assert!(prop_of(&moved).contains("42 &amp; more</run>"));
    let copied = format!("{}/t3/", e.url);
    let (code, _) = e.curl(&[
        "-X",
        "COPY",
        "-H",
        &format!("Destination: {copied}"),
        &moved,
    ]);
    assert_eq!(code, 201);
    assert_eq!(e.curl(&[&format!("{copied}sub/b.bin")]).1, body);
    assert!(prop_of(&copied).contains("42 &amp; more</run>"));
    // A listing (depth 1) gives each entry its dead properties.
    let file = format!("{copied}a.bin");
    let (code, _) = e.curl(&["-X", "PROPPATCH", "--data-binary", patch, &file]);
    assert_eq!(code, 207);
    let (code, out) = e.curl(&[
        "-X",
        "PROPFIND",
        "-H",
        "Depth: 1",
        "--data-binary",
        find,
        &copied,
    ]);
    let out = String::from_utf8_lossy(&out).into_owned();
    assert_eq!(code, 207);
    assert_eq!(out.matches("42 &amp; more</run>").count(), 2, "{out}");
    // MOVE over an existing collection replaces it (Overwrite: T), or not.
    let (code, _) = e.curl(&[
        "-X",
        "MOVE",
        "-H",
        &format!("Destination: {copied}"),
        "-H",
        "Overwrite: F",
        &moved,
    ]);
    assert_eq!(code, 412);
    let (code, _) = e.curl(&[
        "-X",
        "MOVE",
        "-H",
        &format!("Destination: {copied}"),
        &moved,
    ]);
    assert_eq!(code, 204);
    assert_eq!(e.curl(&[&moved]).0, 404);
    // DELETE of the whole collection.
    assert_eq!(e.curl(&["-X", "DELETE", &copied]).0, 204);
    assert_eq!(e.curl(&[&format!("{copied}sub/b.bin")]).0, 404);
    assert_eq!(
        e.curl(&["-X", "PROPFIND", "-H", "Depth: 0", &copied]).0,
        404
    );
}

#[test]
fn rclone_syncs_a_tree_up_and_down() {
    let e = Env::start();
    let src = e.local("tree");
    let mut files = Vec::new();
    for (i, p) in [
        "a.txt",
        "d1/b.bin",
        "d1/d2/c.bin",
        "d3/empty.txt",
        "d3/sp ace.txt",
    ]
    .iter()
    .enumerate()
    {
        let path = src.join(p);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let body = if p.contains("empty") {
            Vec::new()
        } else {
            data(10_000 * i + 7, i as u64)
        };
        std::fs::write(&path, &body).unwrap();
        files.push((p.to_string(), body));
    }
    let conf = e.local("rclone.conf");
    std::fs::write(
        &conf,
        format!("[t]\ntype = webdav\nurl = {}/\nvendor = other\n", e.url),
    )
    .unwrap();
    let rclone = |args: &[&str]| {
        let mut a = vec![
            "--config",
            conf.to_str().unwrap(),
            "--ca-cert",
            e.ca.to_str().unwrap(),
        ];
        a.extend_from_slice(args);
        e.ok("rclone", &a)
    };
    rclone(&["sync", src.to_str().unwrap(), "t:rc/up"]);
    for (p, body) in &files {
        assert!(
            e.curl(&[&format!("{}/rc/up/{}", e.url, p.replace(' ', "%20"))])
                .1
                == *body,
            "{p}"
        );
    }
    // A change on each side: one file removed, one rewritten.
    std::fs::remove_file(src.join("a.txt")).unwrap();
    std::fs::write(src.join("d1/b.bin"), b"changed").unwrap();
    rclone(&["sync", src.to_str().unwrap(), "t:rc/up"]);
    assert_eq!(e.curl(&[&format!("{}/rc/up/a.txt", e.url)]).0, 404);
    assert_eq!(
        e.curl(&[&format!("{}/rc/up/d1/b.bin", e.url)]).1,
        b"changed"
    );
    let down = e.local("down");
    rclone(&["sync", "t:rc/up", down.to_str().unwrap()]);
    // rclone's own comparison of the two trees (sizes and contents).
    rclone(&["check", "--download", src.to_str().unwrap(), "t:rc/up"]);
    for (p, body) in files.iter().skip(1) {
        let want: &[u8] = if p == "d1/b.bin" { b"changed" } else { body };
        assert_eq!(std::fs::read(down.join(p)).unwrap(), want, "{p}");
    }
    assert!(!down.join("a.txt").exists());
}

/// DELETE of a collection goes on past what its client may not delete and
/// names that in a 207; the rest is gone.
#[test]
fn a_collection_delete_names_what_it_could_not_delete() {
    // Anonymous requests act as the server's owner; alice has a token.
    let e = Env::start();
    let alice = format!(
        "Authorization: Bearer {}",
        crate::tokens::token(&e, "storage.read:/data storage.modify:/data")
    );
    let f = e.file("up", b"x");
    let u = |p: &str| format!("{}{p}", e.url);
    let up = f.to_str().unwrap();
    assert_eq!(
        e.curl(&["-H", &alice, "-T", up, &u("/data/d/free.bin")]).0,
        201
    );
    assert_eq!(
        e.curl(&["-H", &alice, "-T", up, &u("/data/d/sub/g.bin")]).0,
        201
    );
    // Someone else's directory inside it (0755: alice may not delete in it).
    assert_eq!(e.curl(&["-X", "MKCOL", &u("/data/d/locked")]).0, 201);
    assert_eq!(e.curl(&["-T", up, &u("/data/d/locked/f")]).0, 201);
    let (code, body) = e.curl(&["-H", &alice, "-X", "DELETE", &u("/data/d/")]);
    let body = String::from_utf8_lossy(&body).into_owned();
    assert_eq!(code, 207, "{body}");
    assert!(
        body.contains("<D:href>/data/d/locked/f</D:href>") && body.contains("HTTP/1.1 403"),
        "{body}"
    );
    assert!(
        !body.contains("free.bin") && !body.contains("<D:href>/data/d</D:href>"),
        "{body}"
    );
    assert_eq!(e.curl(&[&u("/data/d/free.bin")]).0, 404);
    assert_eq!(e.curl(&[&u("/data/d/sub/g.bin")]).0, 404);
    assert_eq!(e.curl(&[&u("/data/d/locked/f")]).0, 200);
}
