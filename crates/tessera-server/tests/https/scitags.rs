//! SciTags: fireflies (decoded from a local UDP socket, each validated
//! against the scitags.org firefly schema with python3-jsonschema) and
//! flowd pipe lines for a curl PUT and GET with `SciTag`, xrdcp down and
//! up with `scitag.flow`, and a third-party pull with
//! `TransferHeaderSciTag`: a start and an end per flow, its experiment
//! and activity, the data's sender as its source, its bytes at the end.

use crate::{data, Env};
use std::net::UdpSocket;
use std::time::{Duration, Instant};

/// A flow's start and end fireflies, as JSON.
struct Flow {
    start: serde_json::Value,
    end: serde_json::Value,
}

fn flows(got: &[serde_json::Value], app: &str) -> Vec<Flow> {
    let key = |j: &serde_json::Value| j["flow-id"].to_string();
    got.iter()
        .filter(|j| j["context"]["application"] == app && j["flow-lifecycle"]["state"] == "start")
        .map(|s| Flow {
            start: s.clone(),
            end: got
                .iter()
                .find(|e| e["flow-lifecycle"]["state"] == "end" && key(e) == key(s))
                .unwrap_or_else(|| panic!("no end for {s}"))
                .clone(),
        })
        .collect()
}

#[test]
fn fireflies_for_http_xroot_and_third_party_copies() {
    let rx = UdpSocket::bind("127.0.0.1:0").unwrap();
    rx.set_read_timeout(Some(Duration::from_millis(300)))
        .unwrap();
    let to = rx.local_addr().unwrap().to_string();
    let a = Env::start();
    // flowd's named pipe, read as flowd reads it, line by line.
    let pipe = a.local("flowd");
    let ok = std::process::Command::new("mkfifo")
        .arg(&pipe)
        .status()
        .unwrap();
    assert!(ok.success(), "mkfifo");
    let lines = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    {
        // Read-write: the open does not wait for a writer.
        let f = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&pipe)
            .unwrap();
        let lines = std::sync::Arc::clone(&lines);
        std::thread::spawn(move || {
            use std::io::BufRead;
            for l in std::io::BufReader::new(f).lines().map_while(Result::ok) {
                let mut all = lines.lock().unwrap();
                all.push_str(&l);
                all.push('\n');
            }
        });
    }
    let p2 = pipe.clone();
    let b = Env::trusting(&a, move |c| {
        c.scitags.destinations = vec![to];
        c.scitags.flowd = Some(p2);
    });
    let https_port = b.addr.port();
    let xr = b
        .server
        .as_ref()
        .unwrap()
        .xrootd_addr
        .expect("xrootd listener");
    let body = data(2_000_003, 8);
    let f = b.file("up", &body);
    let url = format!("{}/sc/f.bin", b.url);
    // curl PUT and GET with SciTag 206 (CMS, activity 14); an invalid tag
    // marks nothing and fails nothing.
    assert_eq!(
        b.curl(&[
            "-H",
            "Expect:",
            "-H",
            "SciTag: 206",
            "-T",
            f.to_str().unwrap(),
            &url
        ])
        .0,
        201
    );
    let (code, got) = b.curl(&["-H", "SciTag: 206", &url]);
    assert!(code == 200 && got == body);
    assert_eq!(b.curl(&["-H", "SciTag: 12x", &url]).0, 200);
    // xrdcp down and up with scitag.flow=144 (ATLAS, activity 16).
    let back = b.local("back");
    let xurl = format!("root://{xr}//sc/f.bin?scitag.flow=144");
    b.ok("xrdcp", &["--nopbar", "-f", &xurl, back.to_str().unwrap()]);
    assert!(std::fs::read(&back).unwrap() == body);
    let xup = format!("root://{xr}//sc/x.bin?scitag.flow=144");
    b.ok("xrdcp", &["--nopbar", "-f", f.to_str().unwrap(), &xup]);
    // A pull from A, marked by the COPY (FTS style).
    let src_on_a = format!("{}/sc/src.bin", a.url);
    assert_eq!(
        a.curl(&["-H", "Expect:", "-T", f.to_str().unwrap(), &src_on_a])
            .0,
        201
    );
    let (code, out) = b.copy(
        &format!("{}/sc/pulled.bin", b.url),
        &[
            &format!("Source: {src_on_a}"),
            "Credential: none",
            "TransferHeaderSciTag: 327",
        ],
    );
    assert_eq!(code, 201, "{out}");

    // Every datagram until none came for a while.
    let mut got = Vec::new();
    let mut buf = vec![0u8; 65536];
    let mut quiet = Instant::now();
    while quiet.elapsed() < Duration::from_secs(2) {
        if let Ok((n, _)) = rx.recv_from(&mut buf) {
            let d = String::from_utf8_lossy(&buf[..n]).into_owned();
            let head = d.split(" - firefly-json - ").next().unwrap();
            assert!(
                head.starts_with("<134>1 - ") && head.ends_with(" tessera"),
                "{d}"
            );
            got.push(
                serde_json::from_str::<serde_json::Value>(
                    d.split(" - firefly-json - ").nth(1).unwrap(),
                )
                .unwrap(),
            );
            quiet = Instant::now();
        }
    }
    // Each validated against the published schema.
    let docs = b.local("fireflies.json");
    std::fs::write(&docs, serde_json::to_string(&got).unwrap()).unwrap();
    let schema = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/scitags/firefly.schema.json"
    );
    let check = "import json,sys,jsonschema\n\
        s=json.load(open(sys.argv[1])); v=jsonschema.Draft202012Validator(s, format_checker=jsonschema.FormatChecker())\n\
        bad=[e.message for d in json.load(open(sys.argv[2])) for e in v.iter_errors(d)]\n\
        print(bad); sys.exit(1 if bad else 0)";
    b.ok(
        "/usr/bin/python3",
        &["-c", check, schema, docs.to_str().unwrap()],
    );

    let n = body.len() as u64;
    let get = flows(&got, "http-get");
    assert_eq!(
        get.len(),
        1,
        "one marked GET (the invalid tag marks none): {got:?}"
    );
    let g = &get[0];
    assert_eq!(
        (
            g.start["context"]["experiment-id"].as_u64(),
            g.start["context"]["activity-id"].as_u64()
        ),
        (Some(3), Some(14))
    );
    assert_eq!(
        g.start["flow-id"]["src-port"], https_port,
        "the server sends"
    );
    assert!(g.end["usage"]["sent"].as_u64().unwrap() >= n);
    let put = flows(&got, "http-put");
    assert_eq!(put.len(), 1);
    assert_eq!(
        put[0].start["flow-id"]["dst-port"], https_port,
        "the client sends"
    );
    assert_eq!(put[0].end["usage"]["sent"], n);
    let x = flows(&got, "xrdcp");
    assert_eq!(x.len(), 2, "xrdcp down and up: {got:?}");
    for fl in &x {
        assert_eq!(fl.start["context"]["experiment-id"], 2);
        assert_eq!(fl.start["context"]["activity-id"], 16);
        assert!(fl.end["usage"]["sent"].as_u64().unwrap() >= n);
    }
    let down = x
        .iter()
        .find(|f| f.start["flow-id"]["src-port"] == xr.port())
        .expect("download from the server");
    assert_ne!(down.start["flow-id"]["dst-port"], xr.port());
    assert!(
        x.iter()
            .any(|f| f.start["flow-id"]["dst-port"] == xr.port()),
        "upload to the server"
    );
    let tpc = flows(&got, "http-tpc");
    let pulled = tpc.iter().find(|f| {
        f.start["flow-id"]["src-port"] == a.addr.port()
            && f.end["usage"]["sent"].as_u64().unwrap() >= n
    });
    let p = pulled.unwrap_or_else(|| panic!("the pull's data flow from A: {got:?}"));
    assert_eq!(
        (
            p.start["context"]["experiment-id"].as_u64(),
            p.start["context"]["activity-id"].as_u64()
        ),
        (Some(5), Some(7))
    );
    // flowd's pipe: a start and an end line per flow.
    let lines = lines.lock().unwrap().clone();
    let starts = lines
        .lines()
        .filter(|l| l.starts_with("start tcp "))
        .count();
    let ends = lines.lines().filter(|l| l.starts_with("end tcp ")).count();
    assert_eq!((starts, ends), (got.len() / 2, got.len() / 2), "{lines}");
    assert!(
        lines.contains(&format!("start tcp 127.0.0.1 {https_port} 127.0.0.1 ")),
        "{lines}"
    );
    assert!(lines.lines().all(|l| l.split(' ').count() == 8), "{lines}");
}
