//! `tesserad serve --dev --dev-config FILE`: the dev default with some
//! settings changed (tests of limits and timeouts start a real process
//! this way).

use crate::config::{Config, ConfigError};
use std::path::Path;

/// `base` with the settings of TOML file `file` laid over it (tables
/// merged key by key; everything else replaced).
pub fn overlay(base: &Config, file: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(file)
        .map_err(|e| ConfigError::Invalid(format!("{}: {e}", file.display())))?;
    let mut over: toml::Table = toml::from_str(&text)
        .map_err(|e| ConfigError::Invalid(format!("{}: {e}", file.display())))?;
    for w in crate::units::upgrade(&mut over) {
        eprintln!("tesserad: {}: {w}", file.display());
    }
    let mut merged = toml::Table::try_from(base)
        .map_err(|e| ConfigError::Invalid(format!("the base configuration: {e}")))?;
    fn merge(into: &mut toml::Table, from: toml::Table) {
        for (k, v) in from {
            match (into.get_mut(&k), v) {
                (Some(toml::Value::Table(a)), toml::Value::Table(b)) => merge(a, b),
                (_, v) => {
                    into.insert(k, v);
                }
            }
        }
    }
    merge(&mut merged, over);
    let mut cfg: Config = merged
        .try_into()
        .map_err(|e| ConfigError::Invalid(format!("{}: {e}", file.display())))?;
    // What serde does not carry.
    cfg.dev_filesystems = base.dev_filesystems;
    cfg.auth.dev_issuer = base.auth.dev_issuer;
    cfg.validate()?;
    Ok(cfg)
}
