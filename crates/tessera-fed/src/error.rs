//! What the federation's configuration calls (`Federation::new`,
//! `reconfigure`) fail with, typed: callers choose their answer by the
//! variant (or its `ErrorKind`), never by the words.

use tessera_types::ErrorKind;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FedError {
    /// What is to be added is there already (an endpoint's name).
    Exists(String),
    /// The configuration does not check (an unknown site, a bad URL, a
    /// credential file that is not private, ...).
    Invalid(String),
    /// The change could not be kept (the state file).
    Io(String),
}

impl FedError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            FedError::Exists(_) => ErrorKind::AlreadyExists,
            FedError::Invalid(_) => ErrorKind::InvalidArgument,
            FedError::Io(_) => ErrorKind::Io,
        }
    }
}

impl std::fmt::Display for FedError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FedError::Exists(m) | FedError::Invalid(m) | FedError::Io(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for FedError {}

/// The configuration checks' own words: an invalid configuration.
impl From<String> for FedError {
    fn from(m: String) -> FedError {
        FedError::Invalid(m)
    }
}
