//! What the operator-control tests (access rules, shaping, recycle bin,
//! versions, balancer) share: `tesserad serve --dev` with a config
//! overlay, the real `tessera` CLI against it, a metric off `/metrics`.

use crate::{run_ok, Daemon};
use std::path::Path;
use std::process::Command;

/// `tesserad serve --dev` in `dir/data`, `overlay` (TOML) over the dev
/// configuration, every listener on a port of its own.
pub fn daemon(dir: &Path, overlay: &str) -> Daemon {
    let file = dir.join("overlay.toml");
    std::fs::write(&file, overlay).unwrap();
    let dev_config = std::ffi::OsStr::new("--dev-config");
    Daemon::dev(&dir.join("data"), &[dev_config, file.as_os_str()])
}

/// `tessera --admin ADDR --token-file TOKEN ARGS` (the dev admin token).
pub fn tessera(d: &Daemon, dir: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(crate::common::workspace_bin("tessera"));
    c.args(["--admin", &d.field("admin="), "--token-file"])
        .arg(dir.join("data/dev/admin.token"))
        .args(args);
    c
}

/// [`tessera`], which must succeed: its standard output.
pub fn cli(d: &Daemon, dir: &Path, args: &[&str]) -> String {
    let o = run_ok(&mut tessera(d, dir, args), &format!("tessera {args:?}"));
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The value of the first `/metrics` line starting with `line_start`
/// (0 when there is none).
pub fn metric(d: &Daemon, line_start: &str) -> f64 {
    let o = Command::new("curl")
        .args(["-s", &format!("http://{}/metrics", d.field("metrics="))])
        .output()
        .expect("curl");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .find(|l| l.starts_with(line_start))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0.0)
}

/// The value after `key=` in a `-m` line.
pub fn field<'a>(line: &'a str, key: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(&format!("{key}=")))
        .unwrap_or_else(|| panic!("{key} in {line}"))
}
