//! The in-process rate of cached federation lookups (issue 26: "a cached
//! stat ≥ 50,000/s per core"): what a front-end does for each open or GET
//! of a federated path whose replicas are remembered, `view_of` + `find`
//! (answered from the cache) + `order`, on one thread of a current-thread
//! runtime. The endpoint is a plain-HTTP listener of this process that
//! says every file is there (it is asked once per file, to fill the cache).
//!
//!   cargo run --release -p tessera-benches --bin bench-fedcache [-- --n 500000 --files 10000]

use clap::Parser;
use std::time::Instant;
use tessera_fed::{EndpointCfg, FedConfig, Federation, SiteCfg, ViewCfg, Want};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[derive(Parser)]
struct Args {
    /// Lookups timed.
    #[arg(long, default_value_t = 500_000)]
    n: usize,
    /// Distinct files (each found once before the timing).
    #[arg(long, default_value_t = 10_000)]
    files: usize,
}

fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(a))
}

async fn run(a: Args) -> anyhow::Result<()> {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = l.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = l.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let _ = s
                    .write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 1234\r\nConnection: close\r\n\r\n",
                    )
                    .await;
            });
        }
    });
    let cfg = FedConfig {
        probe_interval: std::time::Duration::from_millis(3_600_000),
        cache_ttl: std::time::Duration::from_secs(3600),
        cache_entries: a.files * 2,
        sites: vec![SiteCfg {
            name: "here".into(),
            subnets: vec!["127.0.0.1/32".into()],
            ..Default::default()
        }],
        endpoints: vec![EndpointCfg {
            name: "e".into(),
            site: "here".into(),
            url: format!("http://127.0.0.1:{port}/data"),
            ..Default::default()
        }],
        views: vec![ViewCfg {
            path: "/fed".into(),
            endpoints: vec!["e".into()],
            public: true,
            write: String::new(),
        }],
        ..Default::default()
    };
    let fed = Federation::new(cfg, None).map_err(anyhow::Error::msg)?;
    let ip = "127.0.0.1".parse()?;
    let paths: Vec<String> = (0..a.files)
        .map(|i| format!("/fed/run{}/f{i}.root", i % 17))
        .collect();
    for p in &paths {
        let at = fed.view_of(p).expect("in the view");
        anyhow::ensure!(
            fed.find(&at, ip, Want::Http).await.len() == 1,
            "{p} not found"
        );
    }
    let before = fed.state();
    let t = Instant::now();
    for k in 0..a.n {
        let at = fed.view_of(&paths[k % a.files]).expect("in the view");
        let r = fed.order(fed.find(&at, ip, Want::Http).await, ip);
        anyhow::ensure!(r.len() == 1, "a cached lookup lost its replica");
    }
    let dt = t.elapsed().as_secs_f64();
    let after = fed.state();
    anyhow::ensure!(
        after.lookups_asked == before.lookups_asked,
        "a timed lookup went to the endpoint"
    );
    println!(
        "cached lookups (view_of + find + order), 1 thread, {} files: {:.0}/s ({:.2} µs each)",
        a.files,
        a.n as f64 / dt,
        dt * 1e6 / a.n as f64
    );
    Ok(())
}
