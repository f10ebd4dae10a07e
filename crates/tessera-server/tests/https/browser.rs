//! A directory's page in a real browser (Debian's headless Chromium over
//! the DevTools protocol, `data/browser.py`): the listing shows every
//! entry (names escaped, sizes, times, links to parents and children), a
//! screenshot is taken, and a click on a file's link downloads it
//! byte-exact. Tools keep getting plain text.

use crate::{data, Env};

#[test]
fn listing_page_in_chromium() {
    let e = Env::start();
    let big = data(3_000_001, 4);
    let f = e.file("big", &big);
    let put = |name: &str, file: &std::path::Path| {
        let u = format!("{}/web/{name}", e.url);
        let o = e.curl_ok(&[
            "-H",
            "Expect:",
            "-T",
            file.to_str().unwrap(),
            "-w",
            "%{http_code}",
            &u,
        ]);
        assert!(o.ends_with("201"), "{o}");
    };
    put("run%201.root", &f);
    let small = e.file("small", b"hello, <browser>\n");
    put("notes%20%26%20%3Cb%3E.txt", &small);
    assert_eq!(
        e.curl(&["-X", "MKCOL", &format!("{}/web/sub%20dir", e.url)])
            .0,
        201
    );
    // A tool (Accept: */*) gets names, one a line.
    let (code, text) = e.curl(&[&format!("{}/web/", e.url)]);
    assert_eq!(code, 200);
    assert_eq!(
        String::from_utf8_lossy(&text),
        "notes & <b>.txt\nrun 1.root\nsub dir/\n"
    );
    // A browser gets the page.
    let out = e.local("browser");
    std::fs::create_dir_all(&out).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/https/data/browser.py");
    let o = e.run(
        "/usr/bin/python3",
        &[
            script,
            // Without the slash: sent to the directory's URL with one.
            &format!("{}/web", e.url),
            "run 1.root",
            out.to_str().unwrap(),
        ],
    );
    crate::assert_ran(&o, "browser.py");
    let page: serde_json::Value = serde_json::from_slice(&o.stdout).expect("the driver's JSON");
    assert_eq!(page["title"], "Index of /web");
    assert_eq!(page["content_type"], "text/html");
    let text = page["text"].as_str().unwrap();
    for want in [
        "notes & <b>.txt",
        "run 1.root",
        "sub dir/",
        "3000001",
        "17",
        "../",
    ] {
        assert!(text.contains(want), "{want:?} not on the page: {text}");
    }
    let links = page["links"].as_array().unwrap();
    let href = |t: &str| {
        let l = links
            .iter()
            .find(|l| l["text"] == t)
            .unwrap_or_else(|| panic!("no link {t}: {links:?}"));
        // Laid out inside the 1200x900 window the screenshot shows.
        assert!(
            l["w"].as_f64().unwrap() > 0.0 && l["y"].as_f64().unwrap() < 900.0,
            "{l}"
        );
        l["href"].as_str().unwrap().to_string()
    };
    assert_eq!(href("../"), "/");
    assert_eq!(href("run 1.root"), "./run%201.root");
    assert_eq!(href("notes & <b>.txt"), "./notes%20%26%20%3Cb%3E.txt");
    assert_eq!(href("sub dir/"), "./sub%20dir/");
    assert_eq!(href("web"), "/web/", "the path's parents link back");
    let shot = std::fs::read(page["screenshot"].as_str().unwrap()).unwrap();
    // To look at it: TESSERA_KEEP_SCREENSHOT=/tmp/listing.png.
    if let Ok(k) = std::env::var("TESSERA_KEEP_SCREENSHOT") {
        std::fs::write(k, &shot).unwrap();
    }
    assert!(
        shot.starts_with(b"\x89PNG") && shot.len() > 5_000,
        "screenshot {} bytes",
        shot.len()
    );
    let got = std::fs::read(page["download"].as_str().expect("a download")).unwrap();
    assert!(got == big, "downloaded {} bytes, not the file", got.len());
    // Files are served with a type browsers can show, markup never.
    let head = e.curl_ok(&["-I", &format!("{}/web/notes%20%26%20%3Cb%3E.txt", e.url)]);
    assert!(
        head.contains("content-type: text/plain; charset=utf-8"),
        "{head}"
    );
    assert!(head.contains("x-content-type-options: nosniff"), "{head}");
    let page_head = e.curl_ok(&["-I", "-H", "Accept: text/html", &format!("{}/web/", e.url)]);
    assert!(
        page_head.contains("content-security-policy: default-src 'none'"),
        "{page_head}"
    );
}
