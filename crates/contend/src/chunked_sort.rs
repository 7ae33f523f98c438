//! A counting sort made in chunks side by side, for the analyses that
//! group a large array by a small key on both cores (the lock critical
//! path's wake events by lock, the SCI's durations by block): each chunk
//! counts its items per key, [`chunk_starts`] gives every chunk its first
//! position per key after the chunks before it (so the items of one key
//! keep the chunks' order, as one pass would give them), and each chunk
//! writes its own positions of the one output array through
//! [`DisjointWrites`]. Also the branch-free pick of the least head of a
//! k-way merge over a few runs ([`least_head`]), and the search of a
//! sorted list from a position near the answer ([`partition_point_near`]).

use std::marker::PhantomData;

/// Each key's first position in the output (`keys + 1` entries, the last
/// the total) and each chunk's first position per key, from each chunk's
/// count per key (`counts[c][k]`, every list `keys` long).
pub(crate) fn chunk_starts(counts: &[Vec<usize>], keys: usize) -> (Vec<usize>, Vec<Vec<usize>>) {
    let mut starts = vec![0usize; keys + 1];
    let mut firsts = vec![vec![0usize; keys]; counts.len()];
    for k in 0..keys {
        let mut at = starts[k];
        for (c, first) in counts.iter().zip(&mut firsts) {
            first[k] = at;
            at += c[k];
        }
        starts[k + 1] = at;
    }
    (starts, firsts)
}

/// Where a pass over `n` items (events) that fills a table of `table`
/// entries per part splits them to run side by side: `parts + 1` bounds,
/// the first 0 and the last `n`, one part per core (at most 8), or one
/// part when the tables would be more than one entry per 16 items.
pub(crate) fn part_bounds(n: usize, table: usize) -> Vec<usize> {
    let parts = if table.saturating_mul(16) <= n {
        rayon::current_num_threads().clamp(1, 8)
    } else {
        1
    };
    (0..=parts).map(|k| k * n / parts).collect()
}

/// Writes into one slice from several threads at positions no two of them
/// share (each chunk its own, from [`chunk_starts`]).
pub(crate) struct DisjointWrites<'a, T> {
    ptr: *mut T,
    len: usize,
    _slice: PhantomData<&'a mut [T]>,
}

// SAFETY: the slice is borrowed mutably for 'a and written only through
// `write`, whose callers keep to positions no other thread writes.
unsafe impl<T: Send> Sync for DisjointWrites<'_, T> {}

impl<'a, T> DisjointWrites<'a, T> {
    /// Takes `out` for the writes.
    pub(crate) fn new(out: &'a mut [T]) -> Self {
        DisjointWrites {
            ptr: out.as_mut_ptr(),
            len: out.len(),
            _slice: PhantomData,
        }
    }

    /// Writes `value` at `i` (`i` below the slice's length; checked).
    ///
    /// # Safety
    ///
    /// No other thread writes position `i` while `self` lives.
    pub(crate) unsafe fn write(&self, i: usize, value: T) {
        assert!(i < self.len, "write at {i} past {}", self.len);
        // SAFETY: in bounds (checked); the caller keeps `i` to itself.
        unsafe { self.ptr.add(i).write(value) }
    }
}

/// An exhausted run's head for [`least_head`]: greater than every other.
pub(crate) const EXHAUSTED: u64 = u64::MAX;

/// Low bits of a merge head that name its run ([`merge_head`]).
const RUN_BITS: u32 = 4;

/// Runs a merge head can name ([`merge_head`]): 16.
pub(crate) const MERGE_HEAD_RUNS: usize = 1 << RUN_BITS;

/// The head of run `run` at key `key` for [`least_head`]: `key << 4 |
/// run` in one word, so that equal keys go to the lower run (the order of
/// a stable merge) and the least head names its run. `None` when the key
/// is 2^60 − 1 or more (36 years of ns: a clock gone wrong) or the run
/// [`MERGE_HEAD_RUNS`] or more: the caller merges another way.
#[inline]
pub(crate) fn merge_head(key: u64, run: usize) -> Option<u64> {
    (key < (1 << (64 - RUN_BITS)) - 1 && run < MERGE_HEAD_RUNS)
        .then_some((key << RUN_BITS) | run as u64)
}

/// The least of a few merge heads and its run, without a branch per head
/// (which head wins is as good as random in a merge of interleaved runs,
/// so a compare-and-branch mispredicts about half the time): the k-way
/// merges of the lock analysis over at most 16 runs (the critical path's
/// wake lists, the ownership changes' threads), each head made by
/// [`merge_head`], an exhausted run's [`EXHAUSTED`] (the run given with
/// it is then meaningless). `heads` is not empty. One word per head: a
/// compare and a conditional move each (a (key, run) pair of two words
/// took three of each).
#[inline]
pub(crate) fn least_head(heads: &[u64]) -> (usize, u64) {
    let mut least = heads[0];
    for &h in &heads[1..] {
        least = least.min(h);
    }
    ((least & (MERGE_HEAD_RUNS as u64 - 1)) as usize, least)
}

/// `list.partition_point(pred)` (`pred` true on a prefix of `list`, false
/// after it) searched from `guess`, a position near the answer (the
/// answer of the previous of a series of lookups at nearby keys): steps of
/// 1, 2, 4, … away from it in the direction `pred` gives there, then a
/// binary search of the last step; O(log distance) reads instead of
/// O(log len), and they are near one another. Any `guess` gives the same
/// answer, past the end included.
pub(crate) fn partition_point_near<T>(
    list: &[T],
    guess: usize,
    pred: impl Fn(&T) -> bool,
) -> usize {
    let len = list.len();
    let k = guess.min(len);
    if k > 0 && !pred(&list[k - 1]) {
        // The answer is below k: pred fails from lo - 1 up.
        let (mut lo, mut step) = (k - 1, 1);
        while lo > 0 && !pred(&list[lo - 1]) {
            lo = lo.saturating_sub(step);
            step *= 2;
        }
        lo + list[lo..k].partition_point(pred)
    } else if k < len && pred(&list[k]) {
        // The answer is above k: pred holds up to k.
        let (mut hi, mut step) = (k + 1, 1);
        while hi < len && pred(&list[hi]) {
            hi = (hi + step).min(len);
            step *= 2;
        }
        k + list[k..hi].partition_point(pred)
    } else {
        k
    }
}

/// Contiguous groups of threads (index ranges) of about equal `work`
/// each (events, executions), at most `cores`, for passes that go over
/// groups of whole threads side by side (the SCI's counting passes, the
/// lock tables' sums); one group when `per_group` (the entries of a table
/// each group keeps: blocks, locks × sites) would outweigh the work.
pub(crate) fn thread_groups(
    work: &[usize],
    per_group: usize,
    cores: usize,
) -> Vec<std::ops::Range<usize>> {
    let total: usize = work.iter().sum();
    let groups = if per_group.saturating_mul(cores) <= total / 4 {
        cores.min(work.len()).max(1)
    } else {
        1
    };
    let mut out = Vec::with_capacity(groups);
    let (mut start, mut acc) = (0usize, 0usize);
    for (k, &w) in work.iter().enumerate() {
        acc += w;
        // Close the group once it holds its share of the work.
        if out.len() + 1 < groups && acc * groups >= total * (out.len() + 1) {
            out.push(start..k + 1);
            start = k + 1;
        }
    }
    out.push(start..work.len());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The least head is the least key, at equal keys the lower run, and
    /// names its run; a key or run a head cannot hold gives none.
    #[test]
    fn the_least_merge_head_is_the_least_key_then_the_lower_run() {
        let h = |key, run| merge_head(key, run).unwrap();
        let heads = [h(7, 0), h(5, 1), EXHAUSTED, h(5, 3), h(9, 4)];
        assert_eq!(least_head(&heads), (1, h(5, 1)));
        // the run comes from the head, not from its place in the slice
        assert_eq!(least_head(&heads[2..]), (3, h(5, 3)));
        assert_eq!(least_head(&[EXHAUSTED]).1, EXHAUSTED);
        let last = (1u64 << 60) - 2;
        assert_eq!(least_head(&[h(last, 15), EXHAUSTED]), (15, h(last, 15)));
        assert!(h(last, 15) < EXHAUSTED);
        assert_eq!(merge_head(last + 1, 0), None);
        assert_eq!(merge_head(u64::MAX, 0), None);
        assert_eq!(merge_head(0, MERGE_HEAD_RUNS), None);
    }

    /// From every guess, below, at and past the answer and past the end,
    /// the search gives the whole list's partition point, at every
    /// threshold (sorted lists with runs of equal values, empty and short
    /// ones).
    #[test]
    fn partition_point_near_finds_it_from_any_guess() {
        let mut rng = crate::TestRng(0x2545_f491_4f6c_dd1d);
        for len in [0usize, 1, 2, 3, 7, 64, 200] {
            let mut list: Vec<u64> = (0..len).map(|_| rng.below(50)).collect();
            list.sort_unstable();
            for t in 0..52 {
                let pred = |v: &u64| *v <= t;
                let want = list.partition_point(pred);
                for guess in 0..=len + 2 {
                    assert_eq!(
                        partition_point_near(&list, guess, pred),
                        want,
                        "{list:?} t {t} guess {guess}"
                    );
                }
            }
        }
    }

    /// Worked by hand: chunk 0 has 2 items of key 0 and 1 of key 1, chunk
    /// 1 has 1 of key 0 and 3 of key 1: key 0 at 0..3 (chunk 0 at 0,
    /// chunk 1 at 2), key 1 at 3..7 (chunk 0 at 3, chunk 1 at 4).
    #[test]
    fn chunks_follow_each_other_within_a_key() {
        let (starts, firsts) = chunk_starts(&[vec![2, 1], vec![1, 3]], 2);
        assert_eq!(starts, vec![0, 3, 7]);
        assert_eq!(firsts, vec![vec![0, 3], vec![2, 4]]);
        assert_eq!(chunk_starts(&[], 2), (vec![0, 0, 0], vec![]));
    }

    /// Groups are contiguous, cover every thread once, and split the work
    /// near its shares; a large table per group for little work makes one group.
    #[test]
    fn thread_groups_split_the_work_in_contiguous_shares() {
        assert_eq!(thread_groups(&[10, 10, 10, 10], 1, 2), vec![0..2, 2..4]);
        assert_eq!(thread_groups(&[30, 1, 1, 8], 1, 2), vec![0..1, 1..4]);
        assert_eq!(thread_groups(&[5, 5, 5], 1, 3), vec![0..1, 1..2, 2..3]);
        assert_eq!(thread_groups(&[10, 10], 100, 2), vec![0..2]);
        assert_eq!(thread_groups(&[], 1, 2), vec![0..0]);
        assert_eq!(thread_groups(&[0, 0, 7], 1, 2), vec![0..3]);
    }
}
