//! The host's system folders: what a sandbox shows of them it shows
//! read-only, so nothing an item runs can change what is there.

/// The system's folders, shown read-only in a sandbox where the host has
/// them.
pub const FOLDERS: [&str; 11] = [
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/sys",
    "/nix/store",
];
