//! Federation with an S3 endpoint (issue 26): a real RADOS gateway of the
//! loopback Ceph cluster (`TC_RGW=1 deploy/ceph/up.sh`; scripts/test runs
//! this with `--ignored`) and a Debian xrootd XrdHttp site under one view.
//! Clients are sent to presigned S3 URLs (the keys stay in the server),
//! listings merge the bucket's prefixes with the site's directories, a
//! client at the S3 site is sent to S3, writes go to S3 by the view's
//! policy (a presigned PUT), and gfal-copy reads through the view.

use crate::fed::{cas_dir, federated, get, https_ep, metalink, place, propfind};
use crate::reference::Reference;
use crate::{data, fed_endpoint, fed_site, fed_view, Env};
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use std::time::Duration;
use tessera_fed::{EndpointCfg, FedConfig};

/// The cluster's gateway: its URL, key files and keys.
struct S3 {
    url: String,
    key_file: String,
    secret_file: String,
    bucket: Bucket,
    creds: Credentials,
    secret: String,
}

impl S3 {
    fn from_env(bucket: &str) -> S3 {
        let var = |k: &str| {
            std::env::var(k).unwrap_or_else(|_| {
                panic!("{k}: start Ceph with TC_RGW=1 deploy/ceph/up.sh and source its env")
            })
        };
        let (url, key_file, secret_file) = (
            var("TC_S3_URL"),
            var("TC_S3_ACCESS_KEY_FILE"),
            var("TC_S3_SECRET_KEY_FILE"),
        );
        let read = |f: &str| std::fs::read_to_string(f).unwrap().trim().to_string();
        let (key, secret) = (read(&key_file), read(&secret_file));
        let b = Bucket::new(
            url.parse().unwrap(),
            UrlStyle::Path,
            bucket.to_string(),
            "us-east-1",
        )
        .unwrap();
        S3 {
            url,
            key_file,
            secret_file,
            bucket: b,
            creds: Credentials::new(key, secret.clone()),
            secret,
        }
    }

    /// curl `method` on a presigned URL, with `body` from a file: the status.
    fn curl(&self, e: &Env, method: &str, url: &str, body: Option<&[u8]>) -> u16 {
        let f = e.local("s3.body");
        let mut args: Vec<String> = ["-sS", "-o", "/dev/null", "-w", "%{http_code}", "-X", method]
            .map(String::from)
            .to_vec();
        if let Some(b) = body {
            std::fs::write(&f, b).unwrap();
            args.push("--data-binary".into());
            args.push(format!("@{}", f.display()));
        }
        args.push(url.into());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let o = e.run("curl", &args);
        String::from_utf8_lossy(&o.stdout)
            .trim()
            .parse()
            .unwrap_or(0)
    }

    fn put(&self, e: &Env, key: &str, body: &[u8]) {
        let url = self
            .bucket
            .put_object(Some(&self.creds), key)
            .sign(Duration::from_secs(60));
        assert_eq!(self.curl(e, "PUT", url.as_str(), Some(body)), 200, "{key}");
    }
}

#[test]
#[ignore = "needs the loopback Ceph cluster with its RADOS gateway (TC_RGW=1 deploy/ceph/up.sh)"]
fn an_s3_bucket_is_served_by_presigned_redirects() {
    let issuer = Env::start();
    let name = format!("tessera-fed-{}", std::process::id());
    let s3 = S3::from_env(&name);
    let a = Reference::start(&issuer);
    let create = s3
        .bucket
        .create_bucket(&s3.creds)
        .sign(Duration::from_secs(60));
    assert_eq!(s3.curl(&issuer, "PUT", create.as_str(), None), 200);
    let body = data(250_000, 41);
    s3.put(&issuer, "fed/f", &body);
    s3.put(&issuer, "fed/only-s3", b"only in the bucket");
    s3.put(&issuer, "fed/d/s3file", b"12345");
    s3.put(&issuer, "fed/d/sub/deep", b"x");
    s3.put(&issuer, "elsewhere/hidden", b"not under the prefix");
    place(&a, "/fed/f", &body);
    place(&a, "/fed/d/x1", b"1");
    let fed = FedConfig {
        probe_interval: Duration::from_millis(300),
        timeout: Duration::from_millis(2000),
        sites: vec![
            fed_site("site-a", &["127.0.0.2/32"]),
            fed_site("cloud", &["127.0.0.4/32"]),
        ],
        endpoints: vec![
            https_ep("a", "site-a", &a.url),
            EndpointCfg {
                access_key_file: Some(s3.key_file.clone().into()),
                secret_key_file: Some(s3.secret_file.clone().into()),
                ..fed_endpoint("s3", "cloud", "s3", format!("{}/{name}/fed", s3.url))
            },
        ],
        views: vec![fed_view("/fed", &["a", "s3"], true, "s3")],
        ..Default::default()
    };
    let (e, cas) = federated(&issuer, fed);
    let url = |p: &str| format!("{}/fed{p}", e.url);
    let in_s3 = |p: &str| format!("{}/{name}/fed{p}?", s3.url);
    // The S3 site's client goes to the bucket, by a presigned URL that
    // carries no secret; the other site's client to its own replica.
    let (code, to, _) = get(&e, &cas, "127.0.0.4", &url("/f"), &[]);
    assert_eq!(code, 302);
    assert!(to.starts_with(&in_s3("/f")), "{to}");
    assert!(to.contains("X-Amz-Algorithm=AWS4-HMAC-SHA256"), "{to}");
    assert!(!to.contains(&s3.secret), "the secret key went out: {to}");
    let (code, _, got) = get(&e, &cas, "127.0.0.4", &url("/f"), &["-L"]);
    assert!(code == 200 && got == body, "{code}");
    let (code, to, _) = get(&e, &cas, "127.0.0.2", &url("/f"), &[]);
    assert_eq!((code, to), (302, format!("{}/fed/f", a.url)));
    // A file only in the bucket, for anyone; through gfal-copy too.
    let (code, to, _) = get(&e, &cas, "127.0.0.2", &url("/only-s3"), &[]);
    assert!(
        code == 302 && to.starts_with(&in_s3("/only-s3")),
        "{code} {to}"
    );
    let (_, _, got) = get(&e, &cas, "127.0.0.2", &url("/only-s3"), &["-L"]);
    assert_eq!(got, b"only in the bucket");
    let out = e.local("gfal.out");
    let capath = cas_dir(&e, &issuer);
    crate::run_ok(
        e.cmd("gfal-copy").env("X509_CERT_DIR", &capath).args([
            "-f",
            &url("/only-s3"),
            &format!("file://{}", out.display()),
        ]),
        "gfal-copy",
    );
    assert_eq!(std::fs::read(&out).unwrap(), b"only in the bucket");
    // Listings: the site's names and the bucket's keys under the prefix,
    // a common prefix a directory; nothing outside the prefix.
    let (code, xml) = propfind(&e, &cas, &url("/d"), "1");
    assert_eq!(code, 207, "{xml}");
    for want in [
        "<D:href>/fed/d/x1</D:href>",
        "<D:href>/fed/d/s3file</D:href>",
        "<D:href>/fed/d/sub/</D:href><D:propstat><D:prop><D:resourcetype><D:collection/>",
        "<D:getcontentlength>5</D:getcontentlength>",
    ] {
        assert!(xml.contains(want), "{want} in {xml}");
    }
    let (code, xml) = propfind(&e, &cas, &url("/"), "1");
    assert!(
        code == 207 && xml.contains("/fed/only-s3<") && !xml.contains("hidden"),
        "{xml}"
    );
    let (code, xml) = propfind(&e, &cas, &url("/only-s3"), "0");
    assert!(
        code == 207 && xml.contains("<D:getcontentlength>18<"),
        "{code}"
    );
    // Metalink from the S3 site: the bucket first, the URL escaped.
    let (code, doc) = metalink(&e, &cas, "127.0.0.4", &url("/f"));
    assert_eq!(code, 200, "{doc}");
    let (ps, pa) = (
        doc.find(&in_s3("/f")).expect("s3 listed"),
        doc.find(&format!("{}/fed/f", a.url)).expect("a listed"),
    );
    assert!(ps < pa && doc.contains("&amp;X-Amz-"), "{doc}");
    // The bucket's own view.
    let (code, to, _) = get(
        &e,
        &cas,
        "127.0.0.2",
        &format!("{}/PerSite/s3/only-s3", e.url),
        &[],
    );
    assert!(
        code == 302 && to.starts_with(&in_s3("/only-s3")),
        "{code} {to}"
    );
    // Writes go to the bucket (write = "s3"), by a presigned PUT.
    let up = e.local("up.bin");
    let bytes = data(7000, 5);
    std::fs::write(&up, &bytes).unwrap();
    let auth = format!("Authorization: Bearer {}", e.token.as_ref().unwrap());
    let (code, to, _) = get(
        &e,
        &cas,
        "127.0.0.2",
        &url("/new"),
        &["-T", up.to_str().unwrap(), "-H", &auth],
    );
    assert!(code == 307 && to.starts_with(&in_s3("/new")), "{code} {to}");
    let (code, _, _) = get(
        &e,
        &cas,
        "127.0.0.2",
        &url("/new"),
        &["-L", "-T", up.to_str().unwrap(), "-H", &auth],
    );
    assert_eq!(code, 200);
    let (_, _, got) = get(&e, &cas, "127.0.0.2", &url("/new"), &["-L"]);
    assert!(
        got == bytes,
        "the written bytes, read back through the view"
    );
    // A token that may not read the view: refused before any redirect.
    let t = crate::tokens::token(&issuer, "storage.read:/elsewhere");
    let h = format!("Authorization: Bearer {t}");
    let (code, to, _) = get(&e, &cas, "127.0.0.2", &url("/only-s3"), &["-H", &h]);
    assert_eq!((code, to.as_str()), (403, ""));
    create_only_tokens_get_no_grant_to_replace(&e, &cas, &s3, &name, &issuer);
}

/// Issue 35, item 3: a token that may only create gets a presigned PUT
/// only for a key that is absent and only when it asks for create-only
/// itself; the grant carries `If-None-Match: *` in its signature, so it
/// cannot replace the object once it exists, used again or not, and it is
/// short-lived.
fn create_only_tokens_get_no_grant_to_replace(
    e: &Env,
    cas: &std::path::Path,
    s3: &S3,
    name: &str,
    issuer: &Env,
) {
    let t = crate::tokens::token(issuer, "storage.create:/fed storage.read:/fed");
    let auth = format!("Authorization: Bearer {t}");
    let up = e.file("create-only.bin", b"first");
    let url = |p: &str| format!("{}/fed{p}", e.url);
    let put = |p: &str, extra: &[&str]| {
        let mut a = vec!["-T", up.to_str().unwrap(), "-H", &auth];
        a.extend_from_slice(extra);
        get(e, cas, "127.0.0.2", &url(p), &a)
    };
    let inm = ["-H", "If-None-Match: *"];
    assert_eq!(put("/new", &[]).0, 428, "create-only must say so");
    assert_eq!(put("/new", &inm).0, 412, "the key exists");
    let (code, to, _) = put("/fresh", &inm);
    assert_eq!(code, 307, "{to}");
    assert!(
        to.contains("if-none-match") && to.contains("X-Amz-Expires=60"),
        "{to}"
    );
    let (code, _, _) = put("/fresh", &["-L", "-H", "If-None-Match: *"]);
    assert_eq!(code, 200, "the create itself");
    // The grant used again, with and without the header: no replacement.
    std::fs::write(&up, b"second").unwrap();
    let again = |extra: &[&str]| {
        let mut a = vec!["-T", up.to_str().unwrap()];
        a.extend_from_slice(extra);
        get(e, cas, "127.0.0.2", &to, &a).0
    };
    assert_eq!(again(&inm), 412, "the store refuses to replace");
    assert_eq!(again(&[]), 403, "the condition is signed in");
    let key = s3
        .bucket
        .get_object(Some(&s3.creds), "fed/fresh")
        .sign(Duration::from_secs(60));
    let (_, _, got) = get(e, cas, "127.0.0.2", key.as_str(), &[]);
    assert_eq!(got, b"first", "bucket {name}: the object as created");
}
