//! `tessera fed probe` against a real tesserad (dev mode, HTTPS with the
//! dev CA and a dev token): every check OK with a token that may write;
//! CRITICAL (exit 2) without one (the write is refused) and for an
//! endpoint that does not answer; UNKNOWN (3) for a URL it cannot use.

use crate::{argv, Env};
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

/// `tessera fed endpoint`: a tesserad site (this server's own /data over
/// HTTPS, its CA trusted) added at run time under a new view serves
/// redirects at once and is probed; disabled, it leaves every choice;
/// refused changes say why; the change survives a restart (the data
/// directory's federation.toml); removed, it is gone.
#[test]
fn endpoints_change_at_run_time_and_survive_a_restart() {
    let mut e = Env::start_with(|c| {
        let ca = c.data_dir.join("dev").join("ca.pem");
        c.https.tpc_ca_files.push(ca);
        c.federation.probe_interval = std::time::Duration::from_millis(200);
    });
    let data = e._dir.path().to_path_buf();
    let ca = data.join("dev").join("ca.pem");
    let ls = e.ok(&["fed", "endpoint", "ls"]);
    assert_eq!(ls.lines().count(), 1, "a header alone: {ls}");
    e.ok(&["touch", "/data/f"]);
    let base = format!("https://localhost:{}/data", e_port(&e));
    let out = e.ok(&[
        "fed", "endpoint", "add", "self", "--site", "here", "--url", &base, "--view", "/fed",
    ]);
    assert!(out.contains("self") && out.contains("/fed"), "{out}");
    let get = |e: &Env, path: &str| -> String {
        let o = Command::new("curl")
            .args([
                "-s",
                "-o",
                "/dev/null",
                "-w",
                "%{http_code} %{redirect_url}",
                "--cacert",
            ])
            .arg(&ca)
            .arg(format!("https://localhost:{}{path}", e_port(e)))
            .output()
            .expect("curl");
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(get(&e, "/fed/f"), format!("302 {base}/f"));
    assert_eq!(get(&e, "/PerSite/self/f"), format!("302 {base}/f"));
    // Probed: up, with a latency.
    let start = std::time::Instant::now();
    loop {
        let (m, r) = first_endpoint(&e);
        if r["status"] == "up" && r["latency.ms"] != "0.0" {
            assert_eq!(r["views"], "/fed,/PerSite/self", "{m}");
            break;
        }
        assert!(start.elapsed().as_secs() < 10, "{m}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    // Its limits, set and shown.
    e.ok(&argv(
        "fed endpoint set self --timeout-ms 1500 --max-parallel 4",
    ));
    let (m, r) = first_endpoint(&e);
    assert_eq!(
        (r["timeout.ms"].as_str(), r["max_parallel"].as_str()),
        ("1500", "4"),
        "{m}"
    );
    assert_eq!(get(&e, "/fed/f"), format!("302 {base}/f"));
    // Disabled by the admin: no choice any more.
    let out = e.ok(&["fed", "endpoint", "set", "self", "--disabled", "true"]);
    assert!(out.contains("disabled"), "{out}");
    assert!(
        get(&e, "/fed/f").starts_with("404"),
        "{}",
        get(&e, "/fed/f")
    );
    // Refused changes: a name taken, an s3 endpoint without keys, an
    // unknown endpoint.
    let err = e.fails(
        &[
            "fed", "endpoint", "add", "self", "--site", "here", "--url", &base,
        ],
        17,
    );
    assert!(err.contains("exists"), "{err}");
    let err = e.fails(
        &argv("fed endpoint add b --site here --kind s3 --url http://127.0.0.1:1/bucket"),
        22,
    );
    assert!(err.contains("access_key_file"), "{err}");
    e.fails(&["fed", "endpoint", "rm", "nope"], 2);
    // Kept across a restart.
    e.restart();
    let (m, r) = first_endpoint(&e);
    assert_eq!(
        (r["name"].as_str(), r["status"].as_str()),
        ("self", "disabled"),
        "{m}"
    );
    let saved = std::fs::read_to_string(data.join("federation.toml")).unwrap();
    assert!(saved.contains("version = 2"), "{saved}");
    e.ok(&["fed", "endpoint", "set", "self", "--disabled", "false"]);
    let base = format!("https://localhost:{}/data", e_port(&e));
    e.ok(&["fed", "endpoint", "set", "self", "--url", &base]);
    assert_eq!(get(&e, "/fed/f"), format!("302 {base}/f"));
    e.ok(&["fed", "endpoint", "rm", "self"]);
    assert_eq!(e.ok(&["fed", "endpoint", "ls"]).lines().count(), 1);
    assert!(get(&e, "/PerSite/self/f").starts_with("404"));
}

/// `-m fed endpoint ls`: the whole answer, and the fields of its first line.
fn first_endpoint(e: &Env) -> (String, std::collections::HashMap<String, String>) {
    let m = e.ok(&["-m", "fed", "endpoint", "ls"]);
    let r = crate::kv(m.lines().next().unwrap_or(""));
    (m, r)
}

fn e_port(e: &Env) -> u16 {
    e.server.as_ref().unwrap().https_addr.expect("https").port()
}

/// What a plain-http listener on loopback received (one request's head).
fn capture() -> (u16, std::thread::JoinHandle<String>) {
    use std::io::{Read, Write};
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let h = std::thread::spawn(move || {
        let (mut s, _) = l.accept().unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let mut got = Vec::new();
        let mut buf = [0u8; 4096];
        while !got.windows(4).any(|w| w == b"\r\n\r\n") {
            match s.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => got.extend_from_slice(&buf[..n]),
            }
        }
        let _ = s.write_all(b"HTTP/1.1 500 No\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        String::from_utf8_lossy(&got).into_owned()
    });
    (port, h)
}

/// Run `cmd` with the admin's token file in the environment beside the
/// user's own token (`BEARER_TOKEN`); its output, and the request `got`.
fn with_user_token(
    e: &Env,
    cmd: &mut Command,
    got: std::thread::JoinHandle<String>,
) -> (std::process::Output, String) {
    let o = cmd
        .env("TESSERA_TOKEN_FILE", &e.token)
        .env("BEARER_TOKEN", "the-users-own-token")
        .output()
        .unwrap();
    (o, got.join().unwrap())
}

/// Issue 35: the admin credential never leaves with a probe (set as
/// `--token-file` and `TESSERA_TOKEN_FILE`, as the README has admins do:
/// the probe sends the user's own token, or `--bearer-file`'s), and the
/// probe answers in `-m` and `--json` too. Credential files named at run
/// time must be private files in the credentials directory (anything
/// else, `/etc/shadow` included, is refused by its name or with one
/// answer for every kind of wrong file), and a bearer token goes over
/// https only.
#[test]
fn credentials_stay_home() {
    let e =
        Env::start_with(|c| c.federation.probe_interval = std::time::Duration::from_millis(200));
    let admin_secret = std::fs::read_to_string(&e.token).unwrap();
    let (port, got) = capture();
    let (o, req) = with_user_token(
        &e,
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["--token-file"])
            .arg(&e.token)
            .args([
                "fed",
                "probe",
                &format!("http://127.0.0.1:{port}/x"),
                "--timeout-s",
                "5",
            ]),
        got,
    );
    assert!(req.contains("the-users-own-token"), "{req}");
    assert!(
        !req.contains(admin_secret.trim()),
        "admin secret sent: {req}"
    );
    assert_ne!(o.status.code(), Some(0));
    // --bearer-file wins; -m and --json give records.
    let own = e._dir.path().join("probe.token");
    std::fs::write(&own, "from-the-file\n").unwrap();
    let (port, got) = capture();
    let (o, req) = with_user_token(
        &e,
        Command::new(env!("CARGO_BIN_EXE_tessera"))
            .args(["-m", "fed", "probe", &format!("http://127.0.0.1:{port}/x")])
            .arg("--bearer-file")
            .arg(&own),
        got,
    );
    assert!(req.contains("Bearer from-the-file"), "{req}");
    let out = String::from_utf8_lossy(&o.stdout);
    let first = crate::kv(out.lines().next().unwrap_or(""));
    assert_eq!(first["check"], "probe", "{out}");
    assert_eq!(first["state"], "critical", "{out}");
    assert!(
        out.lines().any(|l| l.starts_with("check=reachable ")),
        "{out}"
    );
    let o = Command::new(env!("CARGO_BIN_EXE_tessera"))
        .args(["--json", "fed", "probe", "ftp://x/y"])
        .env_remove("BEARER_TOKEN")
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("json");
    assert_eq!(v["result"][0]["state"], "unknown", "{v}");
    assert_eq!(o.status.code(), Some(3));
    // Run-time credential files: only in the credentials directory.
    let dir = e._dir.path().join("fed-credentials");
    let add = |file: &str, url: &str| {
        e.run(&[
            "fed",
            "endpoint",
            "add",
            "x",
            "--site",
            "here",
            "--url",
            url,
            "--bearer-file",
            file,
        ])
    };
    let https = "https://localhost:1/data";
    for outside in [
        "/etc/shadow".to_string(),
        e.token.display().to_string(),
        format!("{}/../admin.token", dir.display()),
        "relative/file".to_string(),
    ] {
        let o = add(&outside, https);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_ne!(o.status.code(), Some(0), "{outside}");
        assert!(err.contains("must be in"), "{outside}: {err}");
    }
    // In it, but wrong: the same answer whatever is wrong.
    std::fs::create_dir_all(&dir).unwrap();
    let shared = dir.join("shared");
    std::fs::write(&shared, "t\n").unwrap();
    std::fs::set_permissions(&shared, std::os::unix::fs::PermissionsExt::from_mode(0o644)).unwrap();
    std::os::unix::fs::symlink(&e.token, dir.join("link")).unwrap();
    let answers: Vec<String> = ["shared", "link", "missing"]
        .iter()
        .map(|f| {
            let path = dir.join(f).display().to_string();
            let o = add(&path, https);
            assert_ne!(o.status.code(), Some(0), "{f}");
            String::from_utf8_lossy(&o.stderr).replace(&path, "P")
        })
        .collect();
    assert!(answers[0].contains("not usable"), "{}", answers[0]);
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
    // A private file works; over plain http it is refused.
    let good = dir.join("good");
    std::fs::write(&good, "t\n").unwrap();
    std::fs::set_permissions(&good, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    let o = add(good.to_str().unwrap(), "http://localhost:1/data");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("https only"), "{err}");
    let o = add(good.to_str().unwrap(), https);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Nothing listens there: down, and ls says why (issue 35, item 14).
    let start = std::time::Instant::now();
    loop {
        let (m, r) = first_endpoint(&e);
        if r["status"] == "down" {
            assert!(!r["reason"].is_empty(), "{m}");
            let table = e.ok(&["fed", "endpoint", "ls"]);
            assert!(
                table.contains(&format!("down ({})", r["reason"])),
                "{table}"
            );
            break;
        }
        assert!(start.elapsed().as_secs() < 10, "{m}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
