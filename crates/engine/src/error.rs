//! The engine's errors, split by who must act: the user (bad input, exit
//! status 2) or the environment (a syscall failed at run time, status 1).

use std::io;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    /// The user asked for something impossible; nothing was changed.
    #[error("{0}")]
    BadInput(String),
    /// `run` could not start the program (status 127 if not found, else 126,
    /// as `env` and `timeout` do).
    #[error("{message}")]
    CannotRun { message: String, status: i32 },
    /// The target or the system refused an operation pinlearn needed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: io::Error,
    },
}

impl EngineError {
    pub fn bad_input(msg: impl Into<String>) -> Self {
        EngineError::BadInput(msg.into())
    }

    pub fn io(context: impl Into<String>, source: io::Error) -> Self {
        EngineError::Io {
            context: context.into(),
            source,
        }
    }

    /// The process exit status this error deserves: 2 for bad input, 1 otherwise.
    pub fn exit_status(&self) -> i32 {
        match self {
            EngineError::BadInput(_) => 2,
            EngineError::CannotRun { status, .. } => *status,
            EngineError::Io { .. } => 1,
        }
    }
}

impl From<nix::Error> for EngineError {
    fn from(e: nix::Error) -> Self {
        EngineError::io("system call failed", io::Error::from(e))
    }
}
