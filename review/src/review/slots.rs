//! How many requests a run sends at once to each provider: a provider's
//! `concurrency` in the routing table. A local server with one slot queues
//! or cuts what it cannot serve (llama-cpp-python cuts a stream when
//! another request waits); the gate waits its turn instead, and the wait
//! counts neither as silence nor against the provider's breaker.

use std::collections::BTreeMap;
use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::routing::Routing;

/// One semaphore per provider with a `concurrency`; providers without one
/// are not limited.
#[derive(Debug, Clone, Default)]
pub struct Slots {
    by_provider: BTreeMap<String, Arc<Semaphore>>,
}

/// A slot held at a provider until dropped.
#[derive(Debug)]
pub struct Slot {
    /// The provider it was taken at.
    pub provider: String,
    _permit: OwnedSemaphorePermit,
}

impl Slots {
    /// The limits `routing` sets.
    pub fn new(routing: &Routing) -> Self {
        let by_provider = routing
            .table
            .providers
            .iter()
            .filter_map(|(name, def)| {
                let n = usize::try_from(def.concurrency?.get()).unwrap_or(usize::MAX);
                Some((name.clone(), Arc::new(Semaphore::new(n))))
            })
            .collect();
        Self { by_provider }
    }

    /// Waits for a free slot at `provider`; `None` at once when it has no limit.
    pub async fn take(&self, provider: &str) -> Option<Slot> {
        let semaphore = Arc::clone(self.by_provider.get(provider)?);
        // The semaphore is never closed, so acquiring only waits.
        let permit = semaphore.acquire_owned().await.ok()?;
        Some(Slot {
            provider: provider.to_owned(),
            _permit: permit,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_limited_provider_serves_as_many_as_its_concurrency() {
        let mut routing = Routing::builtin();
        routing
            .table
            .providers
            .get_mut("openai")
            .unwrap()
            .concurrency = std::num::NonZeroU32::new(1);
        let slots = Slots::new(&routing);
        let first = slots.take("openai").await.unwrap();
        // A second request waits for the first's slot.
        let waiting = tokio::time::timeout(Duration::from_millis(50), slots.take("openai")).await;
        assert!(waiting.is_err(), "a second slot was given out");
        // Other providers are not limited.
        assert!(slots.take("anthropic").await.is_none());
        drop(first);
        assert!(slots.take("openai").await.is_some());
    }
}
