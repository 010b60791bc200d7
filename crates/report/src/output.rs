//! Where a report goes: a file, or standard output. The binary turns the
//! one convention of every `--json`, `--markdown` ... flag (`FILE`, or `-`
//! for stdout) into an `Output`; the libraries write to it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

/// A report's destination.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Output {
    Stdout,
    File(PathBuf),
}

impl Output {
    /// `-` is stdout, anything else a file path.
    pub fn from_arg(text: &str) -> Output {
        if text == "-" {
            Output::Stdout
        } else {
            Output::File(PathBuf::from(text))
        }
    }

    pub fn is_stdout(&self) -> bool {
        *self == Output::Stdout
    }

    /// The file's directory must exist: checked before any work is done,
    /// so that a long run does not end unable to write its result.
    pub fn check_writable(&self) -> Result<(), String> {
        let Output::File(path) = self else { return Ok(()) };
        let parent = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        if parent.is_dir() {
            Ok(())
        } else {
            Err(format!(
                "cannot write {}: directory {} does not exist",
                path.display(),
                parent.display()
            ))
        }
    }

    /// Writes `text` (a final newline added when missing).
    pub fn write(&self, text: &str) -> Result<(), String> {
        let mut text = text.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        match self {
            Output::Stdout => {
                let mut out = std::io::stdout().lock();
                out.write_all(text.as_bytes())
                    .and_then(|()| out.flush())
                    .map_err(|e| format!("cannot write to stdout: {e}"))
            }
            Output::File(path) => {
                std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))
            }
        }
    }
}

impl std::fmt::Display for Output {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Output::Stdout => f.write_str("-"),
            Output::File(path) => write!(f, "{}", path.display()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dash_is_stdout_and_files_are_checked_and_written() {
        assert!(Output::from_arg("-").is_stdout());
        let dir = tempfile::tempdir().expect("temp dir");
        let file = Output::from_arg(dir.path().join("out.json").to_str().expect("utf-8"));
        assert!(!file.is_stdout());
        file.check_writable().expect("directory exists");
        file.write("{}").expect("writes");
        let Output::File(path) = &file else { panic!() };
        assert_eq!(std::fs::read_to_string(path).expect("written"), "{}\n");
        let missing = Output::from_arg("/no/such/dir/out.json");
        assert!(missing.check_writable().unwrap_err().contains("does not exist"));
        assert_eq!(missing.to_string(), "/no/such/dir/out.json");
    }
}
