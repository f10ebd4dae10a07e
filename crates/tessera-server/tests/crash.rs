//! The real `tesserad` binary: `kill -9` during a stream of mutations
//! loses no acknowledged change and leaves consistent quota counters;
//! SIGTERM exits cleanly; restarts are fast.

use std::collections::HashMap;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tessera_proto::admin::v1 as pb;
use tessera_proto::admin::v1::namespace_client::NamespaceClient;
use tessera_proto::admin::v1::quota_client::QuotaClient;
use tonic::transport::Channel;

#[path = "common/mod.rs"]
#[allow(dead_code)]
mod common;
use common::Daemon;

struct Server {
    d: Daemon,
    admin: String,
    boot_ms: f64,
}

fn start(dir: &std::path::Path) -> Server {
    let d = Daemon::dev(dir, &[]);
    Server {
        admin: d.field("admin="),
        boot_ms: d.field("boot_ms=").parse().expect("number"),
        d,
    }
}

fn secret(dir: &std::path::Path) -> String {
    std::fs::read_to_string(dir.join("dev/admin.token"))
        .expect("token")
        .trim()
        .to_string()
}

type Ns = NamespaceClient<tonic::service::interceptor::InterceptedService<Channel, Auth>>;

#[derive(Clone)]
struct Auth(tonic::metadata::MetadataValue<tonic::metadata::Ascii>);

impl tonic::service::Interceptor for Auth {
    fn call(&mut self, mut r: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        r.metadata_mut().insert("authorization", self.0.clone());
        Ok(r)
    }
}

async fn clients(
    addr: &str,
    secret: &str,
) -> (
    Ns,
    QuotaClient<tonic::service::interceptor::InterceptedService<Channel, Auth>>,
) {
    let ch = Channel::from_shared(format!("http://{addr}"))
        .expect("url")
        .connect()
        .await
        .expect("connect");
    let auth = Auth(format!("Bearer {secret}").parse().expect("ascii"));
    (
        NamespaceClient::with_interceptor(ch.clone(), auth.clone()),
        QuotaClient::with_interceptor(ch, auth),
    )
}

fn b(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

/// What each worker knows for sure: for each of its directories, whether
/// it must exist and with which file name inside (`None`: must be gone).
type Known = HashMap<String, Option<&'static str>>;

async fn worker(
    mut ns: Ns,
    t: usize,
    known: Arc<Mutex<Known>>,
    in_flight: Arc<Mutex<Vec<String>>>,
) {
    for i in 0.. {
        let d = format!("/q/t{t}/d{i}");
        in_flight.lock().expect("lock")[t] = d.clone();
        let steps: [(&str, Option<&'static str>); 4] = [
            ("mkdir", None),
            ("touch", Some("f")),
            ("mv", Some("g")),
            ("rm", None),
        ];
        for (step, state) in steps {
            if step == "rm" && i % 3 != 0 {
                continue;
            }
            let res = match step {
                "mkdir" => ns
                    .mkdir(pb::MkdirRequest {
                        path: b(&d),
                        mode: 0o755,
                        parents: true,
                    })
                    .await
                    .map(|_| ()),
                "touch" => ns
                    .touch(pb::TouchRequest {
                        path: b(&format!("{d}/f")),
                        mode: 0,
                    })
                    .await
                    .map(|_| ()),
                "mv" => ns
                    .rename(pb::RenameRequest {
                        source: b(&format!("{d}/f")),
                        destination: b(&format!("{d}/g")),
                        no_replace: false,
                    })
                    .await
                    .map(|_| ()),
                _ => ns
                    .remove(pb::RemoveRequest {
                        path: b(&d),
                        recursive: true,
                    })
                    .await
                    .map(|_| ()),
            };
            if res.is_err() {
                return; // the server died: this op is in flight, unknown
            }
            let mut k = known.lock().expect("lock");
            match (step, state) {
                ("mkdir", _) => k.insert(d.clone(), Some("")),
                ("rm", _) => k.insert(d.clone(), None),
                (_, s) => k.insert(d.clone(), s),
            };
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_mutations_loses_no_acknowledged_change() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut srv = start(dir.path());
    let sec = secret(dir.path());
    let (ns, mut quota) = clients(&srv.admin, &sec).await;
    let mut ns0 = ns.clone();
    ns0.mkdir(pb::MkdirRequest {
        path: b("/q"),
        mode: 0o755,
        parents: false,
    })
    .await
    .expect("mkdir");
    quota
        .set(pb::QuotaSetRequest {
            path: b("/q"),
            target: Some(pb::QuotaTarget {
                kind: pb::QuotaKind::Project as i32,
                id: 0,
            }),
            max_bytes: None,
            max_inodes: Some(1_000_000),
        })
        .await
        .expect("quota");
    const WORKERS: usize = 8;
    let known = Arc::new(Mutex::new(Known::new()));
    let in_flight = Arc::new(Mutex::new(vec![String::new(); WORKERS]));
    let tasks: Vec<_> = (0..WORKERS)
        .map(|t| {
            tokio::spawn(worker(
                ns.clone(),
                t,
                Arc::clone(&known),
                Arc::clone(&in_flight),
            ))
        })
        .collect();
    // Let mutations stream, then kill -9 in the middle of them.
    let deadline = Instant::now() + Duration::from_secs(20);
    while known.lock().expect("lock").len() < 200 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    srv.d.child.kill().expect("SIGKILL");
    srv.d.child.wait().expect("reap");
    for t in tasks {
        t.await.expect("worker");
    }
    let known = known.lock().expect("lock").clone();
    let in_flight = in_flight.lock().expect("lock").clone();
    assert!(
        known.len() >= 50,
        "only {} directories acknowledged",
        known.len()
    );

    let mut srv = start(dir.path());
    let (mut ns, _) = clients(&srv.admin, &sec).await;
    let mut checked = 0;
    for (d, state) in &known {
        if in_flight.contains(d) {
            continue; // its last step may or may not have been applied
        }
        let st = ns.stat(pb::StatRequest { path: b(d) }).await;
        match state {
            None => assert_eq!(
                st.expect_err("removed").code(),
                tonic::Code::NotFound,
                "{d}"
            ),
            Some(name) => {
                st.unwrap_or_else(|e| panic!("acknowledged {d} lost: {e}"));
                if !name.is_empty() {
                    ns.stat(pb::StatRequest {
                        path: b(&format!("{d}/{name}")),
                    })
                    .await
                    .unwrap_or_else(|e| panic!("acknowledged {d}/{name} lost: {e}"));
                }
            }
        }
        checked += 1;
    }
    assert!(checked >= 50);
    let rep = ns.check(pb::Empty {}).await.expect("check").into_inner();
    assert!(rep.problems.is_empty(), "{:#?}", rep.problems);
    srv.d.child.kill().expect("kill");
    srv.d.child.wait().expect("reap");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_stops_cleanly_and_restart_is_fast() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut srv = start(dir.path());
    let sec = secret(dir.path());
    {
        let (mut ns, _) = clients(&srv.admin, &sec).await;
        for i in 0..100 {
            ns.mkdir(pb::MkdirRequest {
                path: b(&format!("/d/{i}")),
                mode: 0,
                parents: true,
            })
            .await
            .expect("mkdir");
        }
    }
    let pid = srv.d.child.id().to_string();
    let st = Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("kill");
    assert!(st.success());
    let code = srv.d.child.wait().expect("wait");
    assert!(code.success(), "exit status {code:?}");
    let mut srv = start(dir.path());
    assert!(srv.boot_ms < 1000.0, "boot took {} ms", srv.boot_ms);
    let (mut ns, _) = clients(&srv.admin, &sec).await;
    let l = ns
        .list(pb::ListRequest {
            path: b("/d"),
            after: vec![],
            limit: 0,
        })
        .await
        .expect("list")
        .into_inner();
    assert_eq!(l.entries.len(), 100);
    srv.d.child.kill().expect("kill");
    srv.d.child.wait().expect("reap");
}
