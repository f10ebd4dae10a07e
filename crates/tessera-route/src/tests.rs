use super::*;

#[test]
fn other_requests_stay_where_the_namespace_is() {
    assert_eq!(Role::Local.route_other(Proto::Xroot), Route::Here);
    assert!(!Role::Local.is_manager());
}

#[test]
fn a_standby_without_an_active_node_says_wait() {
    let r = Role::Standby(tessera_core::ActiveNode::new(|| None));
    assert!(r.is_manager());
    match r.route_other(Proto::Https) {
        Route::Wait { secs: 1, why } => assert!(why.contains("takeover"), "{why}"),
        other => panic!("{other:?}"),
    }
}
