//! A tesserad site (issue 26): one tesserad's `/data` as an https endpoint
//! of another's view, with the site's own bearer token in `token_file`.
//! The token goes with the federation's lookups (a forged one makes the
//! site refuse them: the file is then found nowhere) and never to clients
//! (the redirect carries none); the client reads the bytes from the site.

use crate::fed::{cas_pem, get};
use crate::{data, Env};
use tessera_fed::{EndpointCfg, FedConfig, SiteCfg, ViewCfg};

#[test]
fn a_tesserad_site_is_asked_with_its_token() {
    let site = Env::start();
    let body = data(40_000, 61);
    let f = site.local("f");
    std::fs::write(&f, &body).unwrap();
    let at = format!("{}/data/site/f", site.url);
    site.curl(&["-X", "MKCOL", &format!("{}/data/site", site.url)]);
    assert!(site.curl(&["-T", f.to_str().unwrap(), &at]).0 < 300);
    let good = site.local("good.token");
    std::fs::write(&good, crate::tokens::token(&site, "storage.read:/data")).unwrap();
    let bad = site.local("bad.token");
    std::fs::write(&bad, "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.Zm9yZ2Vk\n").unwrap();
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
    let view = |path: &str, ep: &str| ViewCfg {
        path: path.into(),
        endpoints: vec![ep.into()],
        public: true,
        write: String::new(),
    };
    let fed = FedConfig {
        probe_interval: std::time::Duration::from_millis(600_000),
        sites: vec![SiteCfg {
            name: "here".into(),
            subnets: vec!["127.0.0.1/32".into()],
            ..Default::default()
        }],
        endpoints: vec![ep("good", &good), ep("forged", &bad)],
        views: vec![view("/fed", "good"), view("/forged", "forged")],
        ..Default::default()
    };
    let e = Env::trusting(&site, move |c| c.federation = fed);
    let cas = cas_pem(&e, &site);
    let (code, to, _) = get(&e, &cas, "127.0.0.1", &format!("{}/fed/f", e.url), &[]);
    assert_eq!((code, to.as_str()), (302, at.as_str()));
    let (code, _, got) = get(&e, &cas, "127.0.0.1", &format!("{}/fed/f", e.url), &["-L"]);
    assert!(code == 200 && got == body, "{code}");
    let (code, _, _) = get(&e, &cas, "127.0.0.1", &format!("{}/forged/f", e.url), &[]);
    assert_eq!(code, 404, "the site refused the forged token's lookup");
}
