//! The pending-event set: a 4-ary min-heap keyed by (time, insertion sequence).
//!
//! The sequence number makes equal-time events pop in the order they were scheduled (FIFO), which
//! is what makes a run deterministic. A 4-ary heap halves the depth of a binary one and keeps a
//! node's children in one cache line, which matters because every packet hop is a push and a pop.

use crate::time::SimTime;

#[derive(Clone, Copy, Debug)]
struct Entry<E> {
    time: u64,
    /// Insertion order among equal times.
    seq: u32,
    ev: E,
}

impl<E> Entry<E> {
    #[inline]
    fn key(&self) -> (u64, u32) {
        (self.time, self.seq)
    }
}

/// A priority queue of events of type `E`. With a 4-byte `E` an entry is 16 bytes, four to a
/// cache line.
#[derive(Debug)]
pub struct EventQueue<E> {
    heap: Vec<Entry<E>>,
    seq: u32,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    pub fn new() -> Self {
        EventQueue {
            heap: Vec::with_capacity(1024),
            seq: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `ev` at time `t`.
    #[inline]
    pub fn push(&mut self, t: SimTime, ev: E) {
        if self.seq == u32::MAX {
            self.renumber();
        }
        let seq = self.seq;
        self.seq += 1;
        self.heap.push(Entry { time: t.0, seq, ev });
        self.sift_up(self.heap.len() - 1);
    }

    /// Reassigns sequence numbers 0.. in pop order when they run out; the order is unchanged.
    #[cold]
    fn renumber(&mut self) {
        let mut all = std::mem::take(&mut self.heap);
        all.sort_unstable_by_key(|e| e.key());
        for (i, e) in all.iter_mut().enumerate() {
            e.seq = i as u32;
        }
        // A sorted array is a valid heap.
        self.seq = all.len() as u32;
        self.heap = all;
    }

    /// The time of the earliest event, if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        self.heap.first().map(|e| SimTime(e.time))
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        let n = self.heap.len();
        if n == 0 {
            return None;
        }
        let top = self.heap.swap_remove(0);
        if n > 1 {
            self.sift_down(0);
        }
        Some((SimTime(top.time), top.ev))
    }

    #[inline]
    fn sift_up(&mut self, mut i: usize) {
        let item = self.heap[i];
        while i > 0 {
            let p = (i - 1) / 4;
            if self.heap[p].key() <= item.key() {
                break;
            }
            self.heap[i] = self.heap[p];
            i = p;
        }
        self.heap[i] = item;
    }

    #[inline]
    fn sift_down(&mut self, mut i: usize) {
        let n = self.heap.len();
        let item = self.heap[i];
        loop {
            let c0 = 4 * i + 1;
            if c0 >= n {
                break;
            }
            let mut best = c0;
            let mut best_key = self.heap[c0].key();
            let end = (c0 + 4).min(n);
            for c in c0 + 1..end {
                let k = self.heap[c].key();
                if k < best_key {
                    best = c;
                    best_key = k;
                }
            }
            if best_key >= item.key() {
                break;
            }
            self.heap[i] = self.heap[best];
            i = best;
        }
        self.heap[i] = item;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn order_survives_sequence_renumbering() {
        let mut q = EventQueue::new();
        q.seq = u32::MAX - 3;
        for i in 0..8u32 {
            q.push(SimTime(7), i);
        }
        for i in 0..8u32 {
            assert_eq!(q.pop(), Some((SimTime(7), i)));
        }
    }

    #[test]
    fn equal_times_pop_in_insertion_order() {
        let mut q = EventQueue::new();
        for i in 0..10u32 {
            q.push(SimTime(5), i);
        }
        q.push(SimTime(1), 100);
        assert_eq!(q.pop(), Some((SimTime(1), 100)));
        for i in 0..10u32 {
            assert_eq!(q.pop(), Some((SimTime(5), i)));
        }
        assert_eq!(q.pop(), None);
    }

    proptest! {
        #[test]
        fn pops_in_time_then_fifo_order(times in proptest::collection::vec(0u64..50, 0..300)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.push(SimTime(*t), i);
            }
            let mut expected: Vec<(u64, usize)> = times.iter().copied().zip(0..).collect();
            expected.sort();
            let mut got = Vec::new();
            while let Some((t, i)) = q.pop() {
                got.push((t.0, i));
            }
            prop_assert_eq!(got, expected);
        }
    }
}
