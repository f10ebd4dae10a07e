//! S3 endpoints (path-style URLs: `http(s)://host:port/<bucket>[/<prefix>]`):
//! a file of a view is the object `<prefix>/<path>`, a directory a key
//! prefix ending in `/`. Stat is a HEAD, a listing a ListObjectsV2 with the
//! `/` delimiter (every page), and a client is sent to a presigned URL
//! (SigV4, short-lived): the keys never leave the server. Requests are
//! built and signed by rusty-s3 and sent by our own HTTP client.

use crate::client::{request, Base};
use rusty_s3::actions::ListObjectsV2;
use rusty_s3::{Bucket, Credentials, S3Action, UrlStyle};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio_rustls::rustls::ClientConfig;

/// Validity of the URLs the server signs for its own requests.
const OWN: Duration = Duration::from_secs(60);

/// Entries of one listing read from a bucket at most (its pages are
/// read one after the other: a prefix with more is an error, not a
/// growing answer).
pub const MAX_LISTED: usize = 100_000;

/// Longest validity of a write grant given to a client.
pub const WRITE_GRANT: Duration = Duration::from_secs(60);

pub struct S3Base {
    /// Where requests go (its path unused).
    http: Base,
    bucket: Bucket,
    creds: Credentials,
    /// The key prefix of the view's root: empty, or ending in `/`.
    prefix: String,
    /// Validity of the URLs clients are sent to.
    grant: Duration,
}

/// An entry of a listing: its name (percent-encoded), a directory or not,
/// its size when known.
pub type Child = (String, bool, Option<u64>);

impl S3Base {
    /// `url` as above, with the region and the key pair.
    pub fn parse(
        url: &str,
        region: &str,
        key: String,
        secret: String,
        grant: Duration,
    ) -> Result<S3Base, String> {
        let http = Base::parse(url)?;
        let path = http.path.trim_start_matches('/');
        let (bucket, prefix) = path.split_once('/').unwrap_or((path, ""));
        if bucket.is_empty() {
            return Err(format!(
                "no bucket in {url} (http(s)://host:port/bucket/prefix)"
            ));
        }
        let endpoint = http.origin();
        let bucket = Bucket::new(
            endpoint.parse().map_err(|e| format!("{endpoint}: {e}"))?,
            UrlStyle::Path,
            bucket.to_string(),
            region.to_string(),
        )
        .map_err(|e| format!("{url}: {e}"))?;
        let prefix = prefix.trim_matches('/');
        let prefix = if prefix.is_empty() {
            String::new()
        } else {
            format!("{prefix}/")
        };
        Ok(S3Base {
            http: Base {
                path: String::new(),
                ..http
            },
            bucket,
            creds: Credentials::new(key, secret),
            prefix,
            grant,
        })
    }

    /// The key of `rel` (a path from `/`, percent-encoded).
    pub fn key(&self, rel: &str) -> String {
        format!(
            "{}{}",
            self.prefix,
            crate::decode(rel).trim_start_matches('/')
        )
    }

    /// A presigned GET of `rel` for a client.
    pub fn get_url(&self, rel: &str) -> String {
        let key = self.key(rel);
        self.bucket
            .get_object(Some(&self.creds), &key)
            .sign(self.grant)
            .to_string()
    }

    /// A presigned PUT of `rel` for a client, valid for at most
    /// [`WRITE_GRANT`] (a client follows the redirect at once); with
    /// `create_only`, `If-None-Match: *` is one of its signed headers, so
    /// the client must send it and the store refuses the PUT whenever the
    /// key exists.
    pub fn put_url(&self, rel: &str, create_only: bool) -> String {
        let key = self.key(rel);
        let mut put = self.bucket.put_object(Some(&self.creds), &key);
        if create_only {
            put.headers_mut().insert("if-none-match", "*");
        }
        put.sign(self.grant.min(WRITE_GRANT)).to_string()
    }

    /// HEAD the object of `rel`: `Some(size)` there, `None` not, and the
    /// time it took. The root (`rel` empty) is the bucket: any answer.
    pub async fn stat(
        &self,
        rel: &str,
        tls: Option<&Arc<ClientConfig>>,
        deadline: Duration,
    ) -> Result<(Option<Option<u64>>, Duration), String> {
        let start = Instant::now();
        let url = if rel.trim_matches('/').is_empty() {
            self.bucket.head_bucket(Some(&self.creds)).sign(OWN)
        } else {
            self.bucket
                .head_object(Some(&self.creds), &self.key(rel))
                .sign(OWN)
        };
        let a = self.send("HEAD", &url, tls, deadline).await?;
        let size = a
            .headers
            .get(hyper::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        match a.status {
            200 => Ok((Some(size), start.elapsed())),
            404 => Ok((None, start.elapsed())),
            s => Err(format!("HEAD answered {s}")),
        }
    }

    /// The directory `rel`: its children (`None`: no key under it).
    pub async fn list(
        &self,
        rel: &str,
        tls: Option<&Arc<ClientConfig>>,
        deadline: Duration,
    ) -> Result<Option<Vec<Child>>, String> {
        let trimmed = rel.trim_matches('/');
        let dir = if trimmed.is_empty() {
            self.prefix.clone()
        } else {
            format!("{}/", self.key(trimmed))
        };
        let end = Instant::now() + deadline;
        let mut out: Vec<Child> = Vec::new();
        let mut any = false;
        let mut token: Option<String> = None;
        loop {
            let mut list = ListObjectsV2::new(&self.bucket, Some(&self.creds));
            list.with_prefix(dir.as_str());
            list.with_delimiter("/");
            if let Some(t) = &token {
                list.with_continuation_token(t.as_str());
            }
            let url = list.sign(OWN);
            let left = end.saturating_duration_since(Instant::now());
            let a = self.send("GET", &url, tls, left).await?;
            if a.status != 200 {
                return Err(format!("ListObjectsV2 answered {}", a.status));
            }
            let text = String::from_utf8_lossy(&a.body);
            let page = ListObjectsV2::parse_response(&text).map_err(|e| e.to_string())?;
            for c in &page.contents {
                any = true;
                let name = c.key.strip_prefix(&dir).unwrap_or("");
                if !name.is_empty() {
                    out.push((encode(name), false, c.size));
                }
            }
            for p in &page.common_prefixes {
                any = true;
                let name = p.prefix.strip_prefix(&dir).unwrap_or("");
                let name = name.trim_end_matches('/');
                if !name.is_empty() {
                    out.push((encode(name), true, None));
                }
            }
            if out.len() > MAX_LISTED {
                return Err(format!(
                    "more than {MAX_LISTED} entries under {dir}: not listed"
                ));
            }
            match page.next_continuation_token {
                Some(t) => token = Some(t),
                None => break,
            }
        }
        // The view's root exists even when empty.
        Ok((any || trimmed.is_empty()).then_some(out))
    }

    async fn send(
        &self,
        method: &str,
        url: &url::Url,
        tls: Option<&Arc<ClientConfig>>,
        deadline: Duration,
    ) -> Result<crate::client::Answer, String> {
        let target = match url.query() {
            Some(q) => format!("{}?{q}", url.path()),
            None => url.path().to_string(),
        };
        request(&self.http, method, &target, &[], Vec::new(), tls, deadline).await
    }
}

/// A name as a path segment (percent-encoded as the front-ends send it).
pub(crate) fn encode(name: &str) -> String {
    const SEG: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
        .remove(b'-')
        .remove(b'_')
        .remove(b'.')
        .remove(b'~');
    percent_encoding::utf8_percent_encode(name, SEG).to_string()
}
