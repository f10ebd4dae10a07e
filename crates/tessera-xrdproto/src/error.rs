//! What a request that does not decode gets: its `kXR_error` number and
//! the reason (the server answers with them; `tessera-xrootd` turns it
//! into its own error type).

/// A decoding failure: a `kXR_error` number and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError {
    pub code: i32,
    pub msg: String,
}

impl DecodeError {
    pub fn new(code: i32, msg: impl Into<String>) -> DecodeError {
        DecodeError {
            code,
            msg: msg.into(),
        }
    }

    /// `kXR_ArgInvalid` with `msg`.
    pub fn invalid(msg: impl Into<String>) -> DecodeError {
        DecodeError::new(crate::err::ARG_INVALID, msg)
    }
}

impl std::fmt::Display for DecodeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "[{}] {}", self.code, self.msg)
    }
}

impl std::error::Error for DecodeError {}
