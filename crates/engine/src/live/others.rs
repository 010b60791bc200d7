//! What other programs run on the target's CPUs ([`Target::others_share`]):
//! the busy time the kernel counts on those CPUs, less what the target's
//! threads ran, as a share of the CPUs' time over the last second.
//!
//! ```text
//!   every period: the target's threads' run time (schedstat, ns) added up
//!   every SPAN_S (a second): /proc/stat, the cpuN lines of the target's CPUs
//!       busy ticks (user nice system irq softirq steal; guest time is in user)
//!       ─► seconds (USER_HZ) since the last read ─► less the target's run time
//!       ─► others' seconds / the CPUs' seconds: the share until the next read
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
        }
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
            self.last_busy_s = self.read();
            return self.share;
        }
        if period_s.is_finite() && period_s > 0.0 {
            self.ran_s += target_ran_s;
            self.elapsed_s += period_s;
        }
        if self.elapsed_s >= SPAN_S {
            let busy_s = self.read();
            if let (Some(busy_s), Some(last_busy_s)) = (busy_s, self.last_busy_s) {
                let others_s = busy_s - last_busy_s - self.ran_s;
                let capacity_s = self.cpus.len() as f64 * self.elapsed_s;
                self.share = Some((others_s / capacity_s).clamp(0.0, 1.0));
            } else {
                self.share = None;
            }
            self.last_busy_s = busy_s;
            (self.ran_s, self.elapsed_s) = (0.0, 0.0);
        }
        self.share
    }

    /// The busy seconds of the CPUs so far.
    fn read(&self) -> Option<f64> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        Some(busy_ticks(&stat, &self.cpus)? as f64 * self.tick_s)
    }
}

/// The busy clock ticks of `cpus` in the text of /proc/stat: user, nice,
/// system, irq, softirq and steal of each `cpuN` line (guest time is
/// counted in user already; idle and iowait are not busy). `None` when a
/// line of one of them is malformed.
fn busy_ticks(stat: &str, cpus: &CpuSet) -> Option<u64> {
    let mut busy = 0u64;
    for line in stat.lines() {
        let Some(rest) = line.strip_prefix("cpu") else {
            continue;
        };
        let mut fields = rest.split_ascii_whitespace();
        let Some(cpu) = fields.next().and_then(|n| n.parse::<usize>().ok()) else {
            continue; // the "cpu" line of all CPUs
        };
        if !cpus.contains(cpu) {
            continue;
        }
        let ticks: Vec<u64> = fields.take(8).map(str::parse).collect::<Result<_, _>>().ok()?;
        let [user, nice, system, _idle, _iowait, irq, softirq, steal] = ticks[..] else {
            return None;
        };
        busy = busy.checked_add(user + nice + system + irq + softirq + steal)?;
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
        assert_eq!(busy_ticks("cpu0 1 2 x 4 5 6 7 8\n", &set("0")), None, "garbage");
        assert_eq!(busy_ticks("cpu0 1 2 3\n", &set("0")), None, "too few fields");
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
