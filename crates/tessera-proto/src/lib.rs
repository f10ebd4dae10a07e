//! Generated code for the admin API (`proto/tessera/admin/v1/*.proto`) and
//! the internal cluster API (`proto/tessera/internal/v1/*.proto`).

#[allow(clippy::all, clippy::pedantic)]
pub mod admin {
    pub mod v1 {
        tonic::include_proto!("tessera.admin.v1");
    }
}

/// Generated code for the internal API between the metadata service and
/// data gateways (`proto/tessera/internal/v1/cluster.proto`).
#[allow(clippy::all, clippy::pedantic)]
pub mod internal {
    pub mod v1 {
        tonic::include_proto!("tessera.internal.v1");
    }
}

/// Metadata key carrying the errno of a failed call.
pub const ERRNO_KEY: &str = "tessera-errno";
/// Metadata key carrying the stable error kind name of a failed call.
pub const ERROR_KIND_KEY: &str = "tessera-error";
/// Metadata key to act as another identity (`uid:gid`), admins only.
pub const ROLE_KEY: &str = "tessera-role";
