//! `tessera fed probe` against a real tesserad (dev mode, HTTPS with the
//! dev CA and a dev token): every check OK with a token that may write;
//! CRITICAL (exit 2) without one (the write is refused) and for an
//! endpoint that does not answer; UNKNOWN (3) for a URL it cannot use.

use crate::Env;
use std::process::Command;

fn probe(url: &str, ca: &std::path::Path, token: Option<&str>) -> (i32, String) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_tessera"));
    c.args(["fed", "probe", url, "--timeout-s", "5", "--ca"])
        .arg(ca)
        .env_remove("TESSERA_TOKEN_FILE")
        .env_remove("BEARER_TOKEN_FILE")
        .env("XDG_RUNTIME_DIR", "/nonexistent");
    match token {
        Some(t) => c.env("BEARER_TOKEN", t),
        None => c.env_remove("BEARER_TOKEN"),
    };
    let o = c.output().expect("tessera");
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn probe_gives_nagios_states() {
    let e = Env::start();
    let data = e._dir.path();
    let ca = data.join("dev").join("ca.pem");
    let https = e.server.as_ref().unwrap().https_addr.expect("https");
    let url = format!("https://localhost:{}/data/probe", https.port());
    let token = e
        .ok(&[
            "token",
            "issue",
            "--data-dir",
            data.to_str().unwrap(),
            "--sub",
            "prober",
            "--scope",
            "storage.read:/ storage.modify:/data",
        ])
        .trim()
        .to_string();
    let (code, out) = probe(&url, &ca, Some(&token));
    assert_eq!(code, 0, "{out}");
    assert!(
        out.starts_with("FED PROBE OK - reachable ok, write ok, read ok, checksum ok, delete ok"),
        "{out}"
    );
    // Nothing left behind.
    let ls = e.ok(&["ls", "/data/probe"]);
    assert!(!ls.contains(".tessera-probe"), "{ls}");
    // Without a token the write is refused.
    let (code, out) = probe(&url, &ca, None);
    assert_eq!(code, 2, "{out}");
    assert!(out.contains("write critical"), "{out}");
    // Nobody there.
    let gone = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = gone.local_addr().unwrap().port();
    drop(gone);
    let (code, out) = probe(&format!("https://localhost:{port}/x"), &ca, Some(&token));
    assert_eq!(code, 2, "{out}");
    assert!(
        out.starts_with("FED PROBE CRITICAL - reachable critical"),
        "{out}"
    );
    let (code, out) = probe("ftp://x/y", &ca, None);
    assert_eq!(code, 3, "{out}");
}
