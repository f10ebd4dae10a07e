//! Stripes on remote backends (CephFS: a create is a round trip) are
//! created at once: a file written that way reads back, and a create that
//! fails leaves none of the other stripes behind and names its stripe.

mod common;
use common::data;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use tessera_backend::{
    Backend, BackendError, Capacity, FolderBackend, ListedStripe, RootId, StripeName, StripeRead,
    StripeWrite,
};
use tessera_data::*;

/// A folder that says it is remote; its creates take 50 ms (an MDS round
/// trip) and fail when `fail` is set.
struct Remote {
    inner: FolderBackend,
    fail: bool,
    creating: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Backend for Remote {
    fn create(&self, n: &StripeName, w: u64) -> Result<Box<dyn StripeWrite>, BackendError> {
        let now = self.creating.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(std::time::Duration::from_millis(50));
        self.creating.fetch_sub(1, Ordering::SeqCst);
        if self.fail {
            return Err(BackendError::Unavailable("the MDS is gone".into()));
        }
        self.inner.create(n, w)
    }
    fn open(&self, n: &StripeName) -> Result<Box<dyn StripeRead>, BackendError> {
        self.inner.open(n)
    }
    fn remove(&self, n: &StripeName, w: Option<u64>) -> Result<(), BackendError> {
        self.inner.remove(n, w)
    }
    fn list(&self) -> Result<Vec<ListedStripe>, BackendError> {
        self.inner.list()
    }
    fn capacity(&self) -> Result<Capacity, BackendError> {
        self.inner.capacity()
    }
    fn describe(&self) -> String {
        "remote".into()
    }
    fn read_marker(&self) -> Result<Option<String>, BackendError> {
        self.inner.read_marker()
    }
    fn write_marker(&self, text: &str) -> Result<(), BackendError> {
        self.inner.write_marker(text)
    }
    fn root_id(&self) -> Result<RootId, BackendError> {
        self.inner.root_id()
    }
    fn remote(&self) -> bool {
        true
    }
}

type Targets = Vec<(u32, Arc<dyn Backend>)>;

fn remotes(dir: &std::path::Path, failing: Option<usize>) -> (Targets, Arc<AtomicUsize>) {
    let (creating, most) = (Arc::default(), Arc::new(AtomicUsize::new(0)));
    let t = (0..6)
        .map(|i| {
            let b: Arc<dyn Backend> = Arc::new(Remote {
                inner: FolderBackend::new(dir.join(format!("fs{i}"))).expect("backend"),
                fail: failing == Some(i),
                creating: Arc::clone(&creating),
                most: Arc::clone(&most),
            });
            (i as u32 + 1, b)
        })
        .collect();
    (t, most)
}

#[test]
fn remote_stripes_are_created_at_once_and_read_back() {
    let dir = tempfile::tempdir().expect("tmp");
    let (t, most) = remotes(dir.path(), None);
    let layout = Layout::rain(4, 2).expect("layout");
    let body = data(100_000, 9);
    let mut w = FileWriter::create(layout, 7, 1, &t).expect("create");
    assert!(most.load(Ordering::SeqCst) > 1, "the creates overlapped");
    w.write(&body).expect("write");
    let done = w.finish().expect("finish");
    let r = FileReader::new(
        done.placement.clone(),
        7,
        done.size,
        t.iter().map(|(_, b)| Some(Arc::clone(b))).collect(),
    )
    .expect("reader");
    let mut back = vec![0u8; body.len()];
    r.read_at(0, &mut back).expect("read");
    assert_eq!(back, body);
}

#[test]
fn a_failed_remote_create_leaves_no_stripe_and_names_its_own() {
    let dir = tempfile::tempdir().expect("tmp");
    let (t, _) = remotes(dir.path(), Some(3));
    let layout = Layout::rain(4, 2).expect("layout");
    match FileWriter::create(layout, 8, 1, &t) {
        Err(DataError::Backend { index, .. }) => assert_eq!(index, 3),
        Err(e) => panic!("{e}"),
        Ok(_) => panic!("created with a stripe that failed"),
    }
    for (_, b) in &t {
        assert!(
            b.list().expect("list").is_empty(),
            "stripes of the failed file left"
        );
    }
}
