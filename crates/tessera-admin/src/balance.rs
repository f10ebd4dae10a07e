//! The `Balance` service (`tessera balance start|stop|status`): admins
//! only; starts and stops audited.

use crate::auth::AdminAuth;
use crate::convert::err;
use std::sync::Arc;
use tessera_core::{BalanceRecord, BalanceStatus, Core};
use tessera_proto::admin::v1 as pb;
use tessera_proto::admin::v1::balance_server::Balance;
use tonic::{Request, Response, Status};

pub struct BalanceSvc {
    pub core: Core,
    pub auth: Arc<AdminAuth>,
}

fn admin_only(who: &tessera_types::Identity) -> Result<(), Status> {
    crate::auth::admin_only(who, "the balancer is for admins")
}

fn settings_pb(r: &BalanceRecord) -> pb::BalanceSettings {
    pb::BalanceSettings {
        threshold_percent: f64::from(r.threshold_milli) / 10.0,
        rate_bytes: r.rate_bytes,
        parallel: r.parallel,
        grace_secs: r.grace_secs,
    }
}

fn status_pb(s: BalanceStatus) -> pb::BalanceStatus {
    pb::BalanceStatus {
        enabled: s.settings.enabled,
        settings: Some(settings_pb(&s.settings)),
        balanced: s.balanced,
        spread: s.spread,
        fills: s
            .fills
            .into_iter()
            .map(|(fsid, label, space, fill)| pb::FsFill {
                fsid,
                label,
                space,
                fill,
            })
            .collect(),
        rounds: s.rounds,
        moved_stripes: s.moved_stripes,
        moved_bytes: s.moved_bytes,
        failed: s.failed,
        rate: s.rate,
        last_error: s.last_error,
    }
}

#[tonic::async_trait]
impl Balance for BalanceSvc {
    async fn start(
        &self,
        req: Request<pb::BalanceSettings>,
    ) -> Result<Response<pb::BalanceStatus>, Status> {
        let who = self.auth.identity(&req)?;
        let r = req.into_inner();
        let args = format!("{r:?}");
        let res = async {
            admin_only(&who)?;
            let d = BalanceRecord::default();
            let rec = BalanceRecord {
                enabled: true,
                threshold_milli: if r.threshold_percent > 0.0 {
                    (r.threshold_percent * 10.0).round() as u32
                } else {
                    d.threshold_milli
                },
                rate_bytes: r.rate_bytes,
                parallel: if r.parallel > 0 {
                    r.parallel
                } else {
                    d.parallel
                },
                grace_secs: if r.grace_secs > 0 {
                    r.grace_secs
                } else {
                    d.grace_secs
                },
            };
            let s = self.core.balance_set(&who, rec).await.map_err(err)?;
            Ok(Response::new(status_pb(s)))
        }
        .await;
        self.auth.audited(&who, "balance start", "", &args, res)
    }

    async fn stop(&self, req: Request<pb::Empty>) -> Result<Response<pb::BalanceStatus>, Status> {
        let who = self.auth.identity(&req)?;
        let res = async {
            admin_only(&who)?;
            let rec = BalanceRecord {
                enabled: false,
                ..self.core.balance_status().settings
            };
            let s = self.core.balance_set(&who, rec).await.map_err(err)?;
            Ok(Response::new(status_pb(s)))
        }
        .await;
        self.auth.audited(&who, "balance stop", "", "", res)
    }

    async fn status(&self, req: Request<pb::Empty>) -> Result<Response<pb::BalanceStatus>, Status> {
        let who = self.auth.identity(&req)?;
        admin_only(&who)?;
        Ok(Response::new(status_pb(self.core.balance_status())))
    }
}
