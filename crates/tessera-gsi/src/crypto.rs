//! The AWS-LC calls gsi needs and aws-lc-rs does not offer: RSA with
//! PKCS#1 type-1 padding over raw bytes (no hash, no DigestInfo; what
//! XrdCryptosslRSA's `EncryptPrivate`/`DecryptPublic` do, in blocks of
//! k − 11 bytes), RFC 7919 ffdhe2048 key agreement with the secret
//! left-padded to the prime's length, and OpenSSL's name hashes of a
//! certificate's issuer. Each wrapper owns its AWS-LC object and frees
//! it on drop; every pointer is checked before use.
#![allow(unsafe_code)] // FFI to AWS-LC, the library aws-lc-rs links

use aws_lc_sys as sys;
use std::ffi::{CStr, CString};

/// PEM of the DH group we offer: RFC 7919 ffdhe2048 (what
/// `DH_get_rfc7919_2048` makes), as the client's OpenSSL reads and checks
/// it (`EVP_PKEY_param_check` recognises the named group at once).
pub const FFDHE2048_PEM: &str = "-----BEGIN DH PARAMETERS-----
MIIBCAKCAQEA//////////+t+FRYortKmq/cViAnPTzx2LnFg84tNpWp4TZBFGQz
+8yTnc4kmz75fS/jY2MMddj2gbICrsRhetPfHtXV/WVhJDP1H18GbtCFY2VVPe0a
87VXE15/V8k1mE8McODmi3fipona8+/och3xWKE2rec1MKzKT0g6eXq8CrGCsyT7
YdEIqUuyyOP7uWrat2DX9GgdT0Kj3jlN9K5W7edjcrsZCwenyO4KbXCeAvzhzffi
7MA0BM0oNC9hkXL+nOmFg/+OTxIy7vKBg8P+OxtMb61zO7X8vC7CIAXFjvGDfRaD
ssbzSibBsu/6iGtCOGEoXJf//////////wIBAg==
-----END DH PARAMETERS-----
";

/// An RSA private key (the host's).
pub struct PrivateKey(*mut sys::RSA);

// SAFETY: AWS-LC's RSA objects may be used from several threads at once
// for private-key operations (they lock their blinding state).
unsafe impl Send for PrivateKey {}
unsafe impl Sync for PrivateKey {}

impl Drop for PrivateKey {
    fn drop(&mut self) {
        // SAFETY: we own the pointer, made non-null at construction.
        unsafe { sys::RSA_free(self.0) }
    }
}

impl PrivateKey {
    /// A PKCS#1 or PKCS#8 DER private key, which must be RSA.
    pub fn from_der(der: &[u8]) -> Result<PrivateKey, String> {
        let mut p = der.as_ptr();
        let len = std::os::raw::c_long::try_from(der.len()).map_err(|_| "key too long")?;
        // SAFETY: p points at `len` readable bytes for the call's duration.
        let pkey = unsafe { sys::d2i_AutoPrivateKey(std::ptr::null_mut(), &mut p, len) };
        if pkey.is_null() {
            return Err("the host key could not be read".into());
        }
        // SAFETY: pkey is a valid EVP_PKEY we own; get1 takes a reference.
        let rsa = unsafe { sys::EVP_PKEY_get1_RSA(pkey) };
        // SAFETY: pkey is ours to free; rsa holds its own reference.
        unsafe { sys::EVP_PKEY_free(pkey) };
        if rsa.is_null() {
            return Err("gsi needs an RSA host key".into());
        }
        Ok(PrivateKey(rsa))
    }

    fn size(&self) -> usize {
        // SAFETY: self.0 is a valid RSA.
        unsafe { sys::RSA_size(self.0) as usize }
    }

    /// `data` in blocks of k − 11 bytes, each padded (type 1) and raised
    /// to the private exponent.
    pub fn sign_raw(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        let k = self.size();
        let mut out = Vec::with_capacity(data.len().div_ceil(k - 11).max(1) * k);
        for chunk in data.chunks(k - 11) {
            let mut block = vec![0u8; k];
            // SAFETY: chunk is readable for its length, block writable for
            // k = RSA_size bytes, self.0 a valid private key.
            let n = unsafe {
                sys::RSA_private_encrypt(
                    chunk.len(),
                    chunk.as_ptr(),
                    block.as_mut_ptr(),
                    self.0,
                    sys::RSA_PKCS1_PADDING,
                )
            };
            if n != k as i32 {
                return Err("signing with the host key failed".into());
            }
            out.extend_from_slice(&block);
        }
        Ok(out)
    }
}

/// An RSA public key (the client's proxy key).
pub struct PublicKey(*mut sys::RSA);

// SAFETY: public-key operations on an AWS-LC RSA are thread-safe.
unsafe impl Send for PublicKey {}
unsafe impl Sync for PublicKey {}

impl Drop for PublicKey {
    fn drop(&mut self) {
        // SAFETY: we own the pointer, non-null since construction.
        unsafe { sys::RSA_free(self.0) }
    }
}

impl PublicKey {
    /// A PKCS#1 `RSAPublicKey` (the bit string of an RSA SPKI).
    pub fn from_pkcs1(der: &[u8]) -> Result<PublicKey, String> {
        // SAFETY: der is readable for its length.
        let rsa = unsafe { sys::RSA_public_key_from_bytes(der.as_ptr(), der.len()) };
        if rsa.is_null() {
            return Err("not an RSA public key".into());
        }
        Ok(PublicKey(rsa))
    }

    /// What [`PrivateKey::sign_raw`] made, recovered block by block.
    pub fn recover(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        // SAFETY: self.0 is a valid RSA.
        let k = unsafe { sys::RSA_size(self.0) as usize };
        if data.is_empty() || !data.len().is_multiple_of(k) {
            return Err("signed data is not a whole number of key blocks".into());
        }
        let mut out = Vec::with_capacity(data.len());
        let mut block = vec![0u8; k];
        for c in data.chunks(k) {
            // SAFETY: c is k readable bytes, block k writable ones.
            let n = unsafe {
                sys::RSA_public_decrypt(
                    k,
                    c.as_ptr(),
                    block.as_mut_ptr(),
                    self.0,
                    sys::RSA_PKCS1_PADDING,
                )
            };
            let n = usize::try_from(n).map_err(|_| "signature does not verify".to_string())?;
            out.extend_from_slice(&block[..n.min(k)]);
        }
        Ok(out)
    }
}

/// One side's ffdhe2048 key pair, fresh per handshake.
pub struct Dh(*mut sys::DH);

// SAFETY: used by one handshake at a time; AWS-LC's DH has no thread
// affinity.
unsafe impl Send for Dh {}
unsafe impl Sync for Dh {}

impl Drop for Dh {
    fn drop(&mut self) {
        // SAFETY: we own the pointer (non-null since construction).
        unsafe { sys::DH_free(self.0) }
    }
}

impl Dh {
    pub fn generate() -> Result<Dh, String> {
        // SAFETY: returns a new DH we own, or null.
        let dh = unsafe { sys::DH_get_rfc7919_2048() };
        if dh.is_null() {
            return Err("no DH group".into());
        }
        let dh = Dh(dh);
        // SAFETY: dh.0 is valid.
        if unsafe { sys::DH_generate_key(dh.0) } != 1 {
            return Err("DH key generation failed".into());
        }
        Ok(dh)
    }

    /// The public value in uppercase hexadecimal (OpenSSL's `BN_bn2hex`).
    pub fn public_hex(&self) -> Result<String, String> {
        // SAFETY: self.0 is valid and has a key; the BIGNUM stays owned by it.
        let pubkey = unsafe { sys::DH_get0_pub_key(self.0) };
        if pubkey.is_null() {
            return Err("no DH public value".into());
        }
        // SAFETY: pubkey is valid; the string is ours to free.
        let s = unsafe { sys::BN_bn2hex(pubkey) };
        if s.is_null() {
            return Err("DH public value not printable".into());
        }
        // SAFETY: s is a NUL-terminated string from AWS-LC.
        let hex = unsafe { CStr::from_ptr(s) }
            .to_string_lossy()
            .to_uppercase();
        // SAFETY: s came from OPENSSL_malloc.
        unsafe { sys::OPENSSL_free(s.cast()) };
        Ok(hex)
    }

    /// The shared secret with the peer's public value (hexadecimal),
    /// left-padded to the prime's length. AWS-LC refuses values outside
    /// 1 < y < p − 1 and those not in the prime-order subgroup.
    pub fn shared(&self, peer_hex: &str) -> Result<Vec<u8>, String> {
        let hex = peer_hex.trim();
        if hex.is_empty() || hex.len() > 1024 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err("the client's DH public value is not hexadecimal".into());
        }
        let c = CString::new(hex).map_err(|_| "bad DH value".to_string())?;
        let mut bn: *mut sys::BIGNUM = std::ptr::null_mut();
        // SAFETY: c is NUL-terminated; bn receives a new BIGNUM we free.
        if unsafe { sys::BN_hex2bn(&mut bn, c.as_ptr()) } == 0 || bn.is_null() {
            return Err("bad DH value".into());
        }
        // SAFETY: self.0 is valid.
        let size = unsafe { sys::DH_size(self.0) } as usize;
        let mut out = vec![0u8; size];
        // SAFETY: out has DH_size bytes; bn and self.0 are valid.
        let n = unsafe { sys::DH_compute_key_padded(out.as_mut_ptr(), bn, self.0) };
        // SAFETY: bn is ours.
        unsafe { sys::BN_free(bn) };
        if n != size as i32 {
            return Err("the client's DH public value is not acceptable".into());
        }
        Ok(out)
    }
}

/// OpenSSL's hashes (`X509_NAME_hash`, `X509_NAME_hash_old`) of the
/// issuer of a DER certificate: the names of its CA in a hashed CA
/// directory, which gsi clients look for.
pub fn issuer_hashes(cert_der: &[u8]) -> Result<(u32, u32), String> {
    let mut p = cert_der.as_ptr();
    let len = std::os::raw::c_long::try_from(cert_der.len()).map_err(|_| "too long")?;
    // SAFETY: p points at len readable bytes.
    let x = unsafe { sys::d2i_X509(std::ptr::null_mut(), &mut p, len) };
    if x.is_null() {
        return Err("the host certificate could not be read".into());
    }
    // SAFETY: x is valid; the name belongs to it.
    let r = unsafe {
        let name = sys::X509_get_issuer_name(x);
        let h = if name.is_null() {
            None
        } else {
            Some((sys::X509_NAME_hash(name), sys::X509_NAME_hash_old(name)))
        };
        sys::X509_free(x);
        h
    };
    r.ok_or_else(|| "the host certificate has no issuer".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dh_agreement_and_its_refusals() {
        let (a, b) = (Dh::generate().unwrap(), Dh::generate().unwrap());
        let (pa, pb) = (a.public_hex().unwrap(), b.public_hex().unwrap());
        let (sa, sb) = (a.shared(&pb).unwrap(), b.shared(&pa).unwrap());
        assert_eq!(sa, sb);
        assert_eq!(sa.len(), 256);
        assert!(a.shared("1").is_err(), "y = 1");
        assert!(a.shared("zz").is_err());
        assert!(a.shared("").is_err());
    }
}
