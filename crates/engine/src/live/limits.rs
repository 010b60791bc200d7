//! The manager's open-file limit: each supervised thread holds a file or two
//! open for the whole run (its schedstat, its CPU-clock sampler), so the
//! soft limit most systems start a shell with, 1024, ends supervision at
//! about 500 threads, where users run thousands.
//!
//! ```text
//!   supervise::run / attach ─► OpenFiles::raise(): soft limit up to the hard one
//!        │ run: the program starts with the soft limit pinlearn was given
//!        │      (child_keeps_original, before exec): pinlearn's need is not its
//!        ▼
//!   admitting a thread: the open fails with EMFILE / ENFILE ─► is_out_of_files:
//!        one note saying so and what to do; the thread is tried again each
//!        period (a file freed by a thread that ended lets it in)
//! ```
//!
//! nix's `getrlimit` / `setrlimit` (the Resource API) do the calls.

use nix::sys::resource::{Resource, getrlimit, setrlimit};
use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

/// The open-file limits pinlearn was started with, and whether it raised
/// its soft limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenFiles {
    /// The soft limit pinlearn was given.
    pub original: u64,
    /// The soft limit it runs with now (the hard limit where it could).
    pub now: u64,
    /// The hard limit: no unprivileged raise goes above it.
    pub hard: u64,
}

impl OpenFiles {
    /// Raises this process's soft limit on open files to its hard limit.
    /// `None` where the limits cannot be read; a refused raise keeps the
    /// soft limit as it was (`now == original`).
    pub fn raise() -> Option<Self> {
        let (original, hard) = getrlimit(Resource::RLIMIT_NOFILE).ok()?;
        let now = if original < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
            hard
        } else {
            original
        };
        Some(Self { original, now, hard })
    }

    /// Makes the program `command` starts begin with the soft limit pinlearn
    /// was given, not the one it raised for itself (a program using
    /// `select` may rely on descriptors below 1024).
    pub fn child_keeps_original(&self, command: &mut Command) {
        if self.now == self.original {
            return;
        }
        let (soft, hard) = (self.original, self.hard);
        // SAFETY: setrlimit is one system call, async-signal-safe; the hook
        // allocates nothing.
        unsafe {
            command.pre_exec(move || setrlimit(Resource::RLIMIT_NOFILE, soft, hard).map_err(io::Error::from));
        }
    }
}

/// The open failed because this process or the system has no descriptor
/// left (not because the thread ended).
pub fn is_out_of_files(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE))
}

/// The one note said when a thread cannot be admitted for want of files.
pub fn out_of_files_note(pid: u32, tid: u32, e: &io::Error) -> String {
    let limit = getrlimit(Resource::RLIMIT_NOFILE)
        .map(|(soft, hard)| format!(" (limit {soft}, hard limit {hard})"))
        .unwrap_or_default();
    format!(
        "cannot open the files of thread {tid} of process {pid}: {e}{limit}; threads beyond it are not supervised until files free up: raise the hard limit (`ulimit -Hn`, LimitNOFILE= of a systemd unit) or supervise fewer threads"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_rises_to_the_hard_one_and_the_program_gets_the_original() {
        // Run in a child process: the limit is the whole test binary's.
        let out = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "live::limits::tests::raise_in_a_child",
                "--nocapture",
                "--ignored",
            ])
            .env(CHILD, "1")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("raised"), "{text}");
    }

    /// Set for the test binary run by the test above.
    const CHILD: &str = "PINLEARN_TEST_LIMITS_CHILD";

    /// Body of the test above, run in its own process (and nowhere else:
    /// it changes the limit of the whole process).
    #[test]
    #[ignore = "run by the_limit_rises_to_the_hard_one_and_the_program_gets_the_original in a process of its own"]
    fn raise_in_a_child() {
        if std::env::var_os(CHILD).is_none() {
            return;
        }
        let (_, hard) = getrlimit(Resource::RLIMIT_NOFILE).unwrap();
        let start = 256.min(hard);
        setrlimit(Resource::RLIMIT_NOFILE, start, hard).unwrap();
        let limits = OpenFiles::raise().unwrap();
        assert_eq!(limits.original, start);
        assert_eq!(limits.now, hard);
        assert_eq!(getrlimit(Resource::RLIMIT_NOFILE).unwrap(), (hard, hard));
        let mut command = Command::new("sh");
        command.args(["-c", "ulimit -Sn; ulimit -Hn"]);
        limits.child_keeps_original(&mut command);
        let out = command.output().unwrap();
        let seen: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(str::to_string)
            .collect();
        let hard_text = if hard == nix::sys::resource::RLIM_INFINITY {
            "unlimited".to_string()
        } else {
            hard.to_string()
        };
        assert_eq!(seen, [start.to_string(), hard_text]);
        println!("raised");
    }

    #[test]
    fn only_descriptor_exhaustion_counts_as_out_of_files() {
        assert!(is_out_of_files(&io::Error::from_raw_os_error(libc::EMFILE)));
        assert!(is_out_of_files(&io::Error::from_raw_os_error(libc::ENFILE)));
        assert!(!is_out_of_files(&io::Error::from_raw_os_error(libc::ENOENT)));
        assert!(!is_out_of_files(&io::Error::from_raw_os_error(libc::ESRCH)));
    }
}
