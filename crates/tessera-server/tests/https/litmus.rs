//! WebDAV compliance: Debian's `litmus` (neon's test suite) runs its
//! `basic`, `copymove`, `props` and `http` suites against the gateway, and
//! every test of them must pass. neon (GnuTLS) trusts only the system's CA
//! bundle, so litmus runs in a private mount namespace where that bundle
//! is a copy with the dev CA added (the machine's own is not touched).

use crate::Env;
use std::process::Command;

/// `(suite, run, passed, failed)` from litmus's `<- summary for` lines.
fn summaries(out: &str) -> Vec<(String, u32, u32, u32)> {
    out.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("<- summary for `")?;
            let (suite, rest) = rest.split_once('\'')?;
            let nums: Vec<u32> = rest
                .split(|c: char| !c.is_ascii_digit())
                .filter_map(|n| n.parse().ok())
                .collect();
            // "of 16 tests run: 16 passed, 0 failed. 100.0%"
            Some((suite.to_string(), nums[0], nums[1], nums[2]))
        })
        .collect()
}

/// A shell running `script` in a private mount namespace where the
/// system CA bundle has the dev CA added (neon, GnuTLS, trusts only the
/// system's bundle; the machine's own is not touched).
pub fn with_dev_ca(e: &Env, script: &str) -> Command {
    let bundle = e.local("ca-bundle.crt");
    let mut pem = std::fs::read("/etc/ssl/certs/ca-certificates.crt").unwrap_or_default();
    pem.extend(std::fs::read(&e.ca).expect("dev CA"));
    std::fs::write(&bundle, pem).expect("bundle");
    let script = format!(
        "mount --bind '{}' /etc/ssl/certs/ca-certificates.crt && {script}",
        bundle.display()
    );
    let mut c = Command::new("unshare");
    c.args(["--mount", "--propagation", "private", "sh", "-c", &script])
        .env("HOME", e.dir.path())
        .current_dir(e.dir.path());
    c
}

/// Run litmus `suites` against `url` with HTTP Basic credentials
/// `user`/`password`; its whole output.
pub fn litmus(e: &Env, url: &str, suites: &str, user: &str, password: &str) -> String {
    let out = with_dev_ca(e, &format!("exec litmus -k '{url}' '{user}' '{password}'"))
        .env("TESTS", suites)
        .output()
        .expect("litmus (scripts/test installs it)");
    let text = crate::common::all_output(&out);
    let debug = e.dir.path().join("debug.log");
    if let Ok(d) = std::fs::read_to_string(debug) {
        // Kept for a failure's message: the last exchanges.
        let tail: String = d.lines().rev().take(80).collect::<Vec<_>>().join("\n");
        let _ = std::fs::write(e.local("litmus-debug-tail.txt"), tail);
    }
    text
}

/// litmus logs in with HTTP Basic credentials (a local account of the
/// password file) and writes as that account: no anonymous writer.
#[test]
fn litmus_basic_copymove_props_http_pass() {
    let e = crate::desktop::with_passwords();
    let url = format!("{}/litmus/", e.url);
    crate::desktop::own_dir(&e, "/litmus");
    let out = litmus(
        &e,
        &url,
        "basic copymove props http",
        "nobody",
        crate::desktop::PASSWORD,
    );
    eprintln!("{out}");
    let sums = summaries(&out);
    let names: Vec<&str> = sums.iter().map(|s| s.0.as_str()).collect();
    assert_eq!(
        names,
        ["basic", "copymove", "props", "http"],
        "litmus did not run every suite:\n{out}"
    );
    for (suite, run, passed, failed) in &sums {
        assert!(
            *failed == 0 && passed == run,
            "litmus {suite}: {passed}/{run} passed, {failed} failed:\n{out}"
        );
    }
}
