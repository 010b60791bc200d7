//! `pinlearn run --preload`: what the preload library (crate
//! `pinlearn-preload`, `libpinlearn_preload.so`) does inside the program, and
//! how `run` hands it over.
//!
//! ```text
//!   --preload heartbeats,threads ─► Preload::from_str (the one parser: the flag here,
//!        │                                             the variable in the library)
//!        ▼
//!   preload::library(pinlearn's own path)  ─► $PINLEARN_PRELOAD_LIBRARY, else the
//!        │                                     file beside the pinlearn binary
//!        ▼
//!   Preload::apply(command) ─► LD_PRELOAD=lib (before any the user set)
//!                              PINLEARN_PRELOAD=heartbeats,threads
//!                              PINLEARN_PRELOAD_PARENT=<pinlearn's pid>
//!        ▼
//!   the program: heartbeats ─► one beat per completed OpenMP region piece and barrier
//!                              (libgomp; libomp through OMPT) and pthread_barrier_wait,
//!                              into the heartbeat channel
//!                threads    ─► each thread that starts threads gets a bubble holding it and
//!                              them, nested in its own creator's (the bubble channel)
//! ```
//!
//! The library reads its variables, never the command line; a value it does
//! not understand turns the part off (the program must never fail because
//! of pinlearn).

use crate::EngineError;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::str::FromStr;

/// The parts of the library `run` switches on: `heartbeats,threads`.
pub const PARTS_ENV: &str = "PINLEARN_PRELOAD";
/// The pid of the `pinlearn run` that started the program: the thread tree
/// is declared by the process whose parent it is (the one pinlearn reads the
/// bubble channel of), not by the programs that one starts.
pub const PARENT_ENV: &str = "PINLEARN_PRELOAD_PARENT";
/// Where the library is, when it is not beside the pinlearn binary.
pub const LIBRARY_ENV: &str = "PINLEARN_PRELOAD_LIBRARY";
/// The library's file name (what `cargo build` makes of crate `pinlearn-preload`).
pub const LIBRARY_FILE: &str = "libpinlearn_preload.so";

/// What the preload library does in the program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Preload {
    /// Heartbeats from the program's OpenMP regions and barriers.
    pub heartbeats: bool,
    /// The thread-creation tree as nested bubbles.
    pub threads: bool,
}

impl FromStr for Preload {
    type Err = EngineError;

    /// `heartbeats`, `threads`, or both separated by a comma.
    fn from_str(text: &str) -> Result<Self, EngineError> {
        let mut parts = Preload::default();
        for word in text.split(',').map(str::trim) {
            let part = match word {
                "heartbeats" => &mut parts.heartbeats,
                "threads" => &mut parts.threads,
                _ => {
                    return Err(EngineError::bad_input(format!(
                        "preload part {word:?}: use heartbeats, threads, or heartbeats,threads"
                    )));
                }
            };
            if std::mem::replace(part, true) {
                return Err(EngineError::bad_input(format!("preload part {word:?} is given twice")));
            }
        }
        Ok(parts)
    }
}

impl std::fmt::Display for Preload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let words: Vec<&str> = [(self.heartbeats, "heartbeats"), (self.threads, "threads")]
            .into_iter()
            .filter_map(|(on, word)| on.then_some(word))
            .collect();
        f.write_str(&words.join(","))
    }
}

impl Preload {
    /// Sets the program's environment so that it loads `library` with these
    /// parts on; an `LD_PRELOAD` the user set keeps its libraries after it.
    pub fn apply(&self, command: &mut Command, library: &Path) {
        let mut preload = library.as_os_str().to_owned();
        if let Some(theirs) = std::env::var_os("LD_PRELOAD").filter(|v| !v.is_empty()) {
            preload.push(" ");
            preload.push(theirs);
        }
        command
            .env("LD_PRELOAD", preload)
            .env(PARTS_ENV, self.to_string())
            .env(PARENT_ENV, std::process::id().to_string());
    }
}

/// The preload library: `$PINLEARN_PRELOAD_LIBRARY`, else the file beside
/// `pinlearn` (the binary's path).
pub fn library(pinlearn: &Path) -> Result<PathBuf, EngineError> {
    if let Some(path) = std::env::var_os(LIBRARY_ENV) {
        let path = PathBuf::from(path);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(EngineError::bad_input(format!(
                "{LIBRARY_ENV}={}: no such file; give the path of {LIBRARY_FILE}",
                path.display()
            )))
        };
    }
    let beside = pinlearn.parent().unwrap_or(Path::new(".")).join(LIBRARY_FILE);
    if beside.is_file() {
        // LD_PRELOAD wants an absolute path: the program may change directory.
        return std::fs::canonicalize(&beside)
            .map_err(|e| EngineError::io(format!("cannot resolve {}", beside.display()), e));
    }
    Err(EngineError::bad_input(format!(
        "--preload: {} is not there; build it with `cargo build --release -p pinlearn-preload` \
         (it lands beside the pinlearn binary) or give its path in {LIBRARY_ENV}",
        beside.display()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_parse_and_print_back() {
        for text in ["heartbeats", "threads", "heartbeats,threads", "threads, heartbeats"] {
            let parts: Preload = text.parse().unwrap();
            let again: Preload = parts.to_string().parse().unwrap();
            assert_eq!(parts, again, "{text}");
        }
        let both: Preload = "threads,heartbeats".parse().unwrap();
        assert!(both.heartbeats && both.threads);
        assert_eq!(both.to_string(), "heartbeats,threads");
        let only: Preload = "threads".parse().unwrap();
        assert!(only.threads && !only.heartbeats);
    }

    #[test]
    fn bad_parts_are_refused_with_the_words_to_use() {
        for (text, says) in [
            ("", "preload part \"\""),
            ("beats", "use heartbeats, threads"),
            ("heartbeats,", "preload part \"\""),
            ("threads,threads", "given twice"),
        ] {
            let err = text.parse::<Preload>().unwrap_err();
            assert_eq!(err.exit_status(), 2, "{text}");
            assert!(err.to_string().contains(says), "{text}: {err}");
        }
    }

    #[test]
    fn a_missing_library_says_how_to_build_it() {
        let dir = tempfile::tempdir().unwrap();
        let err = library(&dir.path().join("pinlearn")).unwrap_err();
        assert_eq!(err.exit_status(), 2);
        assert!(
            err.to_string().contains("cargo build --release -p pinlearn-preload"),
            "{err}"
        );
        std::fs::write(dir.path().join(LIBRARY_FILE), b"").unwrap();
        let found = library(&dir.path().join("pinlearn")).unwrap();
        assert!(
            found.is_absolute() && found.ends_with(LIBRARY_FILE),
            "{}",
            found.display()
        );
    }
}
