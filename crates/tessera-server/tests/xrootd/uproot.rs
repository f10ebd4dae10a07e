//! uproot (PyPI, in the virtual environment `scripts/test` makes with
//! `--system-site-packages` on /usr/bin/python3, so that it sees Debian's
//! python3-xrootd) reads a ROOT file's branches, in steps, over root://
//! (its XRootD source) and https:// (its HTTP source), from a plain file
//! and from a RAIN 4+2 file one stripe of which is gone; every array
//! compared exactly with the local file's.

use crate::Env;

pub const SCRIPT: &str = r#"
import sys
import numpy as np
import uproot
out = sys.argv[1]
n = 300_000
rng = np.random.default_rng(5)
with uproot.recreate(out) as f:
    f.mktree("t", {"a": np.float64, "b": np.int32, "c": np.float32, "d": np.int64})
    # Many baskets a branch: the reader asks for several ranges a step.
    for i in range(0, n, 20_000):
        k = np.arange(i, i + 20_000)
        f["t"].extend({"a": k * 0.5, "b": (k * 3).astype(np.int32),
                       "c": rng.random(20_000).astype(np.float32), "d": k * k})
print("written")
"#;

pub const READ: &str = r#"
import sys
import uproot
local, handler_name = sys.argv[1], sys.argv[2]
urls = sys.argv[3:]
handler = {"xrootd": uproot.source.xrootd.XRootDSource, "http": uproot.source.http.HTTPSource}[handler_name]
want = uproot.open(local)["t"].arrays(["a", "c", "d"], library="np")
for url in urls:
    t = uproot.open(url, handler=handler)["t"]
    got = {"a": [], "c": [], "d": []}
    for chunk in t.iterate(["a", "c", "d"], step_size=50_000, library="np"):
        for k in got:
            got[k].append(chunk[k])
    import numpy as np
    for k in got:
        g = np.concatenate(got[k])
        assert g.dtype == want[k].dtype and (g == want[k]).all(), (url, k)
    print("ok", url, len(want["a"]))
"#;

pub fn python() -> String {
    std::env::var("TESSERA_UPROOT_PYTHON")
        .unwrap_or_else(|_| "/var/tmp/tessera-uproot-venv/bin/python".into())
}

#[test]
fn uproot_reads_branches_over_root_and_https() {
    let py = python();
    assert!(
        std::path::Path::new(&py).exists(),
        "{py} not found: scripts/test makes the uproot environment"
    );
    let e = Env::start();
    let script = e.local("w.py");
    std::fs::write(&script, SCRIPT).unwrap();
    let file = e.local("t.root");
    let out = e.ok(&py, &[script.to_str().unwrap(), file.to_str().unwrap()]);
    assert!(out.contains("written"), "{out}");
    // A RAIN 4+2 copy, then one of its stripes removed: reads rebuild it.
    e.rain_dir("/rain");
    let f = file.to_str().unwrap();
    e.ok(
        "xrdcp",
        &["--nopbar", f, &format!("{}//rain/t.root", e.url)],
    );
    let (victim, _) = e.corrupt_first_stripe();
    std::fs::remove_file(&victim).expect("remove a stripe");
    e.rt.block_on(
        e.core()
            .mkdir(&Env::root(), Env::path("/plain"), 0o755, true),
    )
    .expect("mkdir");
    e.ok(
        "xrdcp",
        &["--nopbar", f, &format!("{}//plain/t.root", e.url)],
    );
    let read = e.local("r.py");
    std::fs::write(&read, READ).unwrap();
    let root_urls = [
        format!("{}//plain/t.root", e.url),
        format!("{}//rain/t.root", e.url),
    ];
    let mut args = vec![read.to_str().unwrap(), f, "xrootd"];
    args.extend(root_urls.iter().map(String::as_str));
    let out = e.ok(&py, &args);
    assert_eq!(out.matches("ok root://").count(), 2, "{out}");
    // HTTPS: anonymous reads (the dev default), the dev CA trusted.
    let https = e
        .server
        .as_ref()
        .and_then(|s| s.https_addr)
        .expect("https listener");
    let ca = e.dir.path().join("data").join("dev").join("ca.pem");
    let https_urls = [
        format!("https://localhost:{}/plain/t.root", https.port()),
        format!("https://localhost:{}/rain/t.root", https.port()),
    ];
    let mut args = vec![read.to_str().unwrap(), f, "http"];
    args.extend(https_urls.iter().map(String::as_str));
    let o = e
        .cmd(&py)
        .args(&args)
        .env("SSL_CERT_FILE", &ca)
        .output()
        .expect("python");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(
        o.status.success() && text.matches("ok https://").count() == 2,
        "{text}\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
