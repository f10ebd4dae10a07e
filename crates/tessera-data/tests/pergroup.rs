//! A bad block rules out only its own group: any pattern of corrupt
//! blocks with at most m per group reads back identical, is found
//! recoverable, and repairs to full redundancy (ARCHITECTURE.md's
//! per-group invariant); m + 1 bad blocks in one group is a clean error.

mod common;

use common::TestFile;
use proptest::prelude::*;
use std::collections::BTreeSet;
use std::sync::Arc;
use tessera_data::*;

/// Flip a bit inside block `g` of stripe `i` (past the header).
fn corrupt(t: &TestFile, i: usize, g: u64, salt: u64) {
    let geo = t.written.placement.layout.geometry(t.written.size);
    let p = t.stripe_path(i);
    let mut raw = std::fs::read(&p).expect("read stripe");
    let at = geo.block_offset(g) as usize + (salt as usize % geo.block_len(g));
    raw[at] ^= 0x20;
    std::fs::write(&p, raw).expect("write stripe");
}

fn states(t: &TestFile) -> Vec<StripeState> {
    let p = &t.written.placement;
    (0..p.layout.stripes())
        .map(|i| {
            let b = Some(Arc::clone(&t.targets[i].1));
            check_stripe(b.as_ref(), p, t.fid, t.written.size, i, true)
        })
        .collect()
}

fn read_all(r: &FileReader) -> Result<Vec<u8>, DataError> {
    let mut out = vec![0u8; r.size() as usize];
    let n = r.read_at(0, &mut out)?;
    out.truncate(n);
    Ok(out)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, .. ProptestConfig::default() })]

    #[test]
    fn at_most_m_bad_blocks_per_group_read_and_repair(
        k in 2u8..=6,
        m in 1u8..=3,
        groups in 3u64..10,
        tail in 0usize..4096,
        seed in any::<u64>(),
        picks in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..4), 10),
        ranges in proptest::collection::vec((any::<u32>(), 1usize..30_000), 1..5),
    ) {
        let layout = Layout::rain(k, m).expect("layout").with_block_size(4096).expect("bs");
        let len = (groups as usize - 1) * k as usize * 4096 + tail + 1;
        let t = TestFile::write(layout, len, seed, 21);
        let g_count = layout.geometry(t.written.size).groups();
        let n = layout.stripes();
        // Each group: up to m distinct stripes with a bad block there.
        let mut hit = BTreeSet::new();
        for g in 0..g_count {
            let mut chosen = BTreeSet::new();
            for p in picks[g as usize % picks.len()].iter().take(m as usize) {
                chosen.insert((*p as usize + g as usize) % n);
            }
            for i in &chosen {
                corrupt(&t, *i, g, seed ^ g);
                hit.insert(*i);
            }
        }
        let r = t.reader();
        prop_assert_eq!(read_all(&r).expect("read with bad blocks"), t.bytes.clone());
        for (off, want) in ranges {
            let off = off as usize % t.bytes.len();
            let d = r.read(off as u64, want).expect("range");
            let end = t.bytes.len().min(off + want);
            prop_assert_eq!(d.to_vec(), t.bytes[off..end].to_vec());
        }
        let st = states(&t);
        let bad: Vec<&StripeState> = st.iter().filter(|s| !s.is_ok()).collect();
        prop_assert_eq!(bad.len(), hit.len());
        prop_assert!(recoverable(&bad, m as usize), "{:?}", st);
        // Repair: every damaged stripe rewritten in place from the others.
        let targets: Vec<(usize, u32, Arc<dyn tessera_backend::Backend>)> = (0..n)
            .filter(|i| !st[*i].is_ok())
            .map(|i| (i, t.targets[i].0, Arc::clone(&t.targets[i].1)))
            .collect();
        let sources = t.targets.iter().map(|(_, b)| Some(Arc::clone(b))).collect();
        let p = &t.written.placement;
        let (newp, adler) = rebuild(p, t.fid, t.written.size, sources, &targets, 1 << 63)
            .expect("rebuild");
        prop_assert_eq!(&newp, p);
        prop_assert_eq!(adler, t.written.adler32);
        prop_assert!(states(&t).iter().all(StripeState::is_ok), "{:?}", states(&t));
        prop_assert_eq!(read_all(&t.reader()).expect("read after repair"), t.bytes.clone());
    }
}

#[test]
fn m_plus_one_bad_blocks_in_one_group_is_a_clean_error() {
    let layout = Layout::rain(4, 2)
        .expect("layout")
        .with_block_size(4096)
        .expect("bs");
    let t = TestFile::write(layout, 4 * 4096 * 5, 3, 22);
    // One bad block in each of the six stripes, each in its own group...
    for (i, g) in [(0usize, 0u64), (1, 1), (2, 2), (3, 3), (4, 4), (5, 0)] {
        corrupt(&t, i, g, 77);
    }
    assert_eq!(read_all(&t.reader()).expect("2 per group at most"), t.bytes);
    let st = states(&t);
    assert!(recoverable(&st.iter().collect::<Vec<_>>(), 2), "{st:?}");
    // ... and a third in group 0: that group cannot be rebuilt.
    corrupt(&t, 2, 0, 78);
    let err = read_all(&t.reader()).expect_err("three bad blocks in group 0");
    assert!(
        matches!(err, DataError::Unrecoverable { group: 0, .. }),
        "{err}"
    );
    let st = states(&t);
    assert!(!recoverable(&st.iter().collect::<Vec<_>>(), 2), "{st:?}");
}
