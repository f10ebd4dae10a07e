use tessera_meta::MetaError;
use tessera_types::ErrorKind;

#[derive(Debug, thiserror::Error)]
pub enum CoreError {
    #[error(transparent)]
    Meta(#[from] MetaError),
    #[error("invalid argument: {0}")]
    Invalid(String),
    #[error("internal task failed: {0}")]
    Task(String),
}

impl CoreError {
    pub fn kind(&self) -> ErrorKind {
        match self {
            CoreError::Meta(e) => e.kind(),
            CoreError::Invalid(_) => ErrorKind::InvalidArgument,
            CoreError::Task(_) => ErrorKind::Io,
        }
    }
}
