//! Finding a coordinator: the FindCoordinator request for a group, and what an answer says of
//! the key asked, for every client that looks one up (group members, the admin client's group
//! calls, the transaction manager).

use kafka_proto::messages::find_coordinator_request::FindCoordinatorRequest;
use kafka_proto::messages::find_coordinator_response::FindCoordinatorResponse;
use kafka_proto::ErrorCode;

use crate::config::HostPort;

/// FindCoordinator for a group (key type 0), with the key both ways: `key` up to v3,
/// `coordinator_keys` from v4 (the encoder writes whichever the version has).
pub(crate) fn find_coordinator_request(group: &str) -> FindCoordinatorRequest {
    FindCoordinatorRequest {
        key: group.to_owned(),
        key_type: 0,
        coordinator_keys: vec![group.to_owned()],
        ..Default::default()
    }
}

/// What a FindCoordinator answer says of the (single) key asked: its error, the node id and
/// the node's address. v4+ answers per key; older versions at the top level.
pub(crate) fn found_coordinator(
    r: &FindCoordinatorResponse,
) -> (Option<ErrorCode>, i32, Option<HostPort>) {
    let (code, node, host, port) = match r.coordinators.first() {
        Some(c) => (c.error_code, c.node_id, c.host.clone(), c.port),
        None => (r.error_code, r.node_id, r.host.clone(), r.port),
    };
    let addr = u16::try_from(port).ok().map(|p| HostPort::new(host, p));
    (ErrorCode::from_code(code), node, addr)
}
