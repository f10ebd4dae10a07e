//! The operator's access rules (issue 39) with the real clients and the
//! real CLI against `tesserad serve --dev`: a banned client is told to
//! wait (xrdcp waits and gets its file once the ban is lifted; curl sees
//! 503 with `Retry-After`, davix-get the 503), writes under a path stalled while reads go,
//! a path redirected to another server (xrdcp follows it; curl gets the
//! 307), a rate limit held by eight parallel clients, every refusal
//! counted in the metrics.

use crate::devd::{cli, metric};
use crate::{assert_ran, data, run_ok, Daemon};

fn daemon(dir: &Path) -> Daemon {
    crate::devd::daemon(dir, "[https]\nanonymous = \"owner\"\n")
}

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// `curl -s -i` of `url` (extra arguments first): status line and headers.
fn curl_head(dir: &Path, extra: &[&str], url: &str) -> String {
    let o = Command::new("curl")
        // No `Expect: 100-continue` (its interim answer would come first).
        .args(["-sS", "-i", "-o", "-", "-H", "Expect:", "--cacert"])
        .arg(dir.join("data/dev/ca.pem"))
        .args(extra)
        .arg(url)
        .output()
        .expect("curl");
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    text.split("\r\n\r\n").next().unwrap_or("").to_string()
}

fn xrdcp(args: &[&str]) -> Command {
    let mut c = Command::new("xrdcp");
    c.arg("--nopbar").args(args);
    c
}

#[test]
fn a_banned_client_waits_and_gets_its_file_once_the_ban_is_lifted() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path());
    let (xr, https) = (d.field("xrootd="), d.field("https="));
    let body = data(300_000, 39);
    let src = dir.path().join("src");
    std::fs::write(&src, &body).unwrap();
    let url = format!("root://{xr}//data/f");
    run_ok(xrdcp(&[src.to_str().unwrap(), &url]).arg("-p"), "xrdcp up");

    let added = cli(
        &d,
        dir.path(),
        &[
            "access",
            "ban",
            "host:127.0.0.0/8",
            "--wait",
            "2s",
            "--comment",
            "test",
        ],
    );
    assert!(
        added.contains("ban") && added.contains("host:127.0.0.0/8"),
        "{added}"
    );
    let listed = cli(&d, dir.path(), &["access", "ls", "--json"]);
    assert!(
        listed.contains("\"setby\"") && listed.contains("\"test\""),
        "{listed}"
    );
    let id: u64 = cli(&d, dir.path(), &["-m", "access", "ls"])
        .split_whitespace()
        .find_map(|w| w.strip_prefix("id="))
        .expect("an id")
        .parse()
        .unwrap();

    // HTTPS: a 503 saying when to come back.
    let head = curl_head(dir.path(), &[], &format!("https://{https}/data/f"));
    assert!(
        head.starts_with("HTTP/1.1 503") || head.starts_with("HTTP/2 503"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 2"),
        "{head}"
    );
    // davix is told the same (it tries three times, then says so).
    let davix = |out: &Path| {
        Command::new("davix-get")
            .arg("-k")
            .arg(format!("https://{https}/data/f"))
            .arg(out)
            .output()
            .unwrap()
    };
    let dv = davix(&dir.path().join("dv-banned"));
    assert!(!dv.status.success(), "davix-get while banned");
    assert!(
        String::from_utf8_lossy(&dv.stderr).contains("503"),
        "{}",
        String::from_utf8_lossy(&dv.stderr)
    );

    // Every request about the namespace or the server waits, queries too
    // (past the client's own timeout here).
    for args in [
        &["stat", "/data/f"][..],
        &["query", "config", "version"],
        &["ls", "/data"],
    ] {
        let o = Command::new("xrdfs")
            .arg(format!("root://{xr}"))
            .args(args)
            .env("XRD_REQUESTTIMEOUT", "1")
            .output()
            .unwrap();
        assert!(!o.status.success(), "xrdfs {args:?} while banned");
    }
    // XRootD: xrdcp is told to wait, waits, and reads once unbanned.
    let out = dir.path().join("out");
    let t = Instant::now();
    let mut cp = xrdcp(&["-f", &url, out.to_str().unwrap()]).spawn().unwrap();
    std::thread::sleep(Duration::from_millis(3500));
    assert!(cp.try_wait().unwrap().is_none(), "xrdcp waits while banned");
    let removed = cli(&d, dir.path(), &["access", "rm", &id.to_string()]);
    assert!(removed.contains("removed"), "{removed}");
    assert!(cp.wait().unwrap().success(), "xrdcp once unbanned");
    assert!(t.elapsed() >= Duration::from_secs(3));
    assert_eq!(std::fs::read(&out).unwrap(), body);
    let dv_out = dir.path().join("dv-after");
    assert!(davix(&dv_out).status.success(), "davix-get once unbanned");
    assert_eq!(std::fs::read(&dv_out).unwrap(), body);
    assert!(
        metric(
            &d,
            "tessera_access_refused_total{action=\"ban\",protocol=\"xroot\"}"
        ) >= 1.0
    );
    assert!(
        metric(
            &d,
            "tessera_access_refused_total{action=\"ban\",protocol=\"https\"}"
        ) >= 1.0
    );
    assert_eq!(
        cli(&d, dir.path(), &["access", "ls"]).trim(),
        "no access rules"
    );
}

#[test]
fn stalls_take_writes_under_a_path_and_redirects_send_clients_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path());
    let other_dir = tempfile::tempdir().unwrap();
    let other = daemon(other_dir.path());
    let (xr, https) = (d.field("xrootd="), d.field("https="));
    let body = data(50_000, 7);
    let src = dir.path().join("src");
    std::fs::write(&src, &body).unwrap();
    for (server, path) in [(&xr, "/maint/old"), (&other.field("xrootd="), "/moved/f")] {
        run_ok(
            xrdcp(&[src.to_str().unwrap(), &format!("root://{server}/{path}")]).arg("-p"),
            "xrdcp up",
        );
    }
    // Writes under /maint wait; reads there and writes elsewhere go.
    cli(
        &d,
        dir.path(),
        &[
            "access", "stall", "--writes", "--path", "/maint", "--wait", "7s",
        ],
    );
    let put = curl_head(
        dir.path(),
        &["-T", src.to_str().unwrap()],
        &format!("https://{https}/maint/new"),
    );
    assert!(
        put.contains(" 503") && put.to_ascii_lowercase().contains("retry-after: 7"),
        "{put}"
    );
    let get = curl_head(dir.path(), &[], &format!("https://{https}/maint/old"));
    assert!(get.contains(" 200"), "{get}");
    let elsewhere = curl_head(
        dir.path(),
        &["-T", src.to_str().unwrap()],
        &format!("https://{https}/data/new"),
    );
    assert!(elsewhere.contains(" 201"), "{elsewhere}");
    let rm = Command::new("xrdfs")
        .args([&format!("root://{xr}"), "rm", "/maint/old"])
        .env("XRD_REQUESTTIMEOUT", "3")
        .output()
        .unwrap();
    assert!(
        !rm.status.success(),
        "the rm waits past the client's own timeout"
    );
    let out = dir.path().join("old");
    assert_ran(
        &xrdcp(&[&format!("root://{xr}//maint/old"), out.to_str().unwrap()])
            .output()
            .unwrap(),
        "xrdcp read under a stalled path",
    );
    assert!(
        metric(
            &d,
            "tessera_access_refused_total{action=\"stall\",protocol=\"https\"}"
        ) >= 1.0
    );

    // /moved goes to the other server: xrdcp follows; curl gets the 307.
    let to = other.field("xrootd=");
    cli(
        &d,
        dir.path(),
        &["access", "redirect", "--path", "/moved", "--to", &to],
    );
    let moved = dir.path().join("moved");
    run_ok(
        &mut xrdcp(&[&format!("root://{xr}//moved/f"), moved.to_str().unwrap()]),
        "xrdcp through the redirect",
    );
    assert_eq!(std::fs::read(&moved).unwrap(), body);
    let head = curl_head(dir.path(), &[], &format!("https://{https}/moved/f"));
    assert!(head.contains(" 307"), "{head}");
    assert!(head.contains(&format!("https://{to}/moved/f")), "{head}");
    // Bad rules are refused with the reason, nothing stored.
    let bad = Command::new(crate::common::workspace_bin("tessera"))
        .args(["--admin", &d.field("admin="), "--token-file"])
        .arg(dir.path().join("data/dev/admin.token"))
        .args(["access", "ban", "users:alice"])
        .output()
        .unwrap();
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("kinds are"),
        "{:?}",
        bad
    );
    assert_eq!(
        cli(&d, dir.path(), &["-m", "access", "ls"]).lines().count(),
        2
    );
}

/// Eight clients opening a file as fast as they can, each in a thread of
/// the Python bindings (XrdCl waits out each `kXR_wait` and sends the
/// open again): "opens N last_s", the time of the last open done (the
/// clients wait whole seconds, so the deadline falls in a wait).
const OPENER: &str = r#"
import sys, threading, time
from XRootD import client
from XRootD.client.flags import OpenFlags
url, secs = sys.argv[1], float(sys.argv[2])
done = [0] * 8
last = [0.0] * 8
start = time.monotonic()
def run(i):
    while time.monotonic() - start < secs:
        f = client.File()
        st, _ = f.open(url, OpenFlags.READ)
        assert st.ok, st
        f.close()
        done[i] += 1
        last[i] = time.monotonic() - start
ts = [threading.Thread(target=run, args=(i,)) for i in range(8)]
[t.start() for t in ts]
[t.join() for t in ts]
print("opens", sum(done), max(last))
"#;

#[test]
fn a_rate_limit_on_opens_holds_with_eight_parallel_clients() {
    let dir = tempfile::tempdir().unwrap();
    let d = daemon(dir.path());
    let xr = d.field("xrootd=");
    let src = dir.path().join("src");
    std::fs::write(&src, data(4096, 3)).unwrap();
    let url = format!("root://{xr}//lim/f");
    run_ok(xrdcp(&[src.to_str().unwrap(), &url]).arg("-p"), "xrdcp up");
    // Bad limits are refused.
    for bad in [
        &[
            "access",
            "limit",
            "host:1.2.3.4",
            "--ops",
            "stat",
            "--rate",
            "5",
        ][..],
        &["access", "limit", "all", "--ops", "opens", "--rate", "5"],
        &["access", "limit", "all", "--ops", "stat", "--rate", "0"],
    ] {
        let o = Command::new(crate::common::workspace_bin("tessera"))
            .args(["--admin", &d.field("admin="), "--token-file"])
            .arg(dir.path().join("data/dev/admin.token"))
            .args(bad)
            .output()
            .unwrap();
        assert!(!o.status.success(), "{bad:?}");
    }
    let rate = 20.0;
    // The default burst: two seconds' worth (40).
    let set = [
        "-m",
        "access",
        "limit",
        "app:*",
        "--ops",
        "open-read",
        "--rate",
        "20",
    ];
    let listed = cli(&d, dir.path(), &set);
    assert!(listed.contains("burst=40"), "{listed}");
    let script = dir.path().join("opener.py");
    std::fs::write(&script, OPENER).unwrap();
    // Long enough that the last cycle of waits (about a second of the
    // rate) is within the 10 %.
    let secs = 15.0;
    let o = run_ok(
        Command::new("/usr/bin/python3")
            .arg(&script)
            .arg(&url)
            .arg(secs.to_string()),
        "eight openers",
    );
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let mut w = out.split_whitespace().skip(1);
    let opens: f64 = w.next().unwrap().parse().unwrap();
    let elapsed: f64 = w.next().unwrap().parse().unwrap();
    // The burst at the start, then the rate until the last open.
    let measured = (opens - 40.0) / elapsed;
    eprintln!("{opens} opens, the last at {elapsed:.1} s: {measured:.1}/s after the burst");
    assert!(elapsed > secs - 2.0, "{out}");
    assert!(
        (measured - rate).abs() <= 0.1 * rate,
        "{opens} opens in {elapsed:.1} s: {measured:.1}/s against {rate}/s"
    );
    assert!(
        metric(
            &d,
            "tessera_access_refused_total{action=\"limit\",protocol=\"xroot\"}"
        ) >= 1.0
    );
    // curl's HEADs (stats) counted by its User-Agent product: the second
    // of two is told to wait; xrdfs (another application) is not.
    cli(
        &d,
        dir.path(),
        &[
            "access", "limit", "app:curl", "--ops", "stat", "--rate", "0.2", "--burst", "1",
        ],
    );
    let https = d.field("https=");
    let head = |_: u8| curl_head(dir.path(), &["-I"], &format!("https://{https}/lim/f"));
    assert!(head(1).contains(" 200"));
    let second = head(2);
    assert!(
        second.contains(" 503") && second.to_ascii_lowercase().contains("retry-after: 5"),
        "{second}"
    );
    // Other classes and other applications are not counted.
    let stat = Command::new("xrdfs")
        .args([&format!("root://{xr}"), "stat", "/lim/f"])
        .output()
        .unwrap();
    assert_ran(&stat, "xrdfs stat beside the limit");
}
