//! An unbounded queue from many senders to one async receiver that holds nothing while it is
//! empty: a task's events and its commands go through one each.
//!
//! tokio's unbounded channel allocates its first block of 32 slots when it is made, 5.4 KB for a
//! task's events and 2.5 KB for its commands: most of what ten thousand waiting tasks held. This
//! queue allocates as items come, gives the room back once a burst is taken, and keeps the parts
//! of tokio's channel that the faces use: `send`, `recv`, `try_recv`, `is_closed`, and the end of
//! the stream once every sender is gone.

use std::collections::VecDeque;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::Notify;

/// Past this many slots, an emptied queue gives its room back.
const KEEP_SLOTS: usize = 4;

struct State<T> {
    items: VecDeque<T>,
    senders: usize,
    receiver: bool,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    /// One permit per wake-up: a send while the receiver is not waiting is not lost.
    ready: Notify,
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        // A panic while the lock is held leaves the queue as it was (every change is one call).
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A new queue.
pub fn channel<T>() -> (Sender<T>, Receiver<T>) {
    let shared = Arc::new(Shared {
        state: Mutex::new(State {
            items: VecDeque::new(),
            senders: 1,
            receiver: true,
        }),
        ready: Notify::new(),
    });
    (
        Sender {
            shared: shared.clone(),
        },
        Receiver { shared },
    )
}

/// The receiver is gone: the item comes back.
#[derive(PartialEq, Eq)]
pub struct SendError<T>(pub T);

impl<T> fmt::Debug for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SendError(..)")
    }
}

impl<T> fmt::Display for SendError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the receiver is gone")
    }
}

impl<T> std::error::Error for SendError<T> {}

/// Why [`Receiver::try_recv`] has nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TryRecvError {
    /// Nothing now; more may come.
    Empty,
    /// Nothing now, and every sender is gone.
    Disconnected,
}

pub struct Sender<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Sender<T> {
    /// Queues `item`; fails (giving it back) when the receiver is gone.
    pub fn send(&self, item: T) -> Result<(), SendError<T>> {
        {
            let mut state = self.shared.lock();
            if !state.receiver {
                return Err(SendError(item));
            }
            state.items.push_back(item);
        }
        self.shared.ready.notify_one();
        Ok(())
    }

    /// Whether the receiver is gone.
    pub fn is_closed(&self) -> bool {
        !self.shared.lock().receiver
    }
}

impl<T> Clone for Sender<T> {
    fn clone(&self) -> Self {
        self.shared.lock().senders += 1;
        Sender {
            shared: self.shared.clone(),
        }
    }
}

impl<T> Drop for Sender<T> {
    fn drop(&mut self) {
        let last = {
            let mut state = self.shared.lock();
            state.senders -= 1;
            state.senders == 0
        };
        if last {
            self.shared.ready.notify_one();
        }
    }
}

impl<T> fmt::Debug for Sender<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("queue::Sender")
    }
}

pub struct Receiver<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Receiver<T> {
    /// The next item, or `None` once the queue is empty and every sender is gone.
    pub async fn recv(&mut self) -> Option<T> {
        loop {
            match self.try_recv() {
                Ok(item) => return Some(item),
                Err(TryRecvError::Disconnected) => return None,
                Err(TryRecvError::Empty) => self.shared.ready.notified().await,
            }
        }
    }

    /// The next item if there is one now.
    pub fn try_recv(&mut self) -> Result<T, TryRecvError> {
        let mut state = self.shared.lock();
        match state.items.pop_front() {
            Some(item) => {
                if state.items.is_empty() && state.items.capacity() > KEEP_SLOTS {
                    state.items.shrink_to(KEEP_SLOTS);
                }
                Ok(item)
            }
            None if state.senders == 0 => Err(TryRecvError::Disconnected),
            None => Err(TryRecvError::Empty),
        }
    }

    /// Stops taking items: later sends fail. What is queued stays to be taken.
    pub fn close(&mut self) {
        self.shared.lock().receiver = false;
        self.shared.ready.notify_one();
    }
}

impl<T> Drop for Receiver<T> {
    fn drop(&mut self) {
        let items = {
            let mut state = self.shared.lock();
            state.receiver = false;
            std::mem::take(&mut state.items)
        };
        // Dropped outside the lock: an item's drop may send to another queue.
        drop(items);
        self.shared.ready.notify_one();
    }
}

impl<T> fmt::Debug for Receiver<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("queue::Receiver")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn items_come_in_order_then_the_end_once_every_sender_is_gone() {
        let (tx, mut rx) = channel();
        let tx2 = tx.clone();
        let waiter = tokio::spawn(async move {
            let mut got = Vec::new();
            while let Some(n) = rx.recv().await {
                got.push(n);
            }
            got
        });
        for n in 0..100 {
            tx.send(n).unwrap();
            if n % 7 == 0 {
                tokio::task::yield_now().await;
            }
        }
        drop(tx);
        tx2.send(100).unwrap();
        drop(tx2);
        assert_eq!(waiter.await.unwrap(), (0..=100).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn a_send_after_the_receiver_is_gone_fails_and_gives_the_item_back() {
        let (tx, rx) = channel();
        assert!(!tx.is_closed());
        drop(rx);
        assert!(tx.is_closed());
        assert_eq!(tx.send(5), Err(SendError(5)));
    }

    #[tokio::test]
    async fn try_recv_tells_empty_from_disconnected_and_room_is_given_back() {
        let (tx, mut rx) = channel();
        assert_eq!(rx.try_recv(), Err(TryRecvError::Empty));
        for n in 0..1000 {
            tx.send(n).unwrap();
        }
        for n in 0..1000 {
            assert_eq!(rx.try_recv(), Ok(n));
        }
        assert!(rx.shared.lock().items.capacity() <= KEEP_SLOTS);
        drop(tx);
        assert_eq!(rx.try_recv(), Err(TryRecvError::Disconnected));
        assert_eq!(rx.recv().await, None);
    }
}
