//! RFC 9530 digests with curl and davix: `Want-Repr-Digest` answered with
//! `Repr-Digest` on GET and HEAD, and `Repr-Digest` / `Content-Digest` /
//! `Digest` announced on a PUT checked before the file becomes visible.

use crate::{data, Env};

fn b64(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

fn adler(b: &[u8]) -> [u8; 4] {
    let (mut a, mut s) = (1u32, 0u32);
    for &x in b {
        a = (a + x as u32) % 65521;
        s = (s + a) % 65521;
    }
    ((s << 16) | a).to_be_bytes()
}

#[test]
fn repr_digest_on_put_and_get() {
    let e = Env::start();
    let body = data(2_500_001, 7);
    let f = e.file("up", &body);
    let fs = f.to_str().unwrap();
    let crc = b64(&crc32c::crc32c(&body).to_be_bytes());
    let adl = b64(&adler(&body));
    let put = |name: &str, hdr: &str| {
        let u = format!("{}/rd/{name}", e.url);
        let o = e.curl_run(&[
            "-H",
            "Expect:",
            "-H",
            hdr,
            "-T",
            fs,
            "-w",
            "%{http_code}",
            &u,
        ]);
        (String::from_utf8_lossy(&o.stdout).into_owned(), u)
    };
    // Matching digests: stored.
    let (out, ok1) = put(
        "ok1",
        &format!("Repr-Digest: crc32c=:{crc}:, sha-256=:AAAA:"),
    );
    assert!(out.ends_with("201"), "{out}");
    let (out, ok2) = put("ok2", &format!("Content-Digest: adler=:{adl}:"));
    assert!(out.ends_with("201"), "{out}");
    assert!(e.curl(&[&ok1]).1 == body && e.curl(&[&ok2]).1 == body);
    // A wrong one: 422 with the reason, nothing stored.
    let wrong = b64(&(crc32c::crc32c(&body) ^ 1).to_be_bytes());
    let (out, bad) = put("bad", &format!("Repr-Digest: crc32c=:{wrong}:"));
    assert!(out.ends_with("422") && out.contains("crc32c"), "{out}");
    assert_eq!(e.curl(&[&bad]).0, 404, "nothing stored");
    // An overwrite with a wrong digest leaves the old file as it was.
    let (out, _) = put("ok1", &format!("Repr-Digest: adler=:{wrong}:"));
    assert!(out.ends_with("422"), "{out}");
    assert!(e.curl(&[&ok1]).1 == body, "old file unchanged");
    // Malformed: 400 before anything is made.
    let (out, mal) = put("mal", "Repr-Digest: adler=12345678");
    assert!(out.ends_with("400"), "{out}");
    assert_eq!(e.curl(&[&mal]).0, 404);
    // GET and HEAD answer Want-Repr-Digest.
    for method in ["-I", "-i"] {
        let o = e.curl_ok(&[method, "-H", "Want-Repr-Digest: adler=3, crc32c=8", &ok2]);
        let low = o.to_ascii_lowercase();
        assert!(
            low.contains(&format!(
                "repr-digest: crc32c=:{}:",
                crc.to_ascii_lowercase()
            )),
            "{o}"
        );
    }
    // davix sends the header on a PUT and reads it back on a HEAD.
    let capath = e.ca_dir.to_str().unwrap().to_string();
    let dv = format!("{}/rd/davix", e.url);
    let hdr = format!("Repr-Digest: adler=:{adl}:");
    e.ok("davix-put", &["--capath", &capath, "-H", &hdr, fs, &dv]);
    assert!(e.curl(&[&dv]).1 == body);
    let o = e.run(
        "davix-put",
        &[
            "--capath",
            &capath,
            "-H",
            &format!("Repr-Digest: adler=:{wrong}:"),
            fs,
            &format!("{dv}2"),
        ],
    );
    assert!(
        !o.status.success(),
        "davix-put with a wrong digest succeeded"
    );
    assert_eq!(e.curl(&[&format!("{dv}2")]).0, 404, "nothing stored");
    let o = e.run(
        "davix-http",
        &[
            "--capath",
            &capath,
            "-X",
            "HEAD",
            "-H",
            "Want-Repr-Digest: adler=9",
            "--trace",
            "header",
            &dv,
        ],
    );
    let all = String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr);
    assert!(
        all.to_ascii_lowercase().contains(&format!(
            "repr-digest: adler=:{}:",
            adl.to_ascii_lowercase()
        )),
        "{all}"
    );
}
