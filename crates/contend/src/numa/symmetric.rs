//! Sums over ordered tuples of distinct nodes, the inner sums of
//! Nikolopoulos Eq. 7–9, without enumerating the tuples.
//!
//! Eq. 8 sums, over every ordered m-tuple (k_1, …, k_m) of distinct remote
//! nodes, the product R'_{k_1 i} ⋯ R'_{k_m i} divided by denominators that
//! depend only on the position in the tuple, never on which node stands
//! there. The denominators therefore factor out, and what is left is
//!
//! ```text
//!   O_m = Σ_{ordered distinct (k_1..k_m)} x_{k_1} ⋯ x_{k_m} = m! · e_m(x)
//! ```
//!
//! where e_m is the m-th elementary symmetric polynomial of the x. Adding
//! one value x at a time, e_m ← e_m + x · e_{m−1}, so
//! O_m ← O_m + m · x · O_{m−1}: O(N²) for all m = 0..N instead of the
//! N!/(N−m)! tuples. With x_k = R'_{ki} / (L_i + R_i) ≤ 1 and Σ x ≤ 1,
//! every O_m lies in [0, 1] (O_m ≤ (Σ x)^m), every term is non-negative
//! (no cancellation), so the sums are exact to rounding even for 64 nodes,
//! where the products of raw counts (10¹² to the 63rd power) would
//! overflow.

/// `O_m = m! · e_m(x)` for m = 0..=`max_m`: the sum over all ordered
/// m-tuples of distinct indices of the product of the `x` they pick
/// (O_0 = 1; O_m = 0 for m > `x.len()`). `x` should be non-negative.
pub fn ordered_sums(x: &[f64], max_m: usize) -> Vec<f64> {
    let mut o = vec![0.0; max_m + 1];
    o[0] = 1.0;
    for (seen, &v) in x.iter().enumerate() {
        if v == 0.0 {
            continue;
        }
        // Highest m first, so O_{m−1} is still the value before v.
        for m in (1..=max_m.min(seen + 1)).rev() {
            o[m] += m as f64 * v * o[m - 1];
        }
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ordered sums by enumerating every tuple.
    fn brute(x: &[f64], m: usize) -> f64 {
        fn go(x: &[f64], m: usize, used: &mut Vec<bool>) -> f64 {
            if m == 0 {
                return 1.0;
            }
            let mut s = 0.0;
            for k in 0..x.len() {
                if !used[k] {
                    used[k] = true;
                    s += x[k] * go(x, m - 1, used);
                    used[k] = false;
                }
            }
            s
        }
        go(x, m, &mut vec![false; x.len()])
    }

    #[test]
    fn small_cases_by_hand() {
        // x = (a, b): O_1 = a + b, O_2 = ab + ba = 2ab.
        let o = ordered_sums(&[0.2, 0.3], 3);
        assert!((o[1] - 0.5).abs() < 1e-15);
        assert!((o[2] - 0.12).abs() < 1e-15);
        assert_eq!(o[3], 0.0);
        // Three values 0.1, 0.2, 0.3: O_2 = 2(0.02 + 0.03 + 0.06) = 0.22,
        // O_3 = 3! · 0.006 = 0.036.
        let o = ordered_sums(&[0.1, 0.2, 0.3], 3);
        assert!((o[2] - 0.22).abs() < 1e-15);
        assert!((o[3] - 0.036).abs() < 1e-15);
    }

    #[test]
    fn agrees_with_enumeration() {
        let x = [0.05, 0.0, 0.12, 0.3, 0.01, 0.2, 0.07];
        let o = ordered_sums(&x, x.len());
        for (m, &got) in o.iter().enumerate() {
            let b = brute(&x, m);
            assert!(
                (got - b).abs() <= 1e-12 * b.max(1e-300),
                "m={m}: {got} vs {b}"
            );
        }
    }

    #[test]
    fn sixty_three_nodes_stay_finite() {
        let x = vec![1.0 / 64.0; 63];
        let o = ordered_sums(&x, 64);
        assert!(o.iter().all(|v| v.is_finite() && *v >= 0.0 && *v <= 1.0));
        // O_63 = 63! / 64^63.
        let expected: f64 = (1..=63).map(|k| k as f64 / 64.0).product();
        assert!((o[63] / expected - 1.0).abs() < 1e-9);
    }
}
