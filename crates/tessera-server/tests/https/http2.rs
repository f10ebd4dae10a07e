//! HTTP/2 (`[https] http2 = true`): curl negotiates it with ALPN; GET,
//! ranges and PUT work as over HTTP/1.1, a refused upload still gets its
//! status (the unread body is drained, not reset), and header bounds hold.

use crate::{data, Env};

#[test]
fn curl_over_http2() {
    let e = Env::start_with(|c| c.https.http2 = true);
    let body = data(6_000_011, 2);
    let f = e.file("f", &body);
    let u = format!("{}/h2/f.bin", e.url);
    let version = |args: &[&str]| {
        let mut a = vec![
            "-sS",
            "--http2",
            "--cacert",
            e.ca.to_str().unwrap(),
            "-o",
            "/dev/null",
            "-w",
            "%{http_version} %{http_code}",
        ];
        a.extend_from_slice(args);
        String::from_utf8_lossy(&e.run("curl", &a).stdout).into_owned()
    };
    assert_eq!(version(&["-T", f.to_str().unwrap(), &u]), "2 201");
    let (code, got) = e.curl(&["--http2", &u]);
    assert_eq!(code, 200);
    assert!(got == body);
    let (code, got) = e.curl(&["--http2", "-r", "1000-1999,5000000-5000099", &u]);
    assert_eq!(code, 206);
    assert!(got.windows(100).any(|w| w == &body[5_000_000..5_000_100]));
    // Without http2 in the server's list, the same curl gets HTTP/1.1.
    let plain = Env::start();
    let a = [
        "-sS",
        "--http2",
        "--cacert",
        plain.ca.to_str().unwrap(),
        "-o",
        "/dev/null",
        "-w",
        "%{http_version}",
        &format!("{}/", plain.url),
    ];
    assert_eq!(
        String::from_utf8_lossy(&plain.run("curl", &a).stdout),
        "1.1"
    );
    // A 5 MB upload refused before its body is read: the client sees the
    // status (409: the parent is a file), nothing is written.
    let bad = format!("{}/h2/f.bin/child", e.url);
    assert_eq!(version(&["-T", f.to_str().unwrap(), &bad]), "2 409");
    // Too many headers: 431.
    let hdrs: Vec<String> = (0..100).map(|i| format!("X-Junk-{i}: v")).collect();
    let mut a: Vec<&str> = Vec::new();
    for h in &hdrs {
        a.push("-H");
        a.push(h);
    }
    a.push(&u);
    assert_eq!(version(&a), "2 431");
    // The connection-level limits did not break later requests.
    assert_eq!(version(&[&u]), "2 200");
}
