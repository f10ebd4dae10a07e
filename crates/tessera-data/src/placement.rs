//! Choosing the filesystems of a new file: k+m in distinct failure
//! domains, weighted by free space.

use crate::layout::Layout;
use crate::DataError;
use std::collections::BTreeMap;

/// A filesystem that could take a stripe.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Candidate {
    pub fsid: u32,
    pub domain: String,
    pub free_bytes: u64,
}

/// Pick one filesystem per stripe, no two in the same failure domain.
/// Within a domain the filesystem with the most free space is used;
/// domains are drawn with probability proportional to that free space.
/// `seed` makes the draw reproducible (tests) or varied (per file id).
pub fn place(layout: &Layout, candidates: &[Candidate], seed: u64) -> Result<Vec<u32>, DataError> {
    let mut best: BTreeMap<&str, &Candidate> = BTreeMap::new();
    for c in candidates {
        let e = best.entry(c.domain.as_str()).or_insert(c);
        if c.free_bytes > e.free_bytes || (c.free_bytes == e.free_bytes && c.fsid < e.fsid) {
            *e = c;
        }
    }
    let need = layout.stripes();
    let mut pool: Vec<&Candidate> = best.into_values().collect();
    if pool.len() < need {
        return Err(DataError::NoPlacement {
            need,
            have: pool.len(),
        });
    }
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut rand = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let mut out = Vec::with_capacity(need);
    for _ in 0..need {
        // Weights in MiB (+1 so an almost full domain can still be drawn).
        let weights: Vec<u128> = pool
            .iter()
            .map(|c| (c.free_bytes >> 20) as u128 + 1)
            .collect();
        let total: u128 = weights.iter().sum();
        let mut r = rand() as u128 % total;
        let mut pick = 0;
        for (i, w) in weights.iter().enumerate() {
            if r < *w {
                pick = i;
                break;
            }
            r -= w;
        }
        out.push(pool.swap_remove(pick).fsid);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(fsid: u32, domain: &str, free_gib: u64) -> Candidate {
        Candidate {
            fsid,
            domain: domain.into(),
            free_bytes: free_gib << 30,
        }
    }

    #[test]
    fn distinct_domains_and_refusal() {
        let l = Layout::rain(4, 2).expect("ok");
        let cands = vec![
            c(1, "a", 10),
            c(2, "a", 20),
            c(3, "b", 10),
            c(4, "c", 10),
            c(5, "d", 10),
            c(6, "e", 10),
            c(7, "f", 10),
        ];
        for seed in 0..200 {
            let p = place(&l, &cands, seed).expect("fits");
            assert_eq!(p.len(), 6);
            assert!(!p.contains(&1), "the fuller fs of domain a is never used");
            let mut s = p.clone();
            s.sort();
            s.dedup();
            assert_eq!(s.len(), 6);
        }
        let few = &cands[..5]; // domains a, b, c, d only
        assert!(matches!(
            place(&l, few, 1),
            Err(DataError::NoPlacement { need: 6, have: 4 })
        ));
    }

    #[test]
    fn weighted_by_free_space() {
        let l = Layout::plain();
        let cands = vec![c(1, "a", 1), c(2, "b", 99)];
        let picks_b = (0..1000)
            .filter(|s| place(&l, &cands, *s).expect("ok")[0] == 2)
            .count();
        assert!(picks_b > 900, "{picks_b}");
    }
}
