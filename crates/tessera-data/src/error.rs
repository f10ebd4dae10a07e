//! `DataError`: what reading and writing striped files can fail with.

use tessera_backend::BackendError;
use tessera_ec::EcError;
use tessera_types::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum DataError {
    #[error("invalid layout: {0}")]
    Layout(String),
    #[error(transparent)]
    Ec(#[from] EcError),
    #[error("stripe {index}: {source}")]
    Backend {
        index: usize,
        #[source]
        source: BackendError,
    },
    #[error("corrupt stripe {index}: {detail}")]
    Corrupt { index: usize, detail: String },
    #[error("cannot read group {group}: only {have} of the {need} stripes needed are readable")]
    Unrecoverable {
        group: u64,
        have: usize,
        need: usize,
    },
    #[error("placement record: {0}")]
    Placement(String),
    #[error("not enough failure domains: the layout needs {need}, {have} are writable")]
    NoPlacement { need: usize, have: usize },
}

impl DataError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            DataError::Layout(_) | DataError::Ec(_) => ErrorKind::InvalidArgument,
            DataError::Backend { source, .. } => source.kind(),
            DataError::Corrupt { .. }
            | DataError::Unrecoverable { .. }
            | DataError::Placement(_) => ErrorKind::Corrupt,
            DataError::NoPlacement { .. } => ErrorKind::NoSpace,
        }
    }
}
