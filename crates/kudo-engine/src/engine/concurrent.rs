//! Independent cluster requests sent together: the reads of a refresh, the dry-runs of
//! a plan, the objects of one task. The cluster's client bounds how many are in flight
//! (the provider's `max_requests_in_flight`); this bounds how many futures wait for a
//! slot, so a 10,000-object instance does not hold 10,000 of them at once.

use std::future::Future;

use futures::StreamExt;
use futures::stream::FuturesOrdered;

/// Futures started ahead of the ones still waiting for an answer: more than any sensible
/// `max_requests_in_flight`, so the client's bound is the one that counts.
pub(crate) const PIPELINE: usize = 64;

/// `work` for every item, concurrently, results in the items' order. After the first
/// failure no further item starts (those already started finish), so the outcome is
/// that of a loop stopping at its first error, only sooner; the error returned is the
/// first one in the items' order among those that ran.
pub(crate) async fn each_until_failure<T, R, E, Fut>(
    items: impl IntoIterator<Item = T>,
    work: impl Fn(T) -> Fut,
) -> Result<Vec<R>, E>
where
    Fut: Future<Output = Result<R, E>>,
{
    let mut items = items.into_iter();
    let mut pending = FuturesOrdered::new();
    let mut done = Vec::new();
    let mut failure = None;
    loop {
        while failure.is_none() && pending.len() < PIPELINE {
            match items.next() {
                Some(item) => pending.push_back(work(item)),
                None => break,
            }
        }
        match pending.next().await {
            Some(Ok(r)) => done.push(r),
            Some(Err(e)) => {
                failure.get_or_insert(e);
            }
            None => break,
        }
    }
    match failure {
        Some(e) => Err(e),
        None => Ok(done),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test]
    async fn results_keep_the_items_order() {
        let out: Result<Vec<usize>, ()> = each_until_failure(0..200, |i| async move {
            // Later items finish first.
            tokio::task::yield_now().await;
            if i % 2 == 0 {
                tokio::task::yield_now().await;
            }
            Ok(i * 2)
        })
        .await;
        assert_eq!(out, Ok((0..200).map(|i| i * 2).collect()));
    }

    #[tokio::test]
    async fn nothing_starts_after_a_failure() {
        let started = AtomicUsize::new(0);
        let out: Result<Vec<usize>, String> = each_until_failure(0..1000, |i| {
            started.fetch_add(1, Ordering::SeqCst);
            async move {
                if i == 3 {
                    Err(format!("item {i} failed"))
                } else {
                    Ok(i)
                }
            }
        })
        .await;
        assert_eq!(out, Err("item 3 failed".to_string()));
        // The first window started, and one more item for each that finished before
        // the failure was seen; nothing after it.
        assert!(
            started.load(Ordering::SeqCst) <= PIPELINE + 3,
            "{started:?}"
        );
    }
}
