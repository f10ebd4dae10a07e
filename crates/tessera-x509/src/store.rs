//! The trust store in the IGTF layout: a CA directory of hashed CA
//! certificates (`<hash>.0`, `.1`, ...) and CRLs (`<hash>.r0`, ...), as
//! OpenSSL's `CApath` reads it; `*.signing_policy`, `*.namespaces`,
//! `*.info`, `*.pem` and the rest are ignored (the hashed names point at
//! the same certificates). A file that does not parse is skipped with a
//! warning and never stops the others from loading. CRLs are kept only
//! when their signature verifies with a CA of the store.
//!
//! A [`Trust`] holds the current snapshot and re-reads the directories
//! when their listing changes (fetch-crl rewrites CRLs every few hours):
//! [`Trust::refresh`] compares names, sizes and modification times, and
//! keeps the previous snapshot when the new one cannot be read.

use crate::vomsdir::VomsDir;
use crate::{name, X509Error};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};
use std::time::SystemTime;
use x509_parser::prelude::*;

/// A trusted CA certificate.
pub struct Ca {
    pub der: Vec<u8>,
    pub dn: String,
    pub not_after: i64,
}

/// A CRL whose signature verified with the CA it names.
pub struct Crl {
    pub next_update: Option<i64>,
    /// The raw serial numbers it revokes.
    pub revoked: std::collections::HashSet<Vec<u8>>,
}

/// One read of the CA directory and the vomsdir.
#[derive(Default)]
pub struct TrustStore {
    /// CAs by subject DN (several when a CA was re-keyed).
    pub cas: HashMap<String, Vec<Ca>>,
    /// CRLs by issuer DN.
    pub crls: HashMap<String, Vec<Crl>>,
    pub voms: VomsDir,
    /// Files that could not be used, with why (for check-config and logs).
    pub skipped: Vec<(PathBuf, String)>,
}

fn hashed(name: &str) -> Option<bool> {
    let (hash, ext) = name.split_once('.')?;
    if hash.len() != 8 || !hash.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let (crl, num) = match ext.strip_prefix('r') {
        Some(n) => (true, n),
        None => (false, ext),
    };
    (!num.is_empty() && num.bytes().all(|b| b.is_ascii_digit())).then_some(crl)
}

/// Every PEM (or a DER) object of a file.
fn objects(bytes: &[u8], label: &str) -> Vec<Vec<u8>> {
    if !bytes.starts_with(b"-----") && bytes.first() == Some(&0x30) {
        return vec![bytes.to_vec()];
    }
    Pem::iter_from_buffer(bytes)
        .filter_map(Result::ok)
        .filter(|p| p.label == label)
        .map(|p| p.contents)
        .collect()
}

impl TrustStore {
    /// Read `ca_dir` (and `vomsdir`, if any). Fails only when the
    /// directory cannot be listed or holds no usable CA.
    pub fn load(ca_dir: &Path, vomsdir: Option<&Path>) -> Result<TrustStore, X509Error> {
        let store_err = |e: String| X509Error::Store(ca_dir.display().to_string(), e);
        let rd = std::fs::read_dir(ca_dir).map_err(|e| store_err(e.to_string()))?;
        let mut st = TrustStore::default();
        let mut crl_files = Vec::new();
        let mut names: Vec<_> = rd.filter_map(Result::ok).map(|e| e.path()).collect();
        names.sort();
        for p in names {
            let Some(fname) = p.file_name().and_then(|n| n.to_str()) else {
                continue;
            };
            let Some(is_crl) = hashed(fname) else {
                continue;
            };
            let bytes = match std::fs::read(&p) {
                Ok(b) if b.len() <= 1 << 20 => b,
                Ok(_) => {
                    st.skipped.push((p, "larger than 1 MiB".into()));
                    continue;
                }
                Err(e) => {
                    st.skipped.push((p, e.to_string()));
                    continue;
                }
            };
            if is_crl {
                crl_files.push((p, bytes));
            } else {
                st.add_ca_file(p, &bytes);
            }
        }
        for (p, bytes) in crl_files {
            st.add_crl_file(p, &bytes);
        }
        if st.cas.is_empty() {
            return Err(store_err(
                "no CA certificate (<hash>.0 files) could be read".into(),
            ));
        }
        if let Some(v) = vomsdir {
            st.voms = VomsDir::load(v).map_err(|e| X509Error::Store(v.display().to_string(), e))?;
        }
        for (p, why) in &st.skipped {
            tracing::warn!(file = %p.display(), "trust store: skipped: {why}");
        }
        Ok(st)
    }

    fn add_ca_file(&mut self, p: PathBuf, bytes: &[u8]) {
        let ders = objects(bytes, "CERTIFICATE");
        if ders.is_empty() {
            self.skipped.push((p, "no certificate in it".into()));
            return;
        }
        for der in ders {
            let (dn, not_after) = match X509Certificate::from_der(&der) {
                Ok((_, c)) if c.is_ca() => {
                    (name::dn(c.subject()), c.validity().not_after.timestamp())
                }
                Ok((_, c)) => {
                    let why = format!("{} is not a CA certificate", name::dn(c.subject()));
                    self.skipped.push((p.clone(), why));
                    continue;
                }
                Err(e) => {
                    self.skipped
                        .push((p.clone(), format!("unreadable certificate: {e}")));
                    continue;
                }
            };
            let same = self.cas.entry(dn.clone()).or_default();
            if !same.iter().any(|c| c.der == der) {
                same.push(Ca { der, dn, not_after });
            }
        }
    }

    fn add_crl_file(&mut self, p: PathBuf, bytes: &[u8]) {
        for der in objects(bytes, "X509 CRL") {
            let crl = match CertificateRevocationList::from_der(&der) {
                Ok((_, crl)) => crl,
                Err(e) => {
                    self.skipped
                        .push((p.clone(), format!("unreadable CRL: {e}")));
                    continue;
                }
            };
            let issuer = name::dn(crl.issuer());
            let signed = self.cas.get(&issuer).is_some_and(|cas| {
                cas.iter().any(|ca| {
                    X509Certificate::from_der(&ca.der)
                        .is_ok_and(|(_, c)| crl.verify_signature(c.public_key()).is_ok())
                })
            });
            if !signed {
                let why = format!("CRL of {issuer} not signed by a CA of this directory");
                self.skipped.push((p.clone(), why));
                continue;
            }
            let revoked = crl
                .iter_revoked_certificates()
                .map(|r| r.raw_serial().to_vec())
                .collect();
            let next_update = crl.next_update().map(|t| t.timestamp());
            self.crls.entry(issuer).or_default().push(Crl {
                next_update,
                revoked,
            });
        }
    }

    /// How many CAs and CRLs were read.
    pub fn counts(&self) -> (usize, usize) {
        (
            self.cas.values().map(Vec::len).sum(),
            self.crls.values().map(Vec::len).sum(),
        )
    }
}

/// What a listing looked like: names, sizes, modification times.
type Fingerprint = Vec<(PathBuf, u64, Option<SystemTime>)>;

fn fingerprint(dirs: &[&Path]) -> Fingerprint {
    let mut out = Vec::new();
    let mut stack: Vec<(PathBuf, u32)> = dirs.iter().map(|d| (d.to_path_buf(), 0)).collect();
    while let Some((d, depth)) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            out.push((d, u64::MAX, None));
            continue;
        };
        for e in rd.filter_map(Result::ok) {
            let p = e.path();
            let Ok(m) = std::fs::metadata(&p) else {
                continue;
            };
            if m.is_dir() && depth < 2 {
                stack.push((p.clone(), depth + 1));
            }
            out.push((p, m.len(), m.modified().ok()));
        }
    }
    out.sort();
    out
}

/// The trust store a server uses, re-read when its files change.
pub struct Trust {
    ca_dir: PathBuf,
    vomsdir: Option<PathBuf>,
    state: RwLock<(Arc<TrustStore>, Fingerprint)>,
}

impl Trust {
    /// Load both directories now (an error if the CA directory is unusable).
    pub fn open(ca_dir: &Path, vomsdir: Option<&Path>) -> Result<Trust, X509Error> {
        let dirs = Self::dirs_of(ca_dir, vomsdir);
        let fp = fingerprint(&dirs.iter().map(PathBuf::as_path).collect::<Vec<_>>());
        let store = TrustStore::load(ca_dir, vomsdir)?;
        Ok(Trust {
            ca_dir: ca_dir.to_path_buf(),
            vomsdir: vomsdir.map(Path::to_path_buf),
            state: RwLock::new((Arc::new(store), fp)),
        })
    }

    fn dirs_of(ca_dir: &Path, vomsdir: Option<&Path>) -> Vec<PathBuf> {
        let mut v = vec![ca_dir.to_path_buf()];
        v.extend(vomsdir.map(Path::to_path_buf));
        v
    }

    /// The snapshot requests are checked against now.
    pub fn current(&self) -> Arc<TrustStore> {
        self.state
            .read()
            .unwrap_or_else(|p| p.into_inner())
            .0
            .clone()
    }

    /// Re-read the directories if their files changed (blocking: call
    /// off the runtime). `Ok(true)` when a new snapshot is in use; on an
    /// error the previous one stays.
    pub fn refresh(&self) -> Result<bool, X509Error> {
        let dirs = Self::dirs_of(&self.ca_dir, self.vomsdir.as_deref());
        let fp = fingerprint(&dirs.iter().map(PathBuf::as_path).collect::<Vec<_>>());
        if self.state.read().unwrap_or_else(|p| p.into_inner()).1 == fp {
            return Ok(false);
        }
        let store = TrustStore::load(&self.ca_dir, self.vomsdir.as_deref())?;
        let (cas, crls) = store.counts();
        tracing::info!(dir = %self.ca_dir.display(), cas, crls, "trust store re-read");
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = (Arc::new(store), fp);
        Ok(true)
    }
}
