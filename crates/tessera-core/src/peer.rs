//! Who is at the other end of a loopback connection, from the kernel's
//! socket table (`/proc/net/tcp`, `/proc/net/tcp6`): the uid owning the
//! client's socket, as an ident server would answer. The `unix` security
//! protocol only claims a user name; on loopback this is how a claim is
//! checked. Elsewhere nothing can be learned this way (`None`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The uid owning the socket at `peer` that is connected to our `local`
/// address, when `peer` is a loopback address and the kernel lists it.
pub fn loopback_uid(peer: SocketAddr, local: SocketAddr) -> Option<u32> {
    let peer = canonical(peer);
    let local = canonical(local);
    if !peer.ip().is_loopback() {
        return None;
    }
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().find_map(|f| {
        let table = std::fs::read_to_string(f).ok()?;
        owner_in(&table, peer, local)
    })
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
            assert_eq!(loopback_uid(peer, l.local_addr().unwrap()), Some(euid()));
            // Not a connection to us: nothing.
            let elsewhere = SocketAddr::new(peer.ip(), 1);
            assert_eq!(loopback_uid(peer, elsewhere), None);
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
