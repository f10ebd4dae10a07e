use tessera_backend::BackendError;
use tessera_data::DataError;
use tessera_meta::MetaError;
use tessera_types::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error(transparent)]
    Meta(#[from] MetaError),
    #[error(transparent)]
    Data(#[from] DataError),
    #[error(transparent)]
    Backend(#[from] BackendError),
    #[error("invalid argument: {0}")]
    Invalid(String),
    #[error("permission denied: {0}")]
    Denied(String),
    #[error("not found: {0}")]
    NotFound(String),
    /// The data written does not match the digest its sender announced.
    #[error("checksum mismatch: {0}")]
    Mismatch(String),
    #[error("internal task failed: {0}")]
    Task(String),
    /// Reported by the metadata service to a data gateway.
    #[error("{msg}")]
    Remote { kind: ErrorKind, msg: String },
}

impl CoreError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            CoreError::Meta(e) => e.kind(),
            CoreError::Data(e) => e.kind(),
            CoreError::Backend(e) => e.kind(),
            CoreError::Invalid(_) => ErrorKind::InvalidArgument,
            CoreError::Denied(_) => ErrorKind::PermissionDenied,
            CoreError::NotFound(_) => ErrorKind::NotFound,
            CoreError::Mismatch(_) => ErrorKind::Corrupt,
            CoreError::Task(_) => ErrorKind::Io,
            CoreError::Remote { kind, .. } => *kind,
        }
    }
}

/// How a result is logged and counted: its status word and errno.
pub(crate) fn outcome<T>(res: &Result<T, CoreError>) -> (&'static str, i32) {
    match res {
        Ok(_) => ("ok", 0),
        Err(e) => (e.kind().as_str(), e.kind().errno()),
    }
}
