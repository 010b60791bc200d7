//! Real-time supervision of a live process: `run` and `attach`.
//!
//! ```text
//!   Session::prepare (validation) ─► engine ─► [run: spawn CMD]
//!        │
//!        ▼  supervise (shared by run and attach), every T_CPU (absolute deadlines, no drift):
//!   engine.step(LiveProcess) ── between steps, block until the deadline or:
//!        │                         target ended? --duration over? SIGINT/SIGTERM/SIGHUP?
//!        │  journal: each original mask written (0600) before its first change; a watchdog
//!        │  process restores from it if this manager dies (SIGKILL); `pinlearn restore PID`
//!        │  status: where every thread is, rewritten when that changes (`pinlearn status PID`)
//!        ▼  on any way out (also errors and panics, via Drop)
//!   restore every changed mask ─► journal removed ─► watchdog stopped ─► flush trace ─► Summary
//!                                  (status removed)
//!        │
//!   run: keep forwarding signals until CMD exits; exit with its status
//! ```
//!
//! Waiting between periods blocks in `poll(2)` (see `events`), so an idle
//! manager costs nothing between its periods.
//!
//! Signals: `run` forwards SIGINT/SIGTERM/SIGHUP sent to pinlearn by another
//! process (kill) to the program; signals the terminal sends already reach
//! the whole foreground process group, so those are not sent twice.

use crate::EngineError;
use crate::config::ManagerPriority;
use crate::engine::{EndedThreads, Engine, ThreadSummary};
use crate::events::{Event, Events};
use crate::live::{
    Journal, LiveProcess, ManagerScheduling, OpenFiles, Scope, get_affinity, process_alive, runtime_dir, set_affinity,
};
use crate::pace::Pace;
use crate::session::Session;
use crate::status::StatusFile;
use serde::Serialize;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// The end-of-run report (`--json` prints it as is).
#[derive(Clone, Debug, Serialize)]
pub struct Summary {
    pub policy: String,
    pub metric: String,
    /// What pinlearn had to say about this machine (said once at the start).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    pub cpus: String,
    pub interval_ms: f64,
    /// The longest period the manager kept: above `interval_ms` where its
    /// steps cost more than `manager_budget` of the CPUs' time.
    pub longest_interval_ms: f64,
    pub wall_s: f64,
    pub periods: u64,
    /// Periods the manager missed: counted where one began more than a
    /// period and a half after the one before it (it waited for a CPU).
    pub missed_periods: u64,
    /// The manager ran at real-time priority (`manager_priority`; a note
    /// says if it gave it up during the run).
    pub manager_realtime: bool,
    pub threads_seen: usize,
    pub repins: u64,
    /// Processes whose memory was moved to another node (memory binding).
    pub memory_moves: u64,
    /// Threads whose memory was moved to the node they were placed on
    /// (`move_thread_memory`).
    pub thread_memory_moves: u64,
    /// The share of the CPUs' time other programs ran on them, the mean
    /// over the periods (`None` where it cannot be told).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub others_share: Option<f64>,
    /// The share of the threads' memory on other NUMA nodes than the ones
    /// they ran on, the mean over the periods, overall and per arm of the
    /// guard (`None` where it cannot be told: one memory node).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub remote_share: Option<crate::RemoteShare>,
    /// CPU time of the manager itself (user + system).
    pub manager_cpu_s: f64,
    /// Manager CPU time as a share of one core over the run, in percent.
    pub manager_cpu_pct: f64,
    /// The manager's peak resident memory (KiB), from getrusage.
    pub manager_max_rss_kib: u64,
    /// Why supervision ended: `target-exited`, `duration`, `signal SIGINT`, `stopped`.
    pub ended_by: String,
    /// The learner's do-no-harm guard: periods it left to the OS, switches.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub guard: Option<GuardSummary>,
    /// The program's exit status (`run` only; 128+N if killed by signal N).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
    /// The first stop signal (SIGINT, SIGTERM, SIGHUP) pinlearn received
    /// while the program ran (`run` only): forwarded to it, or sent to the
    /// whole process group by the terminal. A program may handle it and
    /// exit 0; a caller running several programs (the demo) stops.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<i32>,
    /// Every live thread and the first 64 that ended.
    pub threads: Vec<ThreadSummary>,
    /// The other ended threads, counted together.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ended_not_listed: Option<EndedThreads>,
}

/// What the do-no-harm guard did over a run.
#[derive(Clone, Debug, Serialize)]
pub struct GuardSummary {
    /// Share of the periods in which the OS placed the threads (its windows).
    pub os_share: f64,
    /// How often the better-measuring side changed.
    pub switches: u64,
}

impl Summary {
    /// Human-readable report (what `--json` does not ask for).
    pub fn to_text(&self) -> String {
        let missed = match self.missed_periods {
            0 => String::new(),
            missed => format!(" ({missed} more missed)"),
        };
        let stretched = if self.longest_interval_ms > self.interval_ms {
            format!(" (stretched up to {:.0} ms)", self.longest_interval_ms)
        } else {
            String::new()
        };
        let mut out = format!(
            "pinlearn: {} on CPUs {}, metric {}, {:.1} s, {} periods of {} ms{stretched}{missed}\n",
            self.policy, self.cpus, self.metric, self.wall_s, self.periods, self.interval_ms
        );
        out += &format!(
            "threads seen {}, re-pins {}, manager CPU {:.3} s ({:.2}% of one core), memory {} MiB, ended by {}\n",
            self.threads_seen,
            self.repins,
            self.manager_cpu_s,
            self.manager_cpu_pct,
            self.manager_max_rss_kib / 1024,
            self.ended_by
        );
        if let Some(share) = self.others_share {
            out += &format!(
                "other programs ran {:.0}% of these CPUs' time (mean of the periods)\n",
                100.0 * share
            );
        }
        if let Some(remote) = self.remote_share {
            out += &format!(
                "threads' memory on other nodes than theirs: {:.0}% (mean of the periods)",
                100.0 * remote.mean
            );
            if let (Some(os), Some(learn)) = (remote.os, remote.learn) {
                out += &format!(
                    "; {:.0}% in the OS's periods, {:.0}% in the learner's",
                    100.0 * os,
                    100.0 * learn
                );
            }
            out += "\n";
        }
        if let Some(guard) = &self.guard {
            out += &format!(
                "guard: the OS placed the threads in {:.0}% of the periods, {} switches of the better side\n",
                100.0 * guard.os_share,
                guard.switches
            );
        }
        let shown = 32;
        out += &format!(
            "  {:>8} {:>8} {:<16} {:>7} {:>10} {:<12} {:>7} {:>12} {:>7}  {}\n",
            "pid",
            "tid",
            "name",
            "periods",
            "mean speed",
            "scored by",
            "waiting",
            "mean utility",
            "re-pins",
            "last place"
        );
        let fmt = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.3}"));
        for t in self.threads.iter().take(shown) {
            out += &format!(
                "  {:>8} {:>8} {:<16} {:>7} {:>10} {:<12} {:>7} {:>12} {:>7}  {}\n",
                t.who.pid,
                t.who.tid,
                crate::printable(&t.who.name),
                t.periods,
                fmt(t.mean_speed),
                t.source.unwrap_or("-"),
                t.waiting_share
                    .map_or("-".to_string(), |w| format!("{:.0}%", 100.0 * w)),
                fmt(t.mean_utility),
                t.repins,
                t.last_place
            );
        }
        if self.threads.len() > shown {
            out += &format!(
                "  ... and {} more threads (use --json for all)\n",
                self.threads.len() - shown
            );
        }
        if let Some(ended) = &self.ended_not_listed {
            out += &format!(
                "  ... and {} more threads that ended, together: {} periods, {} re-pins, mean speed {}\n",
                ended.threads,
                ended.periods,
                ended.repins,
                fmt(ended.mean_speed)
            );
        }
        out
    }
}

/// CPU time (user + system) of the calling process, or of the calling
/// thread only when `thread_only`.
pub fn cpu_time(thread_only: bool) -> Duration {
    let who = if thread_only {
        libc::RUSAGE_THREAD
    } else {
        libc::RUSAGE_SELF
    };
    // SAFETY: getrusage writes into the zeroed struct we own.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(who, &mut usage);
        usage
    };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(usage.ru_utime) + tv(usage.ru_stime)
}

/// Peak resident memory of this process in KiB.
pub fn max_rss_kib() -> u64 {
    // SAFETY: getrusage writes into the zeroed struct we own.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    u64::try_from(usage.ru_maxrss).unwrap_or(0)
}

/// Why a supervision loop stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    TargetExited,
    Duration,
    Signal(i32),
    Requested,
}

impl Stop {
    fn describe(self) -> String {
        match self {
            Stop::TargetExited => "target-exited".into(),
            Stop::Duration => "duration".into(),
            Stop::Signal(s) => format!("signal {}", signal_name(s)),
            Stop::Requested => "stopped".into(),
        }
    }
}

fn signal_name(sig: i32) -> String {
    nix::sys::signal::Signal::try_from(sig)
        .map(|s| s.as_str().to_string())
        .unwrap_or_else(|_| sig.to_string())
}

/// How the wait between two periods ended before its deadline.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wake {
    /// The supervision ends.
    Stop(Stop),
    /// Take a period now (a program's bubbles are to be placed at once);
    /// the schedule of the following periods is kept.
    StepNow,
}

/// How a supervision's periods went ([`drive`]).
#[derive(Clone, Debug)]
pub struct Driven {
    pub stop: Stop,
    pub wall: Duration,
    /// Periods missed: where a period began more than a period and a half
    /// after the one before it (the manager waited for a CPU before the
    /// step, or during the one before), the periods that fit in between;
    /// not after the first step, which admits every thread already running
    /// (0.2 s for 400 processes on the 2-CPU machine of docs/reliability.md).
    pub missed_periods: u64,
    /// The manager began at real-time priority (`manager_priority`).
    pub realtime: bool,
    /// The longest period it kept ([`Pace`]: `manager_budget`).
    pub longest_interval: Duration,
    /// What the manager had to say about its own running (priority).
    pub notes: Vec<String>,
}

/// A period begun more than 1 + this share of a period after the one before
/// it came late.
const LATE_SHARE: f64 = 0.5;

/// Runs the engine against `target` every `interval` until `wait` says
/// stop, then restores every changed affinity. `wait(deadline, steps)`
/// (`steps`: periods taken so far) blocks until `deadline` (returning
/// `None`) or until something ends the supervision or wants a period now.
/// The calling thread runs at the priority `manager_priority` asks for
/// while it drives ([`ManagerScheduling`]).
pub fn drive(
    engine: &mut Engine,
    target: &mut LiveProcess,
    session: &Session,
    mut status: Option<&mut StatusFile>,
    mut wait: impl FnMut(Instant, u64) -> Option<Wake>,
) -> Result<Driven, EngineError> {
    let mut pace = Pace::new(
        session.settings.interval,
        session.settings.manager_budget,
        session.allowed().len(),
    );
    let mut scheduling = ManagerScheduling::start(session.settings.manager_priority);
    let realtime = scheduling.raised();
    let mut notes = Vec::new();
    let start = Instant::now();
    let mut next = start;
    let mut steps = 0u64;
    let mut missed_periods = 0u64;
    let mut previous: Option<Instant> = None;
    let mut early = false;
    let result = loop {
        let began = Instant::now();
        let cpu_before = cpu_time(true);
        let interval = pace.interval();
        // Late: more than a period and a half after the one before it (the
        // manager waited for a CPU before the step, or during the last one).
        // The first step admits the whole tree at once: its length is not
        // a period missed.
        if let Some(before) = previous.replace(began)
            && !early
            && steps > 1
        {
            let gap = (began - before).as_secs_f64() / interval.as_secs_f64();
            if gap > 1.0 + LATE_SHARE {
                missed_periods += gap.round() as u64 - 1;
            }
        }
        if let Err(e) = engine.step(target, start.elapsed().as_secs_f64()) {
            break Err(e);
        }
        steps += 1;
        if let Some(status) = status.as_deref_mut() {
            status.update(engine, start.elapsed().as_secs_f64());
        }
        // The cgroup cpuset changed: place anew within it.
        if let Some(effective) = target.take_cpuset_change()
            && let Some((places, policy)) = session.replan(&effective)
        {
            target.set_place_cpus(places.cpus.clone());
            engine.replace_places(places, policy);
        }
        let took = cpu_time(true).saturating_sub(cpu_before);
        if let Some(note) = scheduling.step_took(took, interval) {
            eprintln!("pinlearn: {note}");
            notes.push(note);
        }
        // The first step admits every thread already running: not what a
        // step costs.
        if steps > 1
            && let Some(note) = pace.step_took(took, engine.live_threads())
        {
            eprintln!("pinlearn: {note}");
            notes.push(note);
        }
        let interval = pace.interval();
        if !std::mem::take(&mut early) {
            next += interval;
            let now = Instant::now();
            if next < now {
                next = now + interval;
            }
        }
        let wake = loop {
            if let Some(wake) = wait(next, steps) {
                break Some(wake);
            }
            if Instant::now() >= next {
                break None;
            }
        };
        match wake {
            Some(Wake::Stop(stop)) => break Ok(stop),
            Some(Wake::StepNow) => early = true,
            None => {}
        }
    };
    let wall = start.elapsed();
    let failures = target.restore();
    let flushed = engine.flush_trace();
    let stop = result?;
    flushed?;
    if let Some((tid, e)) = failures.into_iter().next() {
        return Err(EngineError::io(
            format!("could not restore the affinity of thread {tid}"),
            e,
        ));
    }
    // Said once, and only where it mattered.
    let asked = steps + missed_periods;
    if missed_periods > 0 && missed_periods * 10 >= asked {
        let why = match (scheduling.refused(), session.settings.manager_priority) {
            (Some(refused), _) => format!(
                "; real-time priority, which lets it run on time, was refused ({refused}): run pinlearn as root or with CAP_SYS_NICE"
            ),
            (None, ManagerPriority::Normal) => "; manager_priority = \"realtime\" lets it run on time".to_string(),
            (None, ManagerPriority::Realtime) => String::new(),
        };
        let note = format!(
            "pinlearn missed {missed_periods} of {asked} periods: the CPUs were too busy for it to run on time{why}"
        );
        eprintln!("pinlearn: {note}");
        notes.push(note);
    }
    Ok(Driven {
        stop,
        wall,
        missed_periods,
        realtime,
        longest_interval: pace.longest(),
        notes,
    })
}

pub(crate) fn summary(session: &Session, engine: &Engine, driven: &Driven, cpu: Duration) -> Summary {
    let threads = engine.thread_summaries();
    let (stop, wall) = (driven.stop, driven.wall);
    Summary {
        policy: engine.policy_name(),
        metric: session.metric.to_string(),
        notes: session
            .notes
            .iter()
            .chain(engine.notes())
            .chain(&driven.notes)
            .cloned()
            .collect(),
        cpus: session.allowed().to_string(),
        interval_ms: session.settings.interval.as_secs_f64() * 1e3,
        longest_interval_ms: driven.longest_interval.as_secs_f64() * 1e3,
        wall_s: wall.as_secs_f64(),
        periods: engine.periods(),
        missed_periods: driven.missed_periods,
        manager_realtime: driven.realtime,
        threads_seen: engine.threads_seen(),
        repins: engine.repins(),
        memory_moves: engine.memory_moves(),
        thread_memory_moves: engine.thread_memory_moves(),
        others_share: engine.others_share(),
        remote_share: engine.remote_share(),
        manager_cpu_s: cpu.as_secs_f64(),
        manager_cpu_pct: 100.0 * cpu.as_secs_f64() / wall.as_secs_f64().max(1e-9),
        manager_max_rss_kib: max_rss_kib(),
        ended_by: stop.describe(),
        guard: engine.guard_stats().map(|g| GuardSummary {
            os_share: g.os_share(),
            switches: g.switches,
        }),
        exit_code: None,
        signal: None,
        threads,
        ended_not_listed: engine.ended_not_listed(),
    }
}

/// Checks that `pid` exists and that its threads' affinity may be changed,
/// without changing anything (the current mask is set again).
pub fn check_attachable(pid: u32) -> Result<(), EngineError> {
    if pid == 0 || !std::path::Path::new(&format!("/proc/{pid}")).exists() {
        return Err(EngineError::bad_input(format!("no process with PID {pid}")));
    }
    if pid == std::process::id() {
        return Err(EngineError::bad_input("pinlearn cannot attach to itself"));
    }
    let current =
        get_affinity(pid).map_err(|e| EngineError::bad_input(format!("cannot read the affinity of PID {pid}: {e}")))?;
    set_affinity(pid, &current).map_err(|e| match e.raw_os_error() {
        Some(libc::EPERM) => EngineError::bad_input(format!(
            "not permitted to change the CPU affinity of PID {pid}: run pinlearn as its owner or with CAP_SYS_NICE"
        )),
        Some(libc::ESRCH) => EngineError::bad_input(format!("no process with PID {pid}")),
        _ => EngineError::io(format!("cannot set the affinity of PID {pid}"), e),
    })
}

/// Whether our child `pid` has ended, without reaping it (`waitid` with
/// `WNOWAIT`); an error (no such child) counts as ended.
fn has_exited(pid: u32) -> bool {
    use nix::sys::wait::{Id, WaitPidFlag, WaitStatus, waitid};
    let flags = WaitPidFlag::WEXITED | WaitPidFlag::WNOHANG | WaitPidFlag::WNOWAIT;
    !matches!(
        waitid(Id::Pid(nix::unistd::Pid::from_raw(pid as i32)), flags),
        Ok(WaitStatus::StillAlive)
    )
}

/// `pinlearn attach PID`: supervise until the process ends, `duration`, or a signal.
pub fn attach(session: &Session, pid: u32, duration: Option<Duration>) -> Result<Summary, EngineError> {
    check_attachable(pid)?;
    // A file or two per supervised thread: the soft limit of 1024 would
    // end supervision at about 500 threads.
    OpenFiles::raise();
    let mut events = Events::new(Some(pid))?;
    let engine = session.engine()?;
    supervise(session, engine, pid, &mut events, duration, |event| match event {
        Event::Signal { signal, .. } => Some(Stop::Signal(signal)),
        Event::TargetMaybeExited => (!process_alive(pid)).then_some(Stop::TargetExited),
        Event::Deadline => None,
    })
}

/// The supervision shared by `run` and `attach`: the process tree of `pid`
/// as the target, periods until `duration` is over or `on_event` says stop
/// (it sees every signal and possible exit; deadlines are handled here),
/// every mask restored, and the summary.
fn supervise(
    session: &Session,
    mut engine: Engine,
    pid: u32,
    events: &mut Events,
    duration: Option<Duration>,
    mut on_event: impl FnMut(Event) -> Option<Stop>,
) -> Result<Summary, EngineError> {
    let (journal, journal_note) = Journal::create(pid, std::process::id()).map_err(|e| match e.kind() {
        std::io::ErrorKind::AlreadyExists => EngineError::bad_input(e.to_string()),
        _ => EngineError::io(
            format!(
                "cannot write the journal of original masks in {}",
                runtime_dir().display()
            ),
            e,
        ),
    })?;
    if let Some(note) = &journal_note {
        eprintln!("pinlearn: {note}");
    }
    let watchdog = start_watchdog(session, pid, journal.path())?;
    let mut target = session
        .live_target(Scope::process_tree(pid, session.settings.children))
        .with_journal(journal)
        .watching_cpuset();
    if let Some(declared) = &session.declared {
        target = target.with_bubble_channel(declared.clone());
    }
    let mut status = StatusFile::new(pid);
    let cpu0 = cpu_time(false);
    let end = duration.map(|d| Instant::now() + d);
    let driven = drive(&mut engine, &mut target, session, Some(&mut status), |deadline, _| {
        let stop = match events.wait_until(end.map_or(deadline, |end| end.min(deadline))) {
            Event::Deadline => end.is_some_and(|end| Instant::now() >= end).then_some(Stop::Duration),
            event => on_event(event),
        };
        stop.map(Wake::Stop)
    });
    // Every mask is back (or the journal stays for `pinlearn restore`): the
    // watchdog has nothing left to guard.
    if let Some(mut watchdog) = watchdog {
        let _ = watchdog.kill();
        let _ = watchdog.wait();
    }
    let driven = driven?;
    let mut report = summary(session, &engine, &driven, cpu_time(false) - cpu0);
    report.notes.extend(journal_note);
    report.notes.extend(target.take_notes());
    report.notes.extend(status.take_note());
    Ok(report)
}

/// Starts `pinlearn watchdog` for this manager, its target and its journal,
/// if the session has the binary.
fn start_watchdog(session: &Session, target: u32, journal: &std::path::Path) -> Result<Option<Child>, EngineError> {
    let Some(exe) = &session.watchdog else {
        return Ok(None);
    };
    Command::new(exe)
        .arg("watchdog")
        .arg("--manager")
        .arg(std::process::id().to_string())
        .arg("--journal")
        .arg(journal)
        .arg("--target")
        .arg(target.to_string())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .spawn()
        .map(Some)
        .map_err(|e| EngineError::io(format!("cannot start the watchdog ({} watchdog)", exe.display()), e))
}

/// How `run` launched its program.
pub fn exit_code(status: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt;
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

/// `pinlearn run -- CMD`: launch CMD, supervise it until it exits (or for
/// `duration`, after which it runs on unsupervised), pass its status through.
pub fn run(session: &Session, mut command: Command, duration: Option<Duration>) -> Result<Summary, EngineError> {
    let mut events = Events::new(None)?;
    if session.declared.is_some() {
        // The program's topology queries see the places pinlearn uses.
        command.env(
            crate::outside::LEVELS_ENV,
            crate::outside::encode_levels(&session.places.levels()),
        );
    }
    let engine = session.engine()?;
    // As for attach; the program starts with the limit pinlearn was given.
    if let Some(files) = OpenFiles::raise() {
        files.child_keeps_original(&mut command);
    }
    // The signals pinlearn now reads from a signalfd are blocked in this
    // thread; the program must start with none blocked.
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let empty = nix::sys::signal::SigSet::empty();
            nix::sys::signal::pthread_sigmask(nix::sys::signal::SigmaskHow::SIG_SETMASK, Some(&empty), None)
                .map_err(std::io::Error::from)
        });
    }
    let mut child: Child = command.spawn().map_err(|e| {
        let status = if e.kind() == std::io::ErrorKind::NotFound {
            127
        } else {
            126
        };
        let program = command.get_program().to_string_lossy().into_owned();
        EngineError::CannotRun {
            message: format!("cannot run {program}: {e}"),
            status,
        }
    })?;
    let pid = child.id();
    events.watch(pid);
    let received = std::cell::Cell::new(None);
    let forward = |signal: i32, from_process: bool| {
        if received.get().is_none() {
            received.set(Some(signal));
        }
        if from_process {
            // SAFETY: plain kill(2) on our own child, which has not been reaped yet.
            unsafe { libc::kill(pid as libc::pid_t, signal) };
        }
    };
    // The program is reaped only once supervision is over and the manager
    // has left real-time priority: reaping makes the kernel drop the
    // program's /proc entries, and where another task on the same CPU is
    // dropping some of them too, a SCHED_FIFO reaper spins until the
    // kernel's real-time throttling stops it, about 0.95 s (measured: `run
    // --policy os` of heat beside another session's load, the manager's CPU
    // 0.04 s or 0.99 s; at normal priority 0.04 s in 8 of 8 runs).
    let supervised = supervise(session, engine, pid, &mut events, duration, |event| match event {
        Event::Signal { signal, from_process } => {
            forward(signal, from_process);
            None
        }
        Event::TargetMaybeExited => has_exited(pid).then_some(Stop::TargetExited),
        Event::Deadline => None,
    });
    let mut report = match supervised {
        Ok(report) => report,
        Err(e) => {
            // The program keeps running unsupervised; wait for it so it is not orphaned.
            let _ = child.wait();
            return Err(e);
        }
    };
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break s,
            Ok(None) => {}
            Err(e) => return Err(EngineError::io("waiting for the program", e)),
        }
        if let Event::Signal { signal, from_process } = events.wait_until(Instant::now() + Duration::from_secs(1)) {
            forward(signal, from_process);
        }
    };
    report.exit_code = Some(exit_code(status));
    report.signal = received.get();
    // The program has ended: channels it did not remove (killed, or it
    // never closed them) go with it.
    let _ = pinlearn_heartbeat::remove_channel(pid);
    let _ = pinlearn_heartbeat::remove_bubble_channel(pid);
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ended_program_is_seen_without_being_reaped() {
        let mut child = Command::new("sh").args(["-c", "exit 3"]).spawn().expect("spawn sh");
        let deadline = Instant::now() + Duration::from_secs(10);
        while !has_exited(child.id()) {
            assert!(Instant::now() < deadline, "sh did not end within 10 s");
            std::thread::sleep(Duration::from_millis(5));
        }
        // Seen twice, still a zombie: the status is left for the reaping.
        assert!(has_exited(child.id()));
        let status = child.try_wait().expect("wait").expect("ended");
        assert_eq!(status.code(), Some(3));
        // Reaped, it is no child of ours any more: ended.
        assert!(has_exited(child.id()));
    }

    #[test]
    fn a_running_program_has_not_exited() {
        let mut child = Command::new("sleep").arg("30").spawn().expect("spawn sleep");
        assert!(!has_exited(child.id()));
        child.kill().expect("kill");
        child.wait().expect("reap");
    }
}
