//! The metrics and health listener: `/metrics`, `/healthz`, `/readyz`.

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tessera_core::Core;
use tokio::net::TcpListener;
use tokio::sync::watch;

pub async fn serve(listener: TcpListener, core: Core, mut stop: watch::Receiver<bool>) {
    loop {
        let (stream, _) = tokio::select! {
            r = listener.accept() => match r {
                Ok(s) => s,
                Err(e) => {
                    tracing::warn!("metrics accept: {e}");
                    continue;
                }
            },
            _ = stop.changed() => return,
        };
        let core = core.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| handle(req, core.clone()));
            let conn = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc);
            if let Err(e) = conn.await {
                tracing::debug!("metrics connection: {e}");
            }
        });
    }
}

async fn handle(req: Request<Incoming>, core: Core) -> Result<Response<Full<Bytes>>, hyper::Error> {
    let (status, ctype, body) = match req.uri().path() {
        "/metrics" => match core.refresh_gauges().await {
            Ok(()) => (
                StatusCode::OK,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                core.metrics().encode(),
            ),
            Err(e) => (
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                e.to_string(),
            ),
        },
        "/healthz" => (StatusCode::OK, "text/plain", "ok\n".to_string()),
        "/readyz" => match core.ns_stats(&tessera_types::Identity::root("http")).await {
            Ok(_) => (StatusCode::OK, "text/plain", "ready\n".to_string()),
            Err(e) => (
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                format!("{e}\n"),
            ),
        },
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found\n".to_string(),
        ),
    };
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = status;
    if let Ok(v) = ctype.parse() {
        resp.headers_mut().insert(hyper::header::CONTENT_TYPE, v);
    }
    Ok(resp)
}
