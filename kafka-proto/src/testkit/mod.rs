//! Random, version-valid values of every message, for property and differential tests (feature `testkit`).
//!
//! A value made for a version only sets fields that exist at that version, and only makes
//! fields null where that version allows it, so it always encodes.

use bytes::Bytes;
use uuid::Uuid;

use crate::api::{ApiKey, RequestBody, ResponseBody};
use crate::wire::{Ctx, UnknownTaggedFields};

/// A small seeded generator (SplitMix64) with a nesting budget that keeps values small.
#[derive(Debug, Clone)]
pub struct Gen {
    state: u64,
    depth: u32,
    max_depth: u32,
}

impl Gen {
    /// A generator from a seed; the same seed gives the same values.
    pub fn new(seed: u64) -> Self {
        Gen {
            state: seed,
            depth: 0,
            max_depth: 8,
        }
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n.max(1)
    }

    /// True one time in `n`.
    pub fn chance(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }

    /// Enters a nested structure; false when the nesting budget is spent.
    pub fn enter(&mut self) -> bool {
        if self.depth >= self.max_depth {
            return false;
        }
        self.depth += 1;
        true
    }

    /// Leaves a nested structure.
    pub fn leave(&mut self) {
        self.depth -= 1;
    }

    fn len(&mut self) -> usize {
        // Mostly short, sometimes empty, occasionally a little longer.
        match self.below(8) {
            0 => 0,
            1..=5 => 1 + self.below(3) as usize,
            _ => self.below(12) as usize,
        }
    }

    /// Random unknown tagged fields, with tags high enough never to clash with known ones.
    pub fn unknown_tagged_fields(&mut self) -> UnknownTaggedFields {
        let n = 1 + self.below(2);
        (0..n)
            .map(|_| {
                (
                    1000 + self.below(50) as u32,
                    Bytes::random(self, dummy_ctx()),
                )
            })
            .collect()
    }
}

fn dummy_ctx() -> Ctx {
    Ctx {
        version: 0,
        flexible: false,
    }
}

/// A type whose random values can be generated for a given message version.
pub trait Random: Sized {
    /// A random value valid at `ctx`.
    fn random(g: &mut Gen, ctx: Ctx) -> Self;
    /// A random value for a field; nullable types may return null when `nullable`.
    fn random_field(g: &mut Gen, ctx: Ctx, _nullable: bool) -> Self {
        Self::random(g, ctx)
    }
}

macro_rules! random_int {
    ($($t:ty),*) => {$(
        impl Random for $t {
            fn random(g: &mut Gen, _: Ctx) -> Self {
                // Favour the edges, where encodings break.
                match g.below(4) {
                    0 => 0 as $t,
                    1 => <$t>::MAX,
                    2 => <$t>::MIN,
                    _ => g.next_u64() as $t,
                }
            }
        }
    )*};
}
random_int!(i8, i16, i32, i64, u16, u32);

impl Random for f64 {
    fn random(g: &mut Gen, _: Ctx) -> Self {
        // Finite values only: NaN != NaN would defeat equality checks.
        (g.next_u64() >> 11) as f64 / 1024.0 - 1e9
    }
}

impl Random for bool {
    fn random(g: &mut Gen, _: Ctx) -> Self {
        g.chance(2)
    }
}

impl Random for Uuid {
    fn random(g: &mut Gen, _: Ctx) -> Self {
        Uuid::from_u64_pair(g.next_u64(), g.next_u64())
    }
}

impl Random for String {
    fn random(g: &mut Gen, _: Ctx) -> Self {
        const ALPHABET: &[char] = &['a', 'z', 'Q', '0', '-', '_', '.', ' ', 'é', 'ß', '€', '😀'];
        let n = g.len();
        (0..n)
            .map(|_| ALPHABET[g.below(ALPHABET.len() as u64) as usize])
            .collect()
    }
}

impl Random for Bytes {
    fn random(g: &mut Gen, _: Ctx) -> Self {
        let n = g.len();
        (0..n)
            .map(|_| g.next_u64() as u8)
            .collect::<Vec<u8>>()
            .into()
    }
}

impl<T: Random> Random for Vec<T> {
    fn random(g: &mut Gen, ctx: Ctx) -> Self {
        if !g.enter() {
            return Vec::new();
        }
        let n = g.len().min(4);
        let out = (0..n).map(|_| T::random(g, ctx)).collect();
        g.leave();
        out
    }
}

impl<T: Random> Random for Option<T> {
    fn random(g: &mut Gen, ctx: Ctx) -> Self {
        Some(T::random(g, ctx))
    }
    fn random_field(g: &mut Gen, ctx: Ctx, nullable: bool) -> Self {
        if nullable && g.chance(4) {
            None
        } else {
            Some(T::random(g, ctx))
        }
    }
}

pub mod fuzz;

/// `RequestBody` and `ResponseBody` of any API, random and valid at a version: for
/// differential tests that go through every API (`tests/tests/codec_java.rs`).
macro_rules! random_bodies {
    ($(
        $name:ident = $key:literal, $req_mod:ident :: $req:ident, $resp_mod:ident :: $resp:ident,
        $min:literal ..= $max:literal, flexible $flex:expr;
    )*) => {
        /// A random request of `key`, valid at `version`.
        pub fn random_request(key: ApiKey, version: i16, g: &mut Gen) -> RequestBody {
            match key {
                $( ApiKey::$name => RequestBody::$name(Random::random(g, key.ctx(version))), )*
            }
        }

        /// A random response of `key`, valid at `version`.
        pub fn random_response(key: ApiKey, version: i16, g: &mut Gen) -> ResponseBody {
            match key {
                $( ApiKey::$name => ResponseBody::$name(Random::random(g, key.ctx(version))), )*
            }
        }
    };
}

crate::api::api_table!(random_bodies);
