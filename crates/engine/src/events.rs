//! Sleeping between periods without polling: one `poll(2)` on a signalfd
//! and a pidfd, with the next period's deadline as timeout.
//!
//! ```text
//!   wait_until(deadline) ── poll([signalfd, pidfd], deadline - now) ─┬─► Signal { signal, from_process }
//!                                                                  ├─► TargetExited   (pidfd readable)
//!                                                                  └─► Deadline
//! ```
//!
//! SIGINT, SIGTERM and SIGHUP are blocked in the calling thread and read from
//! the signalfd instead (with the sender: a signal from another process has
//! `si_code <= 0`, one from the terminal comes from the kernel). The mask is
//! put back when `Events` is dropped. Children inherit a blocked mask, so
//! `supervise::run` clears it between fork and exec.
//! Where `pidfd_open` is missing (Linux < 5.3) the target is checked every
//! 10 ms instead.

use crate::EngineError;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, SigmaskHow, Signal, pthread_sigmask};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use std::os::fd::{AsFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

/// What ended a wait.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// A stop signal arrived; `from_process` when another process sent it (kill).
    Signal { signal: i32, from_process: bool },
    /// The watched process has exited (or the fallback check is due).
    TargetMaybeExited,
    /// The deadline passed.
    Deadline,
}

/// Signals and the target's exit, as pollable file descriptors.
pub struct Events {
    signals: SignalFd,
    old_mask: SigSet,
    pidfd: Option<OwnedFd>,
    /// A target is watched but pidfd_open failed: check it every 10 ms.
    check_often: bool,
}

impl Events {
    /// Starts catching SIGINT/SIGTERM/SIGHUP in this thread and watching `pid`.
    pub fn new(pid: Option<u32>) -> Result<Self, EngineError> {
        let mut mask = SigSet::empty();
        for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGHUP] {
            mask.add(signal);
        }
        let mut old_mask = SigSet::empty();
        pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&mask), Some(&mut old_mask))?;
        let signals =
            SignalFd::with_flags(&mask, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC).inspect_err(|_| {
                let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&old_mask), None);
            })?;
        let mut events = Events {
            signals,
            old_mask,
            pidfd: None,
            check_often: false,
        };
        if let Some(pid) = pid {
            events.watch(pid);
        }
        Ok(events)
    }

    /// Watches `pid` for its exit (replacing any earlier one).
    pub fn watch(&mut self, pid: u32) {
        // SAFETY: pidfd_open takes a pid and flags and returns a new fd or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        // SAFETY: a non-negative return is a fresh fd that we own.
        self.pidfd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as i32) });
        self.check_often = self.pidfd.is_none();
    }

    /// Blocks until a signal, the target's exit, or `deadline`.
    pub fn wait_until(&mut self, deadline: Instant) -> Event {
        loop {
            if let Ok(Some(info)) = self.signals.read_signal() {
                return Event::Signal {
                    signal: info.ssi_signo as i32,
                    from_process: info.ssi_code <= 0,
                };
            }
            let now = Instant::now();
            if now >= deadline {
                return Event::Deadline;
            }
            let mut left = deadline - now;
            if self.check_often {
                left = left.min(Duration::from_millis(10));
            }
            // Round up so that a wake-up is never early by a fraction of a millisecond.
            let millis = left.as_micros().div_ceil(1000).min(i32::MAX as u128) as i32;
            let mut fds = vec![PollFd::new(self.signals.as_fd(), PollFlags::POLLIN)];
            if let Some(pidfd) = &self.pidfd {
                fds.push(PollFd::new(pidfd.as_fd(), PollFlags::POLLIN));
            }
            match poll(&mut fds, PollTimeout::try_from(millis).unwrap_or(PollTimeout::MAX)) {
                Ok(_) => {
                    let exited = fds.get(1).and_then(|f| f.revents()).is_some_and(|r| !r.is_empty());
                    if exited || (self.check_often && Instant::now() < deadline) {
                        return Event::TargetMaybeExited;
                    }
                }
                Err(nix::errno::Errno::EINTR) => {}
                Err(_) => return Event::TargetMaybeExited,
            }
        }
    }
}

impl Drop for Events {
    fn drop(&mut self) {
        let _ = pthread_sigmask(SigmaskHow::SIG_SETMASK, Some(&self.old_mask), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_from_another_process_is_reported_with_its_origin() {
        let mut events = Events::new(None).unwrap();
        // tgkill(2) to this very thread (others in the test binary do not
        // block SIGHUP): sent by a process, si_code SI_TKILL.
        // SAFETY: plain syscall with valid ids.
        let ret = unsafe {
            libc::syscall(
                libc::SYS_tgkill,
                libc::getpid(),
                nix::unistd::gettid().as_raw(),
                libc::SIGHUP,
            )
        };
        assert_eq!(ret, 0);
        let event = events.wait_until(Instant::now() + Duration::from_secs(5));
        assert_eq!(
            event,
            Event::Signal {
                signal: libc::SIGHUP,
                from_process: true
            }
        );
    }

    #[test]
    fn the_exit_of_a_watched_process_ends_the_wait() {
        let mut child = std::process::Command::new("sleep").arg("0.2").spawn().unwrap();
        let mut events = Events::new(Some(child.id())).unwrap();
        let start = Instant::now();
        let event = events.wait_until(start + Duration::from_secs(10));
        assert_eq!(event, Event::TargetMaybeExited);
        assert!(child.try_wait().unwrap().is_some());
        assert!(start.elapsed() < Duration::from_secs(5));
    }

    #[test]
    fn without_events_the_wait_ends_at_the_deadline() {
        let mut events = Events::new(None).unwrap();
        let deadline = Instant::now() + Duration::from_millis(30);
        assert_eq!(events.wait_until(deadline), Event::Deadline);
        assert!(Instant::now() >= deadline);
    }
}
