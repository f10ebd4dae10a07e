use tessera_proto::ROLE_KEY;
use tessera_types::Identity;
use tonic::{Request, Status};

/// The admin credential: a bearer secret every call must present as
/// `authorization: Bearer <secret>`.
pub struct AdminAuth {
    secret: Vec<u8>,
}

impl AdminAuth {
    pub fn new(secret: impl Into<Vec<u8>>) -> AdminAuth {
        AdminAuth {
            secret: secret.into(),
        }
    }

    /// Authenticate a call and return the identity it runs as: root, or
    /// the `uid:gid` named in the `tessera-role` metadata (like `eos -r`).
    pub fn identity<T>(&self, req: &Request<T>) -> Result<Identity, Status> {
        let given = req
            .metadata()
            .get("authorization")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .ok_or_else(|| Status::unauthenticated("admin credential required"))?;
        if !constant_time_eq(given.trim().as_bytes(), &self.secret) {
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

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}
