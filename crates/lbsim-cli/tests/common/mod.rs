//! Helpers shared by the command-line tests.
#![allow(dead_code)]

#[path = "../../../lbsim/tests/common/tempdir.rs"]
mod tempdir;
#[allow(unused_imports)]
pub use tempdir::TempDir;
