//! What other programs run on the target's CPUs ([`Target::others_share`]):
//! the busy time the kernel counts on those CPUs, less what the target's
//! threads ran, as a share of the CPUs' time over the last second.
//!
//! ```text
//!   every period: the target's threads' run time (schedstat, ns) added up;
//!       while other programs ran on the CPUs (the last span's share above
//!       ATTRIBUTE_ABOVE), each thread's also put on the CPUs it ran on
//!       (its pin's, else the CPU its stat line says it ran on last)
//!   every SPAN_S (a second): /proc/stat, the cpuN lines of the target's CPUs
//!       busy ticks (user nice system irq softirq steal; guest time is in user)
//!       ─► seconds (USER_HZ) since the last read ─► less the target's run time
//!       ─► others' seconds / the CPUs' seconds: the share until the next read
//!       and the same per CPU, where the whole span put the run time on CPUs
//! ```
//!
//! The kernel counts busy time by clock ticks (usually 100 a second per
//! CPU), so one 50 ms period on two CPUs tells ten ticks' worth: the share
//! is taken over a second. The target's threads should
//! run on its CPUs only; where some run elsewhere (a thread left to its
//! program), the share comes out low, never below 0. `/proc/stat` leaves
//! offline CPUs out, so lines are matched by their CPU number. pinlearn's
//! own time there counts as others' (its manager takes well under 1% of a
//! core; in-process, its threads are the target's).
//!
//! [`Target::others_share`]: crate::Target::others_share

use pinlearn_topology::CpuSet;

/// Seconds between two reads of /proc/stat: the share is the last such
/// span's. The file grows with the CPUs and the interrupts (a line per CPU,
/// a count per interrupt, each summed over the CPUs as it is read): once a
/// second, not every period.
const SPAN_S: f64 = 1.0;

/// Above this share of the CPUs' time run by other programs over the last
/// span, the target's run time is put on the CPUs it ran on, so that each
/// CPU's share is known for the next span: what it costs (a stat read per
/// thread not pinned to a core) is paid only where other programs run.
const ATTRIBUTE_ABOVE: f64 = 0.05;

/// The other programs' share of a set of CPUs, a second at a time.
#[derive(Debug)]
pub(super) struct OthersWatch {
    cpus: CpuSet,
    /// Seconds per clock tick of /proc/stat.
    tick_s: f64,
    /// Busy seconds of the CPUs at the last read of /proc/stat.
    last_busy_s: Option<f64>,
    /// Since that read: the target's run time and the time elapsed.
    ran_s: f64,
    elapsed_s: f64,
    /// The share over the last whole span.
    share: Option<f64>,
    /// Per CPU number: busy seconds at the last read (of the CPUs watched),
    /// the target's run time put on it since, and its share over the last
    /// whole span (empty where the span did not put run time on CPUs).
    last_busy_by_cpu: Vec<f64>,
    ran_by_cpu: Vec<f64>,
    share_by_cpu: Vec<Option<f64>>,
    /// This span puts the target's run time on CPUs, from its start.
    attributing: bool,
}

impl OthersWatch {
    pub(super) fn new(cpus: CpuSet) -> Self {
        // SAFETY: sysconf has no preconditions.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
        OthersWatch {
            cpus,
            tick_s: 1.0 / if hz > 0 { hz as f64 } else { 100.0 },
            last_busy_s: None,
            ran_s: 0.0,
            elapsed_s: 0.0,
            share: None,
            last_busy_by_cpu: Vec::new(),
            ran_by_cpu: Vec::new(),
            share_by_cpu: Vec::new(),
            attributing: false,
        }
    }

    /// A thread of the target whose mask is `mask` ran `ran_s` seconds
    /// this period: on the mask's CPUs, spread evenly, where the mask holds
    /// fewer of the watched CPUs than all (pinlearn's pin), else on the CPU
    /// it ran on last (`last_cpu`, read only then).
    pub(super) fn ran_on(&mut self, mask: &CpuSet, ran_s: f64, last_cpu: impl FnOnce() -> Option<usize>) {
        if !self.attributing || !ran_s.is_finite() || ran_s <= 0.0 {
            return;
        }
        let mut on: Vec<usize> = mask.iter().filter(|&cpu| self.cpus.contains(cpu)).collect();
        if on.is_empty() || on.len() == self.cpus.len() {
            on = last_cpu().filter(|&cpu| self.cpus.contains(cpu)).into_iter().collect();
        }
        if on.is_empty() {
            return;
        }
        let each = ran_s / on.len() as f64;
        for cpu in on {
            if self.ran_by_cpu.len() <= cpu {
                self.ran_by_cpu.resize(cpu + 1, 0.0);
            }
            self.ran_by_cpu[cpu] += each;
        }
    }

    /// Per CPU number, the other programs' share of it over the last whole
    /// span (`None` for a CPU not watched); `None` where that span did not
    /// put the target's run time on CPUs (the others ran little before it)
    /// or /proc/stat could not be read.
    pub(super) fn by_cpu(&self) -> Option<&[Option<f64>]> {
        (!self.share_by_cpu.is_empty()).then_some(&self.share_by_cpu[..])
    }

    /// The target's CPUs changed (a cpuset, new places): start afresh.
    pub(super) fn set_cpus(&mut self, cpus: CpuSet) {
        if cpus != self.cpus {
            *self = OthersWatch::new(cpus);
        }
    }

    /// After a period of `period_s` in which the target's threads ran
    /// `target_ran_s` seconds: the others' share of the CPUs over the last
    /// whole span of [`SPAN_S`], `None` before one has passed or where
    /// /proc/stat cannot be read.
    pub(super) fn update(&mut self, target_ran_s: f64, period_s: f64) -> Option<f64> {
        if self.cpus.is_empty() {
            return None;
        }
        if self.last_busy_s.is_none() {
            let stat = std::fs::read_to_string("/proc/stat").ok();
            self.span_ends(stat.as_deref());
            return self.share;
        }
        if period_s.is_finite() && period_s > 0.0 {
            self.ran_s += target_ran_s;
            self.elapsed_s += period_s;
        }
        if self.elapsed_s >= SPAN_S {
            let stat = std::fs::read_to_string("/proc/stat").ok();
            self.span_ends(stat.as_deref());
        }
        self.share
    }

    /// A span ends with `stat`, the text of /proc/stat (`None`: unread):
    /// the shares over it, where the span before left a read to start
    /// from, and a new span.
    fn span_ends(&mut self, stat: Option<&str>) {
        let busy = stat.and_then(|stat| busy_ticks_by_cpu(stat, &self.cpus));
        let busy_s = busy
            .as_ref()
            .map(|by_cpu| by_cpu.iter().map(|&(_, ticks)| ticks as f64).sum::<f64>() * self.tick_s);
        let started = self.last_busy_s.is_some();
        if let (Some(busy_s), Some(last_busy_s)) = (busy_s, self.last_busy_s) {
            let others_s = busy_s - last_busy_s - self.ran_s;
            let capacity_s = self.cpus.len() as f64 * self.elapsed_s;
            self.share = Some((others_s / capacity_s).clamp(0.0, 1.0));
        } else if started {
            self.share = None;
        }
        self.share_by_cpu.clear();
        if let (Some(busy), true, true) = (&busy, self.attributing, self.elapsed_s > 0.0) {
            for &(cpu, ticks) in busy {
                let Some(&last) = self.last_busy_by_cpu.get(cpu) else {
                    continue;
                };
                let ran = self.ran_by_cpu.get(cpu).copied().unwrap_or(0.0);
                let others = ticks as f64 * self.tick_s - last - ran;
                if self.share_by_cpu.len() <= cpu {
                    self.share_by_cpu.resize(cpu + 1, None);
                }
                self.share_by_cpu[cpu] = Some((others / self.elapsed_s).clamp(0.0, 1.0));
            }
        }
        self.last_busy_by_cpu.clear();
        for &(cpu, ticks) in busy.iter().flatten() {
            if self.last_busy_by_cpu.len() <= cpu {
                self.last_busy_by_cpu.resize(cpu + 1, 0.0);
            }
            self.last_busy_by_cpu[cpu] = ticks as f64 * self.tick_s;
        }
        self.last_busy_s = busy_s;
        (self.ran_s, self.elapsed_s) = (0.0, 0.0);
        self.ran_by_cpu.clear();
        self.attributing = busy.is_some() && self.share.is_some_and(|share| share > ATTRIBUTE_ABOVE);
    }
}

/// The busy clock ticks of `cpus` in the text of /proc/stat: user, nice,
/// system, irq, softirq and steal of each `cpuN` line (guest time is
/// counted in user already; idle and iowait are not busy). `None` when a
/// line of one of them is malformed.
#[cfg(test)]
fn busy_ticks(stat: &str, cpus: &CpuSet) -> Option<u64> {
    busy_ticks_by_cpu(stat, cpus).map(|by_cpu| by_cpu.iter().map(|&(_, ticks)| ticks).sum())
}

/// The same per CPU: (CPU number, busy ticks) of each of `cpus` that
/// /proc/stat lists (an offline CPU is absent).
fn busy_ticks_by_cpu(stat: &str, cpus: &CpuSet) -> Option<Vec<(usize, u64)>> {
    let mut busy = Vec::new();
    for line in stat.lines() {
        // The line of all CPUs is "cpu" and a space: its first count is
        // no CPU's number.
        let Some(rest) = line
            .strip_prefix("cpu")
            .filter(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
        else {
            continue;
        };
        let mut fields = rest.split_ascii_whitespace();
        let Some(cpu) = fields.next().and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        if !cpus.contains(cpu) {
            continue;
        }
        let ticks: Vec<u64> = fields.take(8).map(str::parse).collect::<Result<_, _>>().ok()?;
        let [user, nice, system, _idle, _iowait, irq, softirq, steal] = ticks[..] else {
            return None;
        };
        let ticks = [user, nice, system, irq, softirq, steal]
            .into_iter()
            .try_fold(0u64, u64::checked_add)?;
        busy.push((cpu, ticks));
    }
    Some(busy)
}

#[cfg(test)]
mod tests {
    use super::*;

    const STAT: &str = "cpu  900 0 300 5000 10 0 5 0 0 0\n\
                        cpu0 500 0 100 2000 5 0 5 0 0 0\n\
                        cpu2 400 10 200 3000 5 1 0 4 7 0\n\
                        intr 12345 0 1\n";

    #[test]
    fn busy_ticks_are_those_of_the_cpus_asked_for_matched_by_number() {
        let set = |list: &str| CpuSet::parse_list(list).unwrap();
        assert_eq!(busy_ticks(STAT, &set("0")), Some(605));
        // cpu1 is offline: absent from the file, it adds nothing.
        assert_eq!(busy_ticks(STAT, &set("1-2")), Some(400 + 10 + 200 + 1 + 4));
        assert_eq!(busy_ticks(STAT, &set("0,2")), Some(605 + 615));
        assert_eq!(busy_ticks(STAT, &set("3")), Some(0));
        // The line of all CPUs is no CPU's, whatever its first count.
        let small = "cpu  2 5 0 0 0 0 0 0 0 0\ncpu2 1 0 0 0 0 0 0 0 0 0\n";
        assert_eq!(busy_ticks(small, &set("2")), Some(1));
        assert_eq!(busy_ticks("cpu0 1 2 x 4 5 6 7 8\n", &set("0")), None, "garbage");
        assert_eq!(busy_ticks("cpu0 1 2 3\n", &set("0")), None, "too few fields");
    }

    #[test]
    fn each_cpu_s_share_is_its_busy_time_less_the_target_s_run_there_once_other_programs_run() {
        let set = |list: &str| CpuSet::parse_list(list).unwrap();
        let stat = |cpu0: u64, cpu1: u64| {
            format!("cpu  0 0 0 0 0 0 0 0\ncpu0 {cpu0} 0 0 0 0 0 0 0\ncpu1 0 0 {cpu1} 0 0 0 0 0\n")
        };
        let mut watch = OthersWatch::new(set("0-1"));
        watch.tick_s = 0.01;
        watch.span_ends(Some(&stat(0, 0)));
        assert_eq!(
            (watch.share, watch.by_cpu()),
            (None, None),
            "the first read tells nothing"
        );
        // A second in which both CPUs were busy and the target ran one of
        // them: the others' share is a half; its run time was not put on
        // CPUs (no other program was known to run), so no CPU's is known.
        let second = |watch: &mut OthersWatch, busy: (u64, u64), ran: &[(&str, f64, Option<usize>)]| {
            for &(mask, ran_s, last) in ran {
                watch.ran_on(&set(mask), ran_s, || last);
                watch.ran_s += ran_s;
            }
            watch.elapsed_s = 1.0;
            watch.span_ends(Some(&stat(busy.0, busy.1)));
        };
        second(&mut watch, (100, 100), &[("1", 1.0, None)]);
        assert_eq!((watch.share, watch.by_cpu()), (Some(0.5), None));
        // The next: a thread pinned to CPU 1 ran 0.6 s there (no stat read
        // for it), one with the whole mask 0.4 s, last seen on CPU 1: the
        // other program had CPU 0 to itself.
        second(&mut watch, (200, 200), &[("1", 0.6, Some(0)), ("0-1", 0.4, Some(1))]);
        assert_eq!(watch.share, Some(0.5));
        let by_cpu: Vec<f64> = watch.by_cpu().expect("told").iter().map(|s| s.unwrap()).collect();
        assert!((by_cpu[0] - 1.0).abs() < 1e-9 && by_cpu[1].abs() < 1e-9, "{by_cpu:?}");
        // Alone again: the share falls to 0 and the CPUs are no longer
        // told after the span that saw it.
        second(&mut watch, (200, 300), &[("1", 1.0, None)]);
        assert_eq!(watch.share, Some(0.0));
        assert!(watch.by_cpu().is_some(), "that span put the run time on CPUs");
        second(&mut watch, (200, 400), &[("1", 1.0, None)]);
        assert_eq!(watch.by_cpu(), None);
    }

    #[test]
    fn a_cpu_another_program_keeps_busy_shows_as_the_others_share_unless_it_is_the_target_s() {
        let cpu = crate::live::get_affinity(0).unwrap().first().unwrap();
        let on_cpu = CpuSet::parse_list(&cpu.to_string()).unwrap();
        let mut busy = std::process::Command::new("taskset")
            .args(["-c", &cpu.to_string(), "sh", "-c", "while :; do :; done"])
            .spawn()
            .expect("taskset (util-linux)");
        let (mut stranger, mut own) = (OthersWatch::new(on_cpu.clone()), OthersWatch::new(on_cpu));
        assert_eq!(stranger.update(0.0, 0.1), None, "the first read tells nothing");
        own.update(0.0, 0.1);
        let (mut theirs, mut ours) = (None, None);
        for period in 0..12 {
            std::thread::sleep(std::time::Duration::from_millis(100));
            theirs = stranger.update(0.0, 0.1);
            // As if the busy loop were the target: its 0.1 s a period is
            // the target's own.
            ours = own.update(0.1, 0.1);
            if period < 5 {
                assert_eq!(theirs, None, "nothing before a whole second");
            }
        }
        busy.kill().unwrap();
        busy.wait().unwrap();
        let (theirs, ours) = (theirs.expect("read"), ours.expect("read"));
        assert!(theirs > 0.6, "another program's busy loop: {theirs}");
        assert!(ours < 0.3, "the target's own busy loop: {ours}");
    }
}
