//! Runs items in `after` order with bounded concurrency.

use std::future::Future;

use tokio::sync::mpsc::UnboundedSender;

use crate::{Event, HarnessError, Item, ItemResult, RunOptions};

/// Runs `items`, reporting progress on `events`; `cancel` resolving stops
/// everything (process groups killed, unfinished items skipped). Results come
/// back in the order of `items`.
pub async fn run(
    items: Vec<Item>,
    opts: RunOptions,
    events: Option<UnboundedSender<Event>>,
    cancel: impl Future<Output = ()> + Send,
) -> Result<Vec<ItemResult>, HarnessError> {
    let _ = (items, opts, events, cancel);
    todo!("schedule::run")
}
