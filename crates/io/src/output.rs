//! Output paths: every file lwt6 writes goes through [`Output`], which never replaces what is not its to replace.
//!
//! [`Output::create`] looks at the path before anything is written (so a command checks its outputs before it
//! does its work) and decides how to write it:
//!
//! | the path is | how it is written |
//! |---|---|
//! | `-` | to standard output |
//! | missing, in an existing directory | a new file, atomically (below) |
//! | a regular file | atomically; the new file keeps the old one's mode and owner |
//! | a symbolic link | followed (a chain of at most [`MAX_LINKS`]); its final target is written as above, the link stays |
//! | a character device (`/dev/null`) or a FIFO | written through: opened for writing (a FIFO waits for its reader, as `cat > FIFO` does), never replaced |
//! | a directory, a socket, a block device | refused |
//!
//! Refused too, before anything is written: a path ending in `/`, a parent that is missing or not a directory, a
//! directory lwt6 may not write into (`access(2)`: permissions, a read-only mount).
//!
//! *Atomically*: the bytes go to a temporary file `<name>.tmp-<pid>` in the target's directory, which
//! [`Output::commit`] flushes to disk and renames over the target; readers of the path see the old file or the
//! whole new one, never a part. An [`Output`] dropped without a commit (an error on the way, a closed pipe)
//! removes its temporary file and leaves the target untouched. A replaced file that had other hard links is
//! replaced under this name only (as editors do).
//!
//! Written through, an output is the stream itself: what was written before an error stays written.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{FileTypeExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Symbolic links followed from an output path before it is refused (`MAXSYMLINKS` of Linux).
pub const MAX_LINKS: usize = 40;

/// Buffer of a file output.
const BUF: usize = 1 << 16;

/// An output path that cannot be written, or a write that failed: the path as given, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutputError {
    /// The path as the user gave it (`-` for standard output).
    pub path: PathBuf,
    /// What went wrong, naming the file actually involved when it is another one (a link's target, a temporary
    /// file).
    pub reason: String,
    /// The output was standard output and its reader went away (EPIPE): not a failure to report, by convention
    /// (`lwt6 ... | head`).
    pub closed_pipe: bool,
}

impl std::fmt::Display for OutputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.reason)
    }
}

impl std::error::Error for OutputError {}

/// What an output path is and how it will be written ([`check`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    /// `-`: standard output.
    Stdout,
    /// A regular file or a new one, written atomically at `target` (the path, or the final target of its links).
    Replace {
        /// The file that will be replaced or created.
        target: PathBuf,
        /// The mode (permission bits), owner and group of the file it replaces.
        keep: Option<(u32, u32, u32)>,
    },
    /// Something written through, never replaced: a character device or a FIFO.
    Through {
        /// The device or FIFO (the path, or the final target of its links).
        target: PathBuf,
        /// What it is ("character device", "FIFO").
        kind: &'static str,
    },
}

fn error(path: &Path, reason: impl Into<String>) -> OutputError {
    OutputError {
        path: path.to_path_buf(),
        reason: reason.into(),
        closed_pipe: false,
    }
}

/// The error for a failed write to standard output: marked [`OutputError::closed_pipe`] for EPIPE.
fn stdout_error(path: &Path, err: &std::io::Error) -> OutputError {
    OutputError {
        closed_pipe: err.kind() == std::io::ErrorKind::BrokenPipe,
        ..error(path, format!("writing: {err}"))
    }
}

/// Follows `path` through symbolic links to the file it names (which need not exist).
fn resolve(path: &Path) -> Result<PathBuf, OutputError> {
    let mut p = path.to_path_buf();
    for _ in 0..=MAX_LINKS {
        match fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let t = fs::read_link(&p)
                    .map_err(|e| error(path, format!("reading link {}: {e}", p.display())))?;
                p = if t.is_absolute() {
                    t
                } else {
                    parent(&p).join(t)
                };
            }
            _ => return Ok(p),
        }
    }
    Err(error(
        path,
        format!("more than {MAX_LINKS} symbolic links to follow"),
    ))
}

/// The directory a path's file is in (`.` for a bare name).
fn parent(p: &Path) -> &Path {
    match p.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    }
}

/// Whether this process may create and remove files in `dir` (`access(2)` with W_OK | X_OK: permissions and
/// read-only mounts).
fn writable_dir(dir: &Path) -> std::io::Result<()> {
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    // SAFETY: `c` is a NUL-terminated string that lives across the call.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK | libc::X_OK) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Looks at an output path and says how it would be written, or why it cannot be; nothing is created.
pub fn check(path: &Path) -> Result<Dest, OutputError> {
    if path.as_os_str() == "-" {
        return Ok(Dest::Stdout);
    }
    if path.as_os_str().is_empty() {
        return Err(error(path, "an empty path"));
    }
    if path.as_os_str().as_bytes().ends_with(b"/") {
        return Err(error(path, "names a directory (ends in /), not a file"));
    }
    let target = resolve(path)?;
    let via = |what: &str| {
        if target == path {
            what.to_string()
        } else {
            format!("{what} (the link's target {})", target.display())
        }
    };
    let keep = match fs::symlink_metadata(&target) {
        // Missing, or a parent that is not a directory (said below).
        Err(e)
            if e.kind() == std::io::ErrorKind::NotFound
                || e.raw_os_error() == Some(libc::ENOTDIR) =>
        {
            None
        }
        Err(e) => return Err(error(path, via(&e.to_string()))),
        Ok(m) => {
            let t = m.file_type();
            if t.is_file() {
                Some((m.mode() & 0o7777, m.uid(), m.gid()))
            } else if t.is_dir() {
                return Err(error(path, via("is a directory")));
            } else if t.is_char_device() {
                return Ok(Dest::Through {
                    target,
                    kind: "character device",
                });
            } else if t.is_fifo() {
                return Ok(Dest::Through {
                    target,
                    kind: "FIFO",
                });
            } else if t.is_socket() {
                return Err(error(
                    path,
                    via("is a socket: lwt6 writes files, FIFOs and character devices, not sockets"),
                ));
            } else if t.is_block_device() {
                return Err(error(
                    path,
                    via("is a block device: lwt6 does not write onto a disk"),
                ));
            } else {
                return Err(error(path, via("is not a file lwt6 can write")));
            }
        }
    };
    let dir = parent(&target);
    match fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(error(path, format!("{} is not a directory", dir.display())));
        }
        Err(e) => return Err(error(path, format!("directory {}: {e}", dir.display()))),
    }
    writable_dir(dir)
        .map_err(|e| error(path, format!("cannot write into {}: {e}", dir.display())))?;
    Ok(Dest::Replace { target, keep })
}

/// A file written through a temporary file in the same directory and renamed over its target by
/// [`commit`](Self::commit) (see the [module](self) documentation). Dropped without a commit, the temporary file
/// is removed and the target is untouched.
#[derive(Debug)]
pub struct AtomicFile {
    path: PathBuf,
    target: PathBuf,
    tmp: PathBuf,
    w: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Checks `path` ([`check`]: it must be a regular file, a new one or a link to either) and creates the
    /// temporary file, with the mode and owner of the file it will replace.
    pub fn create(path: &Path) -> Result<AtomicFile, OutputError> {
        match check(path)? {
            Dest::Replace { target, keep } => AtomicFile::replacing(path, target, keep),
            Dest::Stdout => Err(error(path, "standard output cannot be replaced atomically")),
            Dest::Through { kind, .. } => Err(error(
                path,
                format!("is a {kind}: it is written through, never replaced"),
            )),
        }
    }

    fn replacing(
        path: &Path,
        target: PathBuf,
        keep: Option<(u32, u32, u32)>,
    ) -> Result<AtomicFile, OutputError> {
        let name = target
            .file_name()
            .ok_or_else(|| error(path, "not a file path"))?
            .to_os_string();
        let pid = std::process::id();
        let mut n = 0u32;
        let (tmp, f) = loop {
            let mut tmp_name = name.clone();
            tmp_name.push(format!(".tmp-{pid}"));
            if n > 0 {
                tmp_name.push(format!("-{n}"));
            }
            let tmp = target.with_file_name(tmp_name);
            // A new file only: a name already there (another output of this process, a leftover) is never
            // opened, so a link planted there cannot redirect the write.
            match OpenOptions::new().write(true).create_new(true).open(&tmp) {
                Ok(f) => break (tmp, f),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && n < 100 => n += 1,
                Err(e) => {
                    return Err(error(path, format!("creating {}: {e}", tmp.display())));
                }
            }
        };
        if let Some((mode, uid, gid)) = keep {
            // The owner first (changing it may clear set-id bits), then the mode. Only root may give a file away:
            // otherwise the group alone is kept when we are in it, and the new file is ours (as an editor's is).
            if std::os::unix::fs::fchown(&f, Some(uid), Some(gid)).is_err() {
                let _ = std::os::unix::fs::fchown(&f, None, Some(gid));
            }
            if let Err(e) = f.set_permissions(fs::Permissions::from_mode(mode)) {
                let _ = fs::remove_file(&tmp);
                return Err(error(
                    path,
                    format!("setting the mode of {}: {e}", tmp.display()),
                ));
            }
        }
        Ok(AtomicFile {
            path: path.to_path_buf(),
            target,
            tmp,
            w: Some(BufWriter::with_capacity(BUF, f)),
        })
    }

    /// The temporary file (removed unless committed).
    pub fn tmp_path(&self) -> &Path {
        &self.tmp
    }

    /// The error for a failed write to the temporary file.
    pub fn error(&self, err: std::io::Error) -> OutputError {
        error(&self.path, format!("writing {}: {err}", self.tmp.display()))
    }

    /// Flushes the temporary file to disk and renames it over the target.
    pub fn commit(mut self) -> Result<(), OutputError> {
        let w = self.w.take().expect("an uncommitted file has its writer");
        let done = w
            .into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all());
        if let Err(err) = done {
            let _ = fs::remove_file(&self.tmp);
            return Err(error(
                &self.path,
                format!("writing {}: {err}", self.tmp.display()),
            ));
        }
        if let Err(err) = fs::rename(&self.tmp, &self.target) {
            let _ = fs::remove_file(&self.tmp);
            return Err(error(
                &self.path,
                format!(
                    "renaming {} to {}: {err}",
                    self.tmp.display(),
                    self.target.display()
                ),
            ));
        }
        Ok(())
    }

    fn w(&mut self) -> &mut BufWriter<File> {
        self.w.as_mut().expect("writer present until commit")
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w().write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.w().write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w().flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.w.take().is_some() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

#[derive(Debug)]
enum Sink {
    Atomic(AtomicFile),
    Through(BufWriter<File>),
    Stdout(BufWriter<std::io::Stdout>),
}

/// An output being written: an [`AtomicFile`], a device or FIFO written through, or standard output (see the
/// [module](self) documentation). Nothing is final until [`commit`](Self::commit).
#[derive(Debug)]
pub struct Output {
    path: PathBuf,
    sink: Sink,
}

impl Output {
    /// Checks `path` ([`check`]) and opens it for writing: the temporary file of an atomic output, the device or
    /// FIFO (a FIFO waits here for a reader), or standard output for `-`.
    pub fn create(path: &Path) -> Result<Output, OutputError> {
        let sink = match check(path)? {
            Dest::Stdout => Sink::Stdout(BufWriter::with_capacity(BUF, std::io::stdout())),
            Dest::Replace { target, keep } => {
                Sink::Atomic(AtomicFile::replacing(path, target, keep)?)
            }
            Dest::Through { target, kind } => {
                let f = OpenOptions::new()
                    .write(true)
                    .open(&target)
                    .map_err(|e| error(path, format!("opening the {kind}: {e}")))?;
                Sink::Through(BufWriter::with_capacity(BUF, f))
            }
        };
        Ok(Output {
            path: path.to_path_buf(),
            sink,
        })
    }

    /// The path as given.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this output is standard output (`-`).
    pub fn is_stdout(&self) -> bool {
        matches!(self.sink, Sink::Stdout(_))
    }

    /// The error for a failed write, naming the output (and its temporary file).
    pub fn error(&self, err: std::io::Error) -> OutputError {
        match &self.sink {
            Sink::Atomic(a) => a.error(err),
            Sink::Stdout(_) => stdout_error(&self.path, &err),
            _ => error(&self.path, format!("writing: {err}")),
        }
    }

    /// Makes the output final: renames an atomic file over its target, flushes a stream.
    pub fn commit(self) -> Result<(), OutputError> {
        let path = self.path;
        match self.sink {
            Sink::Atomic(a) => a.commit(),
            Sink::Through(mut w) => w.flush().map_err(|e| error(&path, format!("writing: {e}"))),
            Sink::Stdout(mut w) => w.flush().map_err(|e| stdout_error(&path, &e)),
        }
    }

    fn w(&mut self) -> &mut dyn Write {
        match &mut self.sink {
            Sink::Atomic(a) => a,
            Sink::Through(w) => w,
            Sink::Stdout(w) => w,
        }
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.w().write(buf)
    }
    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        self.w().write_all(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.w().flush()
    }
}

/// Writes `bytes` to `path` as an [`Output`]: atomically for a file, through for a device or FIFO, to standard
/// output for `-`. Nothing is left behind on an error.
pub fn write_file(path: &Path, bytes: &[u8]) -> Result<(), OutputError> {
    let mut o = Output::create(path)?;
    if let Err(e) = o.write_all(bytes) {
        return Err(o.error(e));
    }
    o.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    struct Scratch(PathBuf);
    impl Scratch {
        fn new(name: &str) -> Scratch {
            let d = std::env::temp_dir().join(format!("lwt6-output-{}-{name}", std::process::id()));
            let _ = fs::remove_dir_all(&d);
            fs::create_dir_all(&d).unwrap();
            Scratch(d)
        }
        fn leftovers(&self) -> Vec<String> {
            fs::read_dir(&self.0)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .filter(|n| n.contains(".tmp-"))
                .collect()
        }
    }
    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = fs::remove_dir_all(&self.0);
        }
    }

    #[test]
    fn a_new_file_then_a_replaced_one() {
        let d = Scratch::new("new");
        let p = d.0.join("out.pcap");
        write_file(&p, b"one").unwrap();
        write_file(&p, b"two").unwrap();
        assert_eq!(fs::read(&p).unwrap(), b"two");
        assert!(d.leftovers().is_empty());
    }

    #[test]
    fn dropped_without_commit_leaves_nothing() {
        let d = Scratch::new("drop");
        let p = d.0.join("x.pcap");
        fs::write(&p, b"old").unwrap();
        {
            let mut f = Output::create(&p).unwrap();
            f.write_all(b"partial").unwrap();
            f.flush().unwrap();
            assert_eq!(d.leftovers().len(), 1);
        }
        assert_eq!(fs::read(&p).unwrap(), b"old");
        assert!(d.leftovers().is_empty());
    }

    #[test]
    fn the_replaced_file_keeps_its_mode() {
        let d = Scratch::new("mode");
        let p = d.0.join("secret.json");
        fs::write(&p, b"old").unwrap();
        fs::set_permissions(&p, fs::Permissions::from_mode(0o600)).unwrap();
        write_file(&p, b"new").unwrap();
        let m = fs::metadata(&p).unwrap();
        assert_eq!(m.mode() & 0o7777, 0o600);
        assert_eq!(fs::read(&p).unwrap(), b"new");
    }

    #[test]
    fn a_link_is_followed_and_stays_a_link() {
        let d = Scratch::new("link");
        fs::create_dir(d.0.join("sub")).unwrap();
        let target = d.0.join("sub").join("real.pcap");
        fs::write(&target, b"old").unwrap();
        // A relative link, resolved against the link's own directory; then a link to that link.
        symlink("sub/real.pcap", d.0.join("l1")).unwrap();
        symlink(d.0.join("l1"), d.0.join("l2")).unwrap();
        write_file(&d.0.join("l2"), b"new").unwrap();
        assert!(
            fs::symlink_metadata(d.0.join("l2"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert!(
            fs::symlink_metadata(d.0.join("l1"))
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(fs::read(&target).unwrap(), b"new");
        // A dangling link creates its target.
        symlink("sub/made.pcap", d.0.join("dangling")).unwrap();
        write_file(&d.0.join("dangling"), b"x").unwrap();
        assert_eq!(fs::read(d.0.join("sub/made.pcap")).unwrap(), b"x");
        // A loop is refused.
        symlink("loop2", d.0.join("loop1")).unwrap();
        symlink("loop1", d.0.join("loop2")).unwrap();
        let e = check(&d.0.join("loop1")).unwrap_err();
        assert!(e.reason.contains("symbolic links"), "{e}");
    }

    #[test]
    fn a_fifo_is_written_through() {
        let d = Scratch::new("fifo");
        let p = d.0.join("pipe");
        let c = std::ffi::CString::new(p.as_os_str().as_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let reader = {
            let p = p.clone();
            std::thread::spawn(move || fs::read(&p).unwrap())
        };
        write_file(&p, b"through").unwrap();
        assert_eq!(reader.join().unwrap(), b"through");
        assert!(fs::symlink_metadata(&p).unwrap().file_type().is_fifo());
        assert!(d.leftovers().is_empty());
    }

    #[test]
    fn refused_before_anything_is_written() {
        let d = Scratch::new("refuse");
        let e = check(&d.0).unwrap_err();
        assert!(e.reason.contains("is a directory"), "{e}");
        let e = check(&d.0.join("missing").join("x.pcap")).unwrap_err();
        assert!(e.reason.contains("missing"), "{e}");
        fs::write(d.0.join("file"), b"").unwrap();
        let e = check(&d.0.join("file").join("x.pcap")).unwrap_err();
        assert!(e.reason.contains("not a directory"), "{e}");
        let e = check(Path::new("out/")).unwrap_err();
        assert!(e.reason.contains("ends in /"), "{e}");
        let sock = d.0.join("sock");
        let _l = std::os::unix::net::UnixListener::bind(&sock).unwrap();
        let e = check(&sock).unwrap_err();
        assert!(e.reason.contains("is a socket"), "{e}");
        assert!(Output::create(&sock).is_err());
        assert!(fs::symlink_metadata(&sock).unwrap().file_type().is_socket());
        assert!(d.leftovers().is_empty());
        assert_eq!(check(Path::new("-")), Ok(Dest::Stdout));
    }
}
