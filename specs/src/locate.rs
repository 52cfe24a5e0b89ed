//! Maps a key path in the spec to its line and column.
