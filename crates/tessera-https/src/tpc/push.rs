//! Push: `COPY <local path>` with `Destination: <URL>`: this server PUTs
//! the file to the remote end (Content-Length known, the body streamed a
//! part at a time), with the same markers and final line as a pull.
//! `success` only when the remote end answered the PUT with 2xx.

use super::client::{self, Remote};
use super::pull::{check_credential, forwarded, marker};
use crate::body::Body;
use crate::error::HttpError;
use crate::ops::{blocking, set, status};
use crate::path;
use crate::Ctx;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tessera_core::ReadSession;
use tokio::sync::mpsc;

const PART: usize = 4 << 20;

pub async fn push(
    ctx: &Ctx,
    req: Request<Incoming>,
    dest: &str,
) -> Result<Response<Body>, HttpError> {
    let h = req.headers();
    check_credential(h)?;
    let remote = Remote::parse(dest)?;
    let src = path::decode(req.uri().path())?;
    let (core, who, s2) = (ctx.core.clone(), ctx.who.clone(), src.clone());
    let rs = Arc::new(blocking(move || core.open_read(&who, &s2)).await?);
    let size = rs.size();
    let put = forwarded(Request::put(remote.target.as_str()), &remote, h)
        .header("Content-Length", size.to_string());
    let overwrite = crate::ops::header(h, "overwrite").map(str::to_string);
    let put = match overwrite {
        Some(o) => put.header("Overwrite", o),
        None => put,
    };
    let sent = Arc::new(AtomicU64::new(0));
    let body = file_body(Arc::clone(&rs), size, Arc::clone(&sent));
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
        let r = loop {
            tokio::select! {
                r = &mut send => break r,
                _ = tick.tick() => {
                    let _ = tx.send(Ok(marker(sent.load(Ordering::Relaxed)))).await;
                }
            }
        };
        let line = match r {
            Ok(resp) if resp.status().is_success() => {
                let _ = tx.send(Ok(marker(sent.load(Ordering::Relaxed)))).await;
                "success: Created\n".to_string()
            }
            Ok(resp) => format!("failure: destination answered {}\n", resp.status()),
            Err(e) => format!("failure: {}\n", e.replace(['\n', '\r'], " ")),
        };
        let _ = tx.send(Ok(Bytes::from(line))).await;
    });
    let mut r = Response::new(Body::Stream(rx));
    status(&mut r, 201);
    set(&mut r, "Content-Type", "text/plain");
    Ok(r)
}

/// The file as a request body, read a part at a time.
fn file_body(rs: Arc<ReadSession>, size: u64, sent: Arc<AtomicU64>) -> Body {
    let (tx, rx) = mpsc::channel(2);
    tokio::spawn(async move {
        let mut pos = 0u64;
        while pos < size {
            let n = PART.min((size - pos) as usize);
            let r2 = Arc::clone(&rs);
            let got = tokio::task::spawn_blocking(move || r2.read(pos, n)).await;
            let chunk = match got {
                Ok(Ok(Some(d))) if d.len() == n => Ok(Bytes::from(d.to_vec())),
                Ok(Ok(_)) => Err(std::io::Error::other("file shorter than its size")),
                Ok(Err(e)) => Err(std::io::Error::other(e.to_string())),
                Err(e) => Err(std::io::Error::other(e.to_string())),
            };
            let failed = chunk.is_err();
            if tx.send(chunk).await.is_err() || failed {
                return;
            }
            pos += n as u64;
            sent.store(pos, Ordering::Relaxed);
        }
    });
    Body::Stream(rx)
}
