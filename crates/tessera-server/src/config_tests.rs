//! The configuration's tests: the shipped template, old keys, defaults.
use super::*;

#[test]
fn template_parses_and_matches_defaults_where_commented_out() {
    let text = include_str!("../../../deploy/tesserad.toml");
    let cfg: Config = toml::from_str(text).expect("template parses");
    cfg.validate().expect("template valid");
    assert_eq!(cfg.listen, Listen::default());
    assert_eq!(cfg.meta.durability, DurabilityCfg::Sync);
    assert_eq!(cfg.auth, Auth::default());
    // The commented issuer example, uncommented, parses.
    let issuer: String = text
        .lines()
        .skip_while(|l| !l.starts_with("# [[auth.issuers]]"))
        .map_while(|l| l.strip_prefix("# "))
        .map(|l| format!("{l}\n"))
        .collect();
    let cfg: Config = toml::from_str(&issuer).expect("issuer example parses");
    let i = &cfg.auth.issuers[0];
    assert_eq!((i.base_path.as_str(), i.groups["/cms"]), ("/eos/cms", 3000));
}

#[test]
fn old_keys_read_as_the_new_ones_and_defaults_print() {
    let old = "[xrootd]\nidle_timeout_s = 120\n[buffers]\nmax_mib = 4096\nwait_ms = 250\n\
               [cluster]\ncap_ttl_secs = 30\n[server]\ndrain_s = 5\n";
    let new = "[xrootd]\nidle_timeout = \"2m\"\n[buffers]\nmax = \"4GiB\"\nwait = \"250ms\"\n\
               [cluster]\ncap_ttl = \"30s\"\n[server]\ndrain = \"5s\"\n";
    let mut t: toml::Table = toml::from_str(old).unwrap();
    assert_eq!(crate::units::upgrade(&mut t).len(), 5);
    let a: Config = t.try_into().unwrap();
    let b: Config = toml::from_str(new).unwrap();
    assert_eq!(a, b);
    assert_eq!(
        a.xrootd.idle_timeout,
        Some(std::time::Duration::from_secs(120))
    );
    assert_eq!(a.buffers.max_mib, Some(4096));
    assert_eq!(a.cluster.cap_ttl_secs, 30);
    // print-config: every default spelled out, in the readable form,
    // and it reads back as the same configuration.
    let eff = Config::default().effective();
    let text = toml::to_string_pretty(&eff).unwrap();
    for want in [
        "idle_timeout = \"10m\"",
        "idle_open_timeout = \"1h\"",
        "body_timeout = \"1m\"",
        "max = \"2GiB\"",
        "wait = \"5s\"",
        "cap_ttl = \"20s\"",
        "drain = \"30s\"",
        "io_timeout = \"10s\"",
    ] {
        assert!(text.contains(want), "{want} in\n{text}");
    }
    let back: Config = toml::from_str(&text).unwrap();
    assert_eq!(back, eff);
}

#[test]
fn unknown_keys_are_errors() {
    let err = toml::from_str::<Config>("[meta]\ndurabilty = \"sync\"\n").expect_err("typo");
    assert!(err.to_string().contains("unknown field"), "{err}");
    let err = toml::from_str::<Config>("nonsense = 1\n").expect_err("unknown");
    assert!(err.to_string().contains("unknown field"), "{err}");
}

#[test]
fn the_federation_example_parses_and_builds() {
    let text = include_str!("../../../deploy/federation/tesserad-federation.toml");
    // A fragment to append to a whole configuration: parsed and built,
    // its credential files standing in a temporary directory.
    let dir = tempfile::tempdir().unwrap();
    for f in ["kek-storm.token", "cloud-s3.access", "cloud-s3.secret"] {
        let p = dir.path().join(f);
        std::fs::write(&p, "secret\n").unwrap();
        // Credential files are private to the server's user.
        std::fs::set_permissions(&p, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    }
    let text = text.replace("/etc/tessera/", &format!("{}/", dir.path().display()));
    let cfg: Config = toml::from_str(&text).expect("example parses");
    assert_eq!(cfg.federation.views[0].endpoints.len(), 3);
    tessera_fed::Federation::new(cfg.federation, None).expect("builds");
}

#[test]
fn the_ha_examples_parse_and_validate() {
    for text in [
        include_str!("../../../deploy/ha/tesserad-mds1.toml"),
        include_str!("../../../deploy/ha/tesserad-mds2.toml"),
    ] {
        let cfg: Config = toml::from_str(text).expect("example parses");
        cfg.validate().expect("valid");
        assert!(cfg.ha.enabled);
        let a = cfg.ha.advert(&cfg.listen).unwrap();
        assert_eq!(a.xrootd, cfg.listen.xrootd.map(|x| x.to_string()));
    }
    for text in [
        include_str!("../../../deploy/ha/tesserad-gateway1.toml"),
        include_str!("../../../deploy/ha/tesserad-gateway2.toml"),
    ] {
        let cfg: Config = toml::from_str(text).expect("gateway example parses");
        cfg.validate().expect("valid");
        assert_eq!(cfg.cluster.mgm.unwrap().split(',').count(), 2);
    }
    // HA needs fixed ports, a node name and a file system.
    let mut cfg: Config =
        toml::from_str(include_str!("../../../deploy/ha/tesserad-mds1.toml")).unwrap();
    cfg.listen.admin.set_port(0);
    assert!(cfg.validate().is_err());
    let mut cfg: Config =
        toml::from_str(include_str!("../../../deploy/ha/tesserad-mds1.toml")).unwrap();
    cfg.ha.fs.clear();
    assert!(cfg.validate().is_err());
}
