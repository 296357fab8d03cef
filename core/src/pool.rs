//! The one worker pool every parallel pass uses (`build`, `check`, replay's timeline and its
//! judging, the live first scan): scoped workers on all cores take items from a shared
//! [`Queue`], and their results come back to the calling thread, which hands them on outside
//! any lock. In order ([`Order::Input`]), results are handed over in the items' order and
//! workers never run more than a bounded window ahead of the last one handed over, so memory
//! stays bounded whatever order the results come back in.

use std::collections::{BTreeMap, VecDeque};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

/// Items waiting for a worker, each with its index in input order. The caller may reorder or
/// clear what is left while the workers run ([`Queue::edit`]).
pub struct Queue<I> {
    items: Mutex<VecDeque<(usize, I)>>,
}

impl<I> Queue<I> {
    /// A queue of `items`, in their order.
    pub fn new(items: impl IntoIterator<Item = I>) -> Queue<I> {
        Queue {
            items: Mutex::new(items.into_iter().enumerate().collect()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, VecDeque<(usize, I)>> {
        self.items.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The next item (the lock is held only to take it).
    fn pop(&self) -> Option<(usize, I)> {
        self.lock().pop_front()
    }

    /// Change what is left: move items to the front, or drop them all.
    pub fn edit(&self, change: impl FnOnce(&mut VecDeque<(usize, I)>)) {
        change(&mut self.lock());
    }

    /// Items not taken yet.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether every item was taken.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// The order results are handed over in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// As they are done (the queue may be reordered meanwhile).
    Done,
    /// In the items' order; workers stay within [`WINDOW_PER_WORKER`] items per worker of the
    /// last result handed over. The queue must not be reordered.
    Input,
}

/// The stack of every thread that reads records (the pool's workers, the watcher, the replay
/// worker): a record nested as deep as the reference reader takes
/// ([`crate::store::record::MAX_DEPTH`]) is parsed recursively. Reserved address space:
/// only what is used is ever touched.
pub const WORKER_STACK: usize = 64 << 20;

/// How far ahead of the last result handed over the workers may run, per worker, in input
/// order: enough that a slow item does not idle the others for long, few enough that the
/// results held back stay small.
pub const WINDOW_PER_WORKER: usize = 8;

/// The workers' bound in input order: the index below which they may start an item.
struct Window {
    handed: Mutex<usize>,
    moved: Condvar,
    size: usize,
}

impl Window {
    fn wait_for(&self, index: usize) {
        let mut handed = self.handed.lock().unwrap_or_else(PoisonError::into_inner);
        while index >= *handed + self.size {
            handed = self
                .moved
                .wait(handed)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }

    fn advance(&self, to: usize) {
        *self.handed.lock().unwrap_or_else(PoisonError::into_inner) = to;
        self.moved.notify_all();
    }
}

/// What a worker sends: an item's result, or the panic its work raised.
type Sent<T> = (usize, std::thread::Result<T>);

/// The results of a running pool, read on the calling thread.
pub struct Results<T> {
    received: Receiver<Sent<T>>,
    order: Order,
    /// Input order: results done before their turn, by index (bounded by the window).
    early: BTreeMap<usize, T>,
    next: usize,
    window: Option<std::sync::Arc<Window>>,
}

impl<T> Iterator for Results<T> {
    type Item = T;

    /// The next result, waiting for it; `None` when every item is done.
    fn next(&mut self) -> Option<T> {
        self.next_before(None)
    }
}

impl<T> Results<T> {
    /// The next result if one comes before `deadline`.
    pub fn next_until(&mut self, deadline: Instant) -> Option<T> {
        self.next_before(Some(deadline))
    }

    fn next_before(&mut self, deadline: Option<Instant>) -> Option<T> {
        loop {
            if self.order == Order::Input
                && let Some(ready) = self.early.remove(&self.next)
            {
                self.next += 1;
                if let Some(window) = &self.window {
                    window.advance(self.next);
                }
                return Some(ready);
            }
            let (index, sent) = match deadline {
                None => self.received.recv().ok()?,
                Some(deadline) => match self
                    .received
                    .recv_timeout(deadline.saturating_duration_since(Instant::now()))
                {
                    Ok(result) => result,
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {
                        return None;
                    }
                },
            };
            // A worker's panic is the caller's: raised here (the pool then stops its workers).
            let value = match sent {
                Ok(value) => value,
                Err(panic) => std::panic::resume_unwind(panic),
            };
            match self.order {
                Order::Done => return Some(value),
                Order::Input => {
                    self.early.insert(index, value);
                }
            }
        }
    }
}

/// Run `work` on every item of `queue` on all cores (at most one worker per item), and let
/// `drive` read the results on this thread while they run. Returns what `drive` returns, once
/// every worker has stopped: a worker stops when the queue is empty or `drive` has returned
/// (the items left are then dropped).
pub fn run<I: Send, T: Send, R>(
    queue: &Queue<I>,
    order: Order,
    work: impl Fn(I) -> T + Sync,
    drive: impl FnOnce(&mut Results<T>) -> R,
) -> R {
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(queue.len().max(1));
    let window = (order == Order::Input).then(|| {
        std::sync::Arc::new(Window {
            handed: Mutex::new(0),
            moved: Condvar::new(),
            size: workers * WINDOW_PER_WORKER,
        })
    });
    let (sender, received) = mpsc::channel();
    std::thread::scope(|scope| {
        for _ in 0..workers {
            let (sender, work, window) = (sender.clone(), &work, window.clone());
            let builder = std::thread::Builder::new()
                .name("tokscope-worker".into())
                .stack_size(WORKER_STACK);
            builder
                .spawn_scoped(scope, move || {
                    while let Some((index, item)) = queue.pop() {
                        if let Some(window) = &window {
                            window.wait_for(index);
                        }
                        let done =
                            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(item)));
                        let panicked = done.is_err();
                        if sender.send((index, done)).is_err() || panicked {
                            break;
                        }
                    }
                })
                .expect("spawn a worker thread");
        }
        drop(sender);
        let mut results = Results {
            received,
            order,
            early: BTreeMap::new(),
            next: 0,
            window: window.clone(),
        };
        let answer = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| drive(&mut results)));
        // Nobody reads any more (done, or a panic): the workers stop after the item in hand,
        // none left waiting at the window, so the scope can end.
        queue.edit(VecDeque::clear);
        if let Some(window) = &window {
            window.advance(usize::MAX / 2);
        }
        drop(results);
        match answer {
            Ok(answer) => answer,
            Err(panic) => std::panic::resume_unwind(panic),
        }
    })
}

/// Run `work` on every item on all cores; hand the results to `consume` (on this thread) in
/// the items' order as soon as each and everything before it are done.
pub fn in_order<I: Sync, T: Send>(
    items: &[I],
    work: impl Fn(&I) -> T + Sync,
    mut consume: impl FnMut(T),
) {
    let queue = Queue::new(items.iter());
    run(&queue, Order::Input, work, |results| {
        results.for_each(&mut consume)
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::time::Duration;

    #[test]
    fn results_come_in_input_order_whatever_order_they_finish_in() {
        let items: Vec<usize> = (0..200).collect();
        let mut seen = Vec::new();
        in_order(
            &items,
            |&i| {
                // Later items finish first, now and then.
                if i % 7 == 0 {
                    std::thread::sleep(Duration::from_millis(2));
                }
                i * 2
            },
            |value| seen.push(value),
        );
        assert_eq!(seen, items.iter().map(|i| i * 2).collect::<Vec<_>>());
    }

    #[test]
    fn a_slow_first_item_keeps_no_more_than_the_window_waiting() {
        let items: Vec<usize> = (0..500).collect();
        let started = AtomicUsize::new(0);
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let most_started_early = AtomicUsize::new(0);
        in_order(
            &items,
            |&i| {
                started.fetch_add(1, Ordering::SeqCst);
                if i == 0 {
                    // While item 0 is slow, the others may not run far ahead.
                    std::thread::sleep(Duration::from_millis(200));
                    most_started_early.store(started.load(Ordering::SeqCst), Ordering::SeqCst);
                }
                i
            },
            |_| {},
        );
        let bound = workers * WINDOW_PER_WORKER + workers;
        let early = most_started_early.load(Ordering::SeqCst);
        assert!(
            early <= bound,
            "{early} started while item 0 ran (bound {bound})"
        );
    }

    #[test]
    fn a_panicking_item_is_the_callers_panic_not_a_hang() {
        let items: Vec<usize> = (0..200).collect();
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(|_| {}));
        let outcome = std::panic::catch_unwind(|| {
            in_order(
                &items,
                |&i| {
                    assert!(i != 3, "item 3 fails");
                    i
                },
                |_| {},
            )
        });
        std::panic::set_hook(previous);
        assert!(outcome.is_err(), "the panic reaches the caller");
    }

    #[test]
    fn done_order_can_be_reordered_and_stopped() {
        let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
        let queue = Queue::new(0..200usize);
        // Move the last item to the front before any worker runs: it is among the first done.
        queue.edit(|items| {
            let last = items.pop_back().expect("items");
            items.push_front(last);
        });
        let worked = AtomicUsize::new(0);
        let work = |i: usize| {
            worked.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(1));
            i
        };
        let first = run(&queue, Order::Done, work, |results| {
            (0..=workers)
                .filter_map(|_| results.next())
                .collect::<Vec<_>>()
        });
        assert!(first.contains(&199), "{first:?}");
        assert!(
            queue.is_empty(),
            "what is left is dropped when drive returns"
        );
        let worked = worked.load(Ordering::SeqCst);
        assert!(
            worked <= 3 * workers + 1,
            "the workers stopped: {worked} done"
        );
    }
}
