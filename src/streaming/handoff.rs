//! A bounded queue from one thread to another that wakes the giving side in bursts.
//!
//! The reader hands the driver one routine at a time and is nearly always ahead: with a
//! queue that blocks the reader while it is full and wakes it whenever a place frees (as
//! `std::sync::mpsc::sync_channel` does), the driver woke the reader for almost every routine
//! it took (375 times for the 360 routines of a 16 MiB tangent). A wake-up of a sleeping
//! thread is dear on this kind of machine: the driver's `futex` wakes, most of them the
//! reader's and the planner's, were 2–3% of its samples, and the driver is the run's critical
//! path. Here the giver, once the queue is full, sleeps until the taker has brought it down to
//! `refill_at`, then fills it again in one go: with room for four and a refill at two, one
//! wake-up for every two routines, while the taker still finds two waiting when it wakes the
//! giver, as before.
//!
//! Either side ending ends the queue for the other: what was given before the giver's end is
//! still taken, and a give after the taker's end is refused, which tells the giver to stop.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};

struct Shared<T> {
    state: Mutex<State<T>>,
    /// The giver waits here for room.
    room: Condvar,
    /// The taker waits here for an item.
    item: Condvar,
    capacity: usize,
    refill_at: usize,
}

struct State<T> {
    queue: VecDeque<T>,
    /// The giver sleeps until the queue is down to `refill_at`.
    giver_waits: bool,
    taker_waits: bool,
    giver_gone: bool,
    taker_gone: bool,
}

impl<T> Shared<T> {
    /// The state, whatever a panic on the other side left it as: each side changes it only in
    /// steps that leave it whole.
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The giving end ([`handoff`]).
pub(super) struct Giver<T>(Arc<Shared<T>>);

/// The taking end ([`handoff`]).
pub(super) struct Taker<T>(Arc<Shared<T>>);

/// What [`Taker::try_take`] found.
pub(super) enum TryTake<T> {
    Item(T),
    /// Nothing yet; the giver is still there.
    Empty,
    /// Nothing, and nothing more will come.
    Ended,
}

/// A queue holding at most `capacity` items (at least one) whose giver, once it found it full,
/// is woken only when `refill_at` items (fewer than `capacity`) or fewer are left.
pub(super) fn handoff<T>(capacity: usize, refill_at: usize) -> (Giver<T>, Taker<T>) {
    let capacity = capacity.max(1);
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            queue: VecDeque::with_capacity(capacity),
            giver_waits: false,
            taker_waits: false,
            giver_gone: false,
            taker_gone: false,
        }),
        room: Condvar::new(),
        item: Condvar::new(),
        capacity,
        refill_at: refill_at.min(capacity - 1),
    });
    (Giver(Arc::clone(&shared)), Taker(shared))
}

impl<T> Giver<T> {
    /// Queues `item`, waiting for room while the queue is full; gives it back once the taker
    /// is gone.
    pub(super) fn give(&self, item: T) -> Result<(), T> {
        let shared = &*self.0;
        let mut state = shared.lock();
        loop {
            if state.taker_gone {
                return Err(item);
            }
            if state.queue.len() < shared.capacity {
                break;
            }
            state.giver_waits = true;
            state = shared.room.wait(state).unwrap_or_else(PoisonError::into_inner);
            // Woken, or spuriously: asleep again only if still full.
            state.giver_waits = false;
        }
        state.queue.push_back(item);
        if state.taker_waits {
            state.taker_waits = false;
            shared.item.notify_one();
        }
        Ok(())
    }
}

impl<T> Taker<T> {
    /// The oldest item, if one is there.
    pub(super) fn try_take(&self) -> TryTake<T> {
        let shared = &*self.0;
        let mut state = shared.lock();
        match state.queue.pop_front() {
            Some(item) => {
                Self::wake_giver_if_low(shared, &mut state);
                TryTake::Item(item)
            }
            None if state.giver_gone => TryTake::Ended,
            None => TryTake::Empty,
        }
    }

    /// The oldest item, waiting for one; `None` once the giver is gone and all it gave taken.
    pub(super) fn take(&self) -> Option<T> {
        let shared = &*self.0;
        let mut state = shared.lock();
        loop {
            if let Some(item) = state.queue.pop_front() {
                Self::wake_giver_if_low(shared, &mut state);
                return Some(item);
            }
            if state.giver_gone {
                return None;
            }
            state.taker_waits = true;
            state = shared.item.wait(state).unwrap_or_else(PoisonError::into_inner);
            state.taker_waits = false;
        }
    }

    fn wake_giver_if_low(shared: &Shared<T>, state: &mut State<T>) {
        if state.giver_waits && state.queue.len() <= shared.refill_at {
            state.giver_waits = false;
            shared.room.notify_one();
        }
    }
}

impl<T> Drop for Giver<T> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.giver_gone = true;
        if state.taker_waits {
            state.taker_waits = false;
            self.0.item.notify_one();
        }
    }
}

impl<T> Drop for Taker<T> {
    fn drop(&mut self) {
        let mut state = self.0.lock();
        state.taker_gone = true;
        // What was given and not taken goes now, on this side.
        let dropped = std::mem::take(&mut state.queue);
        if state.giver_waits {
            state.giver_waits = false;
            self.0.room.notify_one();
        }
        drop(state);
        drop(dropped);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_arrive_in_order_and_the_end_follows_them() {
        let (giver, taker) = handoff::<u32>(4, 2);
        let taken = std::thread::scope(|scope| {
            scope.spawn(move || {
                for i in 0..1000 {
                    giver.give(i).expect("the taker is there");
                }
            });
            let mut taken = Vec::new();
            while let Some(item) = taker.take() {
                taken.push(item);
            }
            taken
        });
        assert_eq!(taken, (0..1000).collect::<Vec<_>>());
    }

    #[test]
    fn a_full_queue_wakes_its_giver_only_at_the_refill_mark() {
        let (giver, taker) = handoff::<u32>(4, 2);
        let given = &std::sync::atomic::AtomicU32::new(0);
        std::thread::scope(|scope| {
            // Owned here, so that a failed assertion drops it before the scope waits for the
            // giver, which then stops instead of waiting for room for ever.
            let taker = taker;
            scope.spawn(move || {
                for i in 0..6 {
                    giver.give(i).expect("the taker is there");
                    given.store(i + 1, std::sync::atomic::Ordering::SeqCst);
                }
                drop(giver);
            });
            let settled = |want: u32| {
                let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
                while given.load(std::sync::atomic::Ordering::SeqCst) != want {
                    assert!(std::time::Instant::now() < deadline, "the giver did not get to {want}");
                    std::thread::yield_now();
                }
            };
            // Four fit; the fifth waits for room.
            settled(4);
            assert!(matches!(taker.try_take(), TryTake::Item(0)));
            // Three left, above the mark: the giver sleeps on (it must not have given more).
            std::thread::sleep(std::time::Duration::from_millis(50));
            assert_eq!(given.load(std::sync::atomic::Ordering::SeqCst), 4);
            assert!(matches!(taker.try_take(), TryTake::Item(1)));
            // Two left: the giver is woken and gives the last two.
            settled(6);
            let rest: Vec<u32> = std::iter::from_fn(|| taker.take()).collect();
            assert_eq!(rest, vec![2, 3, 4, 5]);
            assert!(matches!(taker.try_take(), TryTake::Ended));
        });
    }

    #[test]
    fn a_gone_taker_refuses_gifts_and_frees_a_waiting_giver() {
        let (giver, taker) = handoff::<u32>(1, 0);
        std::thread::scope(|scope| {
            // Owned here: a failed assertion drops it too (see above).
            let taker = taker;
            let giving = scope.spawn(move || {
                giver.give(1)?;
                // Full: this waits until the taker is gone, then is refused.
                giver.give(2)
            });
            let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
            while !taker.0.lock().giver_waits {
                assert!(std::time::Instant::now() < deadline, "the giver never waited for room");
                std::thread::yield_now();
            }
            drop(taker);
            assert_eq!(giving.join().expect("no panic"), Err(2));
        });
    }

    #[test]
    fn try_take_tells_empty_from_ended() {
        let (giver, taker) = handoff::<u32>(2, 1);
        assert!(matches!(taker.try_take(), TryTake::Empty));
        giver.give(7).expect("room");
        drop(giver);
        assert!(matches!(taker.try_take(), TryTake::Item(7)));
        assert!(matches!(taker.try_take(), TryTake::Ended));
        assert_eq!(taker.take(), None);
    }
}
