//! An exact linearizability check for one broker set's register when the order of its
//! writes is known — the log fixes it, so every state the register ever held has a version
//! (its position in the committed sequence). Each operation can only have taken effect at
//! the versions whose state equals what it returned (a read) or produced (a write), and
//! real time constrains them: if `a` completed before `b` was invoked, `a`'s version is at
//! most `b`'s, strictly below when `b` is a write (a read cannot see a write not yet
//! invoked). Writes the clients never saw acknowledged (the controller's own elections)
//! bind nothing. Greedy is exact here: taking each operation, in completion order, at the
//! smallest version its predecessors allow leaves every later operation the most room.

/// One operation: its interval and the versions it may have taken effect at (ascending).
#[derive(Debug, Clone)]
pub(in super::super) struct LinOp {
    pub(in super::super) invoke: u64,
    pub(in super::super) complete: u64,
    pub(in super::super) versions: Vec<usize>,
    pub(in super::super) write: bool,
    /// The caller's index of the operation.
    pub(in super::super) label: usize,
}

/// Why the history is not linearizable: the operation that cannot be placed, and the
/// version its predecessors force it to reach at least.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in super::super) struct NotLinear {
    pub(in super::super) label: usize,
    pub(in super::super) at_least: usize,
    /// The predecessor that forced the bound.
    pub(in super::super) forced_by: usize,
}

/// Checks `ops`.
pub(in super::super) fn check(ops: &[LinOp]) -> Result<(), NotLinear> {
    let mut order: Vec<&LinOp> = ops.iter().collect();
    order.sort_by_key(|o| (o.complete, o.invoke));
    // (completion time, assigned version, label), in completion order, with a running max.
    let mut placed: Vec<(u64, usize, usize)> = Vec::with_capacity(ops.len());
    let mut best: Vec<(usize, usize)> = Vec::with_capacity(ops.len());
    for op in order {
        let before = placed.partition_point(|&(complete, _, _)| complete < op.invoke);
        let bound = before.checked_sub(1).map(|i| best[i]);
        let (lo, by) = match bound {
            None => (0, usize::MAX),
            Some((v, by)) if op.write => (v + 1, by),
            Some((v, by)) => (v, by),
        };
        let Some(&v) = op.versions.iter().find(|&&v| v >= lo) else {
            return Err(NotLinear {
                label: op.label,
                at_least: lo,
                forced_by: by,
            });
        };
        let running = match best.last() {
            Some(&(m, mby)) if m >= v => (m, mby),
            _ => (v, op.label),
        };
        placed.push((op.complete, v, op.label));
        best.push(running);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(label: usize, invoke: u64, complete: u64, versions: &[usize], write: bool) -> LinOp {
        LinOp {
            invoke,
            complete,
            versions: versions.to_vec(),
            write,
            label,
        }
    }

    #[test]
    fn a_stale_read_after_a_newer_one_is_caught() {
        let ok = [op(0, 0, 10, &[1], false), op(1, 20, 30, &[2], false)];
        assert_eq!(check(&ok), Ok(()));
        let stale = [op(0, 0, 10, &[2], false), op(1, 20, 30, &[1], false)];
        assert_eq!(check(&stale).unwrap_err().label, 1);
        // Overlapping reads may see either order.
        let overlap = [op(0, 0, 25, &[2], false), op(1, 20, 30, &[1], false)];
        assert_eq!(check(&overlap), Ok(()));
    }

    #[test]
    fn a_read_cannot_see_a_write_invoked_after_it_and_must_see_an_acked_one() {
        let early = [op(0, 0, 10, &[3], false), op(1, 20, 30, &[3], true)];
        assert!(check(&early).is_err());
        let missed = [op(0, 0, 10, &[3], true), op(1, 20, 30, &[2], false)];
        assert!(check(&missed).is_err());
        let seen = [op(0, 0, 10, &[3], true), op(1, 20, 30, &[3, 5], false)];
        assert_eq!(check(&seen), Ok(()));
    }

    #[test]
    fn a_repeated_state_takes_the_smallest_version_that_fits() {
        let ops = [
            op(0, 0, 10, &[1, 4], false),
            op(1, 12, 14, &[2], false),
            op(2, 20, 30, &[1, 4], false),
        ];
        assert_eq!(check(&ops), Ok(()));
    }
}
