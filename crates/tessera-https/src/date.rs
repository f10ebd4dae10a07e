//! HTTP dates (IMF-fixdate, RFC 9110 §5.6.7, written by `httpdate`; read
//! in all three forms by `ops::precond::date`) and ISO 8601 for WebDAV's
//! `creationdate` (the calendar is `tessera_types::civil`).

use tessera_types::civil::civil_from_days as civil;

/// `Sun, 06 Nov 1994 08:49:37 GMT`
pub fn http_date(secs: i64) -> String {
    let t = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs.max(0) as u64);
    httpdate::fmt_http_date(t)
}

/// `1994-11-06T08:49:37Z`
pub fn iso8601(secs: i64) -> String {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let (y, m, d) = civil(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_dates() {
        assert_eq!(http_date(784_111_777), "Sun, 06 Nov 1994 08:49:37 GMT");
        assert_eq!(iso8601(784_111_777), "1994-11-06T08:49:37Z");
        assert_eq!(http_date(0), "Thu, 01 Jan 1970 00:00:00 GMT");
        for s in [0i64, 951_782_400, 1_795_995_402, 4_102_444_800] {
            assert_eq!(crate::ops::precond::date(&http_date(s)), Some(s));
        }
        assert_eq!(crate::ops::precond::date("yesterday"), None);
    }
}
