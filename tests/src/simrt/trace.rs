//! A simulated run's trace: every line hashed (equal runs, equal hashes), and kept when asked.

use kafka_core::Instant;

use super::Sim;

/// The trace of a run.
#[derive(Debug)]
pub struct Trace {
    on: bool,
    lines: Vec<String>,
    hash: u64,
}

impl Trace {
    /// A trace that keeps its lines when `on` (it hashes them either way).
    pub fn new(on: bool) -> Self {
        Trace {
            on,
            lines: Vec::new(),
            hash: 0xcbf2_9ce4_8422_2325,
        }
    }

    /// Records one line, stamped with `now`.
    pub fn note(&mut self, now: Instant, line: String) {
        for b in line.bytes().chain([b'\n']) {
            self.hash = (self.hash ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
        if self.on {
            let t = now.as_nanos() as f64 / 1e9;
            self.lines.push(format!("{t:>12.6} {line}"));
        }
    }

    /// Moves what the wire logged, then the applications' `notes`, into the trace.
    pub fn collect(&mut self, sim: &Sim, notes: Vec<String>) {
        let wire: Vec<String> = std::mem::take(&mut sim.wire().log);
        let now = sim.now();
        for line in wire.into_iter().chain(notes) {
            self.note(now, line);
        }
    }

    /// The hash of every line so far.
    pub fn hash(&self) -> u64 {
        self.hash
    }

    /// The lines kept so far.
    pub fn take(&mut self) -> Vec<String> {
        std::mem::take(&mut self.lines)
    }
}
