//! What an item finds in its private `/tmp`, `/var/tmp` and home when it
//! starts: a copy of what the items it runs `after` left in theirs. Each
//! item has folders of its own, so what it writes there reaches only the
//! items that run after it, never one beside it (two criteria after one
//! check each get their own copy of what the check left).
//!
//! The folders copied from are written by the items (a service may still
//! be writing in its own while the copy is made), so the copy never
//! follows a link: every folder is opened relative to its parent with
//! `O_NOFOLLOW`, every file is checked to be a regular file on its open
//! descriptor, and links are copied as links. Nothing the item's own
//! folders hold already is replaced: not a mount point its home holds for
//! a toolchain or the user site (so nothing copied stands where the
//! sandbox mounts), and not what an item named earlier in `after` left at
//! the same path (the first wins). What cannot be copied (a socket a service listens
//! on, a FIFO) is shown to the item as the original: hard-linked, by the
//! descriptor of the folder it was found in, into a folder of the gate's
//! that no item sees or can change, and bound read-only from there over an
//! empty file in the copy (without a sandbox, a link to the original
//! stands there), so a criterion still reaches the service it runs after,
//! and nothing an item renames afterwards changes what is bound.

use std::ffi::{CStr, OsStr, OsString};
use std::fs::File;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use nix::dir::{Dir, Type};
use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag};
use nix::sys::stat::{FileStat, Mode, SFlag};
use nix::sys::time::TimeSpec;
use nix::unistd::{Gid, Uid, UnlinkatFlags};

/// The folders one of a run's items has to itself: shown at `/tmp`,
/// `/var/tmp` and `HOME` in a sandbox, named by `TMPDIR` and `HOME` without
/// one (`Launcher::with_private`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Private {
    /// The host folder of `/tmp`.
    pub tmp: PathBuf,
    /// The host folder of `/var/tmp`.
    pub var_tmp: PathBuf,
    /// The host folder of the home.
    pub home: PathBuf,
}

/// Folders deeper than this are not copied (the copy says so): a bound on
/// the descriptors held open, one per level.
const MAX_DEPTH: usize = 128;

/// Which of an item's private folders a path lies in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Folder {
    /// `/tmp`.
    Tmp,
    /// `/var/tmp`.
    VarTmp,
    /// The home.
    Home,
}

impl Folder {
    /// The folder of this kind in `private`.
    fn of(self, private: &Private) -> &Path {
        match self {
            Self::Tmp => &private.tmp,
            Self::VarTmp => &private.var_tmp,
            Self::Home => &private.home,
        }
    }
}

/// A socket or FIFO among what an item inherits: shown to it as the
/// original, at the same place in its own folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Special {
    /// The folder it lies in.
    pub folder: Folder,
    /// Its path in that folder.
    pub rel: PathBuf,
    /// A hard link to the original, in a folder of the gate's.
    pub source: PathBuf,
}

/// An item's private folders and the folders of the items it runs after,
/// copied into them once, when the item starts ([`Seed::run`]).
#[derive(Debug)]
pub(crate) struct Seed {
    /// The folders of the items it runs after, in the order copied (what
    /// an earlier one left at a path stays).
    from: Vec<Private>,
    /// The item's own folders.
    into: Private,
    /// Who the copies belong to: the uid and gid the item runs as, when
    /// they are not the gate's.
    owner: Option<(u32, u32)>,
    /// Whether sockets and FIFOs are linked to (no sandbox to bind them).
    link_specials: bool,
    /// What the copy found that it could not copy, once it is made.
    done: OnceLock<Result<Vec<Special>, String>>,
}

impl Seed {
    /// The seed of `into` from `from`.
    pub(crate) fn new(
        from: Vec<Private>,
        into: Private,
        owner: Option<(u32, u32)>,
        link_specials: bool,
    ) -> Self {
        Self {
            from,
            into,
            owner,
            link_specials,
            done: OnceLock::new(),
        }
    }

    /// Copies the folders in, the first time it is called; every call
    /// says how that copy ended.
    pub(crate) fn run(&self) -> Result<(), String> {
        match self.done.get_or_init(|| self.copy()) {
            Ok(_) => Ok(()),
            Err(why) => Err(why.clone()),
        }
    }

    /// The item's own folders.
    pub(crate) fn folders(&self) -> &Private {
        &self.into
    }

    /// The sockets and FIFOs the copy found, once it is made.
    pub(crate) fn specials(&self) -> &[Special] {
        match self.done.get() {
            Some(Ok(specials)) => specials,
            Some(Err(_)) | None => &[],
        }
    }

    /// The gate's folder of hard links to the sockets and FIFOs found:
    /// beside the item's folders, never shown to an item.
    fn held(&self) -> PathBuf {
        let mut name = self.into.tmp.file_name().unwrap_or_default().to_owned();
        name.push(".held");
        self.into.tmp.with_file_name(name)
    }

    fn copy(&self) -> Result<Vec<Special>, String> {
        let started = std::time::Instant::now();
        let mut copy = Copy {
            owner: self.owner,
            specials: Vec::new(),
            folder: Folder::Tmp,
            bytes: 0,
            held: (!self.link_specials).then(|| Held {
                path: self.held(),
                fd: None,
            }),
        };
        for from in &self.from {
            for folder in [Folder::Tmp, Folder::VarTmp, Folder::Home] {
                copy.folder = folder;
                let (source, target) = (folder.of(from), folder.of(&self.into));
                copy.tree(source, target).map_err(|e| {
                    format!(
                        "cannot copy {} (left by an item this one runs after) into {}: {e}",
                        source.display(),
                        target.display()
                    )
                })?;
            }
        }
        tracing::debug!(
            from = self.from.len(),
            bytes = copy.bytes,
            specials = copy.specials.len(),
            us = started.elapsed().as_micros(),
            "copied what the items before an item left"
        );
        Ok(copy.specials)
    }
}

/// Where a folder being copied lies.
struct Place<'a> {
    /// On the host, among the folders copied from.
    source: &'a Path,
    /// Within the private folder.
    rel: &'a Path,
}

/// One copy in progress.
struct Copy {
    owner: Option<(u32, u32)>,
    specials: Vec<Special>,
    /// The folder being copied, for the specials found.
    folder: Folder,
    /// Bytes of files copied.
    bytes: u64,
    /// Where the specials are held for binding; `None` without a sandbox,
    /// where a link to the original stands in the copy instead.
    held: Option<Held>,
}

/// The gate's folder of hard links to the specials, made with the first.
struct Held {
    path: PathBuf,
    fd: Option<OwnedFd>,
}

/// Flags every folder is opened with.
fn dir_flags() -> OFlag {
    OFlag::O_RDONLY | OFlag::O_DIRECTORY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC
}

impl Copy {
    /// Copies what `source` holds into the folder `target` (both made by
    /// the gate; a `source` that is not there holds nothing).
    fn tree(&mut self, source: &Path, target: &Path) -> std::io::Result<()> {
        let from = match nix::fcntl::open(source, dir_flags(), Mode::empty()) {
            Ok(fd) => fd,
            Err(Errno::ENOENT) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let into = nix::fcntl::open(target, dir_flags(), Mode::empty())?;
        let at = Place {
            source,
            rel: Path::new(""),
        };
        self.folder_contents(from, &into, &at, 0)
    }

    /// Copies the entries of the open folder `from` into the open folder
    /// `into`, both at `at`.
    fn folder_contents(
        &mut self,
        from: OwnedFd,
        into: &OwnedFd,
        at: &Place<'_>,
        depth: usize,
    ) -> std::io::Result<()> {
        if depth > MAX_DEPTH {
            return Err(std::io::Error::other(format!(
                "{} is more than {MAX_DEPTH} folders deep",
                at.source.display()
            )));
        }
        // A second descriptor to open entries by, as the first one is
        // owned by the listing.
        let parent = from.try_clone()?;
        let mut listing = Dir::from_fd(from)?;
        let mut names: Vec<(OsString, Option<Type>)> = Vec::new();
        for entry in listing.iter() {
            let entry = entry?;
            let name = entry.file_name();
            if name == c"." || name == c".." {
                continue;
            }
            names.push((os(name).to_owned(), entry.file_type()));
        }
        drop(listing);
        for (name, _) in names {
            let stat = match nix::sys::stat::fstatat(
                parent.as_fd(),
                name.as_os_str(),
                AtFlags::AT_SYMLINK_NOFOLLOW,
            ) {
                Ok(stat) => stat,
                // Gone since the listing (a service removing a file).
                Err(Errno::ENOENT) => continue,
                Err(e) => return Err(e.into()),
            };
            let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
            let entry_rel = at.rel.join(&name);
            let entry_source = at.source.join(&name);
            if kind == SFlag::S_IFDIR {
                let sub = match nix::fcntl::openat(
                    parent.as_fd(),
                    name.as_os_str(),
                    dir_flags(),
                    Mode::empty(),
                ) {
                    Ok(fd) => fd,
                    // Replaced by a link or removed since it was looked at.
                    Err(Errno::ENOENT | Errno::ELOOP | Errno::ENOTDIR) => continue,
                    Err(e) => return Err(e.into()),
                };
                let Some(made) = self.made_dir(into, &name, &stat)? else {
                    continue;
                };
                let inside = Place {
                    source: &entry_source,
                    rel: &entry_rel,
                };
                self.folder_contents(sub, &made, &inside, depth + 1)?;
                // Its times last: filling it moved them.
                times(made.as_fd(), &stat)?;
            } else if kind == SFlag::S_IFREG {
                self.file(parent.as_fd(), into, &name)?;
            } else if kind == SFlag::S_IFLNK {
                let target = match nix::fcntl::readlinkat(parent.as_fd(), name.as_os_str()) {
                    Ok(target) => target,
                    Err(Errno::ENOENT | Errno::EINVAL) => continue,
                    Err(e) => return Err(e.into()),
                };
                match nix::unistd::symlinkat(target.as_os_str(), into.as_fd(), name.as_os_str()) {
                    Ok(()) => self.own(into, &name)?,
                    Err(Errno::EEXIST) => {}
                    Err(e) => return Err(e.into()),
                }
            } else if kind == SFlag::S_IFSOCK || kind == SFlag::S_IFIFO {
                self.special(parent.as_fd(), into, &name, &entry_source, entry_rel)?;
            }
            // Devices cannot be made by the items; nothing else is left.
        }
        Ok(())
    }

    /// Shows the socket or FIFO `name` of `from` (at `source` on the host)
    /// at `name` in `into` (`rel` in the private folder): a hard link in
    /// the gate's folder to bind over an empty file there, or, without a
    /// sandbox, a link to the original.
    fn special(
        &mut self,
        from: BorrowedFd<'_>,
        into: &OwnedFd,
        name: &OsStr,
        source: &Path,
        rel: PathBuf,
    ) -> std::io::Result<()> {
        let Some(held) = &mut self.held else {
            return match nix::unistd::symlinkat(source, into.as_fd(), name) {
                Ok(()) => self.own(into, name),
                Err(Errno::EEXIST) => Ok(()),
                Err(e) => Err(e.into()),
            };
        };
        let fd = if let Some(fd) = &held.fd {
            fd
        } else {
            let mut made = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut made, 0o700);
            match made.create(&held.path) {
                Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
                Ok(()) | Err(_) => {}
            }
            held.fd
                .insert(nix::fcntl::open(&held.path, dir_flags(), Mode::empty())?)
        };
        let link = self.specials.len().to_string();
        // By the folder's descriptor, and not following a link: what is
        // held is what was there, whatever the path leads to later.
        match nix::unistd::linkat(from, name, fd.as_fd(), link.as_str(), AtFlags::empty()) {
            Ok(()) => {}
            Err(Errno::ENOENT) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
        // Swapped for something else since it was looked at: not shown.
        let stat =
            nix::sys::stat::fstatat(fd.as_fd(), link.as_str(), AtFlags::AT_SYMLINK_NOFOLLOW)?;
        let kind = SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT;
        // A place to bind it over, unless something is there already.
        let placeholder = if kind == SFlag::S_IFSOCK || kind == SFlag::S_IFIFO {
            create(into, name, 0o600)?
        } else {
            None
        };
        let Some(placeholder) = placeholder else {
            nix::unistd::unlinkat(fd.as_fd(), link.as_str(), UnlinkatFlags::NoRemoveDir)?;
            return Ok(());
        };
        let held_at = held.path.join(&link);
        self.own_fd(placeholder.as_fd())?;
        self.specials.push(Special {
            folder: self.folder,
            rel,
            source: held_at,
        });
        Ok(())
    }

    /// The folder `name` in `into`, made with the mode of the one `stat`
    /// describes, and opened; the folder there already when there is one,
    /// and nothing when something else is there.
    fn made_dir(
        &self,
        into: &OwnedFd,
        name: &OsStr,
        stat: &FileStat,
    ) -> std::io::Result<Option<OwnedFd>> {
        let mode = Mode::from_bits_truncate(stat.st_mode & 0o777);
        match nix::sys::stat::mkdirat(into.as_fd(), name, mode) {
            Ok(()) => {}
            Err(Errno::EEXIST) => {
                return match nix::fcntl::openat(into.as_fd(), name, dir_flags(), Mode::empty()) {
                    Ok(dir) => Ok(Some(dir)),
                    Err(Errno::ENOTDIR | Errno::ELOOP) => Ok(None),
                    Err(e) => Err(e.into()),
                };
            }
            Err(e) => return Err(e.into()),
        }
        let dir = nix::fcntl::openat(into.as_fd(), name, dir_flags(), Mode::empty())?;
        // The umask took its share of the mode.
        nix::sys::stat::fchmod(dir.as_fd(), mode)?;
        self.own_fd(dir.as_fd())?;
        Ok(Some(dir))
    }

    /// Copies the regular file `name` of `from` into `into`.
    fn file(&mut self, from: BorrowedFd<'_>, into: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
        // Non-blocking: a FIFO swapped in since the look would block the
        // open of a reader; it is refused below as not a regular file.
        let source = match nix::fcntl::openat(
            from,
            name,
            OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC,
            Mode::empty(),
        ) {
            Ok(fd) => fd,
            Err(Errno::ENOENT | Errno::ELOOP) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        let stat = nix::sys::stat::fstat(source.as_fd())?;
        if SFlag::from_bits_truncate(stat.st_mode) & SFlag::S_IFMT != SFlag::S_IFREG {
            return Ok(());
        }
        // No set-id bit survives the copy.
        let mode = Mode::from_bits_truncate(stat.st_mode & 0o777);
        let Some(target) = create(into, name, mode.bits())? else {
            return Ok(());
        };
        let (mut source, mut target) = (File::from(source), File::from(target));
        // In the kernel where it can (`copy_file_range`, a reflink on file
        // systems that share blocks).
        self.bytes += std::io::copy(&mut source, &mut target)?;
        nix::sys::stat::fchmod(target.as_fd(), mode)?;
        self.own_fd(target.as_fd())?;
        times(target.as_fd(), &stat)
    }

    /// Gives the entry `name` of `into` to the owner, without following it.
    fn own(&self, into: &OwnedFd, name: &OsStr) -> std::io::Result<()> {
        if let Some((uid, gid)) = self.owner {
            nix::unistd::fchownat(
                into.as_fd(),
                name,
                Some(Uid::from_raw(uid)),
                Some(Gid::from_raw(gid)),
                AtFlags::AT_SYMLINK_NOFOLLOW,
            )?;
        }
        Ok(())
    }

    /// Gives the open file or folder to the owner.
    fn own_fd(&self, fd: BorrowedFd<'_>) -> std::io::Result<()> {
        if let Some((uid, gid)) = self.owner {
            nix::unistd::fchown(fd, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid)))?;
        }
        Ok(())
    }
}

/// A new file `name` in `into`, open for writing, with `mode` less the
/// umask; `None` when something is there already.
fn create(into: &OwnedFd, name: &OsStr, mode: u32) -> std::io::Result<Option<OwnedFd>> {
    match nix::fcntl::openat(
        into.as_fd(),
        name,
        OFlag::O_WRONLY | OFlag::O_CREAT | OFlag::O_EXCL | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC,
        Mode::from_bits_truncate(mode),
    ) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::EEXIST) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Sets the access and modification times `stat` gives: tools that build
/// by times (`make`) see the copy as they saw the original.
fn times(fd: BorrowedFd<'_>, stat: &FileStat) -> std::io::Result<()> {
    let atime = TimeSpec::new(stat.st_atime, stat.st_atime_nsec);
    let mtime = TimeSpec::new(stat.st_mtime, stat.st_mtime_nsec);
    nix::sys::stat::futimens(fd, &atime, &mtime)?;
    Ok(())
}

/// A file name from a listing.
fn os(name: &CStr) -> &OsStr {
    OsStr::from_bytes(name.to_bytes())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    use super::*;

    /// Three empty private folders named `name` under `dir`.
    fn private(dir: &Path, name: &str) -> Private {
        let p = Private {
            tmp: dir.join(format!("{name}-tmp")),
            var_tmp: dir.join(format!("{name}-var-tmp")),
            home: dir.join(format!("{name}-home")),
        };
        for d in [&p.tmp, &p.var_tmp, &p.home] {
            std::fs::create_dir(d).unwrap();
        }
        p
    }

    /// What a copy holds, as `path: what` lines: `file <text> <mode>`,
    /// `dir <mode>`, `link <target>`, `special`.
    fn listing(root: &Path) -> Vec<String> {
        let mut out = Vec::new();
        let mut stack = vec![PathBuf::new()];
        while let Some(rel) = stack.pop() {
            let mut entries: Vec<_> = std::fs::read_dir(root.join(&rel))
                .unwrap()
                .map(|e| e.unwrap().file_name())
                .collect();
            entries.sort();
            for name in entries {
                let rel = rel.join(name);
                let meta = std::fs::symlink_metadata(root.join(&rel)).unwrap();
                let mode = meta.permissions().mode() & 0o7777;
                let what = if meta.is_symlink() {
                    let target = std::fs::read_link(root.join(&rel)).unwrap();
                    format!("link {}", target.display())
                } else if meta.is_dir() {
                    stack.push(rel.clone());
                    format!("dir {mode:o}")
                } else {
                    let text = std::fs::read_to_string(root.join(&rel)).unwrap();
                    format!("file {} {mode:o}", text.trim())
                };
                out.push(format!("{}: {what}", rel.display()));
            }
        }
        out.sort();
        out
    }

    #[test]
    fn an_item_starts_with_a_copy_of_what_the_items_before_it_left() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::create_dir(&secret).unwrap();
        std::fs::write(secret.join("key"), "KEY").unwrap();
        let (build, lint, item) = (
            private(dir.path(), "build"),
            private(dir.path(), "lint"),
            private(dir.path(), "item"),
        );
        let write = |path: PathBuf, text: &str, mode: u32| {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        };
        write(build.tmp.join("out/app.bin"), "built", 0o4755);
        write(build.home.join(".cache/tool/entry"), "cached", 0o600);
        write(build.var_tmp.join("both.txt"), "from build", 0o644);
        write(lint.var_tmp.join("both.txt"), "from lint", 0o640);
        write(
            lint.tmp.join("out"),
            "a file where build has a folder",
            0o644,
        );
        // Links are copied as links, never followed: the folder outside
        // is not copied through one.
        std::os::unix::fs::symlink(&secret, build.tmp.join("to-secret")).unwrap();
        std::os::unix::fs::symlink("out/app.bin", build.tmp.join("app")).unwrap();
        let _socket = std::os::unix::net::UnixListener::bind(build.tmp.join("svc.sock")).unwrap();
        let old = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        std::fs::File::options()
            .write(true)
            .open(build.home.join(".cache/tool/entry"))
            .unwrap()
            .set_modified(old)
            .unwrap();

        // Each folder after another: what the first left at a path stays.
        let seed = Seed::new(vec![build.clone(), lint.clone()], item.clone(), None, false);
        seed.run().unwrap();
        assert_eq!(
            listing(&item.tmp),
            [
                "app: link out/app.bin",
                "out/app.bin: file built 755",
                "out: dir 755",
                "svc.sock: file  600",
                &format!("to-secret: link {}", secret.display()),
            ]
        );
        assert_eq!(listing(&item.var_tmp), ["both.txt: file from build 644"]);
        assert_eq!(
            listing(&item.home),
            [
                ".cache/tool/entry: file cached 600",
                ".cache/tool: dir 755",
                ".cache: dir 755",
            ]
        );
        let mtime = std::fs::metadata(item.home.join(".cache/tool/entry"))
            .unwrap()
            .mtime();
        assert_eq!(mtime, 1_000_000);
        // The socket is held by a hard link in a folder of the gate's.
        let held = dir.path().join("item-tmp.held/0");
        assert_eq!(
            seed.specials(),
            [Special {
                folder: Folder::Tmp,
                rel: "svc.sock".into(),
                source: held.clone(),
            }]
        );
        let inode = |p: &Path| {
            std::fs::symlink_metadata(p)
                .map(|m| (m.dev(), m.ino()))
                .unwrap()
        };
        assert_eq!(inode(&held), inode(&build.tmp.join("svc.sock")));

        // Once: what the folders before hold later is not copied again,
        // and what the item wrote stays.
        std::fs::write(build.tmp.join("later"), "later").unwrap();
        std::fs::write(item.tmp.join("mine"), "mine").unwrap();
        seed.run().unwrap();
        assert!(!item.tmp.join("later").exists());
        assert!(item.tmp.join("mine").exists());

        // In the other order, the other one's stays.
        let other = private(dir.path(), "other");
        Seed::new(vec![lint, build], other.clone(), None, false)
            .run()
            .unwrap();
        let listed = listing(&other.tmp);
        assert!(listed.contains(&"out: file a file where build has a folder 644".to_owned()));
        assert_eq!(listing(&other.var_tmp), ["both.txt: file from lint 640"]);

        // What the item's own folders hold (a mount point of its home, a
        // folder or a file) is never replaced by what an item before left.
        let (planter, home) = (private(dir.path(), "planter"), private(dir.path(), "home"));
        std::fs::create_dir_all(home.home.join(".local/lib")).unwrap();
        std::fs::write(home.home.join(".tool.toml"), "").unwrap();
        std::fs::create_dir(planter.home.join(".local")).unwrap();
        std::os::unix::fs::symlink(&secret, planter.home.join(".local/lib")).unwrap();
        std::os::unix::fs::symlink(&secret, planter.home.join(".tool.toml")).unwrap();
        Seed::new(vec![planter], home.clone(), None, false)
            .run()
            .unwrap();
        assert_eq!(
            listing(&home.home),
            [
                ".local/lib: dir 755",
                ".local: dir 755",
                ".tool.toml: file  644"
            ]
        );
    }

    /// What is bound is the socket that was there when the copy was made:
    /// a service that then moves its folder and leaves a link to another
    /// file under the socket's name changes nothing the item is shown.
    #[test]
    fn a_socket_is_held_as_it_was_found() {
        let dir = tempfile::tempdir().unwrap();
        let (service, item) = (private(dir.path(), "service"), private(dir.path(), "item"));
        std::fs::create_dir(service.tmp.join("db")).unwrap();
        let socket = service.tmp.join("db/app.sock");
        let listening = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        let seed = Seed::new(vec![service.clone()], item, None, false);
        seed.run().unwrap();
        let secret = dir.path().join("secret");
        std::fs::create_dir(&secret).unwrap();
        std::fs::write(secret.join("app.sock"), "KEY").unwrap();
        std::fs::rename(service.tmp.join("db"), service.tmp.join("moved")).unwrap();
        std::os::unix::fs::symlink(&secret, service.tmp.join("db")).unwrap();
        let [special] = seed.specials() else {
            panic!("{:?}", seed.specials())
        };
        std::os::unix::net::UnixStream::connect(&special.source).unwrap();
        listening.accept().unwrap();
    }

    /// Without a sandbox to bind it, a socket is linked to.
    #[test]
    fn without_a_sandbox_a_socket_is_linked_to() {
        let dir = tempfile::tempdir().unwrap();
        let (service, item) = (private(dir.path(), "service"), private(dir.path(), "item"));
        let socket = service.tmp.join("svc.sock");
        let _listening = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        Seed::new(vec![service], item.clone(), None, true)
            .run()
            .unwrap();
        assert_eq!(
            std::fs::read_link(item.tmp.join("svc.sock")).unwrap(),
            socket
        );
        std::os::unix::net::UnixStream::connect(item.tmp.join("svc.sock")).unwrap();
    }
}
