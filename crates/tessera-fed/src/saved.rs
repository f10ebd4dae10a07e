//! The federation as changed at run time (`tessera fed endpoint …`), kept
//! in a TOML file of the server's data directory so that a restart starts
//! from it: `version = 2` and a `[federation]` table in the configuration
//! file's own format (version 1 wrote durations as `timeout_ms = 2000`
//! and is read as such). Written whole to a temporary file, synced,
//! renamed.

use crate::FedConfig;
use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::Path;

const VERSION: u32 = 2;

#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Saved {
    version: u32,
    federation: FedConfig,
}

/// The saved configuration at `path`, if there is one.
pub fn load(path: &Path) -> Result<Option<FedConfig>, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
    };
    let bad = |e: String| format!("{}: {e}", path.display());
    let mut t: toml::Table = toml::from_str(&text).map_err(|e| bad(e.to_string()))?;
    if t.get("version").and_then(toml::Value::as_integer) == Some(1) {
        if let Some(toml::Value::Table(f)) = t.get_mut("federation") {
            crate::config::upgrade(f);
        }
        t.insert("version".into(), toml::Value::Integer(VERSION.into()));
    }
    let s: Saved = t
        .try_into()
        .map_err(|e: toml::de::Error| bad(e.to_string()))?;
    if s.version != VERSION {
        return Err(format!(
            "{}: version {} (this tesserad reads {VERSION})",
            path.display(),
            s.version
        ));
    }
    Ok(Some(s.federation))
}

/// Keep `cfg` at `path` (durably: the file and its directory synced).
pub fn save(path: &Path, cfg: &FedConfig) -> Result<(), String> {
    let saved = Saved {
        version: VERSION,
        federation: cfg.clone(),
    };
    let body = toml::to_string(&saved).map_err(|e| e.to_string())?;
    let text = format!(
        "# The federation as changed at run time by `tessera fed endpoint`: while this\n\
         # file exists tesserad starts from it, not from its configuration's\n\
         # [federation]. Written by tesserad; remove it to go back.\n{body}"
    );
    let bad = |e: std::io::Error| format!("{}: {e}", path.display());
    let tmp = path.with_extension("toml.tmp");
    let mut f = std::fs::File::create(&tmp).map_err(bad)?;
    f.write_all(text.as_bytes()).map_err(bad)?;
    f.sync_all().map_err(bad)?;
    std::fs::rename(&tmp, path).map_err(bad)?;
    if let Some(dir) = path.parent() {
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(bad)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_and_loaded() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("federation.toml");
        assert_eq!(load(&p).unwrap(), None);
        let mut cfg = FedConfig::default();
        cfg.sites.push(crate::SiteCfg {
            name: "a".into(),
            subnets: vec!["10.0.0.0/8".into()],
            ..Default::default()
        });
        cfg.endpoints.push(crate::EndpointCfg {
            name: "e".into(),
            site: "a".into(),
            url: "https://h/x".into(),
            disabled: true,
            ..Default::default()
        });
        save(&p, &cfg).unwrap();
        assert_eq!(load(&p).unwrap(), Some(cfg));
        std::fs::write(&p, "version = 3\n[federation]\n").unwrap();
        assert!(load(&p).unwrap_err().contains("version 3"));
    }

    #[test]
    fn version_one_durations_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("federation.toml");
        std::fs::write(
            &p,
            "version = 1\n[federation]\nprobe_interval_ms = 300\ngrant_s = 60\n\
             [[federation.endpoints]]\nname = \"e\"\nsite = \"a\"\nurl = \"https://h\"\ntimeout_ms = 700\n",
        )
        .unwrap();
        let c = load(&p).unwrap().expect("saved");
        use std::time::Duration;
        assert_eq!(c.probe_interval, Duration::from_millis(300));
        assert_eq!(c.grant, Duration::from_secs(60));
        assert_eq!(c.endpoints[0].timeout, Some(Duration::from_millis(700)));
        save(&p, &c).unwrap();
        let text = std::fs::read_to_string(&p).unwrap();
        assert!(
            text.contains("version = 2") && text.contains("timeout = \"700ms\""),
            "{text}"
        );
    }
}
