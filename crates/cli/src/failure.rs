//! The one error type at the command line's edge: every library error
//! becomes bad input (exit status 2: nothing was changed, fix the command)
//! or a failure at run time (exit status 1: a workload failed, the system
//! refused), with one line of text.

use pinlearn_bench::BenchError;
use pinlearn_engine::EngineError;
use pinlearn_sim::SimError;
use pinlearn_workloads::WorkError;

#[derive(Debug)]
pub enum Failure {
    /// The command asked for something impossible: exit 2.
    BadInput(String),
    /// Something failed while running: exit 1.
    Runtime(String),
    /// `run` could not start its program: the shell's statuses (126 cannot
    /// execute, 127 not found), as if the program had failed itself.
    CannotRun(u8, String),
}

impl Failure {
    pub fn status(&self) -> u8 {
        match self {
            Failure::BadInput(_) => 2,
            Failure::Runtime(_) => 1,
            Failure::CannotRun(status, _) => *status,
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::BadInput(text) | Failure::Runtime(text) | Failure::CannotRun(_, text) => f.write_str(text),
        }
    }
}

impl From<EngineError> for Failure {
    fn from(e: EngineError) -> Self {
        match e.exit_status() {
            2 => Failure::BadInput(e.to_string()),
            1 => Failure::Runtime(e.to_string()),
            status => Failure::CannotRun(u8::try_from(status).unwrap_or(1), e.to_string()),
        }
    }
}

impl Failure {
    fn classify(bad_input: bool, text: String) -> Self {
        if bad_input {
            Failure::BadInput(text)
        } else {
            Failure::Runtime(text)
        }
    }
}

impl From<BenchError> for Failure {
    fn from(e: BenchError) -> Self {
        Failure::classify(e.is_bad_input(), e.to_string())
    }
}

impl From<SimError> for Failure {
    fn from(e: SimError) -> Self {
        Failure::classify(e.is_bad_input(), e.to_string())
    }
}

impl From<WorkError> for Failure {
    /// A workload's options that cannot work are bad input; a workload that
    /// fails while running (no thread, a wrong result) is a failure.
    fn from(e: WorkError) -> Self {
        match e {
            WorkError::BadInput(text) => Failure::BadInput(text),
            other => Failure::Runtime(other.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_input_is_2_and_everything_else_1() {
        assert_eq!(Failure::from(WorkError::BadInput("x".into())).status(), 2);
        assert_eq!(Failure::from(WorkError::WrongResult("x".into())).status(), 1);
        assert_eq!(Failure::from(BenchError::BadInput("x".into())).status(), 2);
        assert_eq!(Failure::from(BenchError::Machine("x".into())).status(), 1);
        assert_eq!(Failure::from(SimError::BadInput("x".into())).status(), 2);
        assert_eq!(Failure::from(SimError::Output("x".into())).status(), 1);
        assert_eq!(Failure::from(EngineError::bad_input("x")).status(), 2);
        let refused = EngineError::io("x", std::io::Error::from_raw_os_error(1));
        assert_eq!(Failure::from(refused).status(), 1);
        let missing = EngineError::CannotRun {
            message: "x".into(),
            status: 127,
        };
        assert_eq!(Failure::from(missing).status(), 127);
    }
}
