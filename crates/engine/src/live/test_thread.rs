//! For tests: a thread of this process that waits until it is let go, so
//! that its mask can be changed and read from outside.

use std::sync::mpsc;
use std::thread::JoinHandle;

/// A parked thread: its tid; dropping `release` (or sending on it) ends it.
pub struct ParkedThread {
    pub tid: u32,
    pub release: mpsc::Sender<()>,
    pub handle: JoinHandle<()>,
}

impl ParkedThread {
    pub fn start() -> Self {
        let (tid_tx, tid_rx) = mpsc::channel();
        let (release, wait) = mpsc::channel::<()>();
        let handle = std::thread::spawn(move || {
            tid_tx.send(nix::unistd::gettid().as_raw() as u32).expect("send tid");
            wait.recv().ok();
        });
        let tid = tid_rx.recv().expect("the thread started");
        ParkedThread { tid, release, handle }
    }

    /// Lets the thread end and waits for it.
    pub fn finish(self) {
        drop(self.release);
        self.handle.join().expect("the parked thread ended");
    }
}
