//! Macaroons as FTS and gfal2 ask storage for them (`POST` with
//! `Content-Type: application/macaroon-request`): a bearer credential a
//! holder of a certificate (or a password, or a token) gets for a path,
//! a set of activities and a bounded validity, never wider than the
//! holder's own rights, and hands to a third-party copy.
//!
//! Format: libmacaroons' version 2 binary form (first-party caveats only),
//! base64url without padding; HMAC-SHA256 chained over the identifier and
//! each caveat, the key derived from the secret as libmacaroons does
//! (`HMAC("macaroons-key-generator", secret)`). Hand-written on aws-lc-rs
//! (some 100 lines) rather than a macaroon crate: the maintained ones
//! bring a second crypto stack (RustCrypto, or libsodium) for the
//! third-party caveats nothing here uses.
//!
//! Caveats (all must hold; an unknown one refuses the macaroon):
//! `name:<account>`, `id:<uid>;<gid>;<gids>`, `dn:<DN>`, `groups:<g1,g2>`,
//! `activity:<A,B>` (DOWNLOAD, UPLOAD, DELETE, MANAGE, LIST,
//! READ_METADATA, UPDATE_METADATA, STAGE), `path:<prefix>`,
//! `before:<RFC 3339 UTC>`, and `scope:<access>:<path> ...` when the
//! holder's own rights were a token's (the grant is the intersection).

use aws_lc_rs::hmac;
use base64::Engine;
use std::sync::Arc;
use tessera_types::{Access, Identity, NsPath, ScopeGrant, TokenGrant};

/// The longest validity a macaroon is given.
pub const MAX_VALIDITY: u64 = 86_400;
/// Issuer name of the grant a macaroon carries.
pub const ISSUER: &str = "(macaroon)";
const MAX_LEN: usize = 8 << 10;

/// Issues and verifies macaroons with one secret (the cluster's: every
/// node that shares it takes them).
pub struct Macaroons {
    key: hmac::Key,
    location: String,
}

/// Why a macaroon was refused, or not issued.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MacaroonError {
    #[error("macaroon refused: {0}")]
    Invalid(String),
    #[error("macaroon request refused: {0}")]
    Request(String),
}

fn bad(s: impl Into<String>) -> MacaroonError {
    MacaroonError::Invalid(s.into())
}

/// The access class of a macaroon activity.
fn activity(a: &str) -> Option<Access> {
    Some(match a.trim() {
        "DOWNLOAD" | "LIST" | "READ_METADATA" => Access::Read,
        "UPLOAD" => Access::Create,
        "DELETE" | "MANAGE" | "UPDATE_METADATA" => Access::Modify,
        "STAGE" => Access::Stage,
        _ => return None,
    })
}

/// `uid;gid;g1,g2`.
fn parse_id(v: &str) -> Option<(u32, u32, Vec<u32>)> {
    let mut it = v.split(';');
    let uid = it.next()?.parse().ok()?;
    let gid = it.next()?.parse().ok()?;
    let gids = match it.next() {
        Some("") | None => Vec::new(),
        Some(g) => g
            .split(',')
            .map(str::parse)
            .collect::<Result<_, _>>()
            .ok()?,
    };
    it.next().is_none().then_some((uid, gid, gids))
}

/// Each of `accesses` on the subtree `root`.
fn on(accesses: &[Access], root: &NsPath) -> Vec<ScopeGrant> {
    accesses
        .iter()
        .map(|&access| ScopeGrant {
            access,
            path: root.clone(),
            dir_only: false,
        })
        .collect()
}

/// `want` within `have`: the grants both allow.
pub fn intersect(want: &[ScopeGrant], have: &[ScopeGrant]) -> Vec<ScopeGrant> {
    let mut out = Vec::new();
    for w in want {
        for h in have {
            let access = if h.access == w.access
                || (h.access == Access::Modify && w.access == Access::Create)
            {
                w.access
            } else if w.access == Access::Modify && h.access == Access::Create {
                Access::Create
            } else {
                continue;
            };
            let (path, dir_only) = if w.path.starts_with(&h.path) {
                (
                    w.path.clone(),
                    w.dir_only || (h.dir_only && w.path == h.path),
                )
            } else if h.path.starts_with(&w.path) {
                (
                    h.path.clone(),
                    h.dir_only || (w.dir_only && w.path == h.path),
                )
            } else {
                continue;
            };
            let g = ScopeGrant {
                access,
                path,
                dir_only,
            };
            if !out.contains(&g) {
                out.push(g);
            }
        }
    }
    out
}

fn scopes_text(s: &[ScopeGrant]) -> String {
    s.iter()
        .map(|g| {
            format!(
                "{}:{}{}",
                g.access.as_str(),
                g.path.display(),
                if g.dir_only { "/" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn parse_scopes(t: &str) -> Result<Vec<ScopeGrant>, MacaroonError> {
    t.split(' ')
        .filter(|s| !s.is_empty())
        .map(|s| {
            let (a, p) = s.split_once(':').ok_or_else(|| bad("bad scope caveat"))?;
            let access = Access::from_name(a).ok_or_else(|| bad("bad scope caveat"))?;
            let dir_only = p.len() > 1 && p.ends_with('/');
            let path = NsPath::parse(p).map_err(|_| bad("bad scope caveat"))?;
            Ok(ScopeGrant {
                access,
                path,
                dir_only,
            })
        })
        .collect()
}

/// What a macaroon request asks for.
#[derive(Debug, Default, serde::Deserialize)]
pub struct Request {
    #[serde(default)]
    pub caveats: Vec<String>,
    pub validity: Option<String>,
}

/// 32 random bytes in hex: a secret for one node's macaroons.
pub fn new_secret() -> Option<String> {
    let mut b = [0u8; 32];
    aws_lc_rs::rand::fill(&mut b).ok()?;
    Some(b.iter().map(|x| format!("{x:02x}")).collect())
}

/// What a macaroon request asks: its accesses, activity names and path
/// (the request's, or a narrower `path:` caveat).
fn asked(r: &Request, path: &NsPath) -> Result<(Vec<Access>, Vec<String>, NsPath), MacaroonError> {
    let mut accesses = Vec::new();
    let mut activities = Vec::new();
    let mut root = path.clone();
    for c in &r.caveats {
        if let Some(list) = c.strip_prefix("activity:") {
            for a in list.split(',') {
                let acc = activity(a)
                    .ok_or_else(|| MacaroonError::Request(format!("unknown activity {a:?}")))?;
                activities.push(a.trim().to_string());
                accesses.push(acc);
            }
        } else if let Some(p) = c.strip_prefix("path:") {
            let p = NsPath::parse(p)
                .map_err(|e| MacaroonError::Request(format!("path caveat: {e}")))?;
            if p.starts_with(&root) {
                root = p;
            } else if !root.starts_with(&p) {
                return Err(MacaroonError::Request(format!(
                    "path caveat {} is outside {}",
                    p.display(),
                    root.display()
                )));
            }
        } else if c.starts_with("before:") {
            // The validity says it; a before caveat of the client's
            // is kept as it is.
        } else {
            return Err(MacaroonError::Request(format!(
                "caveat {c:?} is not understood here"
            )));
        }
    }
    if accesses.is_empty() {
        accesses.push(Access::Read);
        activities.push("DOWNLOAD".into());
        activities.push("LIST".into());
    }
    Ok((accesses, activities, root))
}

/// A macaroon's caveats, read (all must hold).
struct Caveats {
    name: Option<String>,
    /// uid, gid and supplementary gids.
    id: Option<(u32, u32, Vec<u32>)>,
    dn: Option<String>,
    groups: Vec<String>,
    accesses: Option<Vec<Access>>,
    paths: Vec<NsPath>,
    scopes: Option<Vec<ScopeGrant>>,
    before: u64,
}

impl Caveats {
    fn parse(caveats: &[Vec<u8>]) -> Result<Caveats, MacaroonError> {
        let (mut name, mut dn, mut groups) = (None, None, Vec::new());
        let mut id = None;
        let mut accesses: Option<Vec<Access>> = None;
        let mut paths = Vec::new();
        let mut scopes = None;
        let mut before = u64::MAX;
        for c in caveats {
            let c = std::str::from_utf8(c).map_err(|_| bad("caveat not UTF-8"))?;
            let (k, v) = c
                .split_once(':')
                .ok_or_else(|| bad(format!("caveat {c:?} not understood")))?;
            match k {
                "name" if name.is_none() => name = Some(v.to_string()),
                "id" if id.is_none() => id = Some(parse_id(v).ok_or_else(|| bad("bad id caveat"))?),
                "dn" => dn = Some(v.to_string()),
                "groups" => groups = v.split(',').map(str::to_string).collect(),
                "activity" => {
                    let these: Vec<Access> = v
                        .split(',')
                        .map(|a| activity(a).ok_or_else(|| bad(format!("unknown activity {a:?}"))))
                        .collect::<Result<_, _>>()?;
                    accesses = Some(match accesses {
                        None => these,
                        Some(prev) => prev.into_iter().filter(|a| these.contains(a)).collect(),
                    });
                }
                "path" => paths.push(NsPath::parse(v).map_err(|_| bad("bad path caveat"))?),
                "before" => {
                    let t =
                        parse_rfc3339(v).ok_or_else(|| bad(format!("bad before caveat {v:?}")))?;
                    before = before.min(t);
                }
                "scope" if scopes.is_none() => scopes = Some(parse_scopes(v)?),
                _ => return Err(bad(format!("caveat {c:?} not understood"))),
            }
        }
        Ok(Caveats {
            name,
            id,
            dn,
            groups,
            accesses,
            paths,
            scopes,
            before,
        })
    }
}

impl Macaroons {
    /// Macaroons of a cluster's secret, in a domain of their own (the
    /// same secret signs capabilities).
    pub fn of_cluster(secret: &[u8]) -> Macaroons {
        let key = hmac::Key::new(hmac::HMAC_SHA256, secret);
        let derived = hmac::sign(&key, b"tessera macaroons v1");
        Macaroons::new(derived.as_ref(), "tessera")
    }

    /// Macaroons signed with `secret`, naming `location` (this service).
    pub fn new(secret: &[u8], location: impl Into<String>) -> Macaroons {
        let gen = hmac::Key::new(hmac::HMAC_SHA256, b"macaroons-key-generator");
        let derived = hmac::sign(&gen, secret);
        Macaroons {
            key: hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref()),
            location: location.into(),
        }
    }

    fn chain(&self, id: &[u8], caveats: &[Vec<u8>]) -> Vec<u8> {
        let mut sig = hmac::sign(&self.key, id).as_ref().to_vec();
        for c in caveats {
            sig = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &sig), c)
                .as_ref()
                .to_vec();
        }
        sig
    }

    /// A macaroon for `who` on `path` (the request's URL path), as the
    /// JSON body of a macaroon request asks; with its lifetime (s).
    pub fn issue(
        &self,
        who: &Identity,
        path: &NsPath,
        body: &[u8],
    ) -> Result<(String, u64), MacaroonError> {
        let req = |s: String| MacaroonError::Request(s);
        if who.is_root() {
            return Err(req("macaroons are not issued to root".into()));
        }
        if who.is_anonymous() {
            return Err(req(
                "credentials are needed (a certificate, a token or a password)".into(),
            ));
        }
        let r: Request = if body.iter().all(u8::is_ascii_whitespace) {
            Request::default()
        } else {
            serde_json::from_slice(body)
                .map_err(|e| req(format!("the body is not a macaroon request: {e}")))?
        };
        let validity = match &r.validity {
            Some(v) => iso_duration(v)
                .ok_or_else(|| req(format!("validity {v:?} is no ISO 8601 duration")))?,
            None => 600,
        }
        .min(MAX_VALIDITY);
        let (accesses, activities, root) = asked(&r, path)?;
        let want = on(&accesses, &root);
        let scopes = match &who.token {
            Some(t) => {
                let s = intersect(&want, &t.scopes);
                if s.is_empty() {
                    return Err(req(
                        "nothing asked for is within the requester's own rights".into(),
                    ));
                }
                Some(s)
            }
            None => None,
        };
        let until = now() + validity;
        let mut id = [0u8; 16];
        aws_lc_rs::rand::fill(&mut id).map_err(|_| req("no randomness".into()))?;
        let id: String = id.iter().map(|b| format!("{b:02x}")).collect();
        let gids: Vec<String> = who.groups.iter().map(u32::to_string).collect();
        let mut caveats = vec![
            format!("name:{}", who.name),
            format!("id:{};{};{}", who.uid, who.gid, gids.join(",")),
        ];
        if let Some(x) = &who.x509 {
            caveats.push(format!("dn:{}", x.dn));
        }
        if !who.group_names.is_empty() {
            caveats.push(format!("groups:{}", who.group_names.join(",")));
        }
        caveats.push(format!("activity:{}", activities.join(",")));
        caveats.push(format!("path:{}", root.display()));
        caveats.push(format!("before:{}", rfc3339(until)));
        if let Some(s) = scopes {
            caveats.push(format!("scope:{}", scopes_text(&s)));
        }
        for c in &r.caveats {
            if c.starts_with("before:") {
                caveats.push(c.clone());
            }
        }
        let caveats: Vec<Vec<u8>> = caveats.into_iter().map(String::into_bytes).collect();
        let sig = self.chain(id.as_bytes(), &caveats);
        let mut out = vec![2u8];
        field(1, self.location.as_bytes(), &mut out);
        field(2, id.as_bytes(), &mut out);
        out.push(0);
        for c in &caveats {
            field(2, c, &mut out);
            out.push(0);
        }
        out.push(0);
        field(6, &sig, &mut out);
        Ok((
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(out),
            validity,
        ))
    }

    /// Whether `token` looks like a macaroon (not a JWT).
    pub fn looks_like(token: &str) -> bool {
        !token.contains('.') && token.len() > 16
    }

    /// The identity a macaroon carries, over `protocol`.
    pub fn verify(&self, token: &str, protocol: &'static str) -> Result<Identity, MacaroonError> {
        if token.len() > MAX_LEN {
            return Err(bad("too long"));
        }
        let t = token.trim_end_matches('=');
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(t)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(t))
            .map_err(|_| bad("not base64"))?;
        let (_, id, caveats, sig) = parse_v2(&raw)?;
        let want = self.chain(&id, &caveats);
        if aws_lc_rs::constant_time::verify_slices_are_equal(&want, &sig).is_err() {
            return Err(bad(
                "signature does not verify (tampered, or from another service)",
            ));
        }
        let now = now();
        let c = Caveats::parse(&caveats)?;
        let before = c.before;
        if before <= now {
            return Err(bad("expired"));
        }
        let name = c.name.ok_or_else(|| bad("names nobody"))?;
        let (uid, gid, gids) = c.id.ok_or_else(|| bad("names no uid"))?;
        if uid == 0 {
            return Err(bad("a macaroon never acts as root"));
        }
        // The innermost path caveat; caveats on two branches allow nothing.
        let mut root = NsPath::root();
        for p in &c.paths {
            if p.starts_with(&root) {
                root = p.clone();
            } else if !root.starts_with(p) {
                return Err(bad("its path caveats allow nothing"));
            }
        }
        let want = on(&c.accesses.unwrap_or_default(), &root);
        let grant = match c.scopes {
            Some(s) => intersect(&want, &s),
            None => want,
        };
        let mut who = Identity::user(uid, gid, name.clone(), protocol);
        who.groups = gids;
        for g in c.groups {
            if !g.is_empty() && !who.group_names.contains(&g) {
                who.group_names.push(g);
            }
        }
        who.token = Some(Arc::new(TokenGrant {
            issuer: ISSUER.into(),
            subject: c.dn.clone().unwrap_or_else(|| name.clone()),
            scopes: grant,
            expires: before,
        }));
        who.x509 = c.dn.map(|dn| {
            Arc::new(tessera_types::X509Subject {
                dn,
                fqans: Vec::new(),
                limited: false,
            })
        });
        Ok(who)
    }
}

#[path = "macaroon_wire.rs"]
mod wire;
use crate::validator::now;
pub use wire::iso_duration;
use wire::{field, parse_rfc3339, parse_v2, rfc3339};

#[cfg(test)]
#[path = "macaroon_tests.rs"]
mod tests;
