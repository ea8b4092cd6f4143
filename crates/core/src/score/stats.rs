//! Small-sample statistics for honest scores: Wilson intervals for
//! proportions, a seeded bootstrap for the median, and seeded stratified
//! folds. Pure and deterministic: the same inputs and seed give the same
//! numbers on every machine and for every `--jobs`.

use rand_core::{Rng, SeedableRng};
use rand_xorshift::XorShiftRng;

/// The two-sided 95% normal quantile.
const Z95: f64 = 1.959_963_984_540_054;

/// Bootstrap resamples for a median interval.
pub const BOOTSTRAP_RESAMPLES: usize = 2000;

/// Wilson score 95% interval of `successes` out of `n`; `None` when `n` is 0.
///
/// Chosen over the normal approximation because it stays inside [0, 1] and
/// is sensible at 0/n and n/n, which small labelled sets hit all the time.
pub fn wilson(successes: u64, n: u64) -> Option<(f64, f64)> {
    if n == 0 {
        return None;
    }
    let n_f = n as f64;
    let p = successes as f64 / n_f;
    let z2 = Z95 * Z95;
    let denom = 1.0 + z2 / n_f;
    let centre = (p + z2 / (2.0 * n_f)) / denom;
    let half = Z95 * (p * (1.0 - p) / n_f + z2 / (4.0 * n_f * n_f)).sqrt() / denom;
    // Exact ends at 0/n and n/n (rounding would leave 1e-17 off).
    let lo = if successes == 0 {
        0.0
    } else {
        (centre - half).max(0.0)
    };
    let hi = if successes == n {
        1.0
    } else {
        (centre + half).min(1.0)
    };
    Some((lo, hi))
}

/// A deterministic random source for resampling and fold assignment.
///
/// XorShift from `rand_xorshift`: its output for a seed is fixed by the
/// algorithm, so results do not move when a dependency is upgraded.
pub struct Seeded(XorShiftRng);

impl Seeded {
    /// A generator for `seed`; `stream` separates independent uses of one seed.
    pub fn new(seed: u64, stream: u64) -> Seeded {
        Seeded(XorShiftRng::seed_from_u64(
            seed ^ stream.wrapping_mul(0x9E37_79B9_7F4A_7C15),
        ))
    }

    /// A uniform index in `0..n` (`n` > 0), without modulo bias worth naming
    /// (Lemire's multiply-shift on 64 bits).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.0.next_u64() as u128 * n as u128) >> 64) as usize
    }

    /// Shuffle in place (Fisher-Yates).
    pub fn shuffle<T>(&mut self, items: &mut [T]) {
        for i in (1..items.len()).rev() {
            let j = self.below(i + 1);
            items.swap(i, j);
        }
    }
}

/// Median of sorted values (mean of the middle two for an even count).
pub fn median(sorted: &[i64]) -> Option<f64> {
    let n = sorted.len();
    match n {
        0 => None,
        _ if n % 2 == 1 => Some(sorted[n / 2] as f64),
        _ => Some((sorted[n / 2 - 1] + sorted[n / 2]) as f64 / 2.0),
    }
}

/// [`median`] of values in any order, which it reorders: the middle order
/// statistics are selected, not sorted for (a sweep's choice takes the
/// median of every configuration's turns-to-detection, many times over).
pub fn median_unsorted(values: &mut [i64]) -> Option<f64> {
    let n = values.len();
    if n == 0 {
        return None;
    }
    let (below, &mut upper, _) = values.select_nth_unstable(n / 2);
    if n % 2 == 1 {
        return Some(upper as f64);
    }
    let lower = *below.iter().max().expect("an even count has a lower half");
    Some((lower + upper) as f64 / 2.0)
}

/// Percentile bootstrap 95% interval of the median of `values`, resampling
/// the values (one per detected session) with replacement. `None` for no values.
pub fn bootstrap_median(values: &[i64], seed: u64) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    let mut rng = Seeded::new(seed, 0xB007);
    let mut sample = vec![0i64; values.len()];
    let mut medians: Vec<f64> = Vec::with_capacity(BOOTSTRAP_RESAMPLES);
    for _ in 0..BOOTSTRAP_RESAMPLES {
        for s in sample.iter_mut() {
            *s = values[rng.below(values.len())];
        }
        medians.push(median_unsorted(&mut sample).expect("non-empty"));
    }
    medians.sort_by(f64::total_cmp);
    let at = |q: f64| medians[((q * (BOOTSTRAP_RESAMPLES - 1) as f64).round()) as usize];
    Some((at(0.025), at(0.975)))
}

/// Assign each labelled session to one of `k` folds, stratified: loops and
/// clean sessions are shuffled separately (seeded) and dealt round-robin, so
/// every fold gets its share of each. `is_loop[i]` describes item i; returns
/// the fold of each item.
pub fn stratified_folds(is_loop: &[bool], k: usize, seed: u64) -> Vec<usize> {
    assert!(k > 0, "at least one fold");
    let mut rng = Seeded::new(seed, 0xF01D);
    let mut fold = vec![0usize; is_loop.len()];
    let mut next = 0usize;
    for class in [true, false] {
        let mut members: Vec<usize> = (0..is_loop.len())
            .filter(|&i| is_loop[i] == class)
            .collect();
        rng.shuffle(&mut members);
        for m in members {
            fold[m] = next % k;
            next += 1;
        }
    }
    fold
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// Selecting the middle gives the median of the sorted values.
        #[test]
        fn selected_median_is_the_sorted_median(mut v in proptest::collection::vec(-50i64..50, 0..40)) {
            let mut sorted = v.clone();
            sorted.sort_unstable();
            proptest::prop_assert_eq!(median_unsorted(&mut v), median(&sorted));
        }
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-5
    }

    #[test]
    fn wilson_known_values() {
        // 0/10, 10/10 and 50/100 are textbook values (Newcombe 1998, table I
        // style; R's prop.test(correct = FALSE)); 6/11 is the example.
        let (lo, hi) = wilson(6, 11).unwrap();
        assert!(close(lo, 0.2801), "{lo}");
        assert!(close(hi, 0.7873), "{hi}");
        let (lo, hi) = wilson(1, 11).unwrap();
        assert!(close(lo, 0.0162), "{lo}");
        assert!(close(hi, 0.3774), "{hi}");
        let (lo, hi) = wilson(0, 10).unwrap();
        assert_eq!(lo, 0.0);
        assert!(close(hi, 0.2775), "{hi}");
        let (lo, hi) = wilson(10, 10).unwrap();
        assert!(close(lo, 0.7225), "{lo}");
        assert_eq!(hi, 1.0);
        let (lo, hi) = wilson(50, 100).unwrap();
        assert!(close(lo, 0.4038), "{lo}");
        assert!(close(hi, 0.5962), "{hi}");
        assert_eq!(wilson(0, 0), None);
    }

    #[test]
    fn bootstrap_is_seeded_and_brackets_the_median() {
        let v = [1, 2, 2, 3, 3, 3, 4, 9, 12, 30];
        let a = bootstrap_median(&v, 1).unwrap();
        assert_eq!(a, bootstrap_median(&v, 1).unwrap());
        assert!(a.0 <= 3.0 && 3.0 <= a.1, "{a:?}");
        assert!(a.0 >= 1.0 && a.1 <= 30.0);
        // One value: no spread at all.
        assert_eq!(bootstrap_median(&[7], 3), Some((7.0, 7.0)));
        assert_eq!(bootstrap_median(&[], 3), None);
        // A different seed draws different resamples (the interval of a
        // skewed sample is not a fixed point).
        let skewed: Vec<i64> = (0..15).map(|i| i * i).collect();
        let runs: Vec<_> = (0..8).map(|s| bootstrap_median(&skewed, s)).collect();
        assert!(runs.iter().any(|r| r != &runs[0]));
    }

    #[test]
    fn folds_are_stratified_balanced_and_seeded() {
        let is_loop: Vec<bool> = (0..53).map(|i| i % 5 == 0).collect(); // 11 loops, 42 clean
        let f = stratified_folds(&is_loop, 5, 7);
        assert_eq!(f, stratified_folds(&is_loop, 5, 7));
        assert_ne!(f, stratified_folds(&is_loop, 5, 8));
        for k in 0..5 {
            let loops = (0..53).filter(|&i| f[i] == k && is_loop[i]).count();
            let all = (0..53).filter(|&i| f[i] == k).count();
            assert!((2..=3).contains(&loops), "fold {k}: {loops} loops");
            assert!((10..=11).contains(&all), "fold {k}: {all} sessions");
        }
    }

    #[test]
    fn below_stays_in_range() {
        let mut r = Seeded::new(42, 0);
        let mut seen = [0usize; 7];
        for _ in 0..7000 {
            seen[r.below(7)] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
    }
}
