//! The `Access` service: the operator's access rules (`tessera access`):
//! add, list, remove. Admins only; every change audited, with who set
//! the rule and when kept in the rule itself.

use crate::auth::AdminAuth;
use crate::convert::err;
use std::sync::Arc;
use tessera_core::rules::AccessRule;
use tessera_core::Core;
use tessera_proto::admin::v1 as pb;
use tessera_proto::admin::v1::access_server::Access;
use tessera_types::Identity;
use tonic::{Request, Response, Status};

pub struct AccessSvc {
    pub core: Core,
    pub auth: Arc<AdminAuth>,
}

fn admin_only(who: &Identity) -> Result<(), Status> {
    crate::auth::admin_only(who, "access rules are for admins")
}

fn to_pb(r: AccessRule) -> pb::AccessRule {
    pb::AccessRule {
        id: r.id,
        action: r.action,
        subject: r.subject,
        path: r.path,
        writes_only: r.writes_only,
        wait_secs: r.wait_secs,
        target: r.target,
        set_by: r.set_by,
        set_at: r.set_at,
        expires_at: r.expires_at,
        comment: r.comment,
        ops: r.ops,
        rate: r.rate_milli as f64 / 1000.0,
        burst: r.burst,
    }
}

#[tonic::async_trait]
impl Access for AccessSvc {
    async fn add(&self, req: Request<pb::AccessRule>) -> Result<Response<pb::AccessRule>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let (target, args) = (format!("{} {}", r.action, r.subject), format!("{r:?}"));
        let res = async {
            admin_only(&who)?;
            let rule = AccessRule {
                id: 0,
                action: r.action,
                subject: r.subject,
                path: r.path,
                writes_only: r.writes_only,
                wait_secs: r.wait_secs,
                target: r.target,
                set_by: who.name.clone(),
                set_at: tessera_core::rules::unix_now(),
                expires_at: r.expires_at,
                comment: r.comment,
                ops: r.ops,
                rate_milli: (r.rate.max(0.0) * 1000.0).round() as u64,
                burst: r.burst,
            };
            let stored = self.core.add_access_rule(rule).await.map_err(err)?;
            Ok(Response::new(to_pb(stored)))
        }
        .await;
        self.auth.audited(&who, "access add", &target, &args, res)
    }

    async fn list(&self, req: Request<pb::Empty>) -> Result<Response<pb::AccessRuleList>, Status> {
        let who = self.auth.identity(&req)?;
        admin_only(&who)?;
        let rules = self.core.access_rules().await.map_err(err)?;
        Ok(Response::new(pb::AccessRuleList {
            rules: rules.into_iter().map(to_pb).collect(),
        }))
    }

    async fn remove(
        &self,
        req: Request<pb::AccessRuleId>,
    ) -> Result<Response<pb::AccessRule>, Status> {
        let who = self.auth.identity(&req)?;
        let id = req.get_ref().id;
        let res = async {
            admin_only(&who)?;
            let gone = self.core.remove_access_rule(id).await.map_err(err)?;
            Ok(Response::new(to_pb(gone)))
        }
        .await;
        self.auth
            .audited(&who, "access rm", &id.to_string(), "", res)
    }
}
