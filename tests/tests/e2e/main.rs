//! End-to-end tests: the real `gate` binary over fixture workspaces.

mod example;
mod outputs;
mod verify;
