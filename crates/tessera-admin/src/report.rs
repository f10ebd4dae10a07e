//! The `Report` service (`tessera srr`): the Storage Resource Report, to
//! the admin credential or a valid token (what it says is what the HTTPS
//! path serves); made anew on request by admins.

use crate::auth::AdminAuth;
use crate::convert::err;
use std::sync::Arc;
use tessera_proto::admin::v1 as pb;
use tessera_proto::admin::v1::report_server::Report;
use tessera_wlcg::srr::Reporter;
use tonic::{Request, Response, Status};

pub struct ReportSvc {
    pub srr: Arc<Reporter>,
    pub auth: Arc<AdminAuth>,
}

#[tonic::async_trait]
impl Report for ReportSvc {
    async fn srr(&self, req: Request<pb::SrrRequest>) -> Result<Response<pb::SrrReply>, Status> {
        let who = self.auth.user_identity(&req).await?;
        let r = if req.get_ref().refresh {
            // Making it writes the namespace file: admins only.
            crate::auth::admin_only(&who, "only admins make the report anew")?;
            self.srr.refresh().await
        } else {
            self.srr.get().await
        }
        .map_err(err)?;
        Ok(Response::new(pb::SrrReply {
            json: r.json.clone(),
            made: r.made,
        }))
    }
}
