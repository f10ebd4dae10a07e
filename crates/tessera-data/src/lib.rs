//! The data layer: a file is striped over k+m backends (`docs/stripe-format.md`).
//!
//! [`FileWriter`] streams data in with bounded memory (one group of k
//! blocks plus m parity blocks), writes every stripe under a temporary name,
//! and seals them all at [`FileWriter::finish`]; the caller commits the
//! returned [`WrittenFile`] to the namespace only after that. [`FileReader`]
//! reads any range touching only the blocks it needs, verifies each block's
//! CRC-32C, and rebuilds missing or corrupt blocks from parity.

mod check;
mod crcjoin;
mod error;
mod file_reader;
mod file_writer;
mod format;
mod layout;
mod pageread;
mod pagesums;
mod placement;
mod readdata;
mod readthreads;
mod recent;
mod striped;
mod stripes;
mod sums;

pub use check::{check_stripe, expected_stripe_len, rebuild, recoverable, StripeState};
pub use crcjoin::Joiner as CrcJoiner;
pub use error::DataError;
pub use file_reader::{AheadStats, FileReader, READ_AHEAD_MIN};
pub use file_writer::{FileWriter, WrittenFile};
pub use format::{StripeHeader, HEADER_LEN};
pub use layout::{Geometry, Layout, LayoutKind, Placement};
pub use placement::{place, Candidate};
pub use readdata::{BufPool, ReadData};
pub use readthreads::{ReadThreads, DEFAULT_READ_THREADS};
pub use striped::{ReadEvent, DEFAULT_POOL_BYTES, SKIPPED_PREFIX, SLOW_PREFIX};
