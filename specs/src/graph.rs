//! The task graph and the check graph.
