//! The keys that named their unit (`cap_ttl_secs`, `wait_ms`, `max_mib`,
//! `[ha] lease_ms`, `[federation] probe_interval_ms`, ...) are accepted for
//! one release: [`upgrade`] rewrites them to the readable keys
//! (`tessera_types::units`) and says so.

pub use tessera_types::units::{duration, opt_duration, opt_mib, opt_millis, secs};

/// Old keys: (table, old key, new key, the unit its number was in).
const RENAMED: &[(&str, &str, &str, &str)] = &[
    ("xrootd", "request_stall_s", "request_stall", "s"),
    ("xrootd", "body_timeout_s", "body_timeout", "s"),
    ("xrootd", "idle_timeout_s", "idle_timeout", "s"),
    ("xrootd", "idle_open_timeout_s", "idle_open_timeout", "s"),
    ("https", "body_timeout_s", "body_timeout", "s"),
    ("cluster", "cap_ttl_secs", "cap_ttl", "s"),
    ("cluster", "write_lease_secs", "write_lease", "s"),
    ("auth", "refresh_secs", "refresh", "s"),
    ("auth", "leeway_secs", "leeway", "s"),
    ("buffers", "max_mib", "max", "MiB"),
    ("buffers", "wait_ms", "wait", "ms"),
    ("buffers", "per_connection_mib", "per_connection", "MiB"),
    ("buffers", "per_identity_mib", "per_identity", "MiB"),
    ("fsck", "repair_interval_secs", "repair_interval", "s"),
    ("data", "probe_interval_s", "probe_interval", "s"),
    ("data", "io_timeout_s", "io_timeout", "s"),
    ("server", "drain_s", "drain", "s"),
    ("ha", "lease_ms", "lease", "ms"),
    ("ha", "fence_s", "fence", "s"),
];

/// Rewrite the old keys of `t` to the new ones (the new key wins when
/// both are given); one warning per old key found.
pub fn upgrade(t: &mut toml::Table) -> Vec<String> {
    let mut said = Vec::new();
    for (table, old, new, unit) in RENAMED {
        if let Some(toml::Value::Table(sec)) = t.get_mut(*table) {
            said.extend(tessera_fed::rename_keys(sec, table, &[(old, new, unit)]));
        }
    }
    if let Some(toml::Value::Table(fed)) = t.get_mut("federation") {
        said.extend(tessera_fed::upgrade_config(fed));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_keys_become_new_ones_with_a_warning() {
        let mut t: toml::Table = toml::from_str(
            "[cluster]\ncap_ttl_secs = 300\n[buffers]\nwait_ms = 250\nmax_mib = 4096\n\
             [server]\ndrain_s = 5\ndrain = \"7s\"\n",
        )
        .unwrap();
        let said = upgrade(&mut t);
        assert_eq!(said.len(), 4, "{said:?}");
        assert!(said[0].contains("cap_ttl = \"300s\""), "{said:?}");
        assert_eq!(t["cluster"]["cap_ttl"].as_str(), Some("300s"));
        assert_eq!(t["buffers"]["wait"].as_str(), Some("250ms"));
        assert_eq!(t["buffers"]["max"].as_str(), Some("4096MiB"));
        assert_eq!(
            t["server"]["drain"].as_str(),
            Some("7s"),
            "the new key wins"
        );
        assert!(t["server"].get("drain_s").is_none());
    }

    #[test]
    fn ha_and_federation_durations_read_in_both_forms() {
        let mut t: toml::Table = toml::from_str(
            "[ha]\nlease_ms = 5000\nfence_s = 60\n\
             [federation]\nprobe_interval_ms = 300\ncache_ttl_s = 30\nsettle = \"50ms\"\n\
             [[federation.endpoints]]\nname = \"a\"\nsite = \"s\"\nurl = \"https://a\"\ntimeout_ms = 500\n",
        )
        .unwrap();
        let said = upgrade(&mut t);
        assert_eq!(said.len(), 5, "{said:?}");
        assert!(
            said.iter()
                .any(|l| l.contains("[federation.endpoints] timeout_ms")),
            "{said:?}"
        );
        let c: crate::config::Config = t.try_into().expect("config");
        use std::time::Duration;
        assert_eq!(c.ha.lease, Duration::from_secs(5));
        assert_eq!(c.ha.fence, Duration::from_secs(60));
        assert_eq!(c.federation.probe_interval, Duration::from_millis(300));
        assert_eq!(c.federation.cache_ttl, Duration::from_secs(30));
        assert_eq!(c.federation.settle, Duration::from_millis(50));
        assert_eq!(
            c.federation.endpoints[0].timeout,
            Some(Duration::from_millis(500))
        );
        let back = toml::to_string(&c.federation).unwrap();
        assert!(back.contains("probe_interval = \"300ms\""), "{back}");
    }
}
