//! Fetched records kept as the broker sent them, decoded one batch at a time as the application
//! reads them: prefetched data stays compressed, and at most one batch is decompressed at once.

use std::collections::VecDeque;

use kafka_proto::record::{Record, RecordBatch, Records};

use super::FetchError;

/// The records of one partition from one fetch, in offset order, read lazily.
///
/// The fetcher has already checked each batch's crc and dropped control batches, aborted
/// transactions and batches before the position. Iterating decompresses a batch when its first
/// record is asked for, so what the prefetch budget counts (the fetched bytes) is what memory
/// holds, whatever the compression ratio. As in the Java consumer, a record that cannot be
/// decoded is found when it is read: the iterator yields [`FetchError::Corrupt`] at its offset and
/// ends there.
#[derive(Debug, Clone, PartialEq)]
pub struct FetchedRecords {
    batches: VecDeque<RecordBatch>,
    /// The batch being read, and the offset after it.
    current: Option<(Records, i64)>,
    /// The offset after the last record returned: records below it are skipped (a fetch
    /// returns whole batches, and the first may start before the position).
    next: i64,
    failed: bool,
}

impl FetchedRecords {
    pub(super) fn new(batches: Vec<RecordBatch>, from: i64) -> Self {
        FetchedRecords {
            batches: batches.into(),
            current: None,
            next: from,
            failed: false,
        }
    }

    /// The position after what was returned so far: the offset the next record has at least.
    pub fn position(&self) -> i64 {
        self.next
    }

    /// Whether nothing is left to read (records may still be skipped as compacted away).
    pub fn is_empty(&self) -> bool {
        self.failed || (self.current.is_none() && self.batches.is_empty())
    }

    /// The encoded size of the batches not yet started.
    pub fn encoded_len(&self) -> usize {
        self.batches.iter().map(RecordBatch::size).sum()
    }

    fn fail(&mut self, error: kafka_proto::DecodeError) -> Option<Result<Record, FetchError>> {
        self.failed = true;
        self.current = None;
        self.batches.clear();
        Some(Err(FetchError::Corrupt {
            offset: self.next,
            error,
        }))
    }
}

impl Iterator for FetchedRecords {
    type Item = Result<Record, FetchError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        loop {
            if let Some((records, end)) = &mut self.current {
                match records.next() {
                    Some(Ok(r)) if r.offset < self.next => continue,
                    Some(Ok(r)) => {
                        self.next = r.offset.wrapping_add(1);
                        return Some(Ok(r));
                    }
                    Some(Err(error)) => return self.fail(error),
                    None => {
                        // Records compacted away at the batch's end still move the position on.
                        self.next = self.next.max(*end);
                        self.current = None;
                    }
                }
            }
            let batch = self.batches.pop_front()?;
            match batch.records() {
                Ok(records) => self.current = Some((records, batch.next_offset())),
                Err(error) => return self.fail(error),
            }
        }
    }
}
