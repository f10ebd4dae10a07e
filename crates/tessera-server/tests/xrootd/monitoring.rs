//! The XRootD monitoring stream (`[monitoring]`) against a collector
//! written from the published format (`data/xrdmon/collector.py`: packets
//! decoded by xrootdlib from PyPI, joined as the OSG collector joins
//! them): xrdcp uploads and downloads over `root://`, curl with a token
//! over HTTPS; each closed file one transfer record with its path, its
//! bytes and its user's identity; the server identified with its site;
//! every packet's length right, all from one source.

use crate::devd::{cli, daemon};
use crate::{data, run_ok};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn wait_for(p: &Path) -> String {
    let end = Instant::now() + Duration::from_secs(30);
    while Instant::now() < end {
        if let Ok(s) = std::fs::read_to_string(p) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("{} never appeared", p.display());
}

/// The collector process, stopped (by its PID) if the test fails first.
struct Collector(std::process::Child);

impl Drop for Collector {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn record<'a>(out: &'a serde_json::Value, path: &str, prot: &str) -> Vec<&'a serde_json::Value> {
    out["records"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["filename"] == path && r["user"]["userid"]["prot"] == prot)
        .collect()
}

#[test]
fn transfers_reach_a_collector_with_bytes_and_identities() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let py = crate::uproot::python();
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/xrdmon/collector.py"
    );
    let (portf, outf, stopf) = (dir.join("port"), dir.join("out.json"), dir.join("stop"));
    let mut collector = Collector(
        Command::new(&py)
            .args([script])
            .args([&portf, &outf, &stopf])
            .stdout(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{py}: {e} (scripts/test makes the environment)")),
    );
    let port = wait_for(&portf);
    let overlay = format!(
        "[monitoring]\ndestinations = [\"127.0.0.1:{port}\"]\nfstat = \"1s\"\nident = \"2s\"\n\
         site = \"TEST_SITE\"\n"
    );
    let d = daemon(dir, &overlay);
    let xr = d.field("xrootd=");
    let https = format!(
        "https://localhost:{}",
        d.field("https=").rsplit(':').next().unwrap()
    );
    let ca = dir.join("data/dev/ca.pem");

    // xrdcp up and down.
    let body = data(1_500_000, 3);
    let src = dir.join("src");
    std::fs::write(&src, &body).unwrap();
    let url = format!("root://{xr}//data/mon/x.root");
    let mut up = Command::new("xrdcp");
    up.env("XRD_APPNAME", "montest")
        .args(["--nopbar", src.to_str().unwrap(), &url]);
    run_ok(&mut up, "xrdcp up");
    let back = dir.join("back");
    let mut down = Command::new("xrdcp");
    down.env("XRD_APPNAME", "montest")
        .args(["--nopbar", &url, back.to_str().unwrap()]);
    run_ok(&mut down, "xrdcp down");
    assert!(std::fs::read(&back).unwrap() == body);
    // A client that goes with the file open (the Python bindings, the
    // process ends without a close): a forced close.
    let script = "import os, sys\nfrom XRootD import client\nf = client.File()\n\
        st, _ = f.open(sys.argv[1])\nassert st.ok, st\nst, d = f.read(0, 1000)\n\
        assert st.ok and len(d) == 1000, st\nos._exit(0)\n";
    run_ok(
        Command::new("/usr/bin/python3").args(["-c", script, &url]),
        "python open and go",
    );
    // curl with a token: PUT then GET.
    let tok = cli(
        &d,
        dir,
        &[
            "token",
            "issue",
            "--data-dir",
            dir.join("data").to_str().unwrap(),
            "--sub",
            "physicist",
            "--scope",
            "storage.read:/ storage.create:/data storage.modify:/data",
        ],
    );
    let auth = format!("Authorization: Bearer {}", tok.trim());
    let curl = |args: &[&str]| {
        let o = Command::new("curl")
            .args([
                "-sS",
                "--fail",
                "--cacert",
                ca.to_str().unwrap(),
                "-H",
                &auth,
                "-A",
                "montool/1.0",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "curl {args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        o.stdout
    };
    let who: serde_json::Value =
        serde_json::from_slice(&curl(&[&format!("{https}/.well-known/tessera/whoami")])).unwrap();
    let small = data(200_000, 4);
    let sf = dir.join("small");
    std::fs::write(&sf, &small).unwrap();
    curl(&[
        "-H",
        "Expect:",
        "-T",
        sf.to_str().unwrap(),
        &format!("{https}/data/h/h.bin"),
    ]);
    assert!(curl(&[&format!("{https}/data/h/h.bin")]) == small);
    // The collector sees everything after the next flushes.
    std::thread::sleep(Duration::from_secs(3));
    drop(d); // disconnects, the last flush
    std::fs::write(&stopf, b"").unwrap();
    assert!(collector.0.wait().unwrap().success(), "collector failed");
    let out: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&outf).unwrap()).unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&out).unwrap());

    assert_eq!(
        out["errors"],
        serde_json::json!([]),
        "every packet decoded and consistent"
    );
    assert_eq!(out["sources"].as_array().unwrap().len(), 1, "one socket");
    assert_eq!(out["stods"].as_array().unwrap().len(), 1, "one start time");
    let ident = &out["idents"][0];
    assert_eq!(
        (ident["site"].as_str(), ident["pgm"].as_str()),
        (Some("TEST_SITE"), Some("tesserad"))
    );
    assert_eq!(
        ident["port"],
        xr.rsplit(':').next().unwrap().parse::<u64>().unwrap()
    );

    // xroot: the upload (bytes with pgwrite's CRCs, as XRootD counts them)
    // and the download, each with the login's application.
    let x = record(&out, "/data/mon/x.root", "xroot");
    let w = x
        .iter()
        .find(|r| r["write_open"] == true)
        .expect("the upload's record");
    let n = body.len() as u64;
    let wrote = w["write"].as_u64().unwrap();
    assert!(
        wrote >= n && wrote <= n + n / 1000 + 64,
        "wrote {wrote} for {n}"
    );
    assert_eq!(w["d_path"], "/data/mon/x.root");
    let r = x
        .iter()
        .find(|r| r["write_open"] == false && r["forced"] == false)
        .expect("the download's record");
    let gone = x
        .iter()
        .find(|r| r["forced"] == true)
        .expect("the forced close of the client that went");
    assert_eq!(gone["read"], 1000);
    assert_eq!(
        (r["read"].as_u64(), r["filesize"].as_u64()),
        (Some(n), Some(n))
    );
    for rec in [w, r] {
        let u = &rec["user"];
        assert_eq!(u["userid"]["host"], "127.0.0.1");
        assert_eq!(u["auth"]["x"], "montest");
        assert_eq!(u["auth"]["p"], "unix");
        assert!(rec["sid_matches"].as_bool().unwrap(), "{rec}");
        assert!(!rec["forced"].as_bool().unwrap());
    }
    // https: the token's identity, the User-Agent's product.
    let h = record(&out, "/data/h/h.bin", "https");
    let put = h
        .iter()
        .find(|r| r["write_open"] == true)
        .expect("the PUT's record");
    assert_eq!(put["write"], small.len() as u64);
    let get = h
        .iter()
        .find(|r| r["write_open"] == false)
        .expect("the GET's record");
    assert!(get["read"].as_u64().unwrap() >= small.len() as u64);
    for rec in [put, get] {
        let a = &rec["user"]["auth"];
        assert_eq!(a["n"], who["name"], "{rec}");
        assert_eq!(a["p"], "ztn");
        assert_eq!(a["x"], "montool");
    }
    assert!(
        out["disconnects"].as_array().is_some_and(|d| !d.is_empty()),
        "sessions' ends"
    );
}
