//! A scratch directory for one test, removed when the test ends (passing or panicking).

use std::ffi::OsStr;
use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A directory under the system's temporary directory, named for the test binary, the process and the test, and
/// removed with everything in it when dropped.
pub struct TmpDir(PathBuf);

impl TmpDir {
    /// Creates `$TMPDIR/lwt6-PREFIX-PID-NAME`, empty (a leftover of an earlier process with the same id is removed).
    pub fn new(prefix: &str, name: &str) -> TmpDir {
        let d = std::env::temp_dir().join(format!("lwt6-{prefix}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        TmpDir(d)
    }
}

impl Drop for TmpDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Deref for TmpDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for TmpDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<OsStr> for TmpDir {
    fn as_ref(&self) -> &OsStr {
        self.0.as_os_str()
    }
}
