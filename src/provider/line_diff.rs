//! A compact unified line diff of two multi-line values, for `drifted_fields`: a plan
//! that shows a one-line edit inside a 330-line script should show that line and a
//! little context, not both scripts whole.

/// Lines of unchanged context shown around each change: one, so that a one-line edit
/// reads in its place in a few plan lines.
const CONTEXT: usize = 1;

/// Beyond this many lines on each side of the changed middle (what is left once the
/// common beginning and end are set aside), the middle is shown as removed and added
/// whole rather than matched line by line: the matching costs the product of the two.
const MATCH_LIMIT: usize = 2_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Same,
    Removed,
    Added,
}

/// `before` -> `after` as a unified diff (`@@ -a,b +c,d @@` headers, lines prefixed
/// with ` `, `-` or `+`), with [`CONTEXT`] lines of context; empty when equal.
pub fn unified(before: &str, after: &str) -> String {
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    let ops = ops(&old, &new);
    hunks(&ops, &old, &new)
}

/// Every line of both sides in order, as kept, removed or added.
fn ops(old: &[&str], new: &[&str]) -> Vec<Op> {
    let prefix = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let (a, b) = (
        &old[prefix..old.len() - suffix],
        &new[prefix..new.len() - suffix],
    );
    let mut ops = vec![Op::Same; prefix];
    if a.len() > MATCH_LIMIT || b.len() > MATCH_LIMIT {
        ops.extend(std::iter::repeat_n(Op::Removed, a.len()));
        ops.extend(std::iter::repeat_n(Op::Added, b.len()));
    } else {
        ops.extend(matched(a, b));
    }
    ops.extend(std::iter::repeat_n(Op::Same, suffix));
    ops
}

/// The longest common subsequence of `a` and `b` as operations.
fn matched(a: &[&str], b: &[&str]) -> Vec<Op> {
    let (n, m) = (a.len(), b.len());
    // lcs[i][j]: the longest common subsequence of a[i..] and b[j..].
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = match a[i] == b[j] {
                true => lcs[i + 1][j + 1] + 1,
                false => lcs[i + 1][j].max(lcs[i][j + 1]),
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut ops = Vec::with_capacity(n + m);
    while i < n || j < m {
        if i < n && j < m && a[i] == b[j] {
            ops.push(Op::Same);
            i += 1;
            j += 1;
        } else if j < m && (i == n || lcs[i][j + 1] >= lcs[i + 1][j]) {
            // Removals before additions where both are as long: `-` then `+`.
            if i < n && lcs[i + 1][j] == lcs[i][j + 1] {
                ops.push(Op::Removed);
                i += 1;
            } else {
                ops.push(Op::Added);
                j += 1;
            }
        } else {
            ops.push(Op::Removed);
            i += 1;
        }
    }
    ops
}

/// The operations grouped into hunks with their context, as text.
fn hunks(ops: &[Op], old: &[&str], new: &[&str]) -> String {
    let changed: Vec<usize> = (0..ops.len()).filter(|&k| ops[k] != Op::Same).collect();
    let Some(&first) = changed.first() else {
        return String::new();
    };
    // Ranges of `ops` to show: each change with its context, overlapping ones merged.
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    let mut start = first.saturating_sub(CONTEXT);
    let mut end = (first + CONTEXT + 1).min(ops.len());
    for &k in &changed[1..] {
        let from = k.saturating_sub(CONTEXT);
        if from <= end {
            end = (k + CONTEXT + 1).min(ops.len());
        } else {
            ranges.push((start, end));
            start = from;
            end = (k + CONTEXT + 1).min(ops.len());
        }
    }
    ranges.push((start, end));

    // Line numbers (0-based) of each side at the start of each op.
    let mut at = Vec::with_capacity(ops.len() + 1);
    let (mut i, mut j) = (0usize, 0usize);
    for op in ops {
        at.push((i, j));
        match op {
            Op::Same => {
                i += 1;
                j += 1;
            }
            Op::Removed => i += 1,
            Op::Added => j += 1,
        }
    }
    at.push((i, j));

    let mut out: Vec<String> = Vec::new();
    for (start, end) in ranges {
        let shown = &ops[start..end];
        let old_len = shown.iter().filter(|o| **o != Op::Added).count();
        let new_len = shown.iter().filter(|o| **o != Op::Removed).count();
        let (i0, j0) = at[start];
        out.push(format!("@@ -{},{old_len} +{},{new_len} @@", i0 + 1, j0 + 1));
        for (k, op) in shown.iter().enumerate() {
            let (i, j) = at[start + k];
            out.push(match op {
                Op::Same => format!(" {}", old[i]),
                Op::Removed => format!("-{}", old[i]),
                Op::Added => format!("+{}", new[j]),
            });
        }
    }
    out.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> Vec<String> {
        (1..=n).map(|i| format!("line {i}")).collect()
    }

    #[test]
    fn one_edited_line_shows_with_one_line_of_context() {
        let before = numbered(330).join("\n");
        let mut lines = numbered(330);
        lines[119] = "line 120, edited".to_string();
        let after = lines.join("\n");
        assert_eq!(
            unified(&before, &after),
            "@@ -119,3 +119,3 @@\n line 119\n-line 120\n+line 120, edited\n line 121"
        );
    }

    #[test]
    fn equal_values_have_no_diff() {
        assert_eq!(unified("a\nb", "a\nb"), "");
    }

    #[test]
    fn distant_changes_make_two_hunks_and_close_ones_one() {
        let before = numbered(20).join("\n");
        let mut lines = numbered(20);
        lines[2] = "x".to_string();
        lines[15] = "y".to_string();
        let text = unified(&before, &lines.join("\n"));
        assert_eq!(text.matches("@@ -").count(), 2, "{text}");
        let mut lines = numbered(20);
        lines[2] = "x".to_string();
        lines[4] = "y".to_string();
        let text = unified(&before, &lines.join("\n"));
        assert_eq!(text.matches("@@ -").count(), 1, "{text}");
    }

    #[test]
    fn added_and_removed_lines_at_the_ends() {
        assert_eq!(unified("a\nb", "a\nb\nc"), "@@ -2,1 +2,2 @@\n b\n+c");
        assert_eq!(unified("a\nb\nc", "b\nc"), "@@ -1,2 +1,1 @@\n-a\n b");
        assert_eq!(unified("", "a"), "@@ -1,0 +1,1 @@\n+a");
    }
}
