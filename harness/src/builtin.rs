//! Built-in checks over the workspace's files.
