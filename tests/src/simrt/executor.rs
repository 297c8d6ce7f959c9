//! The deterministic executor under [`super::SimRuntime`]: one thread, tasks polled in the
//! order they were woken, timers on the virtual clock, and a task tree (every task remembers
//! the task that spawned it), so that a simulated application can be crashed with the client
//! drivers it started.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};

use kafka_core::Instant;

/// A task's id, in spawn order.
pub type TaskId = u64;

type BoxFuture = Pin<Box<dyn Future<Output = ()>>>;

struct Task {
    future: BoxFuture,
    parent: Option<TaskId>,
    waker: Waker,
}

/// The queue of woken tasks, shared with their wakers (which must be `Send + Sync`; the
/// executor is single-threaded, so the lock is never contended).
#[derive(Default)]
struct ReadyQueue(Mutex<VecDeque<TaskId>>);

struct TaskWaker {
    id: TaskId,
    ready: Arc<ReadyQueue>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        let mut q = self.ready.0.lock().unwrap_or_else(|e| e.into_inner());
        if !q.contains(&self.id) {
            q.push_back(self.id);
        }
    }
}

struct TimerEntry {
    at: Instant,
    waker: Option<Waker>,
}

/// Tasks, timers and the virtual clock.
pub struct Executor {
    now: Cell<Instant>,
    ready: Arc<ReadyQueue>,
    tasks: RefCell<BTreeMap<TaskId, Task>>,
    /// Spawned while another task was being polled; adopted after it.
    spawned: RefCell<Vec<(TaskId, Task)>>,
    next_task: Cell<TaskId>,
    current: Cell<Option<TaskId>>,
    timers: RefCell<BTreeMap<u64, TimerEntry>>,
    next_timer: Cell<u64>,
    polls: Cell<u64>,
}

impl Executor {
    /// An executor at time zero.
    pub fn new() -> Self {
        Executor {
            now: Cell::new(Instant::ZERO),
            ready: Arc::default(),
            tasks: RefCell::default(),
            spawned: RefCell::default(),
            next_task: Cell::new(0),
            current: Cell::new(None),
            timers: RefCell::default(),
            next_timer: Cell::new(0),
            polls: Cell::new(0),
        }
    }

    /// Virtual time.
    pub fn now(&self) -> Instant {
        self.now.get()
    }

    /// Moves the clock on (never back).
    pub fn advance(&self, to: Instant) {
        self.now.set(self.now.get().max(to));
    }

    /// Task polls so far.
    pub fn polls(&self) -> u64 {
        self.polls.get()
    }

    /// The task being polled, if any.
    pub fn current(&self) -> Option<TaskId> {
        self.current.get()
    }

    /// Adds a task, a child of the task being polled (if any). It runs at the next
    /// [`Executor::run_ready`].
    pub fn spawn(&self, future: impl Future<Output = ()> + 'static) -> TaskId {
        let id = self.next_task.get();
        self.next_task.set(id + 1);
        let waker = Waker::from(Arc::new(TaskWaker {
            id,
            ready: self.ready.clone(),
        }));
        let task = Task {
            future: Box::pin(future),
            parent: self.current.get(),
            waker: waker.clone(),
        };
        self.spawned.borrow_mut().push((id, task));
        waker.wake();
        id
    }

    fn adopt_spawned(&self) {
        let spawned = std::mem::take(&mut *self.spawned.borrow_mut());
        self.tasks.borrow_mut().extend(spawned);
    }

    /// Whether a task is still running.
    pub fn alive(&self, id: TaskId) -> bool {
        self.tasks.borrow().contains_key(&id) || self.spawned.borrow().iter().any(|t| t.0 == id)
    }

    /// Polls woken tasks, in wake order, until none is woken; at most `limit` polls (a
    /// task that wakes itself forever is a live-lock). Returns the polls made.
    pub fn run_ready(&self, limit: u64) -> Result<u64, String> {
        let mut n = 0;
        loop {
            self.adopt_spawned();
            let next = self
                .ready
                .0
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front();
            let Some(id) = next else { return Ok(n) };
            let Some(mut task) = self.tasks.borrow_mut().remove(&id) else {
                continue; // finished or killed
            };
            n += 1;
            if n > limit {
                self.tasks.borrow_mut().insert(id, task);
                return Err(format!(
                    "live-lock: {limit} task polls at {:?} without the clock moving (the last: task {id})",
                    self.now()
                ));
            }
            self.polls.set(self.polls.get() + 1);
            self.current.set(Some(id));
            let waker = task.waker.clone();
            let poll = task.future.as_mut().poll(&mut Context::from_waker(&waker));
            self.current.set(None);
            if poll.is_pending() {
                self.tasks.borrow_mut().insert(id, task);
            }
        }
    }

    /// A task and every task it spawned, transitively, that still run.
    pub fn tree(&self, root: TaskId) -> Vec<TaskId> {
        self.adopt_spawned();
        let mut doomed = vec![root];
        let mut i = 0;
        while i < doomed.len() {
            let parent = doomed[i];
            doomed.extend(
                self.tasks
                    .borrow()
                    .iter()
                    .filter(|(_, t)| t.parent == Some(parent))
                    .map(|(id, _)| *id),
            );
            i += 1;
        }
        doomed.retain(|id| self.tasks.borrow().contains_key(id));
        doomed
    }

    /// Drops these tasks (their futures are dropped, so their sockets close and timers go).
    /// Returns how many were dropped.
    pub fn kill(&self, doomed: &[TaskId]) -> usize {
        let mut dropped = Vec::new();
        for id in doomed {
            if let Some(t) = self.tasks.borrow_mut().remove(id) {
                dropped.push(t);
            }
        }
        let n = dropped.len();
        // Dropped outside the borrow: their destructors reach the executor (timers).
        drop(dropped);
        n
    }

    /// Drops every task (at the end of a run).
    pub fn clear(&self) {
        self.adopt_spawned();
        let tasks = std::mem::take(&mut *self.tasks.borrow_mut());
        drop(tasks);
        self.adopt_spawned();
        let tasks = std::mem::take(&mut *self.tasks.borrow_mut());
        drop(tasks);
    }

    /// A timer at `at`.
    pub fn timer(&self, at: Instant) -> u64 {
        let id = self.next_timer.get();
        self.next_timer.set(id + 1);
        self.timers
            .borrow_mut()
            .insert(id, TimerEntry { at, waker: None });
        id
    }

    /// Moves a timer.
    pub fn reset_timer(&self, id: u64, at: Instant) {
        if let Some(t) = self.timers.borrow_mut().get_mut(&id) {
            t.at = at;
        }
    }

    /// Polls a timer.
    pub fn poll_timer(&self, id: u64, cx: &mut Context<'_>) -> Poll<()> {
        let mut timers = self.timers.borrow_mut();
        let Some(t) = timers.get_mut(&id) else {
            return Poll::Ready(());
        };
        if t.at <= self.now() {
            return Poll::Ready(());
        }
        if !t.waker.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            t.waker = Some(cx.waker().clone());
        }
        Poll::Pending
    }

    /// Forgets a dropped timer.
    pub fn drop_timer(&self, id: u64) {
        if let Ok(mut timers) = self.timers.try_borrow_mut() {
            timers.remove(&id);
        }
    }

    /// The earliest deadline of a timer someone waits on.
    pub fn next_timer(&self) -> Option<Instant> {
        self.timers
            .borrow()
            .values()
            .filter(|t| t.waker.is_some())
            .map(|t| t.at)
            .min()
    }

    /// Wakes the tasks whose timers are due.
    pub fn fire_timers(&self) {
        let now = self.now();
        let mut wakers = Vec::new();
        for t in self.timers.borrow_mut().values_mut() {
            if t.at <= now {
                wakers.extend(t.waker.take());
            }
        }
        for w in wakers {
            w.wake();
        }
    }
}

impl Default for Executor {
    fn default() -> Self {
        Self::new()
    }
}
