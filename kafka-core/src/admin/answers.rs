//! The brokers' answers to the admin client: results per operation, per-topic errors, retries
//! within the operation's timeout, and each operation resolved once.

use super::*;

impl Admin {
    pub(super) fn on_event(&mut self, e: NetEvent<Tag>, now: Instant) {
        if let NetEvent::Response {
            tag,
            body: ResponseBody::Metadata(resp),
            ..
        } = &e
        {
            if resp.error_code != 0 {
                return self.metadata_refused(*tag, resp.error_code, now);
            }
        }
        match e {
            NetEvent::Response {
                tag: Tag::Refresh,
                body: ResponseBody::Metadata(resp),
                ..
            } => {
                self.refreshing = false;
                self.learn(&resp, now);
            }
            NetEvent::Failed {
                tag: Tag::Refresh, ..
            } => self.refreshing = false,
            NetEvent::Response {
                tag: Tag::Op(id),
                body,
                ..
            } => {
                let Some(o) = self.ops.get_mut(&id) else {
                    return;
                };
                o.in_flight = false;
                match body {
                    ResponseBody::Metadata(resp) => {
                        self.learn(&resp, now);
                        self.ops.remove(&id);
                        let m = ClusterMetadata::from_response(&resp);
                        self.events.push_back(AdminEvent {
                            op: id,
                            result: AdminResult::Metadata(Ok(m)),
                        });
                    }
                    ResponseBody::CreateTopics(resp) => {
                        let results = resp
                            .topics
                            .into_iter()
                            .map(|t| (t.name, t.error_code, t.error_message));
                        self.topic_results(id, results.collect(), now);
                    }
                    body if matches!(o.kind, Kind::Group(_)) => self.on_group_answer(id, body, now),
                    body if matches!(o.kind, Kind::Single(_)) => {
                        let Kind::Single(op) = &o.kind else {
                            return;
                        };
                        match op.answer(body) {
                            Ok(result) => {
                                self.ops.remove(&id);
                                self.events.push_back(AdminEvent { op: id, result });
                            }
                            Err(why) => self.retry(id, why, now),
                        }
                    }
                    ResponseBody::CreatePartitions(resp) => {
                        let results = resp
                            .results
                            .into_iter()
                            .map(|t| (t.name, t.error_code, t.error_message));
                        self.topic_results(id, results.collect(), now);
                    }
                    ResponseBody::DeleteTopics(resp) => {
                        let results = resp
                            .responses
                            .into_iter()
                            .map(|t| (t.name.unwrap_or_default(), t.error_code, t.error_message));
                        self.topic_results(id, results.collect(), now);
                    }
                    _ => debug_assert!(false, "response type does not match its request"),
                }
            }
            NetEvent::Failed {
                tag: Tag::Op(id),
                error,
                ..
            } => {
                if let Some(o) = self.ops.get_mut(&id) {
                    o.in_flight = false;
                    // A group's coordinator that failed is looked up again.
                    if let Kind::Group(g) = &mut o.kind {
                        g.coordinator = None;
                    }
                    self.retry(id, error.to_string(), now);
                }
            }
            NetEvent::Response {
                tag: tag @ (Tag::Find(_) | Tag::Meta(_) | Tag::Node(..)),
                body,
                ..
            } => self.on_more(tag, Ok(body), now),
            NetEvent::Failed {
                tag: tag @ (Tag::Find(_) | Tag::Meta(_) | Tag::Node(..)),
                error,
                ..
            } => self.on_more(tag, Err(error.to_string()), now),
            NetEvent::Response { .. } => debug_assert!(false, "unexpected response"),
        }
    }

    /// A Metadata answer with a top-level error (v13+; after REBOOTSTRAP_REQUIRED the network
    /// has started over from bootstrap.servers): a failed request, asked again.
    fn metadata_refused(&mut self, tag: Tag, code: i16, now: Instant) {
        let why = match ErrorCode::from_code(code) {
            Some(code) => format!("Metadata: {code}"),
            None => format!("Metadata: error code {code}"),
        };
        match tag {
            Tag::Refresh => self.refreshing = false,
            Tag::Op(id) => {
                if let Some(o) = self.ops.get_mut(&id) {
                    o.in_flight = false;
                }
                self.retry(id, why, now);
            }
            tag => self.on_more(tag, Err(why), now),
        }
    }

    fn topic_results(
        &mut self,
        id: OpId,
        results: Vec<(String, i16, Option<String>)>,
        now: Instant,
    ) {
        let mut again = None;
        let o = self.ops.get_mut(&id).expect("caller checked");
        // The controller answers for every topic at once: a topic it does not know is not
        // there, and retrying cannot change that (Java fails the topic at once; this waited
        // for the whole timeout, then blamed reachability).
        let settled = |code: ErrorCode, kind: &Kind| {
            code == ErrorCode::UnknownTopicOrPartition
                && matches!(kind, Kind::Delete(..) | Kind::Partitions(..))
        };
        for (name, code, message) in results {
            match ErrorCode::from_code(code) {
                None => {
                    o.done.insert(name, Ok(()));
                }
                Some(code) if settled(code, &o.kind) => {
                    o.done
                        .insert(name, Err(AdminError::Broker { code, message }));
                }
                Some(code) if code.is_retriable() || code == ErrorCode::NotController => {
                    if code == ErrorCode::NotController {
                        self.controller = None;
                    }
                    again = Some(format!("{name}: {code}"));
                }
                Some(code) => {
                    o.done
                        .insert(name, Err(AdminError::Broker { code, message }));
                }
            }
        }
        let all = match &o.kind {
            Kind::Create(t, _) => t.iter().all(|t| o.done.contains_key(&t.name)),
            Kind::Delete(t, _) => t.iter().all(|t| o.done.contains_key(t)),
            Kind::Partitions(t, _) => t.iter().all(|t| o.done.contains_key(&t.0)),
            _ => true,
        };
        if all {
            let o = self.ops.remove(&id).expect("exists");
            let unused = AdminError::Timeout { last: None }; // every topic has its result
            self.finish(id, o, unused);
        } else {
            let why = again.unwrap_or_else(|| "the broker left topics unanswered".into());
            self.retry(id, why, now);
        }
    }

    pub(super) fn retry(&mut self, id: OpId, why: String, now: Instant) {
        let Some(o) = self.ops.get_mut(&id) else {
            return; // it ended meanwhile
        };
        o.retry_at = Some(now + self.backoff.delay(o.failures, &mut self.rng));
        o.failures = o.failures.saturating_add(1);
        o.last_problem = Some(why);
    }

    /// Emits the operation's one event: per-topic results for a create or delete, with
    /// `error` for the topics still open; `error` itself for a metadata request.
    pub(super) fn finish(&mut self, op: OpId, o: Op, error: AdminError) {
        let mut done = o.done;
        let mut per_topic = |names: Vec<String>| {
            names
                .into_iter()
                .map(|n| {
                    let r = done.remove(&n).unwrap_or_else(|| Err(error.clone()));
                    (n, r)
                })
                .collect()
        };
        let result = match o.kind {
            Kind::Metadata(_) => AdminResult::Metadata(Err(error.clone())),
            Kind::Create(topics, _) => {
                AdminResult::Topics(per_topic(topics.into_iter().map(|t| t.name).collect()))
            }
            Kind::Delete(names, _) => AdminResult::Topics(per_topic(names)),
            Kind::Partitions(topics, _) => {
                AdminResult::Topics(per_topic(topics.into_iter().map(|t| t.0).collect()))
            }
            Kind::ListGroups(_) => AdminResult::Groups(Err(error)),
            Kind::Group(g) => match g.action {
                GroupAction::Describe => AdminResult::GroupDescription(Err(error)),
                GroupAction::Offsets => AdminResult::GroupOffsets(Err(error)),
                GroupAction::Delete | GroupAction::Alter(_) => AdminResult::Done(Err(error)),
            },
            Kind::Single(op) => op.failed(error),
            Kind::ListOffsets(l) => AdminResult::Offsets(
                l.partitions
                    .into_iter()
                    .map(|tp| {
                        let r = l
                            .results
                            .get(&tp)
                            .cloned()
                            .unwrap_or_else(|| Err(error.clone()));
                        (tp, r)
                    })
                    .collect(),
            ),
        };
        self.events.push_back(AdminEvent { op, result });
    }
}
