//! `tessera balance start|stop|status`, as EOS's balancer settings
//! (`eos space config default space.balancer=on ...`): stripes move from
//! fuller to emptier filesystems of a space until their fill levels are
//! within the threshold.

use crate::client::{Clients, Failure};
use crate::output::{emit, table, Format, Rec};
use tessera_proto::admin::v1 as pb;
use tessera_types::{format_size, parse_size};

#[derive(clap::Subcommand)]
pub enum BalanceCmd {
    /// Turn the balancer on (it is on unless stopped).
    Start {
        /// Fill levels count as even within this many percent (default 10).
        #[arg(long, default_value_t = 10.0)]
        threshold: f64,
        /// Bytes per second the moves may take (200M; default: no limit).
        #[arg(long)]
        rate: Option<String>,
        /// Files moved at once (default 2).
        #[arg(long, default_value_t = 2)]
        parallel: u32,
        /// How long the old copy of a moved stripe stays for readers that
        /// opened the file before (seconds; default 60).
        #[arg(long, default_value_t = 60)]
        grace: u32,
    },
    /// Turn it off (the round in progress ends after its current moves).
    Stop,
    /// What it is doing: fill levels, spread, moves, rate.
    Status,
}

fn show(fmt: Format, s: &pb::BalanceStatus) {
    let set = s.settings.unwrap_or_default();
    let mut recs = vec![Rec::new()
        .b("enabled", s.enabled)
        .b("balanced", s.balanced)
        .s("spread", format!("{:.4}", s.spread))
        .s("threshold", format!("{:.4}", set.threshold_percent / 100.0))
        .n("ratebytes", set.rate_bytes)
        .n("parallel", set.parallel)
        .n("rounds", s.rounds)
        .n("movedstripes", s.moved_stripes)
        .n("movedbytes", s.moved_bytes)
        .n("failed", s.failed)
        .s("rate", format!("{:.0}", s.rate))
        .s("lasterror", s.last_error.clone())];
    let mut rows = vec![["fsid", "label", "space", "fill"]
        .map(String::from)
        .to_vec()];
    for f in &s.fills {
        recs.push(
            Rec::new()
                .n("fsid", f.fsid)
                .s("label", f.label.clone())
                .s("space", f.space.clone())
                .s("fill", format!("{:.4}", f.fill)),
        );
        rows.push(vec![
            f.fsid.to_string(),
            f.label.clone(),
            f.space.clone(),
            format!("{:.1}%", f.fill * 100.0),
        ]);
    }
    emit(fmt, &recs, || {
        format!(
            "balancer {} ({}), spread {:.1}% (threshold {}%), {} rounds, moved {} stripes ({}), {} failed, last rate {}/s{}\n{}",
            if s.enabled { "on" } else { "off" },
            if s.balanced { "balanced" } else { "moving" },
            s.spread * 100.0,
            set.threshold_percent,
            s.rounds,
            s.moved_stripes,
            format_size(s.moved_bytes),
            s.failed,
            format_size(s.rate as u64),
            if s.last_error.is_empty() { String::new() } else { format!(", last error: {}", s.last_error) },
            table(&rows)
        )
    });
}

pub async fn run(c: &mut Clients, fmt: Format, cmd: BalanceCmd) -> Result<(), Failure> {
    let s = match cmd {
        BalanceCmd::Start {
            threshold,
            rate,
            parallel,
            grace,
        } => {
            let rate_bytes = match rate {
                Some(r) => parse_size(&r).map_err(|e| Failure::new(22, e.to_string()))?,
                None => 0,
            };
            c.balance
                .start(pb::BalanceSettings {
                    threshold_percent: threshold,
                    rate_bytes,
                    parallel,
                    grace_secs: grace,
                })
                .await?
        }
        BalanceCmd::Stop => c.balance.stop(pb::Empty {}).await?,
        BalanceCmd::Status => c.balance.status(pb::Empty {}).await?,
    };
    show(fmt, &s.into_inner());
    Ok(())
}
