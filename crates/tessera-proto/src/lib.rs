//! Generated code for the admin API (`proto/tessera/admin/v1/*.proto`).

#[allow(clippy::all, clippy::pedantic)]
pub mod admin {
    pub mod v1 {
        tonic::include_proto!("tessera.admin.v1");
    }
}

/// Metadata key carrying the errno of a failed call.
pub const ERRNO_KEY: &str = "tessera-errno";
/// Metadata key carrying the stable error kind name of a failed call.
pub const ERROR_KIND_KEY: &str = "tessera-error";
/// Metadata key to act as another identity (`uid:gid`), admins only.
pub const ROLE_KEY: &str = "tessera-role";
