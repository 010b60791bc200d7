//! Per-thread speed, one object per probe.
//!
//! ```text
//!   every period, per thread:
//!     Schedstat     /proc/PID/task/TID/schedstat (fd kept open, pread)
//!                   speed = Δrun / (Δrun + Δwait)          share of runnable time spent running
//!     Instructions  perf_event_open(INSTRUCTIONS, tid)
//!                   speed = Δinstructions / Δt / 1e9       (GIPS)
//!     CpuSamples    perf_event_open(CPU_CLOCK, tid) sampling instruction pointers (software
//!                   event: no hardware counters needed); each sample classified by
//!                   WaitingCode (waiting.rs) as waiting or work
//!                   speed = run share × work share          (useful share of runnable time)
//!     IoBytes       /proc/PID/task/TID/io, rchar + wchar
//!                   speed = Δbytes / Δt / (recent peak rate)
//!   every period, per process:
//!     Heartbeats    the pinlearn-heartbeat channel of each process
//!                   rate = Δbeats / Δt per beating thread; speed = rate / (recent peak rate)
//! ```
//!
//! Why samples: threads that spin at a barrier (OpenMP's default wait, spin
//! locks, MPI progress loops) run all the time, so their run share looks
//! like progress wherever they are; the samples that fall in the waiting
//! code tell spinning from working (75% of an OpenMP program's samples were
//! in libgomp next to another job, 21% in its own loops: DESIGN.md §4).
//!
//! Why `run / (run + wait)` and not run time alone: threads that meet at a
//! barrier run the same time per round wherever they are, so run time does not
//! tell a core shared with another program from a free one; the share of the
//! runnable time actually spent running does (0.5 against 0.99 with a hog on
//! the core, measured on our machines).
//!
//! schedstat is read through a file descriptor kept open per thread (one
//! `pread` per period) rather than the `procfs` crate, which opens and parses
//! the file on every read: with 64 threads at 50 ms that difference is most of
//! the manager's own CPU time.

use super::waiting::{CodeKind, CompiledRules, MappedFile, WaitingCode, open_mapped_file, read_mapped_file};
use crate::config::Metric;
use perf_event::Sampler;
use pinlearn_heartbeat::HeartbeatReader;
use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;

/// Per-period fading of the peak heartbeat rate speeds are relative to.
const BEAT_PEAK_FADE: f64 = 0.99;

/// Below this share of the period spent runnable, a thread tells nothing about its place.
const MIN_RUNNABLE_SHARE: f64 = 0.02;

/// One thread's schedstat file.
pub struct Schedstat {
    file: File,
    last: Option<(u64, u64, u64)>,
    /// Run ns between the last two reads of `run_share`.
    ran_ns: u64,
    /// Ns spent runnable but queued for a CPU between those reads.
    waited_ns: u64,
    /// Times the thread was switched to between those reads.
    slices: u64,
}

impl Schedstat {
    pub fn open(pid: u32, tid: u32) -> io::Result<Self> {
        let file = File::open(format!("/proc/{pid}/task/{tid}/schedstat"))?;
        Ok(Schedstat {
            file,
            last: None,
            ran_ns: 0,
            waited_ns: 0,
            slices: 0,
        })
    }

    /// (run ns, wait ns, times switched to) since the thread started.
    pub fn read(&self) -> io::Result<(u64, u64, u64)> {
        let mut buf = [0u8; 96];
        let n = self.file.read_at(&mut buf, 0)?;
        parse_schedstat(&buf[..n]).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "malformed schedstat"))
    }

    /// The share of runnable time spent running since the last call, `None`
    /// on the first call or when the thread was hardly runnable.
    pub fn run_share(&mut self, period_ns: f64) -> io::Result<Option<f64>> {
        let now = self.read()?;
        let (run0, wait0, slices0) = self.last.unwrap_or(now);
        self.ran_ns = now.0.saturating_sub(run0);
        self.waited_ns = now.1.saturating_sub(wait0);
        self.slices = now.2.saturating_sub(slices0);
        let (run, wait) = (self.ran_ns as f64, self.waited_ns as f64);
        let share = (self.last.is_some() && run + wait >= MIN_RUNNABLE_SHARE * period_ns).then(|| run / (run + wait));
        self.last = Some(now);
        Ok(share)
    }

    /// Nanoseconds the thread ran between the last two `run_share` reads.
    pub fn ran_ns(&self) -> u64 {
        self.ran_ns
    }

    /// Nanoseconds the thread was runnable but queued for a CPU between the
    /// last two `run_share` reads.
    pub fn waited_ns(&self) -> u64 {
        self.waited_ns
    }

    /// Times the thread was switched to between the last two reads.
    pub fn slices(&self) -> u64 {
        self.slices
    }
}

fn parse_schedstat(text: &[u8]) -> Option<(u64, u64, u64)> {
    let text = std::str::from_utf8(text).ok()?;
    let mut fields = text.split_ascii_whitespace().map(str::parse::<u64>);
    Some((fields.next()?.ok()?, fields.next()?.ok()?, fields.next()?.ok()?))
}

/// A hardware instruction counter of one thread.
pub struct Instructions {
    counter: perf_event::Counter,
    last: Option<u64>,
}

impl Instructions {
    pub fn open(tid: u32) -> io::Result<Self> {
        let mut counter = perf_event::Builder::new(perf_event::events::Hardware::INSTRUCTIONS)
            .observe_pid(tid as i32)
            .any_cpu()
            .exclude_kernel(true)
            .exclude_hv(true)
            .build()?;
        counter.enable()?;
        Ok(Instructions { counter, last: None })
    }

    /// Billions of instructions per second since the last call.
    pub fn gips(&mut self, period_s: f64) -> io::Result<Option<f64>> {
        let now = self.counter.read()?;
        let speed = self
            .last
            .map(|before| now.saturating_sub(before) as f64 / period_s / 1e9);
        self.last = Some(now);
        Ok(speed)
    }
}

/// Sample counts fade by half every sampled period, so a share rests on a
/// few sampled periods when a thread ran little.
const SAMPLE_FADE: f64 = 0.5;

/// The faded count of work samples (and no waiting one) from which a
/// thread counts as settled in work: at 250 Hz and 50 ms periods a thread
/// running all the time adds 12.5 a sampled period, so about two such
/// periods.
const SETTLED_WORK_SAMPLES: f64 = 16.0;

/// PERF_RECORD_SAMPLE (linux/perf_event.h).
pub(super) const RECORD_SAMPLE: u32 = 9;

/// The first `N` bytes of a ring record's body (which may wrap around the
/// ring, so come in parts), and how many of them the record has.
pub(super) fn leading_bytes<const N: usize>(record: &perf_event::Record<'_>) -> ([u8; N], usize) {
    let mut bytes = [0u8; N];
    let mut filled = 0;
    for part in record.data() {
        let n = part.len().min(N - filled);
        bytes[filled..filled + n].copy_from_slice(&part[..n]);
        filled += n;
    }
    (bytes, filled)
}

/// CPU-clock sampling of one thread (user-mode instruction pointers).
///
/// Off, the event is closed, not just disabled: an event attached to a
/// thread costs on every switch to it even while disabled (in a KVM guest,
/// two threads ping-ponging on one CPU, `scripts/bench-switch-cost`: 3.0 us
/// a switch without events, +0.8 us with the event disabled, +4.5 us
/// sampling), which is what threads that sleep and wake thousands of times
/// a second pay.
pub struct CpuSamples {
    /// The open event while sampling is on.
    sampler: Option<Sampler>,
    /// The open event is disabled for now ([`Self::set_paused`]).
    paused: bool,
    tid: u32,
    period_ns: u64,
    ring_bytes: usize,
    /// Work and waiting samples, fading by [`SAMPLE_FADE`] a period.
    work: f64,
    waiting: f64,
    /// The next period with samples starts the counts afresh
    /// ([`Self::restart`]).
    restarting: bool,
    /// Samples of this period outside every known code mapping.
    pub unmapped: u64,
}

impl CpuSamples {
    /// One sample every `period_ns` of the thread's CPU time; the ring holds
    /// `ring_bytes` (a power of two, at least a page). Sampling starts on.
    pub fn open(tid: u32, period_ns: u64, ring_bytes: usize) -> io::Result<Self> {
        let mut samples = CpuSamples {
            sampler: None,
            paused: false,
            tid,
            period_ns,
            ring_bytes,
            work: 0.0,
            waiting: 0.0,
            restarting: false,
            unmapped: 0,
        };
        samples.set_enabled(true)?;
        Ok(samples)
    }

    /// Turns sampling on (opening the event again) or off (closing it, with
    /// the samples not yet taken: call [`Self::take`] first).
    pub fn set_enabled(&mut self, on: bool) -> io::Result<()> {
        match (on, self.sampler.is_some()) {
            (true, false) => {
                let mut sampler = perf_event::Builder::new(perf_event::events::Software::CPU_CLOCK)
                    .observe_pid(self.tid as i32)
                    .any_cpu()
                    .exclude_kernel(true)
                    .exclude_hv(true)
                    .sample_period(self.period_ns.max(10_000))
                    .sample(perf_event::SampleFlag::IP)
                    .build()?
                    .sampled(self.ring_bytes)?;
                sampler.enable()?;
                self.sampler = Some(sampler);
                self.paused = false;
            }
            (false, true) => self.sampler = None,
            _ => {}
        }
        Ok(())
    }

    /// Pauses sampling (`true`) or resumes it, keeping the event open: a
    /// paused event costs a thread switched to rarely next to nothing, and
    /// resuming needs no new event. Nothing while sampling is off.
    pub fn set_paused(&mut self, paused: bool) -> io::Result<()> {
        match self.sampler.as_mut() {
            Some(sampler) if paused != self.paused => {
                if paused {
                    sampler.disable()?;
                } else {
                    sampler.enable()?;
                }
                self.paused = paused;
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Whether the thread's recent samples all fell in working code: at
    /// least [`SETTLED_WORK_SAMPLES`] of them (faded), none waiting in its
    /// last sampled periods (a waiting sample fades below a half within two).
    pub fn settled_in_work(&self) -> bool {
        self.work >= SETTLED_WORK_SAMPLES && self.waiting < 0.5
    }

    /// Moves the instruction pointers of every sample in the ring to `ips`
    /// (other records, such as lost-sample counts, are dropped).
    pub fn drain(&mut self, ips: &mut Vec<u64>) {
        let Some(sampler) = self.sampler.as_mut() else {
            return;
        };
        while let Some(record) = sampler.next_record() {
            if record.ty() != RECORD_SAMPLE {
                continue;
            }
            let (ip, filled) = leading_bytes::<8>(&record);
            if filled == 8 {
                ips.push(u64::from_ne_bytes(ip));
            }
        }
    }

    /// Takes every sample in the ring and classifies it with `code`, the
    /// waiting code of process `pid` (whose code bytes are read where
    /// spin loops are looked for); `scratch` is reused between calls.
    pub fn take(&mut self, code: &mut WaitingCode, pid: u32, scratch: &mut Vec<u64>) {
        scratch.clear();
        self.drain(scratch);
        let (mut work, mut waiting) = (0u64, 0u64);
        self.unmapped = 0;
        let mut read = |address, len, file: Option<MappedFile<'_>>| read_code(pid, address, len, file);
        for &ip in scratch.iter() {
            match code.classify_sample(ip, &mut read) {
                CodeKind::Waiting => waiting += 1,
                CodeKind::Work => work += 1,
                // Code mapped after the maps were read: work until known.
                CodeKind::Unmapped => {
                    work += 1;
                    self.unmapped += 1;
                }
            }
        }
        self.count(work, waiting);
    }

    /// Adds one period's work and waiting samples to the faded counts.
    /// Periods without samples (sampling off, or the thread did not run)
    /// keep the last estimate; the first with samples after
    /// [`Self::restart`] replaces it.
    fn count(&mut self, work: u64, waiting: u64) {
        if work + waiting == 0 {
            return;
        }
        let fade = if std::mem::take(&mut self.restarting) {
            0.0
        } else {
            SAMPLE_FADE
        };
        self.work = self.work * fade + work as f64;
        self.waiting = self.waiting * fade + waiting as f64;
    }

    /// The thread's placement changed hands: the share from the next
    /// period with samples on rests on samples taken from then on only, not
    /// on the faded ones of the placement before (which made a window of
    /// Linux right after the learner's look like the learner's, and the
    /// other way round). Turn sampling on for those periods too.
    pub fn restart(&mut self) {
        self.restarting = true;
    }

    /// The share of recent samples in working code, `None` before any sample.
    pub fn work_share(&self) -> Option<f64> {
        let all = self.work + self.waiting;
        (all >= 1.0).then(|| self.work / all)
    }
}

/// Reads `len` bytes of code of process `pid` at `address`: from its
/// memory (as the kernel shows it, so code patched or generated at run time
/// too), else from the file mapped there (when pinlearn may not read the
/// process's memory but may read its files).
fn read_code(pid: u32, address: u64, len: usize, file: Option<MappedFile<'_>>) -> Option<Vec<u8>> {
    let mut bytes = vec![0u8; len];
    let from_memory = File::open(format!("/proc/{pid}/mem")).and_then(|mem| mem.read_exact_at(&mut bytes, address));
    if from_memory.is_ok() {
        return Some(bytes);
    }
    let file = file?;
    let (mapped, _) = open_mapped_file(pid, file)?;
    mapped.read_exact_at(&mut bytes, file.offset_of(address)).ok()?;
    Some(bytes)
}

/// The least time between reading a process's maps and reading them again
/// after `reads` re-reads: 50 ms, doubling, at most a second.
fn refresh_gap(reads: u32) -> std::time::Duration {
    std::time::Duration::from_millis(50u64.saturating_mul(1 << reads.min(5)).min(1000))
}

/// Whether this kernel lets pinlearn sample a thread's CPU clock: `Err`
/// carries the reason to tell the user once.
pub fn sampling_supported() -> Result<(), String> {
    let tid = nix::unistd::gettid().as_raw() as u32;
    match CpuSamples::open(tid, 1_000_000, 4096) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "CPU-clock sampling is refused here (perf_event_open: {e}; see /proc/sys/kernel/perf_event_paranoid)"
        )),
    }
}

/// The waiting code of every sampled process, rebuilt when samples fall in
/// code mapped since: 50 ms after the first read at the earliest (a process
/// seen right after its exec may not have mapped its libraries yet), the
/// gap doubling with every rebuild up to once a second.
pub struct WaitingMaps {
    rules: CompiledRules,
    /// Per process: its waiting code, when it was read, and how many times
    /// it was read again since.
    processes: HashMap<u32, (WaitingCode, std::time::Instant, u32)>,
    /// Processes whose maps cannot be read (their samples are not used).
    unreadable: HashSet<u32>,
    notes: Vec<String>,
}

impl WaitingMaps {
    pub fn new(rules: CompiledRules) -> Self {
        WaitingMaps {
            rules,
            processes: HashMap::new(),
            unreadable: HashSet::new(),
            notes: Vec::new(),
        }
    }

    /// The waiting code of `pid`, read now if not known; `None` when its
    /// maps cannot be read (said once).
    pub fn of(&mut self, pid: u32) -> Option<&mut WaitingCode> {
        if self.unreadable.contains(&pid) {
            return None;
        }
        if !self.processes.contains_key(&pid) {
            let code = self.read(pid)?;
            self.processes.insert(pid, (code, std::time::Instant::now(), 0));
        }
        self.processes.get_mut(&pid).map(|(code, _, _)| code)
    }

    /// Reads `pid`'s maps again if samples fell outside its known code and
    /// the last read is old enough (see the type's doc).
    pub fn refresh_if_stale(&mut self, pid: u32) {
        let Some(&(_, built, reads)) = self.processes.get(&pid) else {
            return;
        };
        if built.elapsed() >= refresh_gap(reads)
            && let Some(code) = self.read(pid)
        {
            self.processes
                .insert(pid, (code, std::time::Instant::now(), reads.saturating_add(1)));
        }
    }

    fn read(&mut self, pid: u32) -> Option<WaitingCode> {
        let built = std::fs::read(format!("/proc/{pid}/maps"))
            .map_err(|e| e.to_string())
            .and_then(|text| WaitingCode::build(&text, &self.rules, &mut |file| read_mapped_file(pid, file)));
        // A process that ended while it was read (its files went with it)
        // has nothing to say: its threads are gone by the next period.
        let alive = || super::tasks::process_alive(pid);
        match built {
            Ok(code) => {
                if !code.unreadable.is_empty() && alive() {
                    let known = self
                        .processes
                        .get(&pid)
                        .map(|(c, _, _)| c.unreadable.clone())
                        .unwrap_or_default();
                    for file in code.unreadable.iter().filter(|f| !known.contains(f)) {
                        self.say(format!(
                            "process {pid}: cannot read {file}; samples in its waiting functions count as work"
                        ));
                    }
                }
                Some(code)
            }
            Err(why) => {
                if self.unreadable.insert(pid) && alive() {
                    self.say(format!(
                        "process {pid}: cannot read its memory map ({why}); its threads are scored by run share"
                    ));
                }
                None
            }
        }
    }

    fn say(&mut self, note: String) {
        eprintln!("pinlearn: {note}");
        self.notes.push(note);
    }

    /// Drops processes no longer supervised.
    pub fn retain(&mut self, pids: &HashSet<u32>) {
        self.processes.retain(|pid, _| pids.contains(pid));
        self.unreadable.retain(|pid| pids.contains(pid));
    }

    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }
}

/// Bytes one thread read and wrote (`rchar` + `wchar` of
/// /proc/PID/task/TID/io: every read and write, pipes and sockets
/// included, not only the block device's), through a kept file descriptor.
pub struct IoBytes {
    file: File,
    last: Option<u64>,
}

impl IoBytes {
    pub fn open(pid: u32, tid: u32) -> io::Result<Self> {
        Ok(IoBytes {
            file: File::open(format!("/proc/{pid}/task/{tid}/io"))?,
            last: None,
        })
    }

    /// Bytes per second since the last call (`None` on the first).
    pub fn rate(&mut self, period_s: f64) -> io::Result<Option<f64>> {
        let mut buf = [0u8; 512];
        let n = self.file.read_at(&mut buf, 0)?;
        let now =
            parse_io_bytes(&buf[..n]).ok_or_else(|| io::Error::new(io::ErrorKind::InvalidData, "malformed io file"))?;
        let rate = self.last.map(|before| now.saturating_sub(before) as f64 / period_s);
        self.last = Some(now);
        Ok(rate)
    }
}

/// `rchar + wchar` of an io file.
fn parse_io_bytes(text: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(text).ok()?;
    let field = |name: &str| {
        text.lines()
            .find_map(|line| line.strip_prefix(name)?.strip_prefix(':')?.trim().parse::<u64>().ok())
    };
    Some(field("rchar")?.saturating_add(field("wchar")?))
}

/// Speeds relative to a recent peak: the fastest rate of this period, or
/// the previous peak fading by 1% a period (so one early burst does not
/// shrink every later speed).
#[derive(Default)]
pub struct FadingPeak {
    peak: f64,
}

impl FadingPeak {
    /// Sets the speed of each `(sample index, rate)` to its rate over the
    /// peak, after taking this period's fastest rate into the peak.
    pub fn set_speeds(&mut self, samples: &mut [pinlearn_policy::ThreadSample], rates: &[(usize, f64)]) {
        let fastest = rates.iter().map(|&(_, rate)| rate).fold(0.0, f64::max);
        self.peak = fastest.max(self.peak * BEAT_PEAK_FADE);
        for &(index, rate) in rates {
            samples[index].speed = (self.peak > 0.0).then(|| rate / self.peak);
        }
    }
}

/// The heartbeat channels of the supervised processes and the last count
/// of every beating thread.
#[derive(Default)]
pub struct Heartbeats {
    readers: HashMap<u32, HeartbeatReader>,
    /// Scratch buffer for one channel's (tid, count) pairs.
    counts: Vec<(u32, u64)>,
    /// Count at the previous read, by tid.
    last: HashMap<u32, u64>,
    /// Processes whose channel is not trusted (not read again).
    ignored: HashSet<u32>,
    /// Notes about ignored channels not yet taken.
    notes: Vec<String>,
}

impl Heartbeats {
    /// Opens the channels of `pids` that appeared and drops those of
    /// processes no longer supervised.
    pub fn refresh(&mut self, pids: &HashSet<u32>) {
        self.readers.retain(|pid, _| pids.contains(pid));
        self.ignored.retain(|pid| pids.contains(pid));
        for &pid in pids {
            if self.ignored.contains(&pid) {
                continue;
            }
            if let Entry::Vacant(slot) = self.readers.entry(pid) {
                match HeartbeatReader::open(pid) {
                    Ok(Some(reader)) => {
                        slot.insert(reader);
                    }
                    Ok(None) => {}
                    Err(error) => self.ignore(pid, &error),
                }
            }
        }
    }

    /// Stops reading the channel of `pid` for as long as the process is
    /// supervised, with one note saying why.
    fn ignore(&mut self, pid: u32, error: &pinlearn_heartbeat::HeartbeatError) {
        self.readers.remove(&pid);
        if self.ignored.insert(pid) {
            let note = format!("process {pid}: {error}; its threads are measured without heartbeats");
            eprintln!("pinlearn: {note}");
            self.notes.push(note);
        }
    }

    /// What was said about channels that were ignored, since the last call.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }

    /// Beats per second of every thread that beat before and now, by tid;
    /// `beating` gets every tid found in a channel (including first reads).
    pub fn rates(&mut self, period_s: f64, beating: &mut HashSet<u32>) -> HashMap<u32, f64> {
        beating.clear();
        let mut rates = HashMap::new();
        let mut untrusted = Vec::new();
        for (&pid, reader) in self.readers.iter_mut() {
            if let Err(error) = reader.read_into(&mut self.counts) {
                untrusted.push((pid, error));
                continue;
            }
            for &(tid, count) in &self.counts {
                beating.insert(tid);
                if let Some(before) = self.last.insert(tid, count) {
                    rates.insert(tid, count.saturating_sub(before) as f64 / period_s);
                }
            }
        }
        for (pid, error) in untrusted {
            self.ignore(pid, &error);
        }
        // Threads that left every channel are not kept.
        self.last.retain(|tid, _| beating.contains(tid));
        rates
    }

    /// Forgets the count of a thread that ended (its tid may come back as
    /// another thread).
    pub fn forget(&mut self, tid: u32) {
        self.last.remove(&tid);
    }
}

/// Whether this kernel counts hardware instructions for a thread: `Err`
/// carries the reason to tell the user once.
pub fn instructions_supported() -> Result<(), String> {
    match Instructions::open(0) {
        Ok(_) => Ok(()),
        Err(e) => Err(format!(
            "hardware instruction counters are not available here (perf_event_open: {e})"
        )),
    }
}

/// Picks the metric to use for `requested`, with a note to print once when
/// it had to fall back. `auto` takes, in this order, the first that works
/// here: `useful` (CPU-clock samples: needs only software perf events),
/// `instructions` (hardware counters), `cpu` (schedstat run share). An
/// explicit `useful` the kernel refuses falls back to `cpu`; an explicit
/// `instructions` that cannot work is an error.
pub fn resolve_metric(requested: Metric) -> Result<(Metric, Option<String>), String> {
    match requested {
        Metric::Auto => match sampling_supported() {
            Ok(()) => Ok((Metric::Useful, None)),
            Err(no_samples) => match instructions_supported() {
                Ok(()) => Ok((
                    Metric::Instructions,
                    Some(format!("{no_samples}; using the instructions metric")),
                )),
                Err(no_counters) => Ok((
                    Metric::Cpu,
                    Some(format!(
                        "{no_samples}; {no_counters}; using the cpu metric (schedstat run share)"
                    )),
                )),
            },
        },
        Metric::Useful => match sampling_supported() {
            Ok(()) => Ok((Metric::Useful, None)),
            Err(why) => Ok((
                Metric::Cpu,
                Some(format!("{why}; using the cpu metric (schedstat run share)")),
            )),
        },
        Metric::Instructions => {
            instructions_supported().map_err(|why| format!("{why}: use --metric cpu or --metric auto"))?;
            Ok((Metric::Instructions, None))
        }
        other => Ok((other, None)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether file descriptor `fd` of this process is a perf event.
    fn is_perf_event(fd: i32) -> bool {
        std::fs::read_link(format!("/proc/self/fd/{fd}")).is_ok_and(|t| t.to_string_lossy().contains("perf_event"))
    }

    /// A thread of this test binary spinning until stopped.
    struct Spinning {
        tid: u32,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
        thread: std::thread::JoinHandle<()>,
    }

    impl Spinning {
        fn start() -> Self {
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let (tid_tx, tid_rx) = std::sync::mpsc::channel();
            let thread = {
                let stop = stop.clone();
                std::thread::spawn(move || {
                    tid_tx.send(nix::unistd::gettid().as_raw() as u32).expect("send tid");
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        std::hint::spin_loop();
                    }
                })
            };
            let tid = tid_rx.recv().expect("the thread started");
            Spinning { tid, stop, thread }
        }

        /// A spinning thread sampled every millisecond of its CPU time, and
        /// the event's file descriptor; `None` (said) where sampling is refused.
        fn sampled() -> Option<(Self, CpuSamples, i32)> {
            if sampling_supported().is_err() {
                eprintln!("skipped: CPU-clock sampling is refused here");
                return None;
            }
            let spinning = Spinning::start();
            let samples = CpuSamples::open(spinning.tid, 1_000_000, 4096).expect("sampling is supported");
            use std::os::fd::AsRawFd;
            let fd = samples.sampler.as_ref().expect("on").as_raw_fd();
            Some((spinning, samples, fd))
        }

        fn stop(self) {
            self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
            self.thread.join().expect("the spinning thread ended");
        }
    }

    /// The samples `samples` takes in the next 60 ms (drained).
    fn taken(samples: &mut CpuSamples) -> usize {
        std::thread::sleep(std::time::Duration::from_millis(60));
        let mut ips = Vec::new();
        samples.drain(&mut ips);
        ips.len()
    }

    #[test]
    fn sampling_off_closes_the_event_and_on_opens_it_again() {
        let Some((spinning, mut samples, fd)) = Spinning::sampled() else {
            return;
        };
        assert!(is_perf_event(fd), "open while on");
        assert!(taken(&mut samples) > 0, "samples while on");
        samples.set_enabled(false).expect("off");
        // (Another test of this binary could reuse the number for an event
        // of its own within these few instructions; none keeps one open.)
        assert!(!is_perf_event(fd), "the event is closed while off");
        assert_eq!(taken(&mut samples), 0, "no samples while off");
        samples.set_enabled(true).expect("on again");
        assert!(taken(&mut samples) > 0, "samples once on again");
        spinning.stop();
    }

    #[test]
    fn a_paused_event_stays_open_and_takes_no_samples() {
        let Some((spinning, mut samples, fd)) = Spinning::sampled() else {
            return;
        };
        assert!(taken(&mut samples) > 0, "samples while sampling");
        samples.set_paused(true).expect("pause");
        // Samples written between the last drain and the pause are still in
        // the ring (CI, 2026-12-01: one was): drop them first.
        samples.drain(&mut Vec::new());
        assert_eq!(taken(&mut samples), 0, "no samples while paused");
        assert!(is_perf_event(fd), "the event stays open while paused");
        samples.set_paused(false).expect("resume");
        assert!(taken(&mut samples) > 0, "samples once resumed");
        // Paused, then closed and opened again: the new event samples.
        samples.set_paused(true).expect("pause");
        samples.set_enabled(false).expect("off");
        samples.set_enabled(true).expect("on again");
        assert!(taken(&mut samples) > 0, "a new event is not paused");
        spinning.stop();
    }

    #[test]
    fn a_thread_is_settled_in_work_once_its_recent_samples_are_all_work() {
        let with = |work: f64, waiting: f64| CpuSamples {
            sampler: None,
            paused: false,
            tid: 0,
            period_ns: 4_000_000,
            ring_bytes: 4096,
            work,
            waiting,
            restarting: false,
            unmapped: 0,
        };
        assert!(with(25.0, 0.0).settled_in_work(), "two full periods of work");
        assert!(!with(10.0, 0.0).settled_in_work(), "too few samples yet");
        assert!(
            !with(25.0, 1.0).settled_in_work(),
            "a waiting sample in the last period"
        );
        // One waiting sample fades below a half after two sampled periods
        // of work only.
        assert!(!with(25.0, 0.5).settled_in_work());
        assert!(with(25.0, 0.25).settled_in_work());
    }

    #[test]
    fn a_restart_makes_the_next_sampled_period_s_share_its_own() {
        // Linux's placement: half the samples waiting, period after period.
        let linux = || {
            let mut samples = CpuSamples {
                sampler: None,
                paused: false,
                tid: 0,
                period_ns: 4_000_000,
                ring_bytes: 4096,
                work: 0.0,
                waiting: 0.0,
                restarting: false,
                unmapped: 0,
            };
            for _ in 0..6 {
                samples.count(6, 6);
            }
            samples
        };
        let mut faded = linux();
        assert_eq!(faded.work_share(), Some(0.5));
        // Faded, a period all work after it still shows a quarter waiting.
        faded.count(12, 0);
        assert!(
            (faded.work_share().unwrap() - 0.75).abs() < 0.01,
            "{:?}",
            faded.work_share()
        );
        // Restarted at the switch: a period without samples keeps the
        // estimate, the next with samples is the share on its own.
        let mut samples = linux();
        samples.restart();
        samples.count(0, 0);
        assert_eq!(samples.work_share(), Some(0.5));
        samples.count(12, 0);
        assert_eq!(samples.work_share(), Some(1.0));
        // And fading goes on from there.
        samples.count(0, 12);
        assert!((samples.work_share().unwrap() - 1.0 / 3.0).abs() < 1e-9);
    }

    #[test]
    fn maps_are_read_again_soon_after_the_first_read_then_rarely() {
        let gaps: Vec<u64> = (0..8).map(|reads| refresh_gap(reads).as_millis() as u64).collect();
        assert_eq!(gaps, [50, 100, 200, 400, 800, 1000, 1000, 1000]);
        assert_eq!(refresh_gap(u32::MAX).as_millis(), 1000);
    }

    #[test]
    fn a_process_that_ended_before_its_maps_were_read_is_not_said_unreadable() {
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        let rules = crate::live::WaitingRules::default().compile().unwrap();
        let mut maps = WaitingMaps::new(rules);
        assert!(maps.of(pid).is_none());
        assert_eq!(maps.take_notes(), Vec::<String>::new());
        // A live process whose maps are read says nothing either.
        assert!(maps.of(std::process::id()).is_some());
        assert_eq!(maps.take_notes(), Vec::<String>::new());
    }

    #[test]
    fn parses_schedstat_lines() {
        assert_eq!(parse_schedstat(b"123 456 7\n"), Some((123, 456, 7)));
        assert_eq!(parse_schedstat(b"123 456\n"), None);
        assert_eq!(parse_schedstat(b"garbage"), None);
        assert_eq!(parse_schedstat(b""), None);
    }

    #[test]
    fn run_share_of_a_busy_thread_is_high_on_an_idle_core() {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let flag = stop.clone();
        let spinner = std::thread::spawn(move || {
            tx.send(nix::unistd::gettid().as_raw() as u32).unwrap();
            let mut x = 0u64;
            while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                x = x.wrapping_mul(6364136223846793005).wrapping_add(1);
            }
            x
        });
        let tid = rx.recv().unwrap();
        let mut stat = Schedstat::open(std::process::id(), tid).unwrap();
        assert_eq!(stat.run_share(50e6).unwrap(), None, "first read has no delta");
        std::thread::sleep(std::time::Duration::from_millis(200));
        let share = stat.run_share(200e6).unwrap().expect("the spinner was runnable");
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        spinner.join().unwrap();
        assert!(share > 0.0 && share <= 1.0, "share {share}");
    }

    #[test]
    fn rates_become_speeds_relative_to_a_fading_peak() {
        let sample = |key| pinlearn_policy::ThreadSample::of(key, None);
        let speeds = |samples: &[pinlearn_policy::ThreadSample]| samples.iter().map(|s| s.speed).collect::<Vec<_>>();
        let mut peak = FadingPeak::default();
        let mut samples = vec![sample(1), sample(2)];
        peak.set_speeds(&mut samples, &[(0, 100.0), (1, 50.0)]);
        assert_eq!(speeds(&samples), [Some(1.0), Some(0.5)]);
        // The peak fades by 1% a period: 99 is now the fastest seen.
        let mut samples = vec![sample(1)];
        peak.set_speeds(&mut samples, &[(0, 49.5)]);
        assert!((samples[0].speed.unwrap() - 0.5).abs() < 1e-12, "{samples:?}");
        let mut idle = FadingPeak::default();
        let mut samples = vec![sample(1)];
        idle.set_speeds(&mut samples, &[(0, 0.0)]);
        assert_eq!(speeds(&samples), [None]);
    }

    #[test]
    fn auto_metric_always_resolves() {
        let (metric, note) = resolve_metric(Metric::Auto).unwrap();
        match metric {
            Metric::Useful => assert!(note.is_none()),
            Metric::Instructions => assert!(note.unwrap().contains("sampling is refused")),
            Metric::Cpu => assert!(note.unwrap().contains("not available")),
            other => panic!("auto resolved to {other}"),
        }
        assert_eq!(resolve_metric(Metric::Cpu).unwrap(), (Metric::Cpu, None));
    }
}
