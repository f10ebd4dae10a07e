//! HTTP Basic credentials for desktop WebDAV clients (cadaver, davfs2,
//! litmus: neon takes passwords of at most 255 bytes, so a bearer token
//! cannot be the password): a password file of the site's, one account
//! per line, `name:$pbkdf2-sha256$ROUNDS$SALT$HASH` (passlib's format:
//! salt and hash in base64 with `.` for `+`, no padding; `tessera
//! passwd NAME` makes a line). A name is a local account (NSS): the
//! request acts as that account, never as root. The file is read again
//! when it changes; a verified name and password are remembered for ten
//! minutes (a client sends them with every request), and at most two
//! checks run at once, so a flood of wrong passwords costs the server two
//! threads, not all of them.

use crate::users;
use aws_lc_rs::{digest, pbkdf2, rand};
use base64::Engine;
use std::collections::HashMap;
use std::num::NonZeroU32;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, Instant, SystemTime};
use tessera_types::Identity;

/// Rounds of a new line (about 10 ms here).
pub const ROUNDS: u32 = 20_000;
const REMEMBERED: Duration = Duration::from_secs(600);
const MAX_REMEMBERED: usize = 10_000;
const SALT: usize = 16;
const HASH: usize = 32;

/// passlib's "adapted base64".
fn ab64() -> base64::engine::GeneralPurpose {
    let alphabet = base64::alphabet::Alphabet::new(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789./",
    )
    .expect("64 distinct characters");
    base64::engine::GeneralPurpose::new(
        &alphabet,
        base64::engine::GeneralPurposeConfig::new()
            .with_encode_padding(false)
            .with_decode_padding_mode(base64::engine::DecodePaddingMode::Indifferent),
    )
}

#[derive(Clone, Debug)]
struct Entry {
    rounds: NonZeroU32,
    salt: Vec<u8>,
    hash: Vec<u8>,
}

/// One line: `name:$pbkdf2-sha256$ROUNDS$SALT$HASH`.
fn parse_line(line: &str) -> Result<(String, Entry), String> {
    let (name, rest) = line.split_once(':').ok_or("no ':'")?;
    let f: Vec<&str> = rest.split('$').collect();
    if name.is_empty() || f.len() != 5 || !f[0].is_empty() || f[1] != "pbkdf2-sha256" {
        return Err("expected name:$pbkdf2-sha256$ROUNDS$SALT$HASH".into());
    }
    let rounds = f[2]
        .parse::<u32>()
        .ok()
        .and_then(NonZeroU32::new)
        .ok_or("bad rounds")?;
    let (salt, hash) = (
        ab64().decode(f[3]).map_err(|_| "bad salt")?,
        ab64().decode(f[4]).map_err(|_| "bad hash")?,
    );
    if hash.len() != HASH {
        return Err("the hash is not 32 bytes".into());
    }
    Ok((name.to_string(), Entry { rounds, salt, hash }))
}

/// Every entry of the text of a password file (blank lines and `#`
/// comments skipped); the first bad line is an error naming it.
fn parse(text: &str) -> Result<HashMap<String, Entry>, String> {
    let mut out = HashMap::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, e) = parse_line(line).map_err(|e| format!("line {}: {e}", n + 1))?;
        out.insert(name, e);
    }
    Ok(out)
}

/// A line for `name` with `password` (a fresh random salt).
pub fn line(name: &str, password: &str) -> Result<String, String> {
    if name.is_empty() || name.contains([':', '\n']) {
        return Err("a name without ':' expected".into());
    }
    let mut salt = [0u8; SALT];
    rand::fill(&mut salt).map_err(|_| "no random bytes")?;
    let mut hash = [0u8; HASH];
    let rounds = NonZeroU32::new(ROUNDS).expect("non-zero");
    pbkdf2::derive(
        pbkdf2::PBKDF2_HMAC_SHA256,
        rounds,
        &salt,
        password.as_bytes(),
        &mut hash,
    );
    Ok(format!(
        "{name}:$pbkdf2-sha256${ROUNDS}${}${}",
        ab64().encode(salt),
        ab64().encode(hash)
    ))
}

/// Why Basic credentials were refused (one answer to the client for all).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// Wrong name or password, or no such local account (or root).
    Credentials,
    /// The file cannot be read now.
    File(String),
}

struct Loaded {
    stamp: Option<(SystemTime, u64)>,
    entries: HashMap<String, Entry>,
}

/// A password file in use.
pub struct Passwd {
    path: PathBuf,
    loaded: Mutex<Loaded>,
    remembered: Mutex<HashMap<[u8; 32], (Identity, Instant)>>,
    checks: tokio::sync::Semaphore,
}

fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let m = std::fs::metadata(path).ok()?;
    Some((m.modified().ok()?, m.len()))
}

impl Passwd {
    /// Load `path` (an error names what is wrong with it).
    pub fn open(path: &Path) -> Result<Passwd, String> {
        let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
        let entries = parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(Passwd {
            path: path.to_path_buf(),
            loaded: Mutex::new(Loaded {
                stamp: stamp(path),
                entries,
            }),
            remembered: Mutex::new(HashMap::new()),
            checks: tokio::sync::Semaphore::new(2),
        })
    }

    /// The entry of `name`, the file read again first if it changed (a
    /// file that became unreadable or bad keeps the last good entries).
    fn entry(&self, name: &str) -> Option<Entry> {
        let mut l = self.loaded.lock().unwrap_or_else(|p| p.into_inner());
        let now = stamp(&self.path);
        if now != l.stamp {
            match std::fs::read_to_string(&self.path)
                .map_err(|e| e.to_string())
                .and_then(|t| parse(&t))
            {
                Ok(entries) => {
                    l.entries = entries;
                    l.stamp = now;
                }
                Err(e) => {
                    tracing::warn!(file = %self.path.display(), "password file kept as it was: {e}")
                }
            }
        }
        l.entries.get(name).cloned()
    }

    /// The identity `name` and `password` give: the local account of that
    /// name, if the password is its line's.
    pub async fn verify(&self, name: &str, password: &str) -> Result<Identity, Refused> {
        let key: [u8; 32] = {
            let mut ctx = digest::Context::new(&digest::SHA256);
            ctx.update(name.as_bytes());
            ctx.update(&[0]);
            ctx.update(password.as_bytes());
            ctx.finish().as_ref().try_into().expect("32 bytes")
        };
        if let Some((id, at)) = self
            .remembered
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
        {
            if at.elapsed() < REMEMBERED && self.entry(name).is_some() {
                return Ok(id.clone());
            }
        }
        let entry = self.entry(name);
        let _slot = self
            .checks
            .acquire()
            .await
            .map_err(|_| Refused::File("closed".into()))?;
        let pw = password.to_string();
        // An unknown name costs a check too (no timing oracle for names).
        let ok = tokio::task::spawn_blocking(move || {
            let e = entry.unwrap_or(Entry {
                rounds: NonZeroU32::new(ROUNDS).expect("non-zero"),
                salt: vec![0; SALT],
                hash: vec![0; HASH],
            });
            let good = pbkdf2::verify(
                pbkdf2::PBKDF2_HMAC_SHA256,
                e.rounds,
                &e.salt,
                pw.as_bytes(),
                &e.hash,
            )
            .is_ok();
            good && e.hash != [0; HASH]
        })
        .await
        .map_err(|e| Refused::File(e.to_string()))?;
        if !ok {
            return Err(Refused::Credentials);
        }
        let u = users::user_by_name(name).ok_or(Refused::Credentials)?;
        if u.uid == 0 {
            return Err(Refused::Credentials);
        }
        let id = users::local_identity(&u, None, "https");
        let mut r = self.remembered.lock().unwrap_or_else(|p| p.into_inner());
        if r.len() >= MAX_REMEMBERED {
            r.retain(|_, (_, at)| at.elapsed() < REMEMBERED);
            if r.len() >= MAX_REMEMBERED {
                r.clear();
            }
        }
        r.insert(key, (id.clone(), Instant::now()));
        Ok(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_verify_and_bad_ones_are_named() {
        let l = line("nobody", "s3cret").unwrap();
        let entries = parse(&format!("# comment\n\n{l}\n")).unwrap();
        let e = &entries["nobody"];
        assert!(pbkdf2::verify(
            pbkdf2::PBKDF2_HMAC_SHA256,
            e.rounds,
            &e.salt,
            b"s3cret",
            &e.hash
        )
        .is_ok());
        assert!(pbkdf2::verify(
            pbkdf2::PBKDF2_HMAC_SHA256,
            e.rounds,
            &e.salt,
            b"other",
            &e.hash
        )
        .is_err());
        // Made by Python's hashlib.pbkdf2_hmac("sha256", b"password",
        // b"0123456789abcdef", 29000), in passlib's encoding.
        let passlib = "u:$pbkdf2-sha256$29000$MDEyMzQ1Njc4OWFiY2RlZg$G/O7bynZBig0xpI9OJ2.zH5iXh/vIAuDcj9JVCTUa3k";
        let (_, e) = parse_line(passlib).unwrap();
        assert!(pbkdf2::verify(
            pbkdf2::PBKDF2_HMAC_SHA256,
            e.rounds,
            &e.salt,
            b"password",
            &e.hash
        )
        .is_ok());
        for bad in [
            "x",
            "x:plain",
            "x:$md5$1$a$b",
            ":$pbkdf2-sha256$1$AAAA$AAAA",
            "x:$pbkdf2-sha256$0$AA$AA",
        ] {
            assert!(parse_line(bad).is_err(), "{bad}");
        }
        assert!(parse("ok-not\nbad").unwrap_err().starts_with("line 1"));
        assert!(line("a:b", "p").is_err());
    }

    #[test]
    fn accounts_are_local_never_root_and_the_file_is_reread() {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("passwd");
        let lines = [
            line("nobody", "pw").unwrap(),
            line("root", "pw").unwrap(),
            line("no-such-account", "pw").unwrap(),
        ];
        std::fs::write(&f, lines.join("\n")).unwrap();
        let p = Passwd::open(&f).unwrap();
        let id = rt.block_on(p.verify("nobody", "pw")).unwrap();
        assert_eq!((id.uid, id.name.as_str()), (65534, "nobody"));
        assert_eq!(
            rt.block_on(p.verify("nobody", "wrong")),
            Err(Refused::Credentials)
        );
        assert_eq!(
            rt.block_on(p.verify("root", "pw")),
            Err(Refused::Credentials)
        );
        assert_eq!(
            rt.block_on(p.verify("no-such-account", "pw")),
            Err(Refused::Credentials)
        );
        assert_eq!(
            rt.block_on(p.verify("ghost", "pw")),
            Err(Refused::Credentials)
        );
        // The account's line removed: refused, remembered or not.
        std::thread::sleep(Duration::from_millis(20));
        std::fs::write(&f, format!("{}\n", line("other", "x").unwrap())).unwrap();
        assert_eq!(
            rt.block_on(p.verify("nobody", "pw")),
            Err(Refused::Credentials)
        );
    }
}
