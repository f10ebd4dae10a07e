//! The `Federation` service: endpoints listed with their health, added,
//! changed and removed at run time (root only; audited). A change goes
//! through `Federation::reconfigure`: checked like the configuration at
//! start, kept in the server's state file, then used.

use crate::auth::AdminAuth;
use std::sync::Arc;
use tessera_fed::{EndpointCfg, EndpointState, FedConfig, Federation, SiteCfg, ViewCfg};
use tessera_proto::admin::v1 as pb;
use tessera_proto::admin::v1::federation_server::Federation as FederationApi;
use tonic::{Request, Response, Status};

pub struct FedSvc {
    pub fed: Arc<Federation>,
    pub auth: Arc<AdminAuth>,
}

fn path_of(p: Option<&std::path::Path>) -> String {
    p.map(|p| p.display().to_string()).unwrap_or_default()
}

/// A credential file named at run time: only inside the federation's
/// `credentials_dir`, by a plain absolute path (no `.` or `..`), decided
/// from the name alone, before anything looks at the file (which the
/// configuration check then reads, `tessera_fed::setup`: a private
/// regular file of the server's user).
fn file(c: &FedConfig, s: String) -> Result<Option<std::path::PathBuf>, String> {
    use std::path::{Component, Path};
    if s.is_empty() {
        return Ok(None);
    }
    let Some(dir) = &c.credentials_dir else {
        return Err(
            "credential files can be named at run time only with [federation] \
                    credentials_dir set"
                .into(),
        );
    };
    let p = Path::new(&s);
    let plain = p.is_absolute()
        && p.components()
            .all(|c| matches!(c, Component::RootDir | Component::Normal(_)));
    if !plain || !p.starts_with(dir) || p == dir.as_path() {
        return Err(format!(
            "credential files named at run time must be in {}",
            dir.display()
        ));
    }
    Ok(Some(p.to_path_buf()))
}

fn state_pb(s: &EndpointState) -> pb::FedEndpoint {
    let c = &s.cfg;
    pb::FedEndpoint {
        name: c.name.clone(),
        site: c.site.clone(),
        kind: c.kind.clone(),
        url: c.url.clone(),
        region: c.region.clone(),
        token_file: path_of(c.token_file.as_deref()),
        access_key_file: path_of(c.access_key_file.as_deref()),
        secret_key_file: path_of(c.secret_key_file.as_deref()),
        disabled: c.disabled,
        views: s.views.clone(),
        up: s.health.up,
        failures: s.health.failures,
        latency_ms: s.health.latency_ms,
        load: s.health.load,
        reason: s.health.reason.clone(),
        timeout_ms: c
            .timeout
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        max_parallel: c.max_parallel as u32,
    }
}

/// A refused change: its reason, as the configuration check gave it
/// (an endpoint that exists already is its own answer).
fn refused(why: tessera_fed::FedError) -> Status {
    match why {
        tessera_fed::FedError::Exists(m) => Status::already_exists(m),
        other => Status::failed_precondition(other.to_string()),
    }
}

/// Put endpoint `name` in the views `paths` (a view not there is made).
fn join_views(c: &mut FedConfig, name: &str, paths: &[String]) {
    for p in paths {
        let p = format!("/{}", p.trim_matches('/'));
        match c
            .views
            .iter_mut()
            .find(|v| v.path.trim_end_matches('/') == p)
        {
            Some(v) if !v.endpoints.iter().any(|e| e == name) => v.endpoints.push(name.into()),
            Some(_) => {}
            None => c.views.push(ViewCfg {
                path: p,
                endpoints: vec![name.into()],
                public: true,
                write: String::new(),
            }),
        }
    }
}

/// Make site `name` if there is none (no subnets: no client is there).
fn ensure_site(c: &mut FedConfig, name: &str) {
    if !c.sites.iter().any(|s| s.name == name) {
        c.sites.push(SiteCfg {
            name: name.into(),
            subnets: Vec::new(),
            ..Default::default()
        });
    }
}

impl FedSvc {
    fn root(&self, who: &tessera_types::Identity) -> Result<(), Status> {
        crate::auth::admin_only(
            who,
            "changing the federation needs the admin credential as root",
        )
    }

    fn shown(&self, name: &str) -> Result<Response<pb::FedEndpoint>, Status> {
        let s = self
            .fed
            .endpoints()
            .into_iter()
            .find(|e| e.cfg.name == name);
        s.map(|s| Response::new(state_pb(&s)))
            .ok_or_else(|| Status::not_found(format!("no endpoint {name}")))
    }

    fn add_one(&self, r: pb::FedEndpoint) -> Result<Response<pb::FedEndpoint>, Status> {
        let name = r.name.clone();
        self.fed
            .reconfigure(|c| {
                if c.endpoints.iter().any(|e| e.name == r.name) {
                    return Err(tessera_fed::FedError::Exists(format!(
                        "endpoint {} exists",
                        r.name
                    )));
                }
                ensure_site(c, &r.site);
                c.endpoints.push(EndpointCfg {
                    name: r.name.clone(),
                    site: r.site,
                    kind: if r.kind.is_empty() {
                        "https".into()
                    } else {
                        r.kind
                    },
                    url: r.url,
                    region: r.region,
                    token_file: file(c, r.token_file)?,
                    access_key_file: file(c, r.access_key_file)?,
                    secret_key_file: file(c, r.secret_key_file)?,
                    disabled: r.disabled,
                    timeout: (r.timeout_ms > 0)
                        .then(|| std::time::Duration::from_millis(r.timeout_ms)),
                    max_parallel: r.max_parallel as usize,
                });
                join_views(c, &r.name, &r.views);
                Ok(())
            })
            .map_err(refused)?;
        self.shown(&name)
    }

    fn set_one(&self, r: pb::FedEndpointSet) -> Result<Response<pb::FedEndpoint>, Status> {
        let name = r.name.clone();
        if !self.fed.endpoints().iter().any(|e| e.cfg.name == name) {
            return Err(Status::not_found(format!("no endpoint {name}")));
        }
        self.fed
            .reconfigure(|c| {
                if let Some(s) = &r.site {
                    ensure_site(c, s);
                }
                let (tf, ak, sk) = (
                    r.token_file.map(|f| file(c, f)).transpose()?,
                    r.access_key_file.map(|f| file(c, f)).transpose()?,
                    r.secret_key_file.map(|f| file(c, f)).transpose()?,
                );
                let e = c
                    .endpoints
                    .iter_mut()
                    .find(|e| e.name == r.name)
                    .ok_or_else(|| format!("no endpoint {}", r.name))?;
                e.site = r.site.unwrap_or(e.site.clone());
                e.url = r.url.unwrap_or(e.url.clone());
                e.region = r.region.unwrap_or(e.region.clone());
                e.token_file = tf.unwrap_or(e.token_file.clone());
                e.access_key_file = ak.unwrap_or(e.access_key_file.clone());
                e.secret_key_file = sk.unwrap_or(e.secret_key_file.clone());
                e.disabled = r.disabled.unwrap_or(e.disabled);
                if let Some(t) = r.timeout_ms {
                    e.timeout = (t > 0).then(|| std::time::Duration::from_millis(t));
                }
                e.max_parallel = r.max_parallel.map_or(e.max_parallel, |n| n as usize);
                join_views(c, &r.name, &r.add_views);
                for p in &r.remove_views {
                    let p = format!("/{}", p.trim_matches('/'));
                    for v in c
                        .views
                        .iter_mut()
                        .filter(|v| v.path.trim_end_matches('/') == p)
                    {
                        v.endpoints.retain(|n| n != &r.name);
                    }
                }
                Ok(())
            })
            .map_err(refused)?;
        self.shown(&name)
    }

    fn remove_one(&self, name: &str) -> Result<Response<pb::Empty>, Status> {
        if !self.fed.endpoints().iter().any(|e| e.cfg.name == name) {
            return Err(Status::not_found(format!("no endpoint {name}")));
        }
        self.fed
            .reconfigure(|c| {
                if let Some(v) = c.views.iter().find(|v| v.write == name) {
                    return Err(tessera_fed::FedError::Invalid(format!(
                        "view {} writes to {name}: change its write policy first",
                        v.path
                    )));
                }
                c.endpoints.retain(|e| e.name != name);
                for v in &mut c.views {
                    v.endpoints.retain(|n| n != name);
                }
                Ok(())
            })
            .map_err(refused)?;
        Ok(Response::new(pb::Empty {}))
    }
}

#[tonic::async_trait]
impl FederationApi for FedSvc {
    async fn endpoints(
        &self,
        req: Request<pb::Empty>,
    ) -> Result<Response<pb::FedEndpointList>, Status> {
        self.auth.identity(&req)?;
        let endpoints = self.fed.endpoints().iter().map(state_pb).collect();
        Ok(Response::new(pb::FedEndpointList { endpoints }))
    }

    async fn add_endpoint(
        &self,
        req: Request<pb::FedEndpoint>,
    ) -> Result<Response<pb::FedEndpoint>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (r.name.clone(), format!("{} {} {}", r.kind, r.url, r.site));
        let res = self.root(&who).and_then(|_| self.add_one(r));
        self.auth
            .audited(&who, "fed endpoint add", &target, &args, res)
    }

    async fn set_endpoint(
        &self,
        req: Request<pb::FedEndpointSet>,
    ) -> Result<Response<pb::FedEndpoint>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (r.name.clone(), format!("{r:?}"));
        let res = self.root(&who).and_then(|_| self.set_one(r));
        self.auth
            .audited(&who, "fed endpoint set", &target, &args, res)
    }

    async fn remove_endpoint(
        &self,
        req: Request<pb::FedEndpointName>,
    ) -> Result<Response<pb::Empty>, Status> {
        let who = self.auth.identity(&req)?;
        let name = req.get_ref().name.clone();
        let res = self.root(&who).and_then(|_| self.remove_one(&name));
        self.auth.audited(&who, "fed endpoint rm", &name, "", res)
    }
}
