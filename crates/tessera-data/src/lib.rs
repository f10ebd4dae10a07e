//! The data layer: a file is striped over k+m backends (`docs/stripe-format.md`).
//!
//! [`FileWriter`] streams data in with bounded memory (one group of k
//! blocks plus m parity blocks), writes every stripe under a temporary name,
//! and seals them all at [`FileWriter::finish`]; the caller commits the
//! returned [`WrittenFile`] to the namespace only after that. [`FileReader`]
//! reads any range touching only the blocks it needs, verifies each block's
//! CRC-32C, and rebuilds missing or corrupt blocks from parity.

mod ahead;
mod check;
mod crcjoin;
mod error;
mod format;
mod layout;
mod placement;
mod readdata;
mod reader;
mod recent;
mod stripes;
mod writer;

pub use ahead::{AheadStats, FileReader, READ_AHEAD_MIN};
pub use check::{check_stripe, expected_stripe_len, rebuild, recoverable, StripeState};
pub use error::DataError;
pub use format::{StripeHeader, HEADER_LEN};
pub use layout::{Geometry, Layout, LayoutKind, Placement};
pub use placement::{place, Candidate};
pub use readdata::{BufPool, ReadData};
pub use reader::{ReadEvent, DEFAULT_POOL_BYTES, SKIPPED_PREFIX, SLOW_PREFIX};
pub use writer::{FileWriter, WrittenFile};
