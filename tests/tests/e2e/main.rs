//! End-to-end tests: the real `gate` binary over fixture workspaces.

mod eval;
mod example;
mod verify;
