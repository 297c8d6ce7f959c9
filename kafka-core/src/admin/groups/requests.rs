//! The requests of the admin client's multi-request operations (a group's calls, ListGroups
//! across brokers, ListOffsets per leader): what each sends next, and its answers.

use super::*;

impl crate::admin::Admin {
    /// Sends what an operation of several requests (a group's, ListGroups, ListOffsets) needs
    /// next.
    pub(in crate::admin) fn try_send_more(&mut self, id: OpId, now: crate::time::Instant) {
        let o = self.ops.get_mut(&id).expect("caller checked");
        match &mut o.kind {
            crate::admin::Kind::Group(g) => {
                let Some(node) = g.coordinator else {
                    if !o.at.is_empty() {
                        return; // looking it up
                    }
                    let Some(conn) = self.net.least_loaded(now) else {
                        return;
                    };
                    let req = find_group(&g.group);
                    let sent = self.net.send(conn, &req, find_tag(id), now);
                    return self.sent(id, None, sent, now);
                };
                let req = group_request(g);
                let Some(conn) = self.net.ready(node, crate::admin::Purpose::Data, now) else {
                    if !self.net.knows(node) {
                        g.coordinator = None; // it left the cluster: look it up again
                    }
                    return;
                };
                let sent = match &req {
                    GroupRequest::DescribeConsumer(r) => {
                        match self.net.send(conn, r, Tag::Op(id), now) {
                            // A broker without KIP-848's describe: the classic one.
                            Err(crate::admin::RequestSendError::Version(_)) => {
                                g.classic = true;
                                return self.try_send_more(id, now);
                            }
                            sent => sent,
                        }
                    }
                    GroupRequest::Describe(r) => self.net.send(conn, r, Tag::Op(id), now),
                    GroupRequest::Offsets(r) => self.net.send(conn, r, Tag::Op(id), now),
                    GroupRequest::Delete(r) => self.net.send(conn, r, Tag::Op(id), now),
                    GroupRequest::Alter(r) => self.net.send(conn, r, Tag::Op(id), now),
                };
                match sent {
                    Ok(_) => self.ops.get_mut(&id).expect("exists").in_flight = true,
                    Err(e) => self.send_failed(id, e, now),
                }
            }
            crate::admin::Kind::ListGroups(l) => match &l.waiting {
                None => self.ask_metadata(id, None, now),
                Some(waiting) => {
                    let todo: Vec<NodeId> = waiting
                        .iter()
                        .filter(|n| !o.at.contains(n))
                        .copied()
                        .collect();
                    for node in todo {
                        let Some(conn) = self.net.ready(node, crate::admin::Purpose::Data, now)
                        else {
                            continue;
                        };
                        let req = list_groups_request();
                        let sent = self.net.send(conn, &req, Tag::Node(id, node), now);
                        self.sent(id, Some(node), sent, now);
                        if !self.ops.contains_key(&id) {
                            // A broker that cannot be asked ended it: ask no other (found by
                            // the API simulation: the next send panicked on the gone op).
                            return;
                        }
                    }
                }
            },
            crate::admin::Kind::ListOffsets(l) => {
                let Some(leaders) = &l.leaders else {
                    let topics: BTreeSet<String> =
                        l.partitions.iter().map(|tp| tp.0.clone()).collect();
                    return self.ask_metadata(id, Some(topics.into_iter().collect()), now);
                };
                let nodes: BTreeSet<NodeId> = leaders.values().flatten().copied().collect();
                for node in nodes {
                    // Gone when a broker that cannot be asked ended it.
                    let Some(o) = self.ops.get(&id) else {
                        return;
                    };
                    let crate::admin::Kind::ListOffsets(l) = &o.kind else {
                        return;
                    };
                    if o.at.contains(&node) {
                        continue;
                    }
                    let Some(req) = leader_request(l, node) else {
                        continue;
                    };
                    let Some(conn) = self.net.ready(node, crate::admin::Purpose::Data, now) else {
                        continue;
                    };
                    let tag = Tag::Node(id, node);
                    let sent = match &req {
                        LeaderRequest::List(r) => self.net.send(conn, r, tag, now),
                        LeaderRequest::Delete(r) => self.net.send(conn, r, tag, now),
                    };
                    self.sent(id, Some(node), sent, now);
                }
            }
            _ => {}
        }
    }

    /// Asks metadata for an operation (the brokers, or `topics`' leaders), once at a time.
    fn ask_metadata(&mut self, id: OpId, topics: Option<Vec<String>>, now: crate::time::Instant) {
        if !self.ops[&id].at.is_empty() {
            return;
        }
        let Some(conn) = self.net.least_loaded(now) else {
            return;
        };
        let req = crate::admin::metadata_request(Some(topics.unwrap_or_default()));
        let sent = self.net.send(conn, &req, Tag::Meta(id), now);
        self.sent(id, None, sent, now);
    }

    /// Notes a request sent for an operation (`node`: to which broker of several; `None`: its
    /// lookup), or retries after a failed send.
    fn sent(
        &mut self,
        id: OpId,
        node: Option<NodeId>,
        sent: Result<i16, crate::admin::RequestSendError>,
        now: crate::time::Instant,
    ) {
        match sent {
            Ok(_) => {
                // (An answer to an operation that ended meanwhile is dropped when it comes.)
                if let Some(o) = self.ops.get_mut(&id) {
                    o.at.insert(node.unwrap_or(LOOKUP));
                }
            }
            Err(e) => self.send_failed(id, e, now),
        }
    }

    fn send_failed(
        &mut self,
        id: OpId,
        e: crate::admin::RequestSendError,
        now: crate::time::Instant,
    ) {
        match e {
            crate::admin::RequestSendError::Version(v) => {
                if let Some(o) = self.ops.remove(&id) {
                    self.finish(id, o, AdminError::Unsupported(v));
                }
            }
            e => self.retry(id, e.to_string(), now),
        }
    }

    /// An answer (or a failure) to a lookup or a per-broker request of an operation.
    pub(in crate::admin) fn on_more(
        &mut self,
        tag: Tag,
        answer: Result<ResponseBody, String>,
        now: crate::time::Instant,
    ) {
        let (id, node) = match tag {
            Tag::Find(id) | Tag::Meta(id) => (id, LOOKUP),
            Tag::Node(id, node) => (id, node),
            _ => return,
        };
        let Some(o) = self.ops.get_mut(&id) else {
            return;
        };
        o.at.remove(&node);
        let body = match answer {
            Ok(b) => b,
            Err(why) => {
                if let crate::admin::Kind::Group(g) = &mut o.kind {
                    g.coordinator = None;
                }
                return self.retry(id, why, now);
            }
        };
        match (tag, body) {
            (Tag::Find(_), body) => match found(&body) {
                Ok((node, host, port)) => {
                    self.net
                        .learn_node(node, crate::config::HostPort::new(host, port));
                    if let crate::admin::Kind::Group(g) =
                        &mut self.ops.get_mut(&id).expect("exists").kind
                    {
                        g.coordinator = Some(node);
                    }
                }
                Err(code) if code.is_retriable() || code == ErrorCode::CoordinatorNotAvailable => {
                    self.retry(id, format!("FindCoordinator: {code}"), now)
                }
                Err(code) => {
                    let o = self.ops.remove(&id).expect("exists");
                    self.finish(
                        id,
                        o,
                        AdminError::Broker {
                            code,
                            message: None,
                        },
                    );
                }
            },
            (Tag::Meta(_), ResponseBody::Metadata(resp)) => {
                self.learn(&resp, now);
                let o = self.ops.get_mut(&id).expect("exists");
                match &mut o.kind {
                    crate::admin::Kind::ListGroups(l) => {
                        l.waiting = Some(resp.brokers.iter().map(|b| b.node_id).collect());
                    }
                    crate::admin::Kind::ListOffsets(l) => {
                        let mut leaders = BTreeMap::new();
                        let mut missing = false;
                        for tp in &l.partitions {
                            let t = resp
                                .topics
                                .iter()
                                .find(|t| t.name.as_deref() == Some(&tp.0));
                            match t {
                                Some(t)
                                    if t.error_code
                                        == ErrorCode::UnknownTopicOrPartition.code() =>
                                {
                                    l.results.insert(
                                        tp.clone(),
                                        Err(AdminError::Broker {
                                            code: ErrorCode::UnknownTopicOrPartition,
                                            message: None,
                                        }),
                                    );
                                }
                                Some(t) => {
                                    let leader = t
                                        .partitions
                                        .iter()
                                        .find(|p| p.partition_index == tp.1)
                                        .map(|p| p.leader_id)
                                        .filter(|l| *l >= 0);
                                    missing |= leader.is_none();
                                    leaders.insert(tp.clone(), leader);
                                }
                                None => missing = true,
                            }
                        }
                        l.leaders = Some(leaders);
                        if missing {
                            // A partition without a leader (or not listed yet): ask again.
                            l.leaders = None;
                            self.retry(id, "a partition has no leader".into(), now);
                        }
                    }
                    _ => {}
                }
            }
            (Tag::Node(..), body) => {
                let o = self.ops.get_mut(&id).expect("exists");
                let again = match &mut o.kind {
                    crate::admin::Kind::ListGroups(l) => listed(l, node, body).err(),
                    crate::admin::Kind::ListOffsets(l) => offsets_listed(l, body),
                    _ => None,
                };
                if let Some(why) = again {
                    self.retry(id, why, now);
                }
            }
            _ => self.retry(id, "an answer of another kind".into(), now),
        }
        self.complete_more(id);
    }

    /// A group action's answer from its coordinator.
    pub(in crate::admin) fn on_group_answer(
        &mut self,
        id: OpId,
        body: ResponseBody,
        now: crate::time::Instant,
    ) {
        let o = self.ops.get_mut(&id).expect("caller checked");
        let crate::admin::Kind::Group(g) = &mut o.kind else {
            return;
        };
        match group_answer(g, body) {
            GroupAnswer::Done(result) => {
                self.ops.remove(&id);
                self.events
                    .push_back(crate::admin::AdminEvent { op: id, result });
            }
            GroupAnswer::Retry(why, rediscover) => {
                if rediscover {
                    g.coordinator = None;
                }
                self.retry(id, why, now);
            }
            GroupAnswer::Classic(empty) => {
                g.classic = true;
                g.empty_consumer = empty;
                self.try_send_more(id, now);
            }
        }
    }

    /// Ends a ListGroups or ListOffsets whose every part has its answer.
    fn complete_more(&mut self, id: OpId) {
        let Some(o) = self.ops.get(&id) else {
            return;
        };
        let result = match &o.kind {
            crate::admin::Kind::ListGroups(l)
                if o.at.is_empty() && l.waiting.as_ref().is_some_and(|w| w.is_empty()) =>
            {
                let mut groups = l.groups.clone();
                groups.sort_by(|a, b| a.group_id.cmp(&b.group_id));
                AdminResult::Groups(Ok(groups))
            }
            crate::admin::Kind::ListOffsets(l)
                if l.partitions.iter().all(|tp| l.results.contains_key(tp)) =>
            {
                AdminResult::Offsets(l.results.clone())
            }
            _ => return,
        };
        self.ops.remove(&id);
        self.events
            .push_back(crate::admin::AdminEvent { op: id, result });
    }
}
