//! The embedded dev default: one data directory with the namespace, six
//! local folders standing in for CephFS mounts, a self-signed CA and server
//! certificate, and the admin credential. Idempotent: existing files are
//! kept, so restarts keep the same CA and token.

use anyhow::Context;
use std::io::Write;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Number of local folders the dev mode prepares as stand-in filesystems.
pub const DEV_FILESYSTEMS: usize = 6;

pub struct DevLayout {
    pub root: PathBuf,
    pub token_file: PathBuf,
    pub ca_pem: PathBuf,
    pub cert_pem: PathBuf,
    pub key_pem: PathBuf,
    /// The CA in a hashed directory, as XrdCl wants it (`X509_CERT_DIR`).
    pub ca_dir: PathBuf,
}

impl DevLayout {
    pub fn new(root: &Path) -> DevLayout {
        let dev = root.join("dev");
        DevLayout {
            root: root.to_path_buf(),
            token_file: dev.join("admin.token"),
            ca_pem: dev.join("ca.pem"),
            cert_pem: dev.join("server.pem"),
            key_pem: dev.join("server.key"),
            ca_dir: dev.join("certificates"),
        }
    }

    pub fn prepare(&self) -> anyhow::Result<()> {
        for d in ["meta", "logs", "dev"] {
            std::fs::create_dir_all(self.root.join(d))
                .with_context(|| format!("creating {}", self.root.join(d).display()))?;
        }
        for i in 1..=DEV_FILESYSTEMS {
            std::fs::create_dir_all(self.root.join("fs").join(format!("fs{i}")))?;
        }
        std::fs::set_permissions(
            self.root.join("dev"),
            std::fs::Permissions::from_mode(0o700),
        )?;
        if !self.token_file.exists() {
            let secret: [u8; 32] = rand::random();
            let hex: String = secret.iter().map(|b| format!("{b:02x}")).collect();
            write_private(&self.token_file, hex.as_bytes())?;
        }
        if !(self.ca_pem.exists() && self.cert_pem.exists() && self.key_pem.exists()) {
            self.make_certificates()?;
        }
        self.hash_ca_dir();
        Ok(())
    }

    fn make_certificates(&self) -> anyhow::Result<()> {
        use rcgen::{
            BasicConstraints, CertificateParams, CertifiedIssuer, DistinguishedName, DnType,
            ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose, SanType,
        };
        let ca_key = KeyPair::generate()?;
        let mut ca = CertificateParams::new(Vec::<String>::new())?;
        let mut dn = DistinguishedName::new();
        // Unique per data directory: two dev CAs with one subject name
        // confuse OpenSSL's hashed CA directories (X509_CERT_DIR).
        let tag: [u8; 4] = rand::random();
        let tag: String = tag.iter().map(|b| format!("{b:02x}")).collect();
        dn.push(DnType::CommonName, format!("Tessera development CA {tag}"));
        ca.distinguished_name = dn;
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let issuer = CertifiedIssuer::self_signed(ca, ca_key)?;

        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(vec!["localhost".to_string()])?;
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::IpAddr::from([127, 0, 0, 1])));
        params
            .subject_alt_names
            .push(SanType::IpAddress(std::net::IpAddr::from(
                std::net::Ipv6Addr::LOCALHOST,
            )));
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "localhost");
        params.distinguished_name = dn;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params.signed_by(&key, &issuer)?;
        std::fs::write(&self.ca_pem, issuer.pem())?;
        std::fs::write(&self.cert_pem, cert.pem())?;
        write_private(&self.key_pem, key.serialize_pem().as_bytes())?;
        Ok(())
    }
}

impl DevLayout {
    /// `certificates/<subject hash>.0` → the CA, via `openssl x509 -hash`
    /// (XrdCl and gfal2 look CAs up by that name). Without openssl the
    /// directory is left as it is, with a warning.
    fn hash_ca_dir(&self) {
        let _ = std::fs::create_dir_all(&self.ca_dir);
        let ca = self.ca_dir.join("tessera-dev-ca.pem");
        if std::fs::copy(&self.ca_pem, &ca).is_err() {
            return;
        }
        let out = std::process::Command::new("openssl")
            .args(["x509", "-hash", "-noout", "-in"])
            .arg(&self.ca_pem)
            .output();
        match out {
            Ok(o) if o.status.success() => {
                let hash = String::from_utf8_lossy(&o.stdout).trim().to_string();
                let link = self.ca_dir.join(format!("{hash}.0"));
                let _ = std::fs::remove_file(&link);
                if let Err(e) = std::os::unix::fs::symlink("tessera-dev-ca.pem", &link) {
                    tracing::warn!("cannot link {}: {e}", link.display());
                }
            }
            _ => tracing::warn!(
                "openssl not found: {} has no hashed CA link (roots:// clients need one)",
                self.ca_dir.display()
            ),
        }
    }
}

fn write_private(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(true)
        .write(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    f.write_all(data)?;
    f.sync_all()?;
    Ok(())
}

/// Read a secret file, refusing one that group or others can read.
pub fn read_secret(path: &Path) -> anyhow::Result<String> {
    let meta = std::fs::metadata(path).with_context(|| format!("reading {}", path.display()))?;
    if meta.permissions().mode() & 0o077 != 0 {
        anyhow::bail!(
            "{} is readable by group or others (mode {:o}); chmod 600 it",
            path.display(),
            meta.permissions().mode() & 0o777
        );
    }
    let s = std::fs::read_to_string(path)?;
    let s = s.trim().to_string();
    if s.len() < 16 {
        anyhow::bail!(
            "{}: admin secret shorter than 16 characters",
            path.display()
        );
    }
    Ok(s)
}
