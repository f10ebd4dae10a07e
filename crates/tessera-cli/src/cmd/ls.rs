//! `tessera ls [-l] [-H] PATH`: a directory's entries, printed a page at
//! a time as they arrive (a directory of a million entries is never held
//! whole: each page of 1,000 is printed, in every output form, before the
//! next is asked for). `-l` columns keep a minimum width and widen when a
//! page needs more. A file lists as itself, like ls(1).

use super::ns::{entry_rec, is_dir};
use crate::client::{Clients, Failure};
use crate::output::{lines, mode_string, time_string, Format, Rec};
use tessera_proto::admin::v1 as pb;

/// Entries asked for per page.
const PAGE: u32 = 1000;

#[derive(clap::Args)]
pub struct LsArgs {
    /// Long listing.
    #[arg(short = 'l')]
    long: bool,
    /// Sizes in human units (with -l).
    #[arg(short = 'H', long = "human")]
    human: bool,
    path: String,
}

fn long_row(e: &pb::Entry, human: bool) -> [String; 7] {
    let size = if human {
        tessera_types::format_size(e.size)
    } else {
        e.size.to_string()
    };
    [
        mode_string(is_dir(e), e.mode),
        e.children.to_string(),
        e.uid.to_string(),
        e.gid.to_string(),
        size,
        time_string(e.mtime_ns),
        String::from_utf8_lossy(&e.name).into_owned() + if is_dir(e) { "/" } else { "" },
    ]
}

/// How one form prints pages.
struct Printer {
    fmt: Format,
    long: bool,
    human: bool,
    /// `-l` column widths so far (they only grow).
    widths: [usize; 6],
    first: bool,
}

impl Printer {
    fn page(&mut self, entries: &[pb::Entry]) {
        let mut out = String::new();
        match self.fmt {
            Format::Human if self.long => {
                let rows: Vec<[String; 7]> =
                    entries.iter().map(|e| long_row(e, self.human)).collect();
                for r in &rows {
                    for (w, c) in self.widths.iter_mut().zip(r.iter()) {
                        *w = (*w).max(c.chars().count());
                    }
                }
                for r in &rows {
                    let mut l = String::new();
                    for (c, w) in r.iter().zip(self.widths) {
                        l.push_str(&format!("{c:<w$}  "));
                    }
                    l.push_str(&r[6]);
                    out.push_str(&l);
                    out.push('\n');
                }
            }
            Format::Human => {
                for e in entries {
                    out.push_str(&String::from_utf8_lossy(&e.name));
                    out.push('\n');
                }
            }
            Format::Monitoring => {
                for e in entries {
                    out.push_str(&entry_rec(e).monitoring());
                    out.push('\n');
                }
            }
            Format::Json => {
                for e in entries {
                    if !std::mem::take(&mut self.first) {
                        out.push(',');
                    }
                    out.push_str(&Rec::json(&entry_rec(e)).to_string());
                }
            }
        }
        lines(&out);
    }
}

pub async fn ls(c: &mut Clients, fmt: Format, a: LsArgs) -> Result<(), Failure> {
    let top =
        c.ns.stat(pb::StatRequest {
            path: a.path.clone().into_bytes(),
        })
        .await?
        .into_inner();
    let mut p = Printer {
        fmt,
        long: a.long,
        human: a.human,
        // mode, links, uid, gid, size, time
        widths: [10, 3, 5, 5, if a.human { 8 } else { 10 }, 19],
        first: true,
    };
    if fmt == Format::Json {
        lines("{\"errormsg\":\"\",\"result\":[");
    }
    if !is_dir(&top) {
        p.page(std::slice::from_ref(&top));
    } else {
        let mut after = Vec::new();
        loop {
            let page =
                c.ns.list(pb::ListRequest {
                    path: a.path.clone().into_bytes(),
                    after: std::mem::take(&mut after),
                    limit: PAGE,
                })
                .await;
            let page = match page {
                Ok(p) => p.into_inner(),
                Err(e) if fmt == Format::Json => json_failed(e.into()),
                Err(e) => return Err(e.into()),
            };
            p.page(&page.entries);
            if page.next_after.is_empty() {
                break;
            }
            after = page.next_after;
        }
    }
    if fmt == Format::Json {
        lines("],\"retc\":0}\n");
    }
    Ok(())
}

/// A JSON listing that failed after its first entries: the document is
/// closed with the error (one document, as without entries), then the
/// command ends with the errno.
fn json_failed(f: Failure) -> ! {
    let msg = serde_json::Value::from(f.msg.clone());
    lines(&format!("],\"retc\":{},\"errormsg\":{msg}}}\n", f.errno));
    eprintln!("error: {} (errno={})", f.msg, f.errno);
    std::process::exit(f.errno.clamp(1, 255));
}
