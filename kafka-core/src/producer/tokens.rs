//! The set of unresolved record tokens. Tokens are issued in order and mostly resolve in
//! order, so a ring of flags gives O(1) insert and remove and the lowest outstanding token
//! (what a flush waits for) without a tree.

use std::collections::VecDeque;

#[derive(Debug, Default)]
pub(crate) struct Outstanding {
    /// The token of `flags[0]`.
    base: u64,
    /// Whether each token from `base` on is still unresolved.
    flags: VecDeque<bool>,
    count: usize,
}

impl Outstanding {
    /// Adds the next token; tokens must be added in increasing order and never reused.
    pub fn insert(&mut self, token: u64) {
        if self.flags.is_empty() {
            self.base = token;
        }
        debug_assert!(
            token >= self.base + self.flags.len() as u64,
            "token {token} reused or out of order"
        );
        let index = (token - self.base) as usize;
        while self.flags.len() < index {
            self.flags.push_back(false);
        }
        self.flags.push_back(true);
        self.count += 1;
    }

    /// Removes a token; false if it was not outstanding.
    pub fn remove(&mut self, token: u64) -> bool {
        let removed = self.clear(token);
        self.pop_resolved();
        removed
    }

    /// Removes the token of each of `items`, keeping only the items whose token was
    /// outstanding, in order. For a batch's records: the resolved front of the ring is popped
    /// once for the batch rather than checked after each token.
    pub fn remove_each<T>(&mut self, items: &mut Vec<T>, token: impl Fn(&T) -> u64) {
        items.retain(|item| self.clear(token(item)));
        self.pop_resolved();
    }

    /// Marks a token resolved, leaving the ring's front as it is; false if it was not
    /// outstanding.
    #[inline]
    fn clear(&mut self, token: u64) -> bool {
        let Some(i) = token.checked_sub(self.base) else {
            return false;
        };
        match self.flags.get_mut(i as usize) {
            Some(f) if *f => *f = false,
            _ => return false,
        }
        self.count -= 1;
        true
    }

    /// Drops the resolved tokens from the ring's front, so that `base` is the lowest
    /// unresolved one.
    #[inline]
    fn pop_resolved(&mut self) {
        while self.flags.front() == Some(&false) {
            self.flags.pop_front();
            self.base += 1;
        }
    }

    /// The lowest unresolved token.
    pub fn first(&self) -> Option<u64> {
        (self.count > 0).then_some(self.base)
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }
}

#[cfg(test)]
mod tests {
    use super::Outstanding;

    #[test]
    fn tracks_the_lowest_unresolved_token() {
        let mut o = Outstanding::default();
        for t in 10..20 {
            o.insert(t);
        }
        assert_eq!(o.first(), Some(10));
        assert!(o.remove(12) && !o.remove(12) && !o.remove(3) && !o.remove(99));
        assert!(o.remove(10));
        assert_eq!(o.first(), Some(11));
        assert!(o.remove(11));
        assert_eq!(o.first(), Some(13), "12 was already gone");
        for t in 13..20 {
            assert!(o.remove(t));
        }
        assert!(o.is_empty() && o.first().is_none());
        o.insert(25);
        assert_eq!(o.first(), Some(25));
    }

    #[test]
    fn a_batch_of_tokens_is_removed_at_once_keeping_only_the_outstanding() {
        let mut o = Outstanding::default();
        for t in 10..20 {
            o.insert(t);
        }
        assert!(o.remove(12));
        let mut batch = vec![10, 11, 12, 13, 99, 3];
        o.remove_each(&mut batch, |t| *t);
        assert_eq!(
            batch,
            [10, 11, 13],
            "12 was already gone; 99 and 3 never were"
        );
        assert_eq!(o.first(), Some(14));
        let mut rest: Vec<u64> = (14..20).collect();
        o.remove_each(&mut rest, |t| *t);
        assert_eq!(rest.len(), 6);
        assert!(o.is_empty() && o.first().is_none());
    }
}
