//! `tessera passwd NAME`: a line of the HTTPS gateway's password file
//! (`[https] basic_passwd`, HTTP Basic for desktop WebDAV clients) for
//! local account NAME, its password read from the first line of standard
//! input (so it never shows in a process listing); local, no admin API.

use crate::client::Failure;
use std::io::BufRead;

pub fn run(name: &str) -> Result<(), Failure> {
    let mut pw = String::new();
    std::io::stdin()
        .lock()
        .read_line(&mut pw)
        .map_err(|e| Failure::new(5, format!("standard input: {e}")))?;
    let pw = pw.trim_end_matches(['\r', '\n']);
    if pw.is_empty() {
        return Err(Failure::new(
            22,
            "no password on standard input (its first line is the password)",
        ));
    }
    let line = tessera_auth::passwd::line(name, pw).map_err(|e| Failure::new(22, e))?;
    crate::output::line(line);
    Ok(())
}
