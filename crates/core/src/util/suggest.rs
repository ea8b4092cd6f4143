//! "Did you mean ...?": the closest known name to one that was not found.

/// The closest of `known` to `name` (Levenshtein distance over characters),
/// if it is close enough to be a likely typo: at most a third of the longer
/// name's length, and at least one edit. Ties go to the first in `known`.
pub(crate) fn closest<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let want: Vec<char> = name.chars().collect();
    let mut best: Option<(usize, &str)> = None;
    for k in known {
        let len = k.chars().count();
        let limit = (len.max(want.len()) / 3).max(1);
        let limit = best.map_or(limit, |(d, _)| limit.min(d.saturating_sub(1)));
        if len.abs_diff(want.len()) > limit || k == name {
            continue;
        }
        if let Some(d) = distance_within(&want, k, limit) {
            best = Some((d, k));
            if d == 1 {
                break;
            }
        }
    }
    best.map(|(_, k)| k)
}

/// ` (did you mean `X`?)`, or nothing.
pub fn hint<'a>(name: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    closest(name, known)
        .map(|k| format!(" (did you mean `{k}`?)"))
        .unwrap_or_default()
}

/// The edit distance between `a` and `b` when it is at most `limit`: the
/// optimal string alignment distance, so a swap of two neighbours
/// (`agnet`) costs one edit, as people make it.
fn distance_within(a: &[char], b: &str, limit: usize) -> Option<usize> {
    let b: Vec<char> = b.chars().collect();
    let mut before: Vec<usize> = vec![0; b.len() + 1];
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        let mut row_min = cur[0];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            let mut d = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
            if i > 0 && j > 0 && *ca == b[j - 1] && a[i - 1] == *cb {
                d = d.min(before[j - 1] + 1);
            }
            cur[j + 1] = d;
            row_min = row_min.min(d);
        }
        if row_min > limit {
            return None;
        }
        std::mem::swap(&mut before, &mut prev);
        std::mem::swap(&mut prev, &mut cur);
    }
    let d = prev[b.len()];
    (d <= limit).then_some(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_are_found_and_strangers_are_not() {
        let known = ["gemini-latest", "gemini-2025-07", "opencode", "crush"];
        assert_eq!(closest("gemini-lates", known), Some("gemini-latest"));
        assert_eq!(closest("opnecode", known), Some("opencode"));
        // A swap of neighbours is one edit, even in a short name.
        assert_eq!(closest("agnet", ["agent", "model"]), Some("agent"));
        assert_eq!(closest("crus", known), Some("crush"));
        assert_eq!(closest("qwen", known), None);
        assert_eq!(closest("crush", known), None, "an exact name is not a typo");
        assert_eq!(
            hint("sesion-1", ["session-1"]),
            " (did you mean `session-1`?)"
        );
        assert_eq!(hint("zzz", ["session-1"]), "");
    }

    #[test]
    fn the_nearest_wins() {
        assert_eq!(closest("abcd", ["abxy", "abcx"]), Some("abcx"));
    }
}
