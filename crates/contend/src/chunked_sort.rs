//! A counting sort made in chunks side by side, for the analyses that
//! group a large array by a small key on both cores (the lock critical
//! path's wake events by lock, the SCI's durations by block): each chunk
//! counts its items per key, [`chunk_starts`] gives every chunk its first
//! position per key after the chunks before it (so the items of one key
//! keep the chunks' order, as one pass would give them), and each chunk
//! writes its own positions of the one output array through
//! [`DisjointWrites`]. Also the branch-free pick of the least head of a
//! k-way merge over a few runs ([`least_head`]).

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
pub(crate) const EXHAUSTED: u128 = u128::MAX;

/// The head of run `run` at key `key` for [`least_head`]: `key << 32 |
/// run`, so that equal keys go to the lower run (the order of a stable
/// merge).
#[inline]
pub(crate) fn merge_head(key: u64, run: usize) -> u128 {
    (u128::from(key) << 32) | run as u128
}

/// The least of a few merge heads and its position, without a branch per
/// head (which head wins is as good as random in a merge of interleaved
/// runs, so a compare-and-branch mispredicts about half the time): the
/// k-way merges of the lock analysis over at most 16 runs (the critical
/// path's wake lists, the ownership changes' threads), each head made by
/// [`merge_head`], an exhausted run's [`EXHAUSTED`]. `heads` is not
/// empty.
#[inline]
pub(crate) fn least_head(heads: &[u128]) -> (usize, u128) {
    let (mut best, mut least) = (0, heads[0]);
    for (r, &h) in heads.iter().enumerate().skip(1) {
        let less = h < least;
        best = if less { r } else { best };
        least = if less { h } else { least };
    }
    (best, least)
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
