//! Building a federation from its configuration: sites, endpoints (with
//! their credentials read), views; every reference checked.

use crate::client::Base;
use crate::endpoint::Seen;
use crate::s3::S3Base;
use crate::xroot::RootBase;
use crate::{Access, Endpoint, FedConfig, View, Write};
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// A site: its name, client subnets, and where it is (latitude,
/// longitude) when said.
pub(crate) struct Site {
    pub(crate) name: String,
    pub(crate) nets: Vec<ipnet::IpNet>,
    pub(crate) at: Option<(f64, f64)>,
}

/// The sites of `cfg`, their subnets parsed.
pub(crate) fn sites_of(cfg: &FedConfig) -> Result<Vec<Site>, String> {
    let mut sites = Vec::new();
    for s in &cfg.sites {
        let at = match (s.latitude, s.longitude) {
            (Some(la), Some(lo))
                if (-90.0..=90.0).contains(&la) && (-180.0..=180.0).contains(&lo) =>
            {
                Some((la, lo))
            }
            (None, None) => None,
            _ => {
                return Err(format!(
                    "site {}: latitude and longitude, in degrees, both or neither",
                    s.name
                ))
            }
        };
        let nets = s
            .subnets
            .iter()
            .map(|n| {
                n.parse::<ipnet::IpNet>()
                    .or_else(|_| n.parse::<IpAddr>().map(ipnet::IpNet::from))
                    .map_err(|_| format!("site {}: not a subnet: {n}", s.name))
            })
            .collect::<Result<Vec<_>, _>>()?;
        sites.push(Site {
            name: s.name.clone(),
            nets,
            at,
        });
    }
    Ok(sites)
}

/// The endpoints of `cfg`, checked; one of `old` with the same
/// configuration is kept as it is (with its health).
pub(crate) fn endpoints_of(
    cfg: &FedConfig,
    old: &[Arc<Endpoint>],
) -> Result<Vec<Arc<Endpoint>>, String> {
    let mut endpoints: Vec<Arc<Endpoint>> = Vec::new();
    for e in &cfg.endpoints {
        let bad = |m: String| format!("endpoint {}: {m}", e.name);
        if e.name.is_empty() || e.name.contains('/') {
            return Err(bad("a name without '/' expected".into()));
        }
        if endpoints.iter().any(|x| x.name == e.name) {
            return Err(bad("named twice".into()));
        }
        if !cfg.sites.iter().any(|s| s.name == e.site) {
            return Err(format!("endpoint {}: no site named {}", e.name, e.site));
        }
        let capacity = f64::from(cfg.load_capacity.max(1));
        if let Some(same) = old.iter().find(|o| o.cfg == *e && o.capacity == capacity) {
            endpoints.push(Arc::clone(same));
            continue;
        }
        let access = match e.kind.as_str() {
            "https" => {
                let mut b = Base::parse(&e.url).map_err(bad)?;
                if e.token_file.is_some() && !b.at.tls() {
                    return Err(bad(format!(
                        "a bearer token is sent over https only, not to {}",
                        e.url
                    )));
                }
                b.bearer = secret(e.token_file.as_deref()).map_err(bad)?;
                Access::Http(b)
            }
            "root" => Access::Root(RootBase::parse(&e.url).map_err(bad)?),
            "s3" => {
                let (Some(key), Some(sec)) = (
                    secret(e.access_key_file.as_deref()).map_err(bad)?,
                    secret(e.secret_key_file.as_deref()).map_err(bad)?,
                ) else {
                    return Err(bad(
                        "an s3 endpoint needs access_key_file and secret_key_file".into(),
                    ));
                };
                let region = if e.region.is_empty() {
                    "us-east-1"
                } else {
                    &e.region
                };
                let grant = cfg
                    .grant
                    .clamp(Duration::from_secs(1), Duration::from_secs(7 * 86400));
                Access::S3(Box::new(
                    S3Base::parse(&e.url, region, key, sec, grant).map_err(bad)?,
                ))
            }
            k => return Err(bad(format!("no kind {k} (https, root, s3)"))),
        };
        endpoints.push(Arc::new(Endpoint {
            cfg: e.clone(),
            name: e.name.clone(),
            site: e.site.clone(),
            access,
            health: Mutex::new(Seen {
                up: true,
                ..Seen::default()
            }),
            load: Default::default(),
            capacity,
            slots: (e.max_parallel > 0).then(|| tokio::sync::Semaphore::new(e.max_parallel)),
        }));
    }
    Ok(endpoints)
}

/// The views of `cfg` (and one per https endpoint under `per_site`),
/// checked against `endpoints`.
pub(crate) fn views_of(cfg: &FedConfig, endpoints: &[Arc<Endpoint>]) -> Result<Vec<View>, String> {
    let mut views = Vec::new();
    for v in &cfg.views {
        let path = v.path.trim_end_matches('/').to_string();
        if !path.starts_with('/') || path.is_empty() {
            return Err(format!("view {}: a path from / expected", v.path));
        }
        let idx = v
            .endpoints
            .iter()
            .map(|n| {
                endpoints
                    .iter()
                    .position(|e| &e.name == n)
                    .ok_or_else(|| format!("view {}: no endpoint named {n}", v.path))
            })
            .collect::<Result<Vec<_>, _>>()?;
        // An XRootD redirect keeps the path: such an endpoint must
        // hold the view's files under the view's own path.
        for &i in &idx {
            if let Access::Root(b) = &endpoints[i].access {
                if b.path != path {
                    return Err(format!(
                        "view {}: endpoint {} must serve it under the same path ({path}), not {}",
                        v.path, endpoints[i].name, b.path
                    ));
                }
            }
        }
        let write = match v.write.as_str() {
            "" => Write::Refused,
            "closest" => Write::Closest,
            name => match idx.iter().find(|i| endpoints[**i].name == name) {
                Some(i) => Write::To(*i),
                _ => {
                    return Err(format!(
                        "view {}: write = {name}: not one of its endpoints",
                        v.path
                    ))
                }
            },
        };
        views.push(View {
            path,
            endpoints: idx,
            public: v.public,
            write,
        });
    }
    // One view per https or S3 endpoint under `per_site` (an XRootD one
    // could not serve another path than its views'), private when any
    // private view shows the endpoint: its files are no more public one
    // by one than together.
    let root = cfg.per_site.trim_end_matches('/');
    if !root.is_empty() {
        for (i, e) in endpoints.iter().enumerate() {
            if !matches!(e.access, Access::Root(_)) {
                let public = !views.iter().any(|v| !v.public && v.endpoints.contains(&i));
                views.push(View {
                    path: format!("{root}/{}", e.name),
                    endpoints: vec![i],
                    public,
                    write: Write::Refused,
                });
            }
        }
    }
    Ok(views)
}

/// The first line of a credential file, if one is named. The file must
/// be a regular file (not a link) owned by this process's user and
/// readable by it alone; whatever is wrong (missing, a link, shared,
/// unreadable, empty) gets the same answer, so a configuration change
/// tells nothing of files it may not use.
pub fn secret(file: Option<&std::path::Path>) -> Result<Option<String>, String> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let Some(f) = file else { return Ok(None) };
    let refused = || {
        format!(
            "credential file {} is not usable: a non-empty regular file (not a link) of this \
             server's user, mode 0600 or 0400, expected",
            f.display()
        )
    };
    let me = std::fs::metadata("/proc/self")
        .map_err(|_| refused())?
        .uid();
    let private = |m: &std::fs::Metadata| m.is_file() && m.mode() & 0o077 == 0 && m.uid() == me;
    let before = std::fs::symlink_metadata(f).map_err(|_| refused())?;
    if !private(&before) {
        return Err(refused());
    }
    let file = std::fs::File::open(f).map_err(|_| refused())?;
    let after = file.metadata().map_err(|_| refused())?;
    if (after.dev(), after.ino()) != (before.dev(), before.ino()) || !private(&after) {
        return Err(refused());
    }
    let mut text = String::new();
    file.take(64 * 1024)
        .read_to_string(&mut text)
        .map_err(|_| refused())?;
    let line = text.lines().next().unwrap_or("").trim();
    if line.is_empty() {
        return Err(refused());
    }
    Ok(Some(line.to_string()))
}
