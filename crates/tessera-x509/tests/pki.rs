//! Real proxies and VOMS attribute certificates, made by openssl and
//! voms-proxy-fake (tests/pki/make.sh), verified as a server would.

use std::path::{Path, PathBuf};
use tessera_x509::chain::{self, CrlPolicy};
use tessera_x509::mapping::{GridMap, VomsMap};
use tessera_x509::{voms, TrustStore, X509Error};

fn pki() -> PathBuf {
    static DIR: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    DIR.get_or_init(make).clone()
}

fn make() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-pki-x509-{}", std::process::id()));
    // Read when the test runs (cargo sets it): a binary cached from a
    // checkout at another path (a shared build cache) must not look there.
    let root = std::env::var("CARGO_MANIFEST_DIR").expect("run by cargo");
    let script = Path::new(&root).join("../../tests/pki/make.sh");
    let st = std::process::Command::new("bash")
        .arg(&script)
        .arg(&dir)
        .status()
        .expect("bash");
    assert!(
        st.success(),
        "tests/pki/make.sh needs openssl and voms-proxy-fake (voms-clients)"
    );
    dir
}

fn chain_of(file: &Path) -> Vec<Vec<u8>> {
    let bytes = std::fs::read(file).unwrap();
    x509_parser::pem::Pem::iter_from_buffer(&bytes)
        .filter_map(Result::ok)
        .filter(|p| p.label == "CERTIFICATE")
        .map(|p| p.contents)
        .collect()
}

struct Pki {
    dir: PathBuf,
    store: TrustStore,
}

impl Pki {
    fn verify(&self, name: &str, policy: CrlPolicy) -> Result<chain::Verified, X509Error> {
        chain::verify(
            &self.store,
            &chain_of(&self.dir.join(name)),
            tessera_x509::now(),
            policy,
        )
    }
    fn voms(&self, name: &str) -> Result<Option<voms::Attributes>, X509Error> {
        let v = self.verify(name, CrlPolicy::Enforce).expect(name);
        voms::attributes(&self.store, &v, tessera_x509::now(), CrlPolicy::Enforce)
    }
}

fn setup() -> Pki {
    let dir = pki();
    let store = TrustStore::load(&dir.join("certificates"), Some(&dir.join("vomsdir")))
        .expect("trust store");
    assert_eq!(
        store.counts(),
        (1, 1),
        "one CA and its CRL; skipped: {:?}",
        store.skipped
    );
    Pki { dir, store }
}

const ALICE: &str = "/DC=org/DC=tessera/OU=Users/CN=Alice Smith";

#[test]
fn good_chains_and_their_attributes() {
    let p = setup();
    for (name, proxies, limited) in [
        ("alice-voms.pem", 1, false),
        ("alice-plain.pem", 1, false),
        ("alice-legacy.pem", 1, false),
        ("alice-limited.pem", 1, true),
        ("alice-cert.pem", 0, false),
    ] {
        let v = p
            .verify(name, CrlPolicy::Enforce)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(
            (v.dn.as_str(), v.proxies, v.limited),
            (ALICE, proxies, limited),
            "{name}"
        );
        assert!(v.not_after > tessera_x509::now());
    }
    let a = p.voms("alice-voms.pem").unwrap().expect("an AC");
    assert_eq!(a.vo, "cms");
    assert_eq!(
        a.fqans,
        vec![
            "/cms/Role=production/Capability=NULL",
            "/cms/higgs/Role=NULL/Capability=NULL"
        ]
    );
    assert_eq!(
        a.server,
        "/DC=org/DC=tessera/OU=Services/CN=voms.example.org"
    );
    assert!(p.voms("alice-plain.pem").unwrap().is_none());
    assert!(p.voms("alice-limited.pem").unwrap().is_some());
    // The mapping files the PKI comes with.
    let gm = GridMap::parse(&std::fs::read_to_string(p.dir.join("grid-mapfile")).unwrap()).unwrap();
    assert_eq!(gm.user(ALICE), Some("daemon"));
    let rm = VomsMap::parse(&std::fs::read_to_string(p.dir.join("vorolemap")).unwrap()).unwrap();
    assert_eq!(rm.user(ALICE, &a.fqans), Some("bin"));
}

#[test]
fn every_bad_chain_is_refused_with_its_reason() {
    let p = setup();
    let why = |name: &str| p.verify(name, CrlPolicy::Enforce).expect_err(name);
    assert!(
        matches!(why("alice-expired.pem"), X509Error::Expired(..)),
        "{}",
        why("alice-expired.pem")
    );
    assert!(
        matches!(why("bob-voms.pem"), X509Error::Revoked(..)),
        "{}",
        why("bob-voms.pem")
    );
    // Same CA name, another key: the signature gives it away.
    let m = why("mallory-plain.pem");
    assert!(matches!(m, X509Error::BadSignature(..)), "{m}");
    assert!(matches!(why("dave-expired.pem"), X509Error::Expired(..)));
    // A chain of the proxy alone (no end-entity certificate).
    let only = &chain_of(&p.dir.join("alice-plain.pem"))[..1];
    let e = chain::verify(&p.store, only, tessera_x509::now(), CrlPolicy::Enforce).unwrap_err();
    assert!(matches!(e, X509Error::Proxy(..)), "{e}");
    // A proxy whose signature was tampered with.
    let mut c = chain_of(&p.dir.join("alice-plain.pem"));
    let n = c[0].len();
    c[0][n - 5] ^= 0x55;
    let e = chain::verify(&p.store, &c, tessera_x509::now(), CrlPolicy::Enforce).unwrap_err();
    assert!(
        matches!(e, X509Error::BadSignature(..) | X509Error::Malformed(..)),
        "{e}"
    );
    // Too many certificates.
    let many = vec![c[1].clone(); chain::MAX_CERTS + 1];
    let e = chain::verify(&p.store, &many, tessera_x509::now(), CrlPolicy::Enforce).unwrap_err();
    assert!(matches!(e, X509Error::TooLong(..)), "{e}");
    // Not yet valid: checked at a time before the proxy began.
    let e = chain::verify(
        &p.store,
        &chain_of(&p.dir.join("alice-plain.pem")),
        1_000_000_000,
        CrlPolicy::Enforce,
    )
    .unwrap_err();
    assert!(matches!(e, X509Error::NotYetValid(..)), "{e}");
}

#[test]
fn forged_and_expired_attribute_certificates() {
    let p = setup();
    let e = p.voms("alice-forged.pem").unwrap_err();
    assert!(e.to_string().contains("VOMS"), "{e}");
    let e = p.voms("alice-acexpired.pem").unwrap_err();
    assert!(e.to_string().contains("expired"), "{e}");
}

#[test]
fn crl_policies() {
    let p = setup();
    // A year from now the CRL (30 days) has expired: refused unless the
    // site says warn.
    let later = tessera_x509::now() + 40 * 86400;
    let c = chain_of(&p.dir.join("alice-cert.pem"));
    let e = chain::verify(&p.store, &c, later, CrlPolicy::Enforce).unwrap_err();
    // (alice's certificate lasts 30 days: whichever check comes first.)
    assert!(
        matches!(e, X509Error::Expired(..) | X509Error::CrlExpired(..)),
        "{e}"
    );
    // Without the CRL file, Require refuses and Enforce takes the chain.
    let dir = p.dir.join("nocrl");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for f in std::fs::read_dir(p.dir.join("certificates")).unwrap() {
        let f = f.unwrap().path();
        if !f
            .extension()
            .is_some_and(|e| e.to_string_lossy().starts_with('r'))
        {
            std::fs::copy(&f, dir.join(f.file_name().unwrap())).unwrap();
        }
    }
    let store = TrustStore::load(&dir, None).unwrap();
    let now = tessera_x509::now();
    assert!(chain::verify(&store, &c, now, CrlPolicy::Enforce).is_ok());
    let e = chain::verify(&store, &c, now, CrlPolicy::Require).unwrap_err();
    assert!(matches!(e, X509Error::CrlMissing(..)), "{e}");
    // Bob's revocation is only known with the CRL.
    let bob = chain_of(&p.dir.join("bob-voms.pem"));
    assert!(chain::verify(&store, &bob, now, CrlPolicy::Enforce).is_ok());
}
