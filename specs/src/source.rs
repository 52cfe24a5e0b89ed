//! Reading the files the gate is configured by: specs, routing tables,
//! rules files, prompts and the screenshots rules show. A file over its
//! bound is refused from its size before a byte is read, so a file grown
//! without end (by an agent, a bad merge, a full disk's garbage) costs no
//! memory; and text is UTF-8 or an error at its first bad byte.

use std::fs::File;
use std::io::{self, Read as _};
use std::path::Path;

use crate::errors::{SpecError, SpecErrorKind};

/// The most bytes a configuration text file may hold: specs, routing
/// tables, rules files and prompts are written by hand or by a planner,
/// and a thousand tasks with their criteria fit in well under a MiB.
pub const TEXT_MAX_BYTES: u64 = 16 << 20;

/// The bytes of the file at `path` when it holds at most `max`; a larger
/// one is an [`io::ErrorKind::FileTooLarge`] error naming both sizes.
pub fn read_bounded(path: &Path, max: u64) -> io::Result<Vec<u8>> {
    let file = File::open(path)?;
    let len = file.metadata()?.len();
    if len > max {
        return Err(too_large(len, max));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(len).unwrap_or_default());
    // A file that grows while it is read, or a device that reports no
    // length, still stops one byte past the bound.
    file.take(max.saturating_add(1)).read_to_end(&mut bytes)?;
    let read = u64::try_from(bytes.len()).unwrap_or(u64::MAX);
    if read > max {
        return Err(too_large(read, max));
    }
    Ok(bytes)
}

/// As [`read_bounded`], for text: bytes that are not UTF-8 are an
/// [`io::ErrorKind::InvalidData`] error, as `fs::read_to_string` gives.
pub fn read_text_bounded(path: &Path, max: u64) -> io::Result<String> {
    String::from_utf8(read_bounded(path, max)?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// `rel` (workspace-relative, already checked for `..` and absolute
/// paths) under `root`, followed through any symbolic link only while the
/// file it reaches stays inside `root`; one that leads out is an
/// [`io::ErrorKind::PermissionDenied`] error, so a link planted in the
/// workspace never has the gate read a file outside it.
pub fn within(root: &Path, rel: &str) -> io::Result<std::path::PathBuf> {
    let real = root.join(rel).canonicalize()?;
    if real.starts_with(root.canonicalize()?) {
        Ok(real)
    } else {
        Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            "it leads out of the workspace through a symbolic link",
        ))
    }
}

fn too_large(len: u64, max: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "it is {}, over the {} a file of this kind may hold",
            size(len),
            size(max)
        ),
    )
}

/// A byte count the way people read one: `512 B`, `16 MiB`, `2.0 GiB`.
fn size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if value.fract() == 0.0 {
        format!("{value} {}", UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

/// A TOML or JSON file's bytes as text. Both formats are UTF-8, so a byte
/// that is not is an error at its line and column, never a silent
/// replacement. A leading byte order mark, which Windows editors write and
/// JSON parsers refuse, is dropped: editors do not show it, so positions
/// are counted from the first character a user sees.
pub fn text_of<'a>(bytes: &'a [u8], file: &Path) -> Result<&'a str, SpecError> {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(bytes).map_err(|e| {
        let good = e.valid_up_to();
        // The bytes before the bad one are UTF-8 by definition.
        let before = std::str::from_utf8(&bytes[..good]).unwrap_or_default();
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        SpecError::new(
            file,
            before.matches('\n').count() + 1,
            before[line_start..].chars().count() + 1,
            SpecErrorKind::NotUtf8 {
                byte: bytes.get(good).copied().unwrap_or_default(),
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_over_the_bound_are_refused_by_their_size() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str, len: u64| {
            let path = dir.path().join(name);
            File::create(&path).unwrap().set_len(len).unwrap();
            path
        };
        let cases: [(&str, u64, u64, Result<usize, &str>); 5] = [
            ("empty", 0, 8, Ok(0)),
            ("at the bound", 8, 8, Ok(8)),
            ("a byte over", 9, 8, Err("it is 9 B, over the 8 B a file")),
            (
                "sparse 2 GiB",
                2 << 30,
                TEXT_MAX_BYTES,
                Err("it is 2 GiB, over the 16 MiB a file"),
            ),
            (
                "odd size",
                1536 << 20,
                1 << 30,
                Err("it is 1.5 GiB, over the 1 GiB"),
            ),
        ];
        for (name, len, max, want) in cases {
            let got = read_bounded(&at(name, len), max);
            match (got, want) {
                (Ok(bytes), Ok(n)) => assert_eq!(bytes.len(), n, "{name}"),
                (Err(e), Err(text)) => {
                    assert_eq!(e.kind(), io::ErrorKind::FileTooLarge, "{name}");
                    assert!(e.to_string().starts_with(text), "{name}: {e}");
                }
                (got, want) => panic!("{name}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn links_are_followed_only_while_they_stay_inside() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir_all(ws.join("cases")).unwrap();
        std::fs::write(ws.join("cases/a.png"), "in").unwrap();
        std::fs::write(dir.path().join("secret.png"), "out").unwrap();
        let link =
            |target: &Path, at: &str| std::os::unix::fs::symlink(target, ws.join(at)).unwrap();
        link(&ws.join("cases/a.png"), "inside.png");
        link(&dir.path().join("secret.png"), "outside.png");
        link(dir.path(), "up");
        let cases: [(&str, Option<&str>); 5] = [
            ("cases/a.png", Some("cases/a.png")),
            ("inside.png", Some("cases/a.png")),
            ("outside.png", None),
            ("up/secret.png", None),
            ("missing.png", None),
        ];
        let real_ws = ws.canonicalize().unwrap();
        for (rel, want) in cases {
            match (within(&ws, rel), want) {
                (Ok(path), Some(want)) => assert_eq!(path, real_ws.join(want), "{rel}"),
                (Err(e), None) if rel == "missing.png" => {
                    assert_eq!(e.kind(), io::ErrorKind::NotFound, "{rel}");
                }
                (Err(e), None) => {
                    assert_eq!(e.kind(), io::ErrorKind::PermissionDenied, "{rel}");
                    assert!(e.to_string().contains("leads out of the workspace"), "{e}");
                }
                (got, want) => panic!("{rel}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn a_device_without_a_length_stops_past_the_bound() {
        // /dev/zero reports 0 bytes and never ends.
        let e = read_bounded(Path::new("/dev/zero"), 4096).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
        assert!(e.to_string().contains("4 KiB"), "{e}");
    }
}
