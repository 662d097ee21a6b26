//! A test's temporary directory (shared with the command-line tests, which include this file).

use std::ops::Deref;
use std::path::{Path, PathBuf};

/// A fresh directory for one test's files, `temp_dir()/lbsim-<prefix>-<pid>-<name>`; it is
/// removed when dropped, except while the thread panics (the test failed): then it stays, and
/// one line on stderr names it, so the files can be inspected. Derefs to its `Path`.
#[derive(Debug)]
pub struct TempDir(PathBuf);

impl TempDir {
    /// Creates the directory, removing one a previous run left behind. Names must be unique
    /// among tests running at the same time in one test binary.
    pub fn new(prefix: &str, name: &str) -> TempDir {
        let d = std::env::temp_dir().join(format!("lbsim-{prefix}-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap_or_else(|e| panic!("{}: {e}", d.display()));
        TempDir(d)
    }
}

impl Deref for TempDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("test failed: its files are kept in {}", self.0.display());
        } else {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
}
