//! Topic names as the client passes them around: [`Topic`], a shared name that is cheap to
//! clone, and [`TopicPartition`].

/// A topic and a partition.
pub type TopicPartition = (String, i32);

/// A topic name that is cheap to clone: records sent to one topic can share a single
/// allocation (`Topic::from("orders")` once, then `.clone()` per record), where a `String`
/// per record costs an allocation and a free on the hot path.
///
/// Compared by name, but two clones of one `Topic` compare equal without reading the names:
/// the producer's per-topic maps, keyed by the `Topic` a record came with, find each record's
/// entry with pointer compares instead of string compares.
#[derive(Clone, Default)]
pub struct Topic(std::sync::Arc<str>);

impl PartialEq for Topic {
    fn eq(&self, other: &Topic) -> bool {
        Topic::ptr_eq(self, other) || self.0 == other.0
    }
}

impl Eq for Topic {}

impl PartialOrd for Topic {
    fn partial_cmp(&self, other: &Topic) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Topic {
    fn cmp(&self, other: &Topic) -> std::cmp::Ordering {
        if Topic::ptr_eq(self, other) {
            std::cmp::Ordering::Equal
        } else {
            self.0.cmp(&other.0)
        }
    }
}

impl std::hash::Hash for Topic {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // As the name hashes, so that lookups by `&str` (`Borrow<str>`) agree.
        self.as_str().hash(state)
    }
}

impl Topic {
    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Whether both share one allocation (and so one name), without comparing the names.
    pub fn ptr_eq(a: &Topic, b: &Topic) -> bool {
        std::sync::Arc::ptr_eq(&a.0, &b.0)
    }
}

impl std::ops::Deref for Topic {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for Topic {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl std::borrow::Borrow<str> for Topic {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&*self.0, f)
    }
}

impl std::fmt::Display for Topic {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The names this thread made into a `Topic` last: a record built with a `&str` or `String`
/// topic shares the allocation of the one before it instead of making its own. An
/// application sending to a few topics by name then costs a compare per record, not an
/// allocation and a free (about a tenth of a small record's cost). Names only, so nothing
/// observable depends on it.
const RECENT: usize = 4;

std::thread_local! {
    static RECENT_TOPICS: std::cell::RefCell<([Option<Topic>; RECENT], usize)> =
        const { std::cell::RefCell::new(([const { None }; RECENT], 0)) };
}

impl Topic {
    /// The topic named `name`, shared with a recent one of the same name.
    fn interned(name: &str, make: impl FnOnce() -> std::sync::Arc<str>) -> Topic {
        RECENT_TOPICS
            .try_with(|cell| {
                let (recent, next) = &mut *cell.borrow_mut();
                if let Some(t) = recent.iter().flatten().find(|t| t.as_str() == name) {
                    return t.clone();
                }
                let t = Topic(make());
                recent[*next] = Some(t.clone());
                *next = (*next + 1) % RECENT;
                t
            })
            // During the thread's teardown: no cache.
            .unwrap_or_else(|_| Topic(name.into()))
    }
}

impl From<&str> for Topic {
    fn from(s: &str) -> Self {
        Topic::interned(s, || s.into())
    }
}

impl From<String> for Topic {
    fn from(s: String) -> Self {
        Topic::interned(&s, || s.as_str().into())
    }
}

impl From<&String> for Topic {
    fn from(s: &String) -> Self {
        Topic::interned(s, || s.as_str().into())
    }
}

impl From<&Topic> for Topic {
    fn from(t: &Topic) -> Self {
        t.clone()
    }
}

impl From<std::sync::Arc<str>> for Topic {
    fn from(s: std::sync::Arc<str>) -> Self {
        Topic(s)
    }
}

impl PartialEq<str> for Topic {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for Topic {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Record::new("orders", v)` or `Record::new(name.clone(), v)` per record allocated a
    /// name per record: `kafka-cli perf produce --idiom string-topic` ran at 0.88× the
    /// records/s of a shared `Topic`. Recent names are now shared.
    #[test]
    fn names_made_into_topics_share_a_recent_allocation() {
        let a = Topic::from("orders");
        let b = Topic::from(String::from("orders"));
        let c = Topic::from(&String::from("orders"));
        assert!(Topic::ptr_eq(&a, &b) && Topic::ptr_eq(&b, &c));
        // Four names stay shared; a fifth pushes out the oldest, which still compares equal.
        let names = ["t1", "t2", "t3", "t4"];
        let first: Vec<Topic> = names.iter().map(|n| Topic::from(*n)).collect();
        for (n, t) in names.iter().zip(&first) {
            assert!(Topic::ptr_eq(&Topic::from(*n), t), "{n}");
        }
        let again = Topic::from("orders");
        assert!(
            !Topic::ptr_eq(&again, &a),
            "pushed out by the four after it"
        );
        assert_eq!(again, a);
        assert_ne!(Topic::from("orders2"), a);
        assert_eq!(Topic::from(""), Topic::default());
    }
}

/// A topic name to look up in the client's maps, which are keyed by [`Topic`]: a `Topic` finds
/// its entry by pointer when it shares the key's allocation (no name compare; the producer
/// looks a batch's topic up several times per batch), a `str` or `String` by name.
/// Implemented for those three only (sealed).
pub trait TopicKey: sealed::Sealed {
    #[doc(hidden)]
    fn find<'a, V>(&self, map: &'a std::collections::BTreeMap<Topic, V>) -> Option<&'a V>;
    #[doc(hidden)]
    fn find_mut<'a, V>(
        &self,
        map: &'a mut std::collections::BTreeMap<Topic, V>,
    ) -> Option<&'a mut V>;
    #[doc(hidden)]
    fn to_topic(&self) -> Topic;
}

mod sealed {
    pub trait Sealed {}
    impl Sealed for super::Topic {}
    impl Sealed for str {}
    impl Sealed for String {}
    impl<T: Sealed + ?Sized> Sealed for &T {}
}

impl TopicKey for Topic {
    #[inline]
    fn find<'a, V>(&self, map: &'a std::collections::BTreeMap<Topic, V>) -> Option<&'a V> {
        map.get(self)
    }
    #[inline]
    fn find_mut<'a, V>(
        &self,
        map: &'a mut std::collections::BTreeMap<Topic, V>,
    ) -> Option<&'a mut V> {
        map.get_mut(self)
    }
    fn to_topic(&self) -> Topic {
        self.clone()
    }
}

impl TopicKey for str {
    #[inline]
    fn find<'a, V>(&self, map: &'a std::collections::BTreeMap<Topic, V>) -> Option<&'a V> {
        map.get(self)
    }
    #[inline]
    fn find_mut<'a, V>(
        &self,
        map: &'a mut std::collections::BTreeMap<Topic, V>,
    ) -> Option<&'a mut V> {
        map.get_mut(self)
    }
    fn to_topic(&self) -> Topic {
        Topic::from(self)
    }
}

/// As its `str`.
impl TopicKey for String {
    #[inline]
    fn find<'a, V>(&self, map: &'a std::collections::BTreeMap<Topic, V>) -> Option<&'a V> {
        TopicKey::find(self.as_str(), map)
    }
    #[inline]
    fn find_mut<'a, V>(
        &self,
        map: &'a mut std::collections::BTreeMap<Topic, V>,
    ) -> Option<&'a mut V> {
        TopicKey::find_mut(self.as_str(), map)
    }
    fn to_topic(&self) -> Topic {
        TopicKey::to_topic(self.as_str())
    }
}

impl<T: TopicKey + ?Sized> TopicKey for &T {
    #[inline]
    fn find<'a, V>(&self, map: &'a std::collections::BTreeMap<Topic, V>) -> Option<&'a V> {
        (**self).find(map)
    }
    #[inline]
    fn find_mut<'a, V>(
        &self,
        map: &'a mut std::collections::BTreeMap<Topic, V>,
    ) -> Option<&'a mut V> {
        (**self).find_mut(map)
    }
    fn to_topic(&self) -> Topic {
        (**self).to_topic()
    }
}
