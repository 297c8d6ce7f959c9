//! [`Deliveries`]: the outcomes of many records as one `Stream`, in the order they were sent.

use std::collections::VecDeque;
use std::pin::Pin;
use std::task::{Context, Poll};

use std::future::Future;
use std::sync::Arc;

use futures_util::Stream;
use kafka_core::producer::RecordToken;

use super::pending::{closed, Polled};
use super::{to_result, Delivered, Delivery, Failed, Shared};

/// The outcomes of many records, yielded in the order the records were sent: the bulk way
/// to take outcomes, and the fastest.
///
/// Push each record's [`Delivery`] with a tag of your own (its index, its send time, `()`),
/// and take `(tag, outcome)` pairs from the stream. Outcomes arrive nearly in send order, so
/// waiting on the oldest costs one wake-up per response, not per record; the outcomes that are
/// in are taken many under one lock, and nothing is allocated per record. A `FuturesUnordered` of deliveries allocates a task and takes a
/// wake-up for every record (about a third more CPU per 100-byte record in `kafka-cli perf
/// produce --idiom futures-unordered`), and yields in completion order, which only differs
/// across partitions.
///
/// Like `FuturesUnordered`, the stream ends (`None`) whenever it is empty, and takes more
/// pushes after that. Keep it bounded by taking the oldest once it holds enough:
///
/// ```rust,ignore
/// let mut pending = Deliveries::new();
/// for (i, value) in values.enumerate() {
///     pending.push(producer.send(Record::new(topic.clone(), value)).await?, i);
///     if pending.len() >= 100_000 {
///         let (i, outcome) = pending.next().await.expect("not empty");
///         outcome?;
///     }
/// }
/// while let Some((i, outcome)) = pending.next().await {
///     outcome?;
/// }
/// ```
pub struct Deliveries<T = ()> {
    /// The producer of the first delivery pushed: its records are held by token, and their
    /// outcomes taken many under one lock.
    shared: Option<Arc<Shared>>,
    queue: VecDeque<(Entry, T)>,
    /// Outcomes taken and not yet yielded, oldest first.
    ready: VecDeque<(T, Result<Delivered, Failed>)>,
}

/// A record in [`Deliveries`].
enum Entry {
    /// Of the first producer: its slot in that producer's pending outcomes.
    Token(RecordToken),
    /// Of another producer: its handle.
    Whole(Delivery),
}

/// Outcomes taken under one lock before one is yielded: a bound on the time the lock is held.
const TAKE_AT_ONCE: usize = 1024;

impl<T> Deliveries<T> {
    /// An empty set.
    pub fn new() -> Self {
        Deliveries {
            shared: None,
            queue: VecDeque::new(),
            ready: VecDeque::new(),
        }
    }

    /// Adds a record's delivery, with a tag that comes back with its outcome.
    pub fn push(&mut self, mut delivery: Delivery, tag: T) {
        let shared = self.shared.get_or_insert_with(|| delivery.shared.clone());
        let entry = if Arc::ptr_eq(shared, &delivery.shared) {
            // The set reads the slot from now on, and frees it if dropped first.
            delivery.taken = true;
            Entry::Token(delivery.token)
        } else {
            Entry::Whole(delivery)
        };
        self.queue.push_back((entry, tag));
    }

    /// Records whose outcome has not been taken.
    pub fn len(&self) -> usize {
        self.queue.len() + self.ready.len()
    }

    /// Whether every outcome was taken.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl<T> Default for Deliveries<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Drop for Deliveries<T> {
    fn drop(&mut self) {
        // Nobody will read these outcomes: their slots are freed now or when they come, as a
        // dropped `Delivery`'s are (the others drop with their handles).
        if let Some(shared) = &self.shared {
            let mut pending = None;
            for (entry, _) in &self.queue {
                if let Entry::Token(token) = entry {
                    pending
                        .get_or_insert_with(|| shared.pending())
                        .forget(*token);
                }
            }
        }
    }
}

impl<T> std::fmt::Debug for Deliveries<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deliveries")
            .field("len", &self.len())
            .finish()
    }
}

impl<T: Unpin> Stream for Deliveries<T> {
    type Item = (T, Result<Delivered, Failed>);

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let Deliveries {
            shared,
            queue,
            ready,
        } = &mut *self;
        if ready.is_empty() {
            // Every outcome that is in, oldest first, under one lock; the first one that is not
            // keeps the waker (outcomes come nearly in order: one wake-up per response).
            let mut pending = None;
            while let Some((entry, _)) = queue.front_mut() {
                let outcome = match entry {
                    Entry::Token(token) => {
                        let shared = shared.as_ref().expect("set by the first push");
                        match pending
                            .get_or_insert_with(|| shared.pending())
                            .poll(*token, cx)
                        {
                            Polled::Waiting => break,
                            Polled::Ready(outcome) => to_result(outcome),
                            // Never there: only a bug gets here.
                            Polled::Missing => to_result(closed()),
                        }
                    }
                    Entry::Whole(delivery) => {
                        // Not under this producer's lock: another producer's is taken.
                        pending = None;
                        match Pin::new(delivery).poll(cx) {
                            Poll::Pending => break,
                            Poll::Ready(outcome) => outcome,
                        }
                    }
                };
                let (_, tag) = queue.pop_front().expect("a front");
                ready.push_back((tag, outcome));
                if ready.len() >= TAKE_AT_ONCE {
                    break;
                }
            }
        }
        match ready.pop_front() {
            Some(item) => Poll::Ready(Some(item)),
            None if queue.is_empty() => Poll::Ready(None),
            None => Poll::Pending,
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len(), Some(self.len()))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use futures_util::task::noop_waker;
    use kafka_core::config::ProducerConfig;
    use kafka_core::producer::{Outcome, RecordToken};

    use super::*;

    fn delivered(partition: i32) -> Outcome {
        Outcome::Delivered {
            partition,
            offset: Some(1),
            timestamp: 2,
        }
    }

    /// Outcomes come back with their tags in send order, even when a later record's outcome
    /// comes first; the stream ends when empty and goes on after a push.
    #[test]
    fn outcomes_come_in_send_order_with_their_tags() {
        let config = ProducerConfig::from_map([("bootstrap.servers", "b:9092")]).unwrap();
        let (shared, _session) =
            super::super::parts(config, crate::runtime::os_clock::wall_clock_us);
        let delivery = |t: u64| {
            shared.pending().insert(RecordToken(t));
            Delivery {
                shared: Arc::clone(&shared),
                token: RecordToken(t),
                taken: false,
            }
        };
        let waker = noop_waker();
        let mut cx = Context::from_waker(&waker);
        let mut set = Deliveries::new();
        for t in 0..3 {
            set.push(delivery(t), format!("r{t}"));
        }
        assert_eq!(set.size_hint(), (3, Some(3)));
        // The second and third resolve first: nothing comes until the first does.
        shared.pending().resolve(RecordToken(1), delivered(1));
        shared.pending().resolve(RecordToken(2), delivered(2));
        assert!(Pin::new(&mut set).poll_next(&mut cx).is_pending());
        shared.pending().resolve(RecordToken(0), delivered(0));
        let mut got = Vec::new();
        while let Poll::Ready(Some((tag, outcome))) = Pin::new(&mut set).poll_next(&mut cx) {
            got.push((tag, outcome.expect("delivered").partition));
        }
        assert_eq!(got, [("r0".into(), 0), ("r1".into(), 1), ("r2".into(), 2)]);
        assert!(set.is_empty());
        assert!(matches!(
            Pin::new(&mut set).poll_next(&mut cx),
            Poll::Ready(None)
        ));
        set.push(delivery(3), "r3".into());
        assert_eq!(set.len(), 1);

        // A delivery of another producer is kept whole, in its place in the order.
        let config = ProducerConfig::from_map([("bootstrap.servers", "b:9092")]).unwrap();
        let (other, _other_session) =
            super::super::parts(config, crate::runtime::os_clock::wall_clock_us);
        other.pending().insert(RecordToken(0));
        set.push(
            Delivery {
                shared: Arc::clone(&other),
                token: RecordToken(0),
                taken: false,
            },
            "other".into(),
        );
        set.push(delivery(4), "r4".into());
        shared.pending().resolve(RecordToken(3), delivered(3));
        shared.pending().resolve(RecordToken(4), delivered(4));
        let next = Pin::new(&mut set).poll_next(&mut cx);
        assert!(matches!(next, Poll::Ready(Some((ref t, _))) if t == "r3"));
        assert!(
            Pin::new(&mut set).poll_next(&mut cx).is_pending(),
            "the other's is not in"
        );
        other.pending().resolve(RecordToken(0), delivered(9));
        let tags: Vec<String> =
            std::iter::from_fn(|| match Pin::new(&mut set).poll_next(&mut cx) {
                Poll::Ready(Some((tag, _))) => Some(tag),
                _ => None,
            })
            .collect();
        assert_eq!(tags, ["other", "r4"]);

        // A set dropped with outcomes still to come frees their slots, as a dropped
        // `Delivery` does.
        set.push(delivery(5), "r5".into());
        drop(set);
        assert!(matches!(
            shared.pending().poll(RecordToken(5), &mut cx),
            Polled::Missing
        ));
    }
}
