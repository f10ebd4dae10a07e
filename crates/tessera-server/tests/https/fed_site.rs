//! A tesserad site (issue 26): one tesserad's `/data` as an https endpoint
//! of another's view, with the site's own bearer token in `token_file`.
//! The token goes with the federation's lookups (a forged one makes the
//! site refuse them: the file is then found nowhere) and never to clients
//! (the redirect carries none); the client reads the bytes from the site.

use crate::fed::{federated, get};
use crate::{data, fed_site, fed_view, Env};
use tessera_fed::{EndpointCfg, FedConfig};

#[test]
fn a_tesserad_site_is_asked_with_its_token() {
    let site = Env::start();
    let body = data(40_000, 61);
    let f = site.file("f", &body);
    let at = format!("{}/data/site/f", site.url);
    site.curl(&["-X", "MKCOL", &format!("{}/data/site", site.url)]);
    assert!(site.curl(&["-T", f.to_str().unwrap(), &at]).0 < 300);
    let good = site.file(
        "good.token",
        crate::tokens::token(&site, "storage.read:/data"),
    );
    let bad = site.file(
        "bad.token",
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.Zm9yZ2Vk\n",
    );
    // Credential files are private (tesserad refuses shared ones).
    for f in [&good, &bad] {
        std::fs::set_permissions(f, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    }
    let ep = |name: &str, token: &std::path::Path| EndpointCfg {
        name: name.into(),
        site: "here".into(),
        url: format!("{}/data/site", site.url),
        token_file: Some(token.to_path_buf()),
        ..Default::default()
    };
    let fed = FedConfig {
        probe_interval: std::time::Duration::from_millis(600_000),
        sites: vec![fed_site("here", &["127.0.0.1/32"])],
        endpoints: vec![ep("good", &good), ep("forged", &bad)],
        views: vec![
            fed_view("/fed", &["good"], true, ""),
            fed_view("/forged", &["forged"], true, ""),
        ],
        ..Default::default()
    };
    let (e, cas) = federated(&site, fed);
    let (code, to, _) = get(&e, &cas, "127.0.0.1", &format!("{}/fed/f", e.url), &[]);
    assert_eq!((code, to.as_str()), (302, at.as_str()));
    let (code, _, got) = get(&e, &cas, "127.0.0.1", &format!("{}/fed/f", e.url), &["-L"]);
    assert!(code == 200 && got == body, "{code}");
    let (code, _, _) = get(&e, &cas, "127.0.0.1", &format!("{}/forged/f", e.url), &[]);
    assert_eq!(code, 404, "the site refused the forged token's lookup");
}
