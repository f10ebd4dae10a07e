//! Who is at the other end of a loopback connection, from the kernel: the
//! uid owning the client's socket, as an ident server would answer. The
//! `unix` security protocol only claims a user name; on loopback this is
//! how a claim is checked. Elsewhere nothing can be learned this way
//! (`None`).
//!
//! The kernel is asked for that one socket (`sock_diag` over netlink, as
//! `ss` does: a lookup by address and port). The socket tables in
//! `/proc/net/tcp*` are read only where netlink is unavailable: they list
//! every socket of the host, `TIME_WAIT` ones included, so reading them
//! per login grew with the connection churn (12 % of the server's CPU in
//! a run of 1,000 small uploads).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The uid owning the socket at `peer` that is connected to our `local`
/// address, when `peer` is a loopback address and the kernel lists it.
pub fn loopback_uid(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let peer = canonical(peer);
    let local = canonical(local);
    if !peer.ip().is_loopback() {
        return None;
    }
    match diag::owner(peer, local) {
        Ok(uid) => return uid,
        Err(e) => tracing::debug!("sock_diag unavailable ({e}): reading /proc/net/tcp"),
    }
    owner_from_tables(peer, local)
}

/// The same answer from the kernel's socket tables.
fn owner_from_tables(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|f| {
        let table = std::fs::read_to_string(f).ok()?;
        owner_in(&table, peer, local)
    })
}

/// One `SOCK_DIAG_BY_FAMILY` request for the TCP socket whose local
/// address is the peer and whose remote address is ours.
mod diag {
    use rustix::net::{netlink, recv, send, socket_with, AddressFamily, RecvFlags, SendFlags};
    use rustix::net::{SocketFlags, SocketType};
    use std::io;
    use std::net::{IpAddr, SocketAddr};

    const SOCK_DIAG_BY_FAMILY: u16 = 20;
    const NLMSG_ERROR: u16 = 2;
    const NLM_F_REQUEST: u16 = 1;
    const IPPROTO_TCP: u8 = 6;
    const AF_INET: u8 = 2;
    const AF_INET6: u8 = 10;
    /// `nlmsghdr` (16 bytes) + `inet_diag_req_v2` (56).
    const REQ_LEN: usize = 72;
    /// Where `idiag_uid` sits in an `inet_diag_msg`, after the header.
    const UID_AT: usize = 16 + 64;

    /// `Ok(None)`: the kernel has no such socket; `Err`: it could not be
    /// asked.
    pub fn owner(peer: SocketAddr, local: SocketAddr) -> io::Result<Option<u32>> {
        let fd = socket_with(
            AddressFamily::NETLINK,
            SocketType::DGRAM,
            SocketFlags::CLOEXEC,
            Some(netlink::SOCK_DIAG),
        )?;
        send(&fd, &request(peer, local), SendFlags::empty())?;
        let mut buf = [0u8; 512];
        // The kernel answers within the send: nothing to wait for.
        let (n, _) = recv(&fd, &mut buf[..], RecvFlags::DONTWAIT)?;
        answer(&buf[..n])
    }

    fn request(peer: SocketAddr, local: SocketAddr) -> [u8; REQ_LEN] {
        let mut r = [0u8; REQ_LEN];
        r[0..4].copy_from_slice(&(REQ_LEN as u32).to_ne_bytes());
        r[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
        r[6..8].copy_from_slice(&NLM_F_REQUEST.to_ne_bytes());
        // inet_diag_req_v2: family, protocol, ext, pad, states (all).
        r[16] = if peer.is_ipv4() { AF_INET } else { AF_INET6 };
        r[17] = IPPROTO_TCP;
        r[20..24].copy_from_slice(&u32::MAX.to_ne_bytes());
        // inet_diag_sockid: sport, dport (big-endian), src[16], dst[16],
        // if, cookie (none: all ones).
        r[24..26].copy_from_slice(&peer.port().to_be_bytes());
        r[26..28].copy_from_slice(&local.port().to_be_bytes());
        put_ip(&mut r[28..44], peer.ip());
        put_ip(&mut r[44..60], local.ip());
        r[64..72].fill(0xff);
        r
    }

    fn put_ip(to: &mut [u8], ip: IpAddr) {
        match ip {
            IpAddr::V4(a) => to[..4].copy_from_slice(&a.octets()),
            IpAddr::V6(a) => to.copy_from_slice(&a.octets()),
        }
    }

    fn answer(m: &[u8]) -> io::Result<Option<u32>> {
        let short = || io::Error::new(io::ErrorKind::InvalidData, "short sock_diag answer");
        let kind = u16::from_ne_bytes(m.get(4..6).ok_or_else(short)?.try_into().expect("2"));
        if kind == NLMSG_ERROR {
            let errno = i32::from_ne_bytes(m.get(16..20).ok_or_else(short)?.try_into().expect("4"));
            return match -errno {
                0 | 2 => Ok(None), // ENOENT: no such socket
                e => Err(io::Error::from_raw_os_error(e)),
            };
        }
        if kind != SOCK_DIAG_BY_FAMILY {
            return Err(io::Error::new(
                io::ErrorKind::InvalidData,
                "unexpected answer",
            ));
        }
        let uid = m.get(UID_AT..UID_AT + 4).ok_or_else(short)?;
        Ok(Some(u32::from_ne_bytes(uid.try_into().expect("4"))))
    }
}

fn canonical(a: SocketAddr) -> SocketAddr {
    SocketAddr::new(a.ip().to_canonical(), a.port())
}

/// The uid of the entry whose local address is `peer` and remote
/// address is `local`, in one `/proc/net/tcp*` table.
fn owner_in(table: &str, peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 8 {
            return None;
        }
        let (l, r) = (parse_addr(f[1])?, parse_addr(f[2])?);
        (l == peer && r == local).then(|| f[7].parse().ok())?
    })
}

/// `0100007F:1F90` (IPv4) or 32 hex digits and a port (IPv6): each 32-bit
/// word of the address as the kernel holds it (host order), the port as
/// a number.
fn parse_addr(s: &str) -> Option<SocketAddr> {
    let (a, p) = s.split_once(':')?;
    let port = u16::from_str_radix(p, 16).ok()?;
    let word = |i: usize| -> Option<[u8; 4]> {
        let w = u32::from_str_radix(a.get(i * 8..i * 8 + 8)?, 16).ok()?;
        Some(w.to_ne_bytes())
    };
    let ip = match a.len() {
        8 => IpAddr::V4(Ipv4Addr::from(word(0)?)),
        32 => {
            let mut b = [0u8; 16];
            for i in 0..4 {
                b[i * 4..i * 4 + 4].copy_from_slice(&word(i)?);
            }
            IpAddr::V6(Ipv6Addr::from(b))
        }
        _ => return None,
    };
    Some(SocketAddr::new(ip.to_canonical(), port))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::{TcpListener, TcpStream};

    fn euid() -> u32 {
        use std::os::unix::fs::MetadataExt;
        std::fs::metadata("/proc/self").unwrap().uid()
    }

    #[test]
    fn the_kernel_names_the_owner_of_a_loopback_client() {
        for host in ["127.0.0.1", "[::1]"] {
            let Ok(l) = TcpListener::bind(format!("{host}:0")) else {
                continue; // no IPv6 here
            };
            let c = TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (_s, peer) = l.accept().unwrap();
            assert_eq!(peer, c.local_addr().unwrap());
            let local = l.local_addr().unwrap();
            assert_eq!(loopback_uid(peer, local), Some(euid()));
            // Both ways of asking the kernel agree.
            assert_eq!(diag::owner(peer, local).unwrap(), Some(euid()));
            assert_eq!(owner_from_tables(peer, local), Some(euid()));
            // Not a connection to us: nothing.
            let elsewhere = SocketAddr::new(peer.ip(), 1);
            assert_eq!(loopback_uid(peer, elsewhere), None);
            assert_eq!(diag::owner(peer, elsewhere).unwrap(), None);
        }
        let remote: SocketAddr = "192.0.2.7:4000".parse().unwrap();
        assert_eq!(
            loopback_uid(remote, "192.0.2.1:1094".parse().unwrap()),
            None
        );
    }

    #[test]
    fn table_entries() {
        let t = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n   \
                 0: 0100007F:A1B2 0100007F:0446 01 00000000:00000000 00:00000000 00000000  1000        0 12345 1\n";
        let peer: SocketAddr = "127.0.0.1:41394".parse().unwrap();
        let local: SocketAddr = "127.0.0.1:1094".parse().unwrap();
        assert_eq!(owner_in(t, peer, local), Some(1000));
        assert_eq!(owner_in(t, local, peer), None);
        let v6 = "hdr\n 0: 00000000000000000000000001000000:A1B2 00000000000000000000000001000000:0446 01 0:0 0:0 0 42 0 1\n";
        let p6: SocketAddr = "[::1]:41394".parse().unwrap();
        let l6: SocketAddr = "[::1]:1094".parse().unwrap();
        assert_eq!(owner_in(v6, p6, l6), Some(42));
        let mapped = "hdr\n 0: 0000000000000000FFFF00000100007F:A1B2 0000000000000000FFFF00000100007F:0446 01 0:0 0:0 0 7 0 1\n";
        assert_eq!(owner_in(mapped, peer, local), Some(7), "v4-mapped is v4");
    }
}
