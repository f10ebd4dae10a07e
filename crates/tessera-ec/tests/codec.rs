//! Decode from any k of k+m shards equals the input, for both engines,
//! and both engines write the same bytes (the matrix is the format).

use proptest::prelude::*;
use tessera_ec::{Codec, Engine};

fn encode_all(c: &Codec, data: &[Vec<u8>]) -> Vec<Vec<u8>> {
    let len = data[0].len();
    let mut parity = vec![vec![0u8; len]; c.parity_shards()];
    {
        let d: Vec<&[u8]> = data.iter().map(|x| x.as_slice()).collect();
        let mut p: Vec<&mut [u8]> = parity.iter_mut().map(|x| x.as_mut_slice()).collect();
        c.encode(&d, &mut p).expect("encode");
    }
    data.iter().cloned().chain(parity).collect()
}

fn engines() -> Vec<Engine> {
    vec![Engine::best(), Engine::Rust]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

    #[test]
    fn any_k_of_k_plus_m_rebuilds_everything(
        k in 1usize..=16,
        m in 0usize..=4,
        len in prop_oneof![Just(0usize), Just(1usize), 1usize..300, Just(4095usize), Just(4097usize)],
        seed in any::<u64>(),
        lose in any::<u64>(),
    ) {
        let mut x = seed | 1;
        let mut next = || { x ^= x << 13; x ^= x >> 7; x ^= x << 17; x as u8 };
        let data: Vec<Vec<u8>> = (0..k).map(|_| (0..len).map(|_| next()).collect()).collect();
        let n = k + m;
        // Lose up to m shards, chosen by `lose`.
        let mut present = vec![true; n];
        let mut l = lose;
        let nlose = (l % (m as u64 + 1)) as usize;
        l /= m as u64 + 1;
        let mut lost = 0;
        while lost < nlose {
            let i = (l % n as u64) as usize;
            l = l / n as u64 + 7919;
            if present[i] { present[i] = false; lost += 1; }
        }
        let mut reference: Option<Vec<Vec<u8>>> = None;
        for e in engines() {
            let c = Codec::with_engine(k, m, e).expect("layout");
            let full = encode_all(&c, &data);
            if let Some(r) = &reference {
                prop_assert_eq!(r, &full, "engines disagree");
            }
            reference = Some(full.clone());
            let mut shards: Vec<Vec<u8>> = full.iter().enumerate()
                .map(|(i, s)| if present[i] { s.clone() } else { vec![0xAA; len] })
                .collect();
            let mut refs: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
            c.reconstruct(&mut refs, &present).expect("reconstruct");
            prop_assert_eq!(&shards, &full);
        }
    }
}

#[test]
fn too_few_shards_is_an_error() {
    let c = Codec::new(4, 2).expect("layout");
    let mut shards = vec![vec![0u8; 8]; 6];
    let mut refs: Vec<&mut [u8]> = shards.iter_mut().map(|s| s.as_mut_slice()).collect();
    let present = [true, false, true, false, false, true];
    assert!(c.reconstruct(&mut refs, &present).is_err());
    assert!(Codec::new(0, 1).is_err());
    assert!(Codec::new(30, 3).is_err());
}

#[test]
fn known_vector() {
    // 2+1 over GF(2^8)/0x11D with the Cauchy row [1/(2^0), 1/(2^1)] = [inv(2), inv(3)].
    let c = Codec::with_engine(2, 1, Engine::Rust).expect("layout");
    assert_eq!(&c.matrix()[4..6], &[0x8e, 0xf4]);
    let full = encode_all(&c, &[vec![1, 0, 1], vec![0, 1, 1]]);
    assert_eq!(full[2], vec![0x8e, 0xf4, 0x8e ^ 0xf4]);
}
