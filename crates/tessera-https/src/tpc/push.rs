//! Push: `COPY <local path>` with `Destination: <URL>`: this server PUTs
//! the file to the remote end (Content-Length known, the body streamed a
//! part at a time), with the same markers and final line as a pull.
//! `success` only when the remote end answered the PUT with 2xx.

use super::client::{self, Remote};
use super::pull::{check_credential, forwarded, marker};
use crate::body::Body;
use crate::error::HttpError;
use crate::ops::blocking;
use crate::ops::get::stream_file;
use crate::path;
use crate::Ctx;
use hyper::body::Bytes;
use hyper::{Request, Response};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

pub async fn push(ctx: &Ctx, req: crate::Req, dest: &str) -> Result<Response<Body>, HttpError> {
    let h = req.headers();
    check_credential(h)?;
    let mut remote = Remote::parse(dest)?;
    super::authorize(ctx, &mut remote).await?;
    remote.mark = super::mark::of(ctx, h, false);
    let src = path::decode(req.uri().path())?;
    let (core, who, s2) = (ctx.core.clone(), ctx.who.clone(), src.clone());
    let rs = Arc::new(blocking(move || core.open_read(&who, &s2)).await?);
    let size = rs.size();
    let put = forwarded(Request::put(remote.url.target.as_str()), &remote, h)
        .header("Content-Length", size.to_string());
    let overwrite = crate::ops::header(h, "overwrite").map(str::to_string);
    let put = match overwrite {
        Some(o) => put.header("Overwrite", o),
        None => put,
    };
    let sent = Arc::new(AtomicU64::new(0));
    let body = stream_file(
        Arc::clone(&rs),
        vec![(None, 0, size)],
        Some(Arc::clone(&sent)),
        crate::ops::get::Leases::new(&ctx.reply_budget()),
    );
    let put = put
        .body(body)
        .map_err(|e| HttpError::new(400, e.to_string()))?;
    let (tx, rx) = mpsc::channel(4);
    let tls = ctx.cfg.tpc_tls.clone();
    tokio::spawn(async move {
        let send = client::send(&remote, tls.as_ref(), put);
        tokio::pin!(send);
        let mut tick = tokio::time::interval(Duration::from_secs(5));
        tick.tick().await;
        let mut last = (0u64, std::time::Instant::now());
        let r = loop {
            tokio::select! {
                r = &mut send => break r,
                _ = tick.tick() => {
                    let now = sent.load(Ordering::Relaxed);
                    if now != last.0 {
                        last = (now, std::time::Instant::now());
                    } else if last.1.elapsed() > super::pull::STALL {
                        break Err(format!("no progress for {:?}", super::pull::STALL));
                    }
                    let _ = tx.send(Ok(marker(now))).await;
                }
            }
        };
        let done = sent.load(Ordering::Relaxed);
        let line = match r {
            // A destination that answers before taking the whole body has
            // not stored the file: never reported as a success.
            Ok(resp) if resp.status().is_success() && done < size => format!(
                "failure: destination answered {} after {done} of {size} bytes\n",
                resp.status()
            ),
            Ok(resp) if resp.status().is_success() => {
                let _ = tx.send(Ok(marker(done))).await;
                "success: Created\n".to_string()
            }
            Ok(resp) => format!("failure: destination answered {}\n", resp.status()),
            Err(e) => super::failure(&e),
        };
        let _ = tx.send(Ok(Bytes::from(line))).await;
    });
    Ok(super::progress(rx))
}
