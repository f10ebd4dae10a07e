//! Any two kXR_auth bodies of protocol gsi: the first given to a server
//! with no handshake in progress, the rest (after a 2-byte length split)
//! to the state the first left. Never a panic, never unbounded work.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;
use tessera_gsi::{GsiServer, Outcome};

/// A self-signed credential made for the fuzzer alone (trusted by nothing).
const CERT: &str = "-----BEGIN CERTIFICATE-----
MIIDETCCAfmgAwIBAgIUNFFYRj3i1gkakgae64s8d8CjwH8wDQYJKoZIhvcNAQEL
BQAwFzEVMBMGA1UEAwwMZnV6ei50ZXNzZXJhMCAXDTI2MTIwNDIxNTE0NVoYDzIx
MjYxMTEwMjE1MTQ1WjAXMRUwEwYDVQQDDAxmdXp6LnRlc3NlcmEwggEiMA0GCSqG
SIb3DQEBAQUAA4IBDwAwggEKAoIBAQCUxEWnLVR9FUAjul1R6nz4icmxonavbb17
HQlUgZMq5uhVWi56bKBSriF+Sx7YdopBPaGu4wTTB3bIfx+sn8BGqI1ArPHr+hIF
eVzBObv+drnIWx2kq89owj2Rgc4pRWjyt2NaXpnGt9L85QuunR2slrY/6+pH8daH
OZHFcuUxTjJdEoGWX/G1zMHHRmDqYxQJ4uMSJWUJ/0dHvvIgVMAemRMorbFORnCt
FVVMHN/dypsp1cX33WLh7Fz3yfeUZ50POziCJ1+FQbINFXpvyJ2z26/+TMo1FZvL
VAmgMdhUd+whwJLrYo7FtY+8S6hXA0TAassd27+aCXfotHQlUPGlAgMBAAGjUzBR
MB0GA1UdDgQWBBS5NDVgw+1dKURyJ+cwkc3WnzLRPDAfBgNVHSMEGDAWgBS5NDVg
w+1dKURyJ+cwkc3WnzLRPDAPBgNVHRMBAf8EBTADAQH/MA0GCSqGSIb3DQEBCwUA
A4IBAQBJesR/a7DRQptz8wukAe/d10Nsh0Z9Z/ZFzQkBqOE8sV3Dl6sTuDgY84qq
FA46dOcdwz4Zj58ZHALr9oE5vnczw1FajSJSV1qHsCp0LtdC/ntz7/OyOtuRpN4t
yEnu8jP1IzXFVPBLN9gzq6zaMHc5lekKH835vsjUajSnQq/5B9XR0adqE+aPvqeH
7kTBfC1FcchHVWYhcfvMbGiDupKEU1YHzhz/6FUq64ICGyvmmR3w41CIXVEAXARv
4Pm5MDCin5i7WRot13L47ljYFPb5/yfGejZm+9b0YXdZTTkCGIsk032vTWeWw54J
FmM1VjbSYLoO4bCElyJXekgp71w3
-----END CERTIFICATE-----";
const KEY: &str = "-----BEGIN PRIVATE KEY-----
MIIEvAIBADANBgkqhkiG9w0BAQEFAASCBKYwggSiAgEAAoIBAQCUxEWnLVR9FUAj
ul1R6nz4icmxonavbb17HQlUgZMq5uhVWi56bKBSriF+Sx7YdopBPaGu4wTTB3bI
fx+sn8BGqI1ArPHr+hIFeVzBObv+drnIWx2kq89owj2Rgc4pRWjyt2NaXpnGt9L8
5QuunR2slrY/6+pH8daHOZHFcuUxTjJdEoGWX/G1zMHHRmDqYxQJ4uMSJWUJ/0dH
vvIgVMAemRMorbFORnCtFVVMHN/dypsp1cX33WLh7Fz3yfeUZ50POziCJ1+FQbIN
FXpvyJ2z26/+TMo1FZvLVAmgMdhUd+whwJLrYo7FtY+8S6hXA0TAassd27+aCXfo
tHQlUPGlAgMBAAECggEAJFrIiL+nn3+jcne3GW8bxiLp8qp4pYtEXEMuxgN6Qug1
y7HjnNBR55KdJb9W1OA3DhVxHwtkYOu4h+ulAmrxsnK7PhxlbFzqrYLIe4HP4rIB
2agGmPjRkVCyeg4GIwjOyk2tjmaC3tCKU3nnvm6v0z7rX7iXwqgjXF1htaZLwx3w
5vEOM/2VbMGBdSIWT+MmIAwnnon7sVQ5JyeyBgK/eo2PQ5/9FNpF3OnSdrR/N7kS
cNgTGrjknm22512twA9NNu8wTqDEe34no+gW+ZGZ0IOS7QR/BJ4lUW73gCa27y5F
xYNbEfu5hulue91KePy47+KCtYUtMVpwbm6nAN/cewKBgQDNm7mnRR0zf4ZBrGlv
UsiGXtCptdSAhta/o3r2g6TdmkIwUaFMwkDRCbjYiRPnrzXacDq89vJM0/tjhL9a
t/Ntzbh3JH/vxsCcTOiwQtwtt6/B8AYe0/yITdD1pKxO9NsCAGQuWRwQxQzWpmRY
0k/IT8sDauPwEAUpnA5i8YxYjwKBgQC5OjDROLQz1CGvReSFcP5mhN8oq3AM/PYv
2UGzxDA9m57HhQD8COU0G3lVV/ag4xLWCKH/S9Z3+nuaUPYOBxd6XxFTSplsn335
TiVPlnO/i89rpQb6hE0dYByoiF+tCV+I6G4WHS0Tn5oNBgS/q1UjgiTdmvoiDwek
Xr3ovKtkiwKBgGA8empLlD5texa0L2l20vrp2DsHK564/j0WtNA7j+hVcpORMbFu
3s25Ajb/+jwgK1HB5Axcfc7uDaVoFfTNUvhbKPNDN0qwuaiu6t7NfKc9aduZkBPP
30yhN6QyXqBaRUQrkLiM5vEGelrh6OgWEFfO2VQRLP1JUlFGhQlUy/8LAoGANhTO
chgLTWKvnxxaF7ghH0/GVHqR0cj+HIRjkZhDuYk5d+nWmsACJA+tgoSXZuxF8KY+
nmrHKOrCshDXdssNSNZ/GYGbgEKlJmhxrmYwT4oDuttJSVXdqikI1RBUVxJ4iWHL
2rsUETm1Yf4S3t+okSCLoQSB6fXXdl+PNWf45vcCgYA9vyef6KL3iSSqTIM5pmIT
CZUugt1vgI6nH/ykyCG6ywFDjS16mSCETBoT4OsVkYQbUmcPZi6XIVuhIwcdXV4W
3aUP0ILY2hxZq7atymKbDp66fAfT294HHO0ZmMHzx/lH+C45/G1pOL/VcAsVMt3U
HpuYxSagszR1ye1GmDHDfw==
-----END PRIVATE KEY-----";

fn server() -> &'static GsiServer {
    static S: OnceLock<GsiServer> = OnceLock::new();
    S.get_or_init(|| GsiServer::new(CERT.as_bytes(), KEY.as_bytes()).expect("fuzz credentials"))
}

fuzz_target!(|data: &[u8]| {
    if data.len() < 2 {
        return;
    }
    let n = usize::from(u16::from_be_bytes([data[0], data[1]])).min(data.len() - 2);
    let (first, second) = data[2..].split_at(n);
    let mut pending = None;
    if let Ok(Outcome::More(_)) = server().step(&mut pending, first) {
        let _ = server().step(&mut pending, second);
    }
    let _ = tessera_gsi::buffer::Buffer::parse(data);
});
