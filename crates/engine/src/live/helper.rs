//! Helper processes (background loads, the bench's runs) that must end with
//! the pinlearn that started them, on every way out, SIGKILL included.
//!
//! ```text
//!   end_with_caller(&mut command)   (before spawn, in the parent: note our pid)
//!        │ fork
//!        ▼ child, before exec:
//!   prctl(PR_SET_PDEATHSIG, SIGKILL) ─► getppid() still us? ─► exec
//!                                      └─ no: we died between fork and prctl ─► _exit(1)
//! ```
//!
//! The kernel sends the signal when the *thread* that forked ends, so the
//! command must be spawned from a thread that lives as long as the helper
//! should (the main thread, or a controller thread that outlives it).

use std::os::unix::process::CommandExt;
use std::process::Command;

/// Makes the process `command` will start receive SIGKILL when the calling
/// thread ends (and exit at once if it already has by the time it starts).
pub fn end_with_caller(command: &mut Command) {
    // SAFETY: getpid is async-signal-safe and runs in the parent.
    let parent = unsafe { libc::getpid() };
    // SAFETY: the hook runs in the child between fork and exec and makes
    // only async-signal-safe system calls (prctl, getppid, _exit); it does
    // not allocate.
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if libc::getppid() != parent {
                libc::_exit(1);
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Stdio;
    use std::time::{Duration, Instant};

    #[test]
    fn a_helper_dies_when_the_thread_that_started_it_ends() {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut command = Command::new("sleep");
            command.arg("60").stdin(Stdio::null());
            end_with_caller(&mut command);
            let child = command.spawn().expect("spawn sleep");
            tx.send(child).expect("send");
        })
        .join()
        .expect("spawner");
        let mut child = rx.recv().expect("child");
        let started = Instant::now();
        let status = loop {
            if let Some(status) = child.try_wait().expect("wait") {
                break status;
            }
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "the helper outlived its starter"
            );
            std::thread::sleep(Duration::from_millis(20));
        };
        use std::os::unix::process::ExitStatusExt;
        assert_eq!(status.signal(), Some(libc::SIGKILL), "{status:?}");
    }
}
