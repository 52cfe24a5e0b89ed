//! Test support: a builder around the real `gate` binary and fixture workspaces.
