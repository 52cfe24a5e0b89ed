//! `gate replay`'s glue: the review request each run keeps for it
//! (`keep`), the runs a replay selects from the ledger, and the replay's
//! own signed bundle. The replay itself, rebuilding and scoring, is
//! `gate_review::replay`'s.

pub(crate) mod execute;
pub(crate) mod keep;
pub(crate) mod plan;
pub(crate) mod report;
pub(crate) mod select;
pub(crate) mod vouched;
