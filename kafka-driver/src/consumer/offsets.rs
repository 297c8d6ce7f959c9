//! The consumer's offset lookups: its group metadata for transactions, committed offsets,
//! and the log's beginning, end and by-timestamp offsets.

use super::*;

impl<R: Runtime> Consumer<R> {
    /// The group metadata a transactional producer commits this consumer's progress with
    /// (`Producer::send_offsets_to_transaction`): the group, and this member's generation and
    /// id as of its last join, so that the coordinator refuses the offsets of a member a
    /// rebalance has replaced (KIP-447). `None` without `group.id`.
    pub async fn group_metadata(&self) -> Option<kafka_core::producer::GroupMetadata> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::GroupMetadata(tx));
        rx.await.ok().flatten()
    }

    /// The group's committed offset of a partition (whether this consumer holds it or not),
    /// asked of the group coordinator: `None` if nothing is committed. Retriable errors are
    /// retried for up to `default.api.timeout.ms`.
    pub async fn committed(&self, topic: &str, partition: i32) -> Result<Option<i64>, CommitError> {
        let found = self
            .committed_offsets([(topic.to_owned(), partition)])
            .await?;
        Ok(found.into_iter().next().and_then(|(_, o)| o))
    }

    /// [`Consumer::committed`] for several partitions at once, in one request.
    pub async fn committed_offsets(
        &self,
        partitions: impl IntoIterator<Item = (String, i32)>,
    ) -> Result<Vec<((String, i32), Option<i64>)>, CommitError> {
        if !self.has_group {
            return Err(CommitError::NotMember);
        }
        let (tx, rx) = oneshot::channel();
        self.send(Command::Committed(partitions.into_iter().collect(), tx));
        rx.await.unwrap_or(Err(CommitError::Closed))
    }

    pub(super) async fn lookup_offsets(
        &self,
        query: Vec<((String, i32), OffsetSpec)>,
    ) -> Result<kafka_core::fetcher::FoundOffsets, AdminError> {
        let (tx, rx) = oneshot::channel();
        self.send(Command::Offsets(query, tx));
        rx.await.unwrap_or(Err(AdminError::Closed))
    }

    /// Each partition's first offset (the log start), as Java's `beginningOffsets`: asked of
    /// the partitions' leaders over the consumer's own connections, whether it reads them or
    /// not, within `default.api.timeout.ms`.
    pub async fn beginning_offsets(
        &self,
        partitions: impl IntoIterator<Item = (String, i32)>,
    ) -> Result<BTreeMap<(String, i32), i64>, AdminError> {
        self.edge_offsets(partitions, OffsetSpec::Earliest).await
    }

    /// Each partition's end offset (the high watermark; under `read_committed`, the last
    /// stable offset), as Java's `endOffsets`.
    pub async fn end_offsets(
        &self,
        partitions: impl IntoIterator<Item = (String, i32)>,
    ) -> Result<BTreeMap<(String, i32), i64>, AdminError> {
        self.edge_offsets(partitions, OffsetSpec::Latest).await
    }

    async fn edge_offsets(
        &self,
        partitions: impl IntoIterator<Item = (String, i32)>,
        spec: OffsetSpec,
    ) -> Result<BTreeMap<(String, i32), i64>, AdminError> {
        let query = partitions.into_iter().map(|tp| (tp, spec)).collect();
        let found = self.lookup_offsets(query).await?;
        Ok(found
            .into_iter()
            .filter_map(|(tp, o)| o.map(|(offset, _)| (tp, offset)))
            .collect())
    }

    /// Per partition, the first offset whose record's timestamp is at or after the time given
    /// (epoch ms), with that timestamp; `None` where no record is that recent. As Java's
    /// `offsetsForTimes`.
    pub async fn offsets_for_times(
        &self,
        times: impl IntoIterator<Item = ((String, i32), i64)>,
    ) -> Result<BTreeMap<(String, i32), Option<OffsetAndTimestamp>>, AdminError> {
        let query = times
            .into_iter()
            .map(|(tp, t)| (tp, OffsetSpec::Timestamp(t)))
            .collect();
        let found = self.lookup_offsets(query).await?;
        Ok(found
            .into_iter()
            .map(|(tp, o)| {
                let o = o.map(|(offset, timestamp)| OffsetAndTimestamp { offset, timestamp });
                (tp, o)
            })
            .collect())
    }
}
