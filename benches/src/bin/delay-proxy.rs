//! A TCP proxy that adds a fixed one-way delay in each direction: WAN
//! latency for benchmarks on a kernel without `netem`. Bytes keep their
//! order and the link's throughput (data in flight is not limited to one
//! round trip's worth: what is read now goes out `delay` later, while more
//! is read), so a round trip through it takes 2 × delay longer.
//!
//!   delay-proxy --listen 127.0.0.1:20094 --to 127.0.0.1:12094 --delay-ms 10
//!
//! Prints `delay-proxy ready <listen>` when it accepts connections. Used by
//! `scripts/bench-analysis` and `scripts/bench-federation`; it listens only where it is told.

use anyhow::Context;
use clap::Parser;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::time::Instant;

#[derive(Parser)]
struct Args {
    /// Address to accept connections on.
    #[arg(long)]
    listen: String,
    /// Address every connection is forwarded to.
    #[arg(long)]
    to: String,
    /// One-way delay added in each direction, in milliseconds (fractions
    /// too: 2.5 for a 5 ms round trip).
    #[arg(long, default_value_t = 0.0)]
    delay_ms: f64,
}

/// Bytes read and not yet written, per direction: a bound on memory, far
/// above what a 100 ms round trip at loopback speed keeps in flight for
/// the reads a benchmark does.
const IN_FLIGHT_CHUNKS: usize = 4096;
const CHUNK: usize = 64 << 10;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let a = Args::parse();
    let delay = Duration::from_secs_f64(a.delay_ms.max(0.0) / 1e3);
    let l = TcpListener::bind(&a.listen)
        .await
        .with_context(|| format!("listen on {}", a.listen))?;
    println!("delay-proxy ready {}", a.listen);
    loop {
        let (client, _) = l.accept().await?;
        let to = a.to.clone();
        tokio::spawn(async move {
            if let Ok(server) = TcpStream::connect(&to).await {
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                relay(client, server, delay).await;
            }
        });
    }
}

/// Forward both ways until either side closes.
async fn relay(client: TcpStream, server: TcpStream, delay: Duration) {
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let up = tokio::spawn(one_way(cr, sw, delay));
    let down = tokio::spawn(one_way(sr, cw, delay));
    let _ = tokio::join!(up, down);
}

/// Read from `r`, and write each chunk to `w` `delay` after it was read.
async fn one_way(
    mut r: impl AsyncReadExt + Unpin + Send + 'static,
    mut w: impl AsyncWriteExt + Unpin + Send + 'static,
    delay: Duration,
) {
    let (tx, mut rx) = mpsc::channel::<(Instant, Vec<u8>)>(IN_FLIGHT_CHUNKS);
    let writer = tokio::spawn(async move {
        while let Some((at, d)) = rx.recv().await {
            tokio::time::sleep_until(at + delay).await;
            if w.write_all(&d).await.is_err() {
                return;
            }
        }
        let _ = w.shutdown().await;
    });
    loop {
        let mut buf = vec![0u8; CHUNK];
        match r.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                buf.truncate(n);
                if tx.send((Instant::now(), buf)).await.is_err() {
                    break;
                }
            }
        }
    }
    drop(tx);
    let _ = writer.await;
}
