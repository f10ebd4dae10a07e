//! Issue 35, item 12: a conditional PUT holds its condition until its
//! commit. `If-Match` matched the file there when the upload began; a
//! file committed meanwhile is not overwritten (412, the newer file
//! kept: no lost update). A PUT answered 412 makes nothing, not even
//! the parents it would have made. Single server and through gateways
//! (where a conditional PUT is served by the metadata service itself).

use crate::Env;
use std::process::Stdio;
use std::time::Duration;

fn etag_of(e: &Env, url: &str) -> String {
    let hdr = e.local("etag.hdr");
    e.curl(&["-I", "-D", hdr.to_str().unwrap(), url]);
    std::fs::read_to_string(&hdr)
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix("etag: "))
        .expect("an ETag")
        .trim()
        .to_string()
}

#[test]
fn if_match_holds_until_the_commit() {
    let e = Env::start();
    let url = format!("{}/cond/f", e.url);
    let v1 = e.file("v1", vec![1u8; 1 << 20]);
    assert_eq!(e.curl(&["-T", v1.to_str().unwrap(), &url]).0, 201);
    let tag = etag_of(&e, &url);
    // A slow conditional upload (1 MiB at 200 KiB/s) on version 1 ...
    let slow = e
        .cmd("curl")
        .args(["-sS", "-o", "/dev/null", "-w", "%{http_code}", "--cacert"])
        .arg(&e.ca)
        .args(["--limit-rate", "200K", "-H"])
        .arg(format!("If-Match: {tag}"))
        .arg("-T")
        .arg(&v1)
        .arg(&url)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    // ... while another client replaces it.
    let v2 = e.file("v2", b"version two");
    assert_eq!(e.curl(&["-T", v2.to_str().unwrap(), &url]).0, 204);
    let o = slow.wait_with_output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&o.stdout),
        "412",
        "the older condition"
    );
    assert_eq!(e.curl(&[&url]).1, b"version two", "no lost update");
    // The condition still true at the commit: replaced.
    let tag = etag_of(&e, &url);
    let (code, _) = e.curl(&[
        "-H",
        &format!("If-Match: {tag}"),
        "-T",
        v1.to_str().unwrap(),
        &url,
    ]);
    assert_eq!(code, 204);
    // A 412 makes no parents.
    let deep = format!("{}/cond/new/dir/f", e.url);
    let (code, _) = e.curl(&[
        "-H",
        "If-Match: \"nope\"",
        "-T",
        v1.to_str().unwrap(),
        &deep,
    ]);
    assert_eq!(code, 412);
    let (code, _) = e.curl(&["-I", &format!("{}/cond/new/", e.url)]);
    assert_eq!(code, 404, "no parent made");
}
