//! The one UDP socket a sender (monitoring, fireflies) sends from: IPv6
//! with IPv4 destinations as mapped addresses, so that collectors of
//! both families are reached from one source address and port (the
//! collectors key a server by them); IPv4 alone where IPv6 is off.

use std::net::{SocketAddr, UdpSocket};

/// The socket, and the destinations as it sends to them (a destination
/// it cannot reach is left out, logged).
pub fn socket(dests: &[SocketAddr]) -> std::io::Result<(UdpSocket, Vec<SocketAddr>)> {
    let (sock, v6) = match UdpSocket::bind("[::]:0") {
        Ok(s) => (s, true),
        Err(_) => (UdpSocket::bind("0.0.0.0:0")?, false),
    };
    sock.set_nonblocking(true)?;
    let mut out = Vec::new();
    for d in dests {
        match (d, v6) {
            (SocketAddr::V4(a), true) => {
                out.push(SocketAddr::new(a.ip().to_ipv6_mapped().into(), a.port()))
            }
            (SocketAddr::V6(_), false) => {
                tracing::warn!(destination = %d, "IPv6 is off here: not sent to")
            }
            (d, _) => out.push(*d),
        }
    }
    Ok((sock, out))
}
