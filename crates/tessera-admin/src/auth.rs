//! Who an admin API call is: the admin credential (a bearer secret; root,
//! or the `uid:gid` its role header names, as `eos -r`), or a user's own
//! WLCG token for the calls about themselves; and the audit line every
//! admin action leaves.

use std::sync::Arc;
use tessera_proto::ROLE_KEY;
use tessera_types::Identity;
use tonic::{Request, Status};

/// The admin credential: a bearer secret every call must present as
/// `authorization: Bearer <secret>`; the few calls a user may make about
/// themselves (`quota ls`, `quota show`) take a WLCG bearer token instead.
pub struct AdminAuth {
    secret: Vec<u8>,
    tokens: Option<Arc<tessera_auth::Validator>>,
    audit: Arc<tessera_obs::AuditLog>,
}

impl AdminAuth {
    pub fn new(secret: impl Into<Vec<u8>>) -> AdminAuth {
        AdminAuth {
            secret: secret.into(),
            tokens: None,
            audit: Arc::new(tessera_obs::AuditLog::disabled()),
        }
    }

    /// Record every administrative action there.
    pub fn with_audit(mut self, audit: Arc<tessera_obs::AuditLog>) -> AdminAuth {
        self.audit = audit;
        self
    }

    /// Record action `action` of `who` on `target` (`args`: the request)
    /// and how it ended; `res` is handed back.
    pub fn audited<T>(
        &self,
        who: &Identity,
        action: &str,
        target: &str,
        args: &str,
        res: Result<T, Status>,
    ) -> Result<T, Status> {
        self.audit.record(&tessera_obs::AuditRecord {
            who: &who.name,
            uid: who.uid,
            gid: who.gid,
            protocol: who.protocol,
            action,
            target,
            args,
            result: res
                .as_ref()
                .map(|_| ())
                .map_err(|s| format!("{:?}: {}", s.code(), s.message())),
        });
        res
    }

    /// Accept bearer tokens of these issuers on the user calls.
    pub fn with_tokens(mut self, tokens: Option<Arc<tessera_auth::Validator>>) -> AdminAuth {
        self.tokens = tokens;
        self
    }

    /// For a call a user may make about themselves: the admin credential
    /// (as [`AdminAuth::identity`]) or a valid bearer token, whose identity
    /// (uid, groups) the call runs as.
    pub async fn user_identity<T>(&self, req: &Request<T>) -> Result<Identity, Status> {
        let given = bearer(req)?;
        if constant_time_eq(given.as_bytes(), &self.secret) {
            return self.identity(req);
        }
        let Some(v) = &self.tokens else {
            return Err(Status::unauthenticated("invalid admin credential"));
        };
        match v.validate(given).await {
            Ok(t) => Ok(t.identity("grpc")),
            Err(e) => Err(Status::unauthenticated(format!(
                "neither the admin credential nor a valid token: {e}"
            ))),
        }
    }

    /// Authenticate a call and return the identity it runs as: root, or
    /// the `uid:gid` named in the `tessera-role` metadata (like `eos -r`).
    pub fn identity<T>(&self, req: &Request<T>) -> Result<Identity, Status> {
        let given = bearer(req)?;
        if !constant_time_eq(given.as_bytes(), &self.secret) {
            return Err(Status::unauthenticated("invalid admin credential"));
        }
        let Some(role) = req.metadata().get(ROLE_KEY) else {
            return Ok(Identity::root("grpc"));
        };
        let role = role
            .to_str()
            .map_err(|_| Status::invalid_argument("bad role"))?;
        let (u, g) = role
            .split_once(':')
            .ok_or_else(|| Status::invalid_argument("role must be uid:gid"))?;
        let uid = u
            .parse()
            .map_err(|_| Status::invalid_argument("role uid must be a number"))?;
        let gid = g
            .parse()
            .map_err(|_| Status::invalid_argument("role gid must be a number"))?;
        Ok(Identity::user(
            uid,
            gid,
            format!("role:{uid}:{gid}"),
            "grpc",
        ))
    }
}

/// Refuse `who` unless root (`message`: what the refusal says).
pub fn admin_only(who: &Identity, message: &'static str) -> Result<(), Status> {
    if who.is_root() {
        Ok(())
    } else {
        Err(Status::permission_denied(message))
    }
}

/// The `authorization: Bearer …` value of a call.
fn bearer<T>(req: &Request<T>) -> Result<&str, Status> {
    req.metadata()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
        .ok_or_else(|| Status::unauthenticated("admin credential required"))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
