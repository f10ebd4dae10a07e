//! Validation against a local issuer: its discovery document and JWKS
//! served over HTTPS on loopback by the test (a CA made here), tokens
//! signed with ES256 (the dev issuer's code) and RS256 (aws-lc-rs).
//! Every refusal the issue lists, key rotation without a restart, the
//! rate-limited refetch, and that cached keys are not fetched again.

use base64::Engine;
use http_body_util::Full;
use hyper::body::Bytes;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tessera_auth::dev::{DevIssuer, KeyAlg};
use tessera_auth::{AuthError, IssuerConfig, Validator};
use tessera_types::{Access, NsPath};

fn b64(b: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
}

/// The test issuer's HTTPS endpoint: serves whatever JWKS it holds.
struct Issuer {
    url: String,
    jwks: Arc<Mutex<serde_json::Value>>,
    hits: Arc<AtomicU64>,
    client_tls: Arc<tokio_rustls::rustls::ClientConfig>,
    _task: tokio::task::JoinHandle<()>,
}

async fn start_issuer() -> Issuer {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let issuer = rcgen::CertifiedIssuer::self_signed(ca, ca_key).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".into()])
        .unwrap()
        .signed_by(&key, &issuer)
        .unwrap();
    let server = tokio_rustls::rustls::ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            tokio_rustls::rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        )
        .unwrap();
    let mut roots = tokio_rustls::rustls::RootCertStore::empty();
    roots.add(issuer.der().clone()).unwrap();
    let client_tls = Arc::new(
        tokio_rustls::rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth(),
    );
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("https://localhost:{}", l.local_addr().unwrap().port());
    let jwks = Arc::new(Mutex::new(serde_json::json!({"keys": []})));
    let hits = Arc::new(AtomicU64::new(0));
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
    let (j, h, u) = (Arc::clone(&jwks), Arc::clone(&hits), url.clone());
    let task = tokio::spawn(async move {
        loop {
            let (sock, _) = l.accept().await.unwrap();
            let (acceptor, j, h, u) = (acceptor.clone(), Arc::clone(&j), Arc::clone(&h), u.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(sock).await else {
                    return;
                };
                let svc = hyper::service::service_fn(
                    move |req: hyper::Request<hyper::body::Incoming>| {
                        let body = match req.uri().path() {
                            "/.well-known/openid-configuration" => {
                                DevIssuer::discovery(&u).to_string()
                            }
                            "/jwks.json" | "/.well-known/jwks.json" => {
                                h.fetch_add(1, Ordering::Relaxed);
                                j.lock().unwrap().to_string()
                            }
                            _ => String::new(),
                        };
                        async move {
                            Ok::<_, std::convert::Infallible>(hyper::Response::new(Full::new(
                                Bytes::from(body),
                            )))
                        }
                    },
                );
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(hyper_util::rt::TokioIo::new(tls), svc)
                    .await;
            });
        }
    });
    Issuer {
        url,
        jwks,
        hits,
        client_tls,
        _task: task,
    }
}

fn cfg(iss: &str, base: &str) -> IssuerConfig {
    IssuerConfig {
        issuer: iss.to_string(),
        audiences: vec!["https://storage.test".into()],
        base_path: NsPath::parse(base).unwrap(),
        default_identity: (1000, 1000, "vo".into()),
        subjects: HashMap::from([("alice".to_string(), (1001, 1001, "alice".to_string()))]),
        groups: HashMap::from([("/cms".to_string(), 3000), ("/cms/prod".to_string(), 3001)]),
        may_create: true,
        local_users: false,
    }
}

fn now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

fn claims(iss: &str, scope: &str) -> serde_json::Value {
    let t = now();
    serde_json::json!({
        "wlcg.ver": "1.0", "iss": iss, "sub": "alice", "aud": "https://storage.test",
        "scope": scope, "iat": t, "nbf": t, "exp": t + 600, "jti": "j1",
    })
}

/// A dev-format ES256 signer with its own key file.
fn es_signer(dir: &std::path::Path) -> DevIssuer {
    DevIssuer::load_or_create_with(dir, KeyAlg::Es256).unwrap()
}

/// RS256 by hand with aws-lc-rs: (kid, jwk, sign).
struct Rsa {
    kid: String,
    kp: aws_lc_rs::rsa::KeyPair,
}

impl Rsa {
    fn new(kid: &str) -> Rsa {
        Rsa {
            kid: kid.into(),
            kp: aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa2048).unwrap(),
        }
    }

    fn jwk(&self) -> serde_json::Value {
        use aws_lc_rs::signature::KeyPair;
        let pk: aws_lc_rs::rsa::PublicKeyComponents<Vec<u8>> = self.kp.public_key().into();
        serde_json::json!({"kty": "RSA", "kid": self.kid, "alg": "RS256", "n": b64(&pk.n), "e": b64(&pk.e)})
    }

    fn sign(&self, header: serde_json::Value, claims: &serde_json::Value) -> String {
        let msg = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(claims.to_string().as_bytes())
        );
        let rng = aws_lc_rs::rand::SystemRandom::new();
        let mut sig = vec![0u8; self.kp.public_modulus_len()];
        self.kp
            .sign(
                &aws_lc_rs::signature::RSA_PKCS1_SHA256,
                &rng,
                msg.as_bytes(),
                &mut sig,
            )
            .unwrap();
        format!("{msg}.{}", b64(&sig))
    }

    fn token(&self, claims: &serde_json::Value) -> String {
        self.sign(
            serde_json::json!({"alg": "RS256", "kid": self.kid, "typ": "JWT"}),
            claims,
        )
    }
}

#[tokio::test]
async fn valid_tokens_and_every_refusal() {
    let dir = tempfile::tempdir().unwrap();
    let iss = start_issuer().await;
    let es = es_signer(dir.path());
    let rsa = Rsa::new("rsa-1");
    *iss.jwks.lock().unwrap() = serde_json::json!({"keys": [
        es.jwks()["keys"][0].clone(), rsa.jwk(),
        // An HMAC key in the set is never used.
        {"kty": "oct", "kid": "hmac", "k": "c2VjcmV0"}
    ]});
    let v = Validator::new(vec![cfg(&iss.url, "/vo")], Arc::clone(&iss.client_tls));
    v.refresh_all().await;

    // Valid, both algorithms; scopes under the base path; mapped subject.
    let ok_es = es
        .sign(&claims(&iss.url, "storage.read:/data storage.create:/up"))
        .unwrap();
    let got = v.validate(&ok_es).await.expect("ES256 token");
    assert_eq!((got.uid, got.gid, got.name.as_str()), (1001, 1001, "alice"));
    let p = |s: &str| NsPath::parse(s).unwrap();
    assert!(got.grant.allows(Access::Read, &p("/vo/data/f")));
    assert!(
        !got.grant.allows(Access::Read, &p("/vo/database")),
        "sibling prefix"
    );
    assert!(
        !got.grant.allows(Access::Read, &p("/data/f")),
        "outside the base path"
    );
    assert!(got.grant.allows(Access::Create, &p("/vo/up/new")));
    assert!(
        !got.grant.allows(Access::Modify, &p("/vo/up/new")),
        "create is not modify"
    );
    let ok_rs = rsa.token(&claims(&iss.url, "storage.modify:/"));
    assert!(v.validate(&ok_rs).await.is_ok(), "RS256 token");
    // An audience array with the WLCG "any" value, and an unmapped subject.
    let mut c = claims(&iss.url, "storage.read:/");
    c["aud"] = serde_json::json!(["https://elsewhere", "https://wlcg.cern.ch/jwt/v1/any"]);
    c["sub"] = serde_json::json!("bob");
    let any = v
        .validate(&es.sign(&c).unwrap())
        .await
        .expect("any audience");
    assert_eq!((any.name.as_str(), any.gid), ("vo", 1000));
    assert!(any.groups.is_empty());
    // wlcg.groups: mapped ones are gids (the first the primary gid of an
    // unmapped subject); every one is a name ACLs can use.
    c["wlcg.groups"] = serde_json::json!(["/other", "/cms/prod", "/cms"]);
    c["jti"] = serde_json::json!("j2");
    let grouped = v.validate(&es.sign(&c).unwrap()).await.expect("groups");
    assert_eq!((grouped.uid, grouped.gid), (1000, 3001));
    assert_eq!(grouped.groups, [3001, 3000]);
    let id = grouped.identity("test");
    assert!(id.in_group(3000) && id.in_group_named("cms") && id.in_group_named("/other"));
    c["sub"] = serde_json::json!("alice");
    c["jti"] = serde_json::json!("j3");
    let alice = v.validate(&es.sign(&c).unwrap()).await.expect("alice");
    assert_eq!(
        (alice.uid, alice.gid, alice.groups.len()),
        (1001, 1001, 2),
        "a mapped subject keeps its gid"
    );
    c["wlcg.groups"] = serde_json::json!(7);
    c["jti"] = serde_json::json!("j4");
    assert!(
        v.validate(&es.sign(&c).unwrap()).await.is_err(),
        "malformed groups"
    );

    let refused = |t: String| {
        let v = &v;
        async move { v.validate(&t).await.expect_err("must be refused") }
    };
    let t = now();
    let mut c = claims(&iss.url, "storage.read:/");
    c["exp"] = serde_json::json!(t - 3600);
    assert_eq!(refused(es.sign(&c).unwrap()).await, AuthError::Expired);
    let mut c = claims(&iss.url, "storage.read:/");
    c["nbf"] = serde_json::json!(t + 3600);
    assert_eq!(refused(es.sign(&c).unwrap()).await, AuthError::NotYetValid);
    let mut c = claims(&iss.url, "storage.read:/");
    c["iat"] = serde_json::json!(t + 3600);
    assert_eq!(refused(es.sign(&c).unwrap()).await, AuthError::NotYetValid);
    let mut c = claims(&iss.url, "storage.read:/");
    c.as_object_mut().unwrap().remove("exp");
    assert!(matches!(
        refused(es.sign(&c).unwrap()).await,
        AuthError::Claims(_)
    ));
    let mut c = claims(&iss.url, "storage.read:/");
    c.as_object_mut().unwrap().remove("aud");
    assert!(matches!(
        refused(es.sign(&c).unwrap()).await,
        AuthError::Claims(_)
    ));
    // Tampered, RS256: the signature of another token.
    let other = rsa.token(&claims(&iss.url, "storage.read:/"));
    let mut parts: Vec<&str> = ok_rs.split('.').collect();
    parts[2] = other.rsplit('.').next().unwrap();
    assert_eq!(refused(parts.join(".")).await, AuthError::BadSignature);
    let c = claims("https://other.example", "storage.read:/");
    assert!(matches!(
        refused(es.sign(&c).unwrap()).await,
        AuthError::UnknownIssuer(_)
    ));
    let mut c = claims(&iss.url, "storage.read:/");
    c["aud"] = serde_json::json!("https://elsewhere");
    assert_eq!(refused(es.sign(&c).unwrap()).await, AuthError::Audience);
    // Unknown key: signed by a key the issuer does not publish.
    let stranger = Rsa::new("stranger");
    assert!(matches!(
        refused(stranger.token(&claims(&iss.url, "storage.read:/"))).await,
        AuthError::UnknownKey { .. }
    ));
    // Tampered: the payload changed after signing.
    let mut parts: Vec<String> = ok_es.split('.').map(str::to_string).collect();
    parts[1] = b64(claims(&iss.url, "storage.modify:/").to_string().as_bytes());
    assert_eq!(refused(parts.join(".")).await, AuthError::BadSignature);
    // alg none, and HS256 "signed" with the public key.
    let body = b64(claims(&iss.url, "storage.modify:/").to_string().as_bytes());
    let none = format!("{}.{body}.", b64(br#"{"alg":"none","kid":"rsa-1"}"#));
    assert!(matches!(refused(none).await, AuthError::Algorithm(_)));
    let hs_header = b64(br#"{"alg":"HS256","kid":"rsa-1"}"#);
    let key = aws_lc_rs::hmac::Key::new(
        aws_lc_rs::hmac::HMAC_SHA256,
        rsa.jwk().to_string().as_bytes(),
    );
    let sig = aws_lc_rs::hmac::sign(&key, format!("{hs_header}.{body}").as_bytes());
    let hs = format!("{hs_header}.{body}.{}", b64(sig.as_ref()));
    assert!(matches!(refused(hs).await, AuthError::Algorithm(_)));
    // RS256 header on an EC key: refused, not tried.
    let mixed = rsa.sign(
        serde_json::json!({"alg": "RS256", "kid": es.kid}),
        &claims(&iss.url, "storage.read:/"),
    );
    assert!(matches!(refused(mixed).await, AuthError::Algorithm(_)));
    // A storage scope without a path; an unsupported WLCG version.
    assert!(matches!(
        refused(es.sign(&claims(&iss.url, "storage.read")).unwrap()).await,
        AuthError::Claims(_)
    ));
    let mut c = claims(&iss.url, "storage.read:/");
    c["wlcg.ver"] = serde_json::json!("2.0");
    assert!(matches!(
        refused(es.sign(&c).unwrap()).await,
        AuthError::Claims(_)
    ));
    assert!(matches!(
        refused("not.a.jwt".into()).await,
        AuthError::Malformed(_)
    ));
}

#[tokio::test]
async fn rotation_rate_limit_and_caches() {
    let dir = tempfile::tempdir().unwrap();
    let iss = start_issuer().await;
    let old = Rsa::new("old");
    *iss.jwks.lock().unwrap() = serde_json::json!({"keys": [old.jwk()]});
    let v = Validator::with_min_refetch(
        vec![cfg(&iss.url, "/")],
        Arc::clone(&iss.client_tls),
        Duration::from_secs(2),
    );
    v.refresh_all().await;
    assert_eq!(iss.hits.load(Ordering::Relaxed), 1);
    // Many validations with a cached key: no fetch; the same token twice
    // is served from the token cache.
    let t1 = old.token(&claims(&iss.url, "storage.read:/"));
    let a = v.validate(&t1).await.unwrap();
    let b = v.validate(&t1).await.unwrap();
    assert!(Arc::ptr_eq(&a, &b), "cached per token");
    for i in 0..20 {
        let mut c = claims(&iss.url, "storage.read:/");
        c["jti"] = serde_json::json!(format!("j{i}"));
        v.validate(&old.token(&c)).await.unwrap();
    }
    assert_eq!(
        iss.hits.load(Ordering::Relaxed),
        1,
        "no fetch while keys are known"
    );
    // The issuer rotates: new tokens carry a new kid; the first one makes
    // the validator refetch, with no restart.
    let new = es_signer(dir.path());
    *iss.jwks.lock().unwrap() = serde_json::json!({"keys": [new.jwks()["keys"][0].clone()]});
    let stranger = Rsa::new("stranger");
    let strange = stranger.token(&claims(&iss.url, "storage.read:/"));
    tokio::time::sleep(Duration::from_millis(2100)).await;
    let t2 = new.sign(&claims(&iss.url, "storage.read:/")).unwrap();
    v.validate(&t2).await.expect("rotated key found");
    assert_eq!(iss.hits.load(Ordering::Relaxed), 2);
    // Unknown kids do not hammer the issuer: within the refetch interval
    // they are refused without a fetch.
    for _ in 0..5 {
        let r = v.validate(&strange).await;
        assert!(matches!(r, Err(AuthError::UnknownKey { .. })));
    }
    assert_eq!(iss.hits.load(Ordering::Relaxed), 2, "rate-limited");
    // The background refresh picks up keys too.
    let h = v.spawn_refresh(Duration::from_millis(100));
    tokio::time::sleep(Duration::from_millis(350)).await;
    h.abort();
    assert!(iss.hits.load(Ordering::Relaxed) >= 4);
}

#[tokio::test]
async fn a_token_for_one_base_path_does_not_reach_another() {
    let dir = tempfile::tempdir().unwrap();
    let a = start_issuer().await;
    let b = start_issuer().await;
    let ka = es_signer(&dir.path().join("a"));
    let kb = es_signer(&dir.path().join("b"));
    *a.jwks.lock().unwrap() = ka.jwks();
    *b.jwks.lock().unwrap() = kb.jwks();
    // Both issuers' CAs are trusted; each has its own base path.
    let v = Validator::new(
        vec![cfg(&a.url, "/atlas"), cfg(&b.url, "/cms")],
        Arc::clone(&a.client_tls),
    );
    v.refresh_all().await; // b's certificate is not trusted by a's CA: b's keys stay empty
    let ta = ka.sign(&claims(&a.url, "storage.modify:/")).unwrap();
    let g = v.validate(&ta).await.unwrap();
    let p = |s: &str| NsPath::parse(s).unwrap();
    assert!(g.grant.allows(Access::Modify, &p("/atlas/x")));
    assert!(!g.grant.allows(Access::Read, &p("/cms/x")));
    // b's token cannot be checked (its keys could not be fetched over
    // an untrusted connection): refused, never accepted.
    let tb = kb.sign(&claims(&b.url, "storage.modify:/")).unwrap();
    assert!(v.validate(&tb).await.is_err());
    // A token claiming issuer a but signed by b's key: refused.
    let forged = kb.sign(&claims(&a.url, "storage.modify:/")).unwrap();
    assert!(v.validate(&forged).await.is_err());
}

/// A token checked while the first fetch of its issuer's keys is in
/// flight (right after start-up) waits for that fetch instead of being
/// refused as an unknown key.
#[tokio::test]
async fn a_token_waits_for_the_fetch_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let iss = start_issuer().await;
    let es = es_signer(dir.path());
    *iss.jwks.lock().unwrap() = serde_json::json!({"keys": [es.jwks()["keys"][0].clone()]});
    let v = Validator::new(vec![cfg(&iss.url, "/vo")], Arc::clone(&iss.client_tls));
    let tok = es.sign(&claims(&iss.url, "storage.read:/")).unwrap();
    // join! polls the refresh first: it starts fetching, then the token.
    let ((), got) = tokio::join!(v.refresh_all(), v.validate(&tok));
    assert!(got.is_ok(), "{got:?}");
}
