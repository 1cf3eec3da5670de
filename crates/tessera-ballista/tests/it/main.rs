//! The integration tests of tessera-ballista, in one test binary: every test binary links all
//! of Ballista and DataFusion, which costs CI more than the tests in it.

mod cluster;
mod codec;

/// `df://HOST:PORT` and nothing else names a cluster.
#[test]
fn cluster_urls() {
    use tessera_ballista::scheduler_address;
    assert_eq!(scheduler_address("df://127.0.0.1:50050").unwrap(), ("127.0.0.1".into(), 50050));
    assert_eq!(scheduler_address("df://sched.local:1/").unwrap(), ("sched.local".into(), 1));
    for bad in ["http://h:1", "df://h", "df://:5", "df://h:x", "df://h:70000"] {
        let err = scheduler_address(bad).unwrap_err().to_string();
        assert!(err.contains(bad), "{bad}: {err}");
    }
}
