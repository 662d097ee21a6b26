//! The pending-event set, keyed by (time, rank, event).
//!
//! The key names an event by what it is, never by when or where it was scheduled: the caller's
//! rank (the simulation's zero-delay depth) and the 32-bit event itself break ties between
//! equal times. Equal keys are equal events, whose order cannot matter. So the order in which
//! events are pushed never decides the order they pop in, which is what lets a partitioned run
//! (events handed between threads in batches) pop exactly what a single queue would.
//!
//! Almost every event is scheduled a serialization plus a link latency ahead, so the set is a
//! calendar: a wheel of buckets of `2^shift` picoseconds each, with a bitmap of non-empty
//! buckets, covers the near future, and a 4-ary heap holds what lies beyond it (flow starts,
//! timers, failures). The wheel spans about twice the longest hop and no more: 4,096 buckets
//! rather than 16,384 in the benchmark's setting ran it 1.12x faster, though cachegrind's cache
//! model counts the same misses for both (ARCHITECTURE.md, "The hot path"). A bucket holds a
//! handful of events, kept sorted, so push and pop cost a few dozen instructions where a heap of
//! a few thousand entries spent hundreds on comparisons (measured with callgrind). The order is
//! exactly the heap's: the same (time, rank, event) key decides everywhere.

use crate::time::SimTime;

/// Time in the high word, then (rank << 32 | event) in the low word: comparing the pair as one
/// u128 orders by time, then rank, then event.
#[derive(Clone, Copy, Debug)]
struct Entry {
    time: u64,
    lo: u64,
}

impl Entry {
    #[inline(always)]
    fn key(self) -> u128 {
        ((self.time as u128) << 64) | self.lo as u128
    }
}

/// The most buckets a wheel has: arrays are this long, so that an index taken modulo it is
/// in bounds to the compiler, and a smaller wheel uses (and touches) only their front.
const SLOTS: usize = 1 << 14;
const WORDS: usize = SLOTS / 64;
/// The fewest: a bitmap word's worth at least, so the bitmap wraps at a word boundary.
const MIN_SLOTS: usize = 1 << 10;
/// Entries a bucket holds in place (four cache lines); more go to the bucket's overflow vector.
/// Sixteen rather than eight: synchronized hosts fill buckets past eight often enough that
/// sorting overflow cost 1.7% of the instructions (cachegrind) and about 3% of the wall time.
const CAP: usize = 16;
/// An emptied bucket's overflow keeps at most this many entries' room.
const SHRINK_ABOVE: usize = 32;

/// A wheel-sized array on the heap, every element a clone of `x`: fixed-size arrays let the
/// compiler see that a slot index (always taken modulo the wheel) is in bounds.
fn boxed<T: Clone, const N: usize>(x: T) -> Box<[T; N]> {
    vec![x; N]
        .into_boxed_slice()
        .try_into()
        .unwrap_or_else(|_| unreachable!("a vector of N elements"))
}

/// A priority queue of events carried as 32-bit values.
#[derive(Debug)]
pub struct EventQueue<E> {
    /// Bucket width: 2^shift picoseconds.
    shift: u32,
    /// Buckets in the wheel, minus one (a power of two minus one, at most `SLOTS - 1`).
    mask: u64,
    /// The cursor's absolute bucket: every wheel entry's bucket is in [cur, cur + mask].
    cur: u64,
    /// Where the cursor's bucket sits in the arrays (`slot(cur)`, below `SLOTS`), kept for pops.
    cur_slot: usize,
    /// Bucket b's first `CAP` entries, in one flat array, so the buckets that pushes land in (a
    /// latency ahead, moving forward with time) are consecutive lines rather than scattered
    /// allocations.
    inline: Box<[[Entry; CAP]; SLOTS]>,
    /// Bucket b's entries beyond the first `CAP`.
    over: Box<[Vec<Entry>; SLOTS]>,
    /// Entries in each bucket. A bucket's inline entries are kept in key order by insertion
    /// (a few shifts at most, on a line just loaded); only its overflow may fall out of order
    /// (see `unsorted`). Only the cursor's bucket is ever popped, so one index says how much
    /// of it is gone, and the bucket is emptied when it runs out.
    len: Box<[u32; SLOTS]>,
    /// Entries of the cursor's bucket before this index have been popped.
    head: usize,
    /// Bit b: slot b is non-empty.
    bits: Box<[u64; WORDS]>,
    /// Bit b: slot b took overflow entries out of key order since it was last sorted. Only
    /// the cursor's bucket must be in order (it is popped from); others take overflow at their
    /// back and are sorted once, when the cursor reaches them. Thousands of equal-time events
    /// (synchronized hosts) land in one bucket at scale, in no particular event order, and
    /// an ordered insertion into each would cost a scan of the bucket.
    unsorted: Box<[u64; WORDS]>,
    /// Entries in the wheel.
    count: usize,
    far: Heap,
    _e: std::marker::PhantomData<E>,
}

impl<E: Copy + Into<u32> + From<u32>> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy + Into<u32> + From<u32>> EventQueue<E> {
    /// Buckets of 1,024 ps.
    pub fn new() -> Self {
        Self::with_bucket_ps(1024)
    }

    /// Buckets about `width` picoseconds wide (rounded down to a power of two): a few events
    /// apart at the densest, e.g. a quarter of the fastest link's ACK serialization. The wheel
    /// has its most buckets.
    pub fn with_bucket_ps(width: u64) -> Self {
        Self::with_span(width, u64::MAX)
    }

    /// Buckets about `width` picoseconds wide, as in [`EventQueue::with_bucket_ps`], and as
    /// few as cover `span` picoseconds (a power of two of them, 1,024 to 16,384): events
    /// further ahead wait in the heap, so `span` should be the furthest ahead most events are
    /// scheduled, with room to spare.
    pub fn with_span(width: u64, span: u64) -> Self {
        let shift = width.max(1).ilog2().min(40);
        let slots = (span >> shift)
            .saturating_add(1)
            .clamp(MIN_SLOTS as u64, SLOTS as u64)
            .next_power_of_two();
        EventQueue {
            shift,
            mask: slots - 1,
            cur: 0,
            cur_slot: 0,
            inline: boxed([Entry { time: 0, lo: 0 }; CAP]),
            over: boxed(Vec::new()),
            len: boxed(0),
            head: 0,
            bits: boxed(0),
            unsorted: boxed(0),
            count: 0,
            far: Heap::default(),
            _e: std::marker::PhantomData,
        }
    }

    pub fn len(&self) -> usize {
        self.count + self.far.v.len()
    }

    /// Buckets in the wheel.
    pub fn wheel_buckets(&self) -> usize {
        self.mask as usize + 1
    }

    /// Where absolute bucket `b` sits in the arrays.
    #[inline(always)]
    fn slot(&self, b: u64) -> usize {
        (b & self.mask) as usize % SLOTS
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Schedules `ev` at time `t` with rank 0 (its key above the last event popped).
    #[inline(always)]
    pub fn push(&mut self, t: SimTime, ev: E) {
        self.push_ranked(t, 0, ev);
    }

    /// Schedules `ev` at time `t`, ordered after equal-time events of lower rank. Its key
    /// (time, rank, event) must be above the last event popped.
    #[inline(always)]
    pub fn push_ranked(&mut self, t: SimTime, rank: u32, ev: E) {
        let ev: u32 = ev.into();
        self.insert(Entry {
            time: t.0,
            lo: ((rank as u64) << 32) | ev as u64,
        });
    }

    /// When the earliest event is due, if any.
    pub fn peek_time(&self) -> Option<SimTime> {
        let wheel = (self.count > 0).then(|| {
            let b = self.next_bucket();
            let s = self.slot(b);
            if b == self.cur {
                self.get(s, self.head).time
            } else {
                // Not yet sorted, perhaps: its least time.
                (0..self.len[s] as usize)
                    .map(|i| self.get(s, i).time)
                    .min()
                    .expect("a non-empty bucket")
            }
        });
        let far = self.far.peek().map(|e| e.time);
        match (wheel, far) {
            (Some(a), Some(b)) => Some(SimTime(a.min(b))),
            (a, b) => a.or(b).map(SimTime),
        }
    }

    /// Entry `i` of bucket `s`.
    #[inline(always)]
    fn get(&self, s: usize, i: usize) -> Entry {
        if i < CAP {
            self.inline[s][i]
        } else {
            self.over[s][i - CAP]
        }
    }

    #[inline(always)]
    fn insert(&mut self, e: Entry) {
        let abs = (e.time >> self.shift).max(self.cur);
        if abs - self.cur > self.mask {
            self.far.push(e);
            return;
        }
        let s = self.slot(abs);
        let n = self.len[s] as usize;
        self.len[s] += 1;
        if n == 0 {
            self.bits[s / 64] |= 1 << (s % 64);
        }
        self.count += 1;
        let k = e.key();
        if n < CAP {
            // In place, in order: the line was just touched, and a handful of entries shift
            // for less than a later sort would cost. Keys not yet popped are all below `k`
            // in the cursor's bucket, so the scan never passes `head` there; elsewhere an
            // unsorted bucket's order is moot until it is sorted.
            let b = &mut self.inline[s];
            let mut at = n;
            while at > 0 && b[at - 1].key() > k {
                b[at] = b[at - 1];
                at -= 1;
            }
            b[at] = e;
            return;
        }
        if abs != self.cur {
            // Thousands of equal-time events (synchronized hosts) can land in one bucket:
            // beyond its inline entries it takes them at the back and is sorted once.
            if self.get(s, n - 1).key() > k {
                self.unsorted[s / 64] |= 1 << (s % 64);
            }
            self.over[s].push(e);
            return;
        }
        let mut at = n;
        while at > 0 && self.get(s, at - 1).key() > k {
            at -= 1;
        }
        if at >= CAP {
            self.over[s].insert(at - CAP, e);
            return;
        }
        let b = &mut self.inline[s];
        self.over[s].insert(0, b[CAP - 1]);
        // A loop, not `copy_within`: its memmove call changed how pushes inlined (measured
        // 13 more instructions per event).
        let mut j = CAP - 1;
        while j > at {
            b[j] = b[j - 1];
            j -= 1;
        }
        b[at] = e;
    }

    /// Puts bucket `s` in key order if it took entries out of order (before it is popped from).
    /// Its inline entries are already in order (insertion keeps them so) and only the overflow
    /// is not, so the overflow alone is sorted and merged with them. A synchronized all-to-all
    /// sorts about a quarter of its events, in buckets of 27 on average: sorting whole buckets
    /// ran 13 more instructions per event (profile-guided build, cachegrind).
    #[cold]
    fn sort_bucket(&mut self, s: usize) {
        self.unsorted[s / 64] &= !(1 << (s % 64));
        debug_assert!(
            self.len[s] as usize > CAP,
            "only overflow is ever out of order"
        );
        let over = &mut self.over[s];
        over.sort_unstable_by_key(|e| e.key());
        let inl = &mut self.inline[s];
        if inl[CAP - 1].key() <= over[0].key() {
            return;
        }
        // A forward merge in place: output position p lies in `inl` below CAP and at over[p -
        // CAP] above, which is never ahead of the overflow entry still to be read (j >= p - CAP
        // while i < CAP), so only the inline run needs a copy.
        let run = *inl;
        let (mut i, mut j) = (0, 0);
        for out in inl.iter_mut() {
            if j == over.len() || run[i].key() <= over[j].key() {
                *out = run[i];
                i += 1;
            } else {
                *out = over[j];
                j += 1;
            }
        }
        let mut p = 0;
        while i < CAP {
            if j == over.len() || run[i].key() <= over[j].key() {
                over[p] = run[i];
                i += 1;
            } else {
                over[p] = over[j];
                j += 1;
            }
            p += 1;
        }
    }

    /// Makes absolute bucket `b` the cursor's, in key order.
    #[inline(always)]
    fn enter(&mut self, b: u64) {
        self.cur = b;
        let s = self.slot(b);
        self.cur_slot = s;
        if self.unsorted[s / 64] & (1 << (s % 64)) != 0 {
            self.sort_bucket(s);
        }
    }

    /// Moves far events that the cursor's advance brought inside the wheel's horizon.
    #[inline]
    fn migrate(&mut self) {
        while let Some(e) = self.far.peek() {
            if (e.time >> self.shift) - self.cur > self.mask {
                break;
            }
            let e = self.far.pop().expect("peeked");
            self.insert(e);
        }
    }

    /// The first non-empty slot at or after the cursor, as an absolute bucket (wheel non-empty).
    #[inline]
    fn next_bucket(&self) -> u64 {
        let start = self.cur_slot % SLOTS;
        // A power of two, so wrapping is a mask rather than a division.
        let words = self.wheel_buckets() / 64;
        let mut w = start / 64;
        let mut word = self.bits[w] & (!0u64 << (start % 64));
        let mut steps = 0;
        while word == 0 {
            w = ((w + 1) & (words - 1)) % WORDS;
            steps += 1;
            word = self.bits[w];
            debug_assert!(steps <= words, "wheel count out of step with its bitmap");
        }
        let slot = w * 64 + word.trailing_zeros() as usize;
        self.cur + ((slot + self.wheel_buckets() - start) as u64 & self.mask)
    }

    /// Removes every event, in key order, and rewinds the wheel to time zero. Popping alone
    /// leaves the cursor at the last event's bucket, and everything pushed back below it would
    /// pile into that one bucket (a partitioned run's set, rebuilt before the run, held all its
    /// flow starts in one bucket and sorted it over and over).
    pub fn drain_all(&mut self) -> Vec<(SimTime, u32, E)> {
        let mut all = Vec::with_capacity(self.len());
        while let Some((t, rank, e, _)) = self.pop_ranked() {
            all.push((t, rank, e));
        }
        self.cur = 0;
        self.cur_slot = self.slot(0);
        self.head = 0;
        all
    }

    /// Removes and returns the earliest event.
    #[inline]
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.pop_peek().map(|(t, e, _)| (t, e))
    }

    /// Removes and returns the earliest event, with the one after it if that is in the same
    /// bucket (usually, when events are dense): a free look ahead, to fetch what it will need.
    #[inline]
    pub fn pop_peek(&mut self) -> Option<(SimTime, E, Option<E>)> {
        self.pop_ranked().map(|(t, _, e, n)| (t, e, n))
    }

    /// [`EventQueue::pop_peek`] with the event's rank.
    #[inline(always)]
    pub fn pop_ranked(&mut self) -> Option<(SimTime, u32, E, Option<E>)> {
        self.pop_ranked_before(SimTime::MAX)
    }

    /// [`EventQueue::pop_ranked`] if the earliest event is due before `limit`; otherwise
    /// nothing is removed (a window's end: events may still be pushed below it).
    #[inline(always)]
    pub fn pop_ranked_before(&mut self, limit: SimTime) -> Option<(SimTime, u32, E, Option<E>)> {
        if self.count == 0 {
            let e = self.far.peek()?;
            if e.time >= limit.0 {
                return None;
            }
            self.enter(e.time >> self.shift);
            self.migrate();
        }
        // The cursor's bucket, while it holds entries, is the next (nothing in the wheel lies
        // before it, and its absolute bucket is the only one its slot can hold): no bitmap scan.
        let mut s = self.cur_slot % SLOTS;
        if self.len[s] == 0 {
            let b = self.next_bucket();
            debug_assert_eq!(self.head, 0);
            self.enter(b);
            self.migrate();
            s = self.cur_slot % SLOTS;
        }
        let e = self.get(s, self.head);
        if e.time >= limit.0 {
            return None;
        }
        self.head += 1;
        self.count -= 1;
        let next = if self.head == self.len[s] as usize {
            self.len[s] = 0;
            self.head = 0;
            self.bits[s / 64] &= !(1 << (s % 64));
            let v = &mut self.over[s];
            if !v.is_empty() {
                v.clear();
                // Synchronized hosts put thousands of events in one bucket; keeping every
                // bucket's high-water capacity would hold hundreds of MB at 8,192 hosts.
                if v.capacity() > SHRINK_ABOVE {
                    v.shrink_to(SHRINK_ABOVE);
                }
            }
            None
        } else {
            Some(E::from(self.get(s, self.head).lo as u32))
        };
        Some((
            SimTime(e.time),
            (e.lo >> 32) as u32,
            E::from(e.lo as u32),
            next,
        ))
    }
}

/// A 4-ary min-heap of entries (the calendar's far future).
#[derive(Debug, Default)]
struct Heap {
    v: Vec<Entry>,
}

impl Heap {
    fn peek(&self) -> Option<Entry> {
        self.v.first().copied()
    }

    fn push(&mut self, e: Entry) {
        self.v.push(e);
        let mut i = self.v.len() - 1;
        let k = e.key();
        while i > 0 {
            let p = (i - 1) / 4;
            if self.v[p].key() <= k {
                break;
            }
            self.v[i] = self.v[p];
            i = p;
        }
        self.v[i] = e;
    }

    fn pop(&mut self) -> Option<Entry> {
        let top = *self.v.first()?;
        let last = self.v.pop().expect("non-empty");
        let n = self.v.len();
        if n == 0 {
            return Some(top);
        }
        let k = last.key();
        let mut i = 0;
        loop {
            let c0 = 4 * i + 1;
            if c0 >= n {
                break;
            }
            let mut best = c0;
            for c in c0 + 1..(c0 + 4).min(n) {
                if self.v[c].key() < self.v[best].key() {
                    best = c;
                }
            }
            if self.v[best].key() >= k {
                break;
            }
            self.v[i] = self.v[best];
            i = best;
        }
        self.v[i] = last;
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn equal_times_pop_by_rank_then_event_whatever_the_push_order() {
        let mut q = EventQueue::new();
        for (rank, ev) in [(1, 3u32), (0, 9), (1, 2), (0, 4), (2, 0)] {
            q.push_ranked(SimTime(5), rank, ev);
        }
        q.push(SimTime(1), 100);
        assert_eq!(q.peek_time(), Some(SimTime(1)));
        assert_eq!(q.pop(), Some((SimTime(1), 100)));
        let got: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(got, vec![4, 9, 2, 3, 0]);
        assert_eq!(q.peek_time(), None);
    }

    #[test]
    fn far_events_and_bucket_wraparound_keep_the_order() {
        // 1 ps buckets: a horizon of 16,384 ps; events far beyond it and across many laps.
        let mut q = EventQueue::with_bucket_ps(1);
        let times = [
            5u64,
            70_000,
            16_383,
            16_384,
            1_000_000_000,
            70_000,
            3,
            40_000,
        ];
        for (i, t) in times.iter().enumerate() {
            q.push(SimTime(*t), i as u32);
        }
        let mut got = vec![];
        while let Some((t, i)) = q.pop() {
            got.push((t.0, i));
            if i == 0 {
                // Scheduling from inside the run, at and after the current time.
                q.push(t, 100);
                q.push(SimTime(t.0 + 20_000), 101);
            }
        }
        let want = vec![
            (3, 6),
            (5, 0),
            (5, 100),
            (16_383, 2),
            (16_384, 3),
            (20_005, 101),
            (40_000, 7),
            (70_000, 1),
            (70_000, 5),
            (1_000_000_000, 4),
        ];
        assert_eq!(got, want);
        assert!(q.is_empty());
    }

    #[test]
    fn a_wheel_is_the_power_of_two_of_buckets_that_covers_its_span() {
        // 1,024-ps buckets over 2.67 us (twice a 100 Gb/s, 1 us hop): 2,606 buckets, so 4,096.
        assert_eq!(
            EventQueue::<u32>::with_span(1024, 2_668_480).wheel_buckets(),
            4096
        );
        assert_eq!(
            EventQueue::<u32>::with_span(1000, 4_194_303).wheel_buckets(),
            8192
        );
        assert_eq!(EventQueue::<u32>::with_span(512, 0).wheel_buckets(), 1024);
        assert_eq!(
            EventQueue::<u32>::with_span(1, u64::MAX).wheel_buckets(),
            16384
        );
        assert_eq!(
            EventQueue::<u32>::with_bucket_ps(1024).wheel_buckets(),
            16384
        );
    }

    #[test]
    fn a_short_wheel_wraps_and_hands_far_events_back_in_order() {
        // 1,024 buckets of 1 ps: pushes 1,000 to 5,000 ps ahead land in the wheel or the heap
        // by turns, across hundreds of laps.
        let mut q = EventQueue::with_span(1, 0);
        assert_eq!(q.wheel_buckets(), 1024);
        let mut model = std::collections::BTreeSet::new();
        let mut rng = 12345u64;
        let mut next = 0u32;
        for t in [0u64, 7, 1023, 1024, 1025, 5000] {
            q.push(SimTime(t), next);
            model.insert((t, next));
            next += 1;
        }
        while let Some((t, e)) = q.pop() {
            let want = model.pop_first().expect("the model holds as many");
            assert_eq!((t.0, e), want);
            if next < 20_000 {
                rng = crate::rng::mix64(rng.wrapping_add(next as u64));
                let d = 1000 + rng % 4001;
                q.push(SimTime(t.0 + d), next);
                model.insert((t.0 + d, next));
                next += 1;
            }
        }
        assert!(model.is_empty());
    }

    proptest! {
        #[test]
        fn matches_a_sorted_list_under_interleaved_pushes_and_pops(
            ops in proptest::collection::vec((0u64..100_000, proptest::bool::ANY), 0..400),
            width in 1u64..5000,
            span in prop_oneof![Just(u64::MAX), 0u64..40_000_000],
        ) {
            // Each op pushes at now + delta; every other op also pops: the queue must hand out
            // exactly what a sorted list of (time, event) would, whatever the wheel's length
            // (a short one sends most pushes through the heap and back).
            let mut q = EventQueue::with_span(width, span);
            let mut model: Vec<(u64, u32)> = vec![];
            let mut now = 0u64;
            for (i, (delta, pop)) in ops.iter().enumerate() {
                q.push(SimTime(now + delta), i as u32);
                model.push((now + delta, i as u32));
                if *pop {
                    model.sort();
                    let want = model.remove(0);
                    let (t, e) = q.pop().unwrap();
                    prop_assert_eq!((t.0, e), want);
                    now = t.0;
                }
            }
            model.sort();
            for want in model {
                let (t, e) = q.pop().unwrap();
                prop_assert_eq!((t.0, e), want);
            }
            prop_assert!(q.pop().is_none());
        }

        #[test]
        fn pops_in_key_order_whatever_the_push_order(
            evs in proptest::collection::vec((0u64..50, 0u32..3, 0u32..40), 0..300),
        ) {
            // Pushed in the given order and reversed, the queue pops the same sequence: by
            // time, then rank, then event.
            let mut q = EventQueue::new();
            let mut r = EventQueue::new();
            for &(t, rank, e) in &evs {
                q.push_ranked(SimTime(t), rank, e);
            }
            for &(t, rank, e) in evs.iter().rev() {
                r.push_ranked(SimTime(t), rank, e);
            }
            let mut expected: Vec<(u64, u32, u32)> = evs.clone();
            expected.sort();
            let mut got = Vec::new();
            let mut again = Vec::new();
            while let Some((t, rank, e, _)) = q.pop_ranked() {
                got.push((t.0, rank, e));
            }
            while let Some((t, rank, e, _)) = r.pop_ranked() {
                again.push((t.0, rank, e));
            }
            prop_assert_eq!(&got, &expected);
            prop_assert_eq!(got, again);
        }

        #[test]
        fn crowded_future_buckets_pop_in_key_order(
            evs in proptest::collection::vec((1024u64..4096, 0u32..2, 0u32..1000), 0..200),
        ) {
            // Beyond the cursor's bucket, a bucket keeps its first entries in order and takes
            // the rest at its back, sorted and merged with them when the cursor gets there.
            let mut q = EventQueue::new();
            for &(t, rank, e) in &evs {
                q.push_ranked(SimTime(t), rank, e);
            }
            let mut expected = evs.clone();
            expected.sort();
            let mut got = Vec::new();
            while let Some((t, rank, e, _)) = q.pop_ranked() {
                got.push((t.0, rank, e));
            }
            prop_assert_eq!(got, expected);
        }

        #[test]
        fn pops_in_time_then_event_order(times in proptest::collection::vec(0u64..50, 0..300)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.push(SimTime(*t), i as u32);
            }
            let mut expected: Vec<(u64, u32)> = times.iter().copied().zip(0..).collect();
            expected.sort();
            let mut got = Vec::new();
            while let Some((t, i)) = q.pop() {
                got.push((t.0, i));
            }
            prop_assert_eq!(got, expected);
        }
    }

    #[test]
    fn a_drained_wheel_takes_events_back_into_their_own_buckets() {
        let mut q: EventQueue<u32> = EventQueue::with_span(1000, 1_000_000);
        for i in 0..100u64 {
            q.push(SimTime(i * 10_000), i as u32);
        }
        q.push(SimTime(50_000_000), 1000);
        let all = q.drain_all();
        assert_eq!(all.len(), 101);
        for &(t, rank, e) in &all {
            q.push_ranked(t, rank, e);
        }
        // Time zero's bucket holds only its own event, not every event before the far one.
        let s0 = q.slot(0);
        assert_eq!(q.len[s0], 1);
        let order: Vec<u32> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        let mut want: Vec<u32> = (0..100).collect();
        want.push(1000);
        assert_eq!(order, want);
    }
}
