//! One module per command group.

pub mod attr;
pub mod fs;
pub mod ns;
pub mod quota;
