//! The Storage Resource Report (WLCG SRR v4.2) against `tesserad serve
//! --dev`: shares from the project quotas (used bytes, files, VOs from the
//! configuration or the directory's group), the endpoints named by the
//! advertised host; read with curl over HTTPS, with `xrdcp` as the
//! namespace file DIRAC reads, and with `tessera srr`; every copy
//! validated against the published schema (python3-jsonschema); served
//! only with a credential when `[srr] public = false`.

use crate::devd::{cli, daemon};
use crate::{data, run_ok, Daemon};
use std::path::{Path, PathBuf};
use std::process::Command;

const OVERLAY: &str =
    "[srr]\nname = \"TESSERA-TEST\"\npublic = true\nhost = \"storage.example.org\"\n\
    quality = \"testing\"\nfile = \"/data/srr/space-report.json\"\ninterval = \"1h\"\n\
    [srr.shares.\"/data/atlas\"]\nname = \"ATLASDATADISK\"\nvos = [\"atlas\"]\n";

fn srr_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/srr")
}

/// Validate `docs` against the v4.2 schema: the validator's errors.
fn validate(docs: &[&Path]) -> Result<(), String> {
    let d = srr_data();
    let o = Command::new("/usr/bin/python3")
        .arg(d.join("validate.py"))
        .arg(d.join("srrschema_4.2.json"))
        .args(docs)
        .output()
        .expect("python3 (scripts/test installs python3-jsonschema)");
    if o.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr))
    }
}

fn share<'a>(doc: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    doc["storageservice"]["storageshares"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("share {name} in {doc}"))
}

fn curl(d: &Daemon, dir: &Path, extra: &[&str]) -> (String, String) {
    let o = Command::new("curl")
        .args(["-sS", "--cacert"])
        .arg(dir.join("data/dev/ca.pem"))
        .args(["-w", "\n%{http_code}"])
        .args(extra)
        .arg(format!(
            "https://localhost:{}/.well-known/tessera/srr",
            port(&d.field("https="))
        ))
        .output()
        .unwrap();
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    let (body, code) = out.rsplit_once('\n').unwrap();
    (body.to_string(), code.to_string())
}

fn port(addr: &str) -> &str {
    addr.rsplit(':').next().unwrap()
}

#[test]
fn srr_is_served_written_and_valid() {
    // The validator accepts the four published examples and refuses a
    // document with a key the schema does not have.
    let d = srr_data();
    let examples: Vec<PathBuf> = ["cern_eos", "cnaf_storm", "desy_dcache", "prague_dpm"]
        .iter()
        .map(|n| d.join(format!("{n}.json")))
        .collect();
    validate(&examples.iter().map(PathBuf::as_path).collect::<Vec<_>>()).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let mut bad: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&examples[0]).unwrap()).unwrap();
    bad["storageservice"]["storagecapacity"]["online"]["freesize"] = 1.into();
    std::fs::write(dir.join("bad.json"), bad.to_string()).unwrap();
    assert!(
        validate(&[&dir.join("bad.json")]).is_err(),
        "free space is refused"
    );

    let dm = daemon(dir, OVERLAY);
    let xr = dm.field("xrootd=");
    for (p, max) in [("/data/atlas", "10G"), ("/data/cms", "5G")] {
        cli(&dm, dir, &["mkdir", "-p", p]);
        cli(
            &dm,
            dir,
            &["quota", "set", "--path", p, "--project", "--max-bytes", max],
        );
    }
    cli(&dm, dir, &["chown", "1000:100", "/data/cms"]); // group "users"
    let mut sizes = [0u64; 2];
    for (i, (p, n)) in [("atlas", 3usize), ("cms", 2)].iter().enumerate() {
        for f in 0..*n {
            let len = 100_000 * (f + 1) + i;
            let src = dir.join(format!("{p}{f}"));
            std::fs::write(&src, data(len, f as u64)).unwrap();
            sizes[i] += len as u64;
            run_ok(
                Command::new("xrdcp")
                    .args(["--nopbar", src.to_str().unwrap()])
                    .arg(format!("root://{xr}//data/{p}/f{f}")),
                "xrdcp up",
            );
        }
    }
    // tessera srr: made now, with the new usage.
    let out = cli(&dm, dir, &["srr", "--refresh"]);
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON");
    std::fs::write(dir.join("cli.json"), &out).unwrap();
    validate(&[&dir.join("cli.json")]).unwrap();
    let svc = &doc["storageservice"];
    assert_eq!(svc["name"], "TESSERA-TEST");
    assert_eq!(svc["implementation"], "Tessera");
    assert_eq!(svc["qualitylevel"], "testing");
    let eps = svc["storageendpoints"].as_array().unwrap();
    let urls: Vec<&str> = eps
        .iter()
        .map(|e| e["endpointurl"].as_str().unwrap())
        .collect();
    assert!(
        urls.contains(&format!("root://storage.example.org:{}/", port(&xr)).as_str()),
        "{urls:?}"
    );
    let https = format!("https://storage.example.org:{}/", port(&dm.field("https=")));
    assert!(urls.contains(&https.as_str()), "{urls:?}");
    let atlas = share(&doc, "ATLASDATADISK");
    assert_eq!(atlas["path"][0], "/data/atlas");
    assert_eq!(atlas["vos"], serde_json::json!(["atlas"]));
    assert_eq!(atlas["totalsize"], 10_000_000_000u64);
    assert_eq!(atlas["usedsize"], sizes[0]);
    assert_eq!(atlas["numberoffiles"], 3);
    let cms = share(&doc, "cms");
    assert_eq!(
        cms["vos"],
        serde_json::json!(["users"]),
        "the directory's group"
    );
    assert_eq!(cms["usedsize"], sizes[1]);
    assert_eq!(cms["numberoffiles"], 2);
    assert_eq!(
        svc["storagecapacity"]["online"]["usedsize"],
        sizes[0] + sizes[1]
    );
    assert!(!out.contains("free"), "no free space in an SRR");

    // Over HTTPS, anonymous (public = true): the same report.
    let (body, code) = curl(&dm, dir, &[]);
    assert_eq!(code, "200", "{body}");
    std::fs::write(dir.join("https.json"), &body).unwrap();
    validate(&[&dir.join("https.json")]).unwrap();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&body).unwrap(),
        doc
    );
    // As DIRAC reads it: a file in the namespace, with xrdcp.
    let got = dir.join("xrdcp.json");
    run_ok(
        Command::new("xrdcp")
            .args([
                "--nopbar",
                &format!("root://{xr}//data/srr/space-report.json"),
            ])
            .arg(&got),
        "xrdcp the report",
    );
    validate(&[&got]).unwrap();
    let file: serde_json::Value = serde_json::from_slice(&std::fs::read(&got).unwrap()).unwrap();
    assert_eq!(file, doc);
    drop(dm);

    // Not public: anonymous requests get 401, a token the report.
    let dir2 = tempfile::tempdir().unwrap();
    let dm = daemon(dir2.path(), "[srr]\n"); // public = false: the default
    let (body, code) = curl(&dm, dir2.path(), &[]);
    assert_eq!(code, "401", "{body}");
    let tok = crate::devd::cli(
        &dm,
        dir2.path(),
        &[
            "token",
            "issue",
            "--data-dir",
            dir2.path().join("data").to_str().unwrap(),
            "--sub",
            "acct",
            "--scope",
            "storage.read:/",
        ],
    );
    let auth = format!("Authorization: Bearer {}", tok.trim());
    let (body, code) = curl(&dm, dir2.path(), &["-H", &auth]);
    assert_eq!(code, "200", "{body}");
    std::fs::write(dir2.path().join("t.json"), &body).unwrap();
    validate(&[&dir2.path().join("t.json")]).unwrap();
}
