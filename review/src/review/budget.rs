//! The run's input-token budget (`[policy] max_input_tokens`) as the
//! review spends it.
//!
//! Before the review sends anything, its estimate of everything it may send
//! is held against the budget (see [`crate::review::run`]). While it runs,
//! every request reserves its own estimate before it is sent, and is
//! refused when the tokens already sent plus those reserved by requests in
//! flight would pass the budget; once the reply is in, the reservation
//! becomes the usage the provider reported (or stays the estimate when it
//! reported none). So whatever providers, repairs and fallbacks do, the
//! total sent stays within the budget as far as the estimate is right.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A budget shared by the calls of one review.
#[derive(Debug, Clone)]
pub struct Budget {
    limit: u64,
    state: Arc<Mutex<State>>,
}

#[derive(Debug, Default)]
struct State {
    /// Tokens sent, as reported (or estimated where unreported).
    sent: u64,
    /// Tokens reserved by requests in flight.
    reserved: u64,
}

/// Tokens held for one request in flight. Dropped without
/// [`Reservation::settle`], its estimate counts as sent: the request may
/// have reached the provider.
#[derive(Debug)]
pub struct Reservation {
    budget: Budget,
    tokens: u64,
    settled: bool,
}

impl Budget {
    /// A budget of `limit` input tokens.
    pub fn new(limit: u64) -> Self {
        Self {
            limit,
            state: Arc::new(Mutex::new(State::default())),
        }
    }

    /// A budget nothing can pass (for calls outside a run's review).
    pub fn unlimited() -> Self {
        Self::new(u64::MAX)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        // A call that panicked holding the lock leaves consistent numbers.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The budget.
    pub fn limit(&self) -> u64 {
        self.limit
    }

    /// Tokens sent so far (reservations in flight not included).
    pub fn sent(&self) -> u64 {
        self.state().sent
    }

    /// Tokens neither sent nor reserved.
    pub fn left(&self) -> u64 {
        let s = self.state();
        self.limit.saturating_sub(s.sent.saturating_add(s.reserved))
    }

    /// Reserves `tokens` for a request about to be sent, or says why not.
    pub fn reserve(&self, tokens: u64) -> Result<Reservation, String> {
        let mut s = self.state();
        let committed = s.sent.saturating_add(s.reserved);
        if committed.saturating_add(tokens) > self.limit {
            return Err(format!(
                "over budget: this request (about {tokens} input tokens) would take the run past \
                 max_input_tokens = {} ({} already sent or in flight)",
                self.limit, committed
            ));
        }
        s.reserved += tokens;
        Ok(Reservation {
            budget: self.clone(),
            tokens,
            settled: false,
        })
    }
}

impl Reservation {
    /// The request is done: it cost `reported` input tokens, or its
    /// estimate when the provider reported none.
    pub fn settle(mut self, reported: Option<u64>) {
        self.close(reported);
    }

    fn close(&mut self, reported: Option<u64>) {
        if self.settled {
            return;
        }
        self.settled = true;
        let mut s = self.budget.state();
        s.reserved = s.reserved.saturating_sub(self.tokens);
        s.sent = s.sent.saturating_add(reported.unwrap_or(self.tokens));
    }
}

impl std::ops::Drop for Reservation {
    fn drop(&mut self) {
        self.close(None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reservations_hold_the_line_and_settle_to_what_was_reported() {
        let b = Budget::new(100);
        let first = b.reserve(60).unwrap();
        // In flight, the first request's estimate counts.
        let err = b.reserve(41).unwrap_err();
        assert!(err.starts_with("over budget"), "{err}");
        let second = b.reserve(40).unwrap();
        assert_eq!(b.left(), 0);
        // Reported usage replaces the estimate.
        first.settle(Some(30));
        assert_eq!((b.sent(), b.left()), (30, 30));
        // Unreported usage, or a request dropped mid-flight, costs its estimate.
        drop(second);
        assert_eq!((b.sent(), b.left()), (70, 30));
        // More than estimated counts too, and closes the budget sooner.
        b.reserve(30).unwrap().settle(Some(45));
        assert_eq!(b.sent(), 115);
        assert_eq!(b.left(), 0);
        assert!(b.reserve(1).is_err());
    }
}
