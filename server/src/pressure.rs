//! Backpressure: what the process has queued and not yet written, the log writer's backlog and
//! the messages for the client, and the one wait that keeps it bounded.
//!
//! A task queues its records and announcements and goes on without waiting for the disk (that is
//! the point of the group commit), and the client reads the notifications when it can. Ten
//! thousand tasks released at once can then run far ahead of both, and what they queued piles up
//! in memory. So before each model turn a task calls [`room`]: at once while both queues are
//! under their bounds, otherwise it waits until they are back under half of them.

use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::Notify;

/// A count of queued bytes, with its peak.
#[derive(Debug)]
pub struct Gauge {
    now: AtomicU64,
    peak: AtomicU64,
    /// Past this, tasks wait in [`room`] until the gauge is under half of it.
    high: u64,
}

impl Gauge {
    const fn new(high: u64) -> Self {
        Gauge {
            now: AtomicU64::new(0),
            peak: AtomicU64::new(0),
            high,
        }
    }

    pub fn add(&self, n: u64) {
        let now = self.now.fetch_add(n, Ordering::Relaxed) + n;
        self.peak.fetch_max(now, Ordering::Relaxed);
    }

    /// Takes `n` off, waking the tasks that wait for room when it went under the low mark.
    pub fn sub(&self, n: u64) {
        let before = self.now.fetch_sub(n, Ordering::Relaxed);
        if before >= self.high / 2 && before.saturating_sub(n) < self.high / 2 {
            DRAINED.notify_waiters();
        }
    }

    pub fn now(&self) -> u64 {
        self.now.load(Ordering::Relaxed)
    }

    pub fn peak(&self) -> u64 {
        self.peak.load(Ordering::Relaxed)
    }

    pub fn high(&self) -> u64 {
        self.high
    }
}

/// Bytes queued for the log writer: records, snapshots, the announcements behind them.
pub static LOG_BACKLOG: Gauge = Gauge::new(2 << 20);

/// Bytes of messages queued for the client (the LSP face's stdout), not yet written.
pub static OUTGOING: Gauge = Gauge::new(4 << 20);

static DRAINED: Notify = Notify::const_new();

/// Times a task waited in [`room`].
static WAITS: AtomicU64 = AtomicU64::new(0);

pub fn waits() -> u64 {
    WAITS.load(Ordering::Relaxed)
}

fn over(high: bool) -> bool {
    let bound = |g: &Gauge| if high { g.high } else { g.high / 2 };
    [&LOG_BACKLOG, &OUTGOING]
        .iter()
        .any(|g| g.now() >= bound(g))
}

/// Returns at once while the queues are under their bounds; otherwise once they are under half of
/// them. Tasks call it before a model turn, where waiting holds nothing up but themselves.
pub async fn room() {
    if !over(true) {
        return;
    }
    WAITS.fetch_add(1, Ordering::Relaxed);
    loop {
        let drained = DRAINED.notified();
        tokio::pin!(drained);
        // Registered before the check, so a drain in between still wakes this task.
        drained.as_mut().enable();
        if !over(false) {
            return;
        }
        // A drain can also come from a queue this task does not watch go under: look again
        // now and then rather than trust one wake-up.
        let _ = tokio::time::timeout(std::time::Duration::from_millis(100), drained).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_task_waits_while_a_queue_is_over_its_bound_and_goes_on_under_half_of_it() {
        // The gauges are the process's: this test is alone in using OUTGOING this much.
        let high = OUTGOING.high();
        room().await;
        OUTGOING.add(high);
        let waiting = tokio::spawn(room());
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        OUTGOING.sub(high / 4);
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished(), "still over half");
        OUTGOING.sub(high / 2);
        tokio::time::timeout(std::time::Duration::from_secs(5), waiting)
            .await
            .expect("woken")
            .unwrap();
        OUTGOING.sub(high - high / 4 - high / 2);
        assert!(OUTGOING.peak() >= high);
        assert!(waits() >= 1);
    }
}
