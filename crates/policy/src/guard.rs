//! The do-no-harm guard: keeps the learner only while it measures at least
//! as good as leaving the threads to the operating system.
//!
//! ```text
//!   periods ─► windows of `window` periods, each run by one arm (Learn | Os)
//!
//!   champion windows ... champion │ probe (the other arm) │ champion ...
//!        score before ────────────┘          │            └─── score after
//!                                            ▼
//!        (Linux champion, its window showed a blind spot (below) and the
//!         learner's probe > max(before, Linux's window before it) ·
//!         (1 + decisive): the learner takes over at once, without the
//!         window after; a single bad Linux window is not a blind spot)
//!        probe > mean(before, after) · (1 + margin) ?
//!          yes ─► the probe's arm becomes champion, and the old one is
//!                 probed again right after one window (a lucky window
//!                 must not decide for long), unless the probe won by
//!                 more than `decisive` (50%)
//!        (the learner just took the lead and Linux's probe to confirm
//!         it ≥ mean(before, after) · (1 − margin): a tie, the lead is
//!         not confirmed, and Linux becomes champion again)
//!        (a tie, within `margin` either way, where Linux's windows left
//!         at least `remote_gap` more of the threads' memory on other
//!         nodes than theirs than the learner's did: the learner takes
//!         the lead, keeps it when Linux's probe to confirm it ties, and
//!         Linux's later probes that tie or lose that way back off as
//!         ties do (below); run time does not show memory stalls;
//!         Linux's side is the larger of its windows next to the probe
//!         and its own windows' last REMOTE_LEVEL_PERIODS or so: next to
//!         a probe it starts where the learner left threads and memory)
//!          no  ─► the champion stays; the probe's loss, and what it cost
//!                 the champion's window after it (after below before,
//!                 unless after fell below the probe), are added to `spent`
//!                 (each as a share of a whole window), and, for a probe of
//!                 the learner, how far the first periods of the probe and
//!                 of Linux's window after it, which no score counts (the
//!                 threads move in them), fell below their window's score,
//!                 over the window's length
//!        (Linux champion: a Linux score below half the median of its last
//!         16 windows counts as that median in both tests: Linux is moving
//!         its threads after a load moved, not blind)
//!        (learner champion, its score fell below 3/4 of its window before:
//!         the load moved onto its places; a probe of Linux then runs up to
//!         2 more windows while its score rises and stays below the
//!         learner's, and scores its best window: Linux, handed back its
//!         placement of before the move, needs them to rebalance; where the
//!         fall comes in the learner's window right after a probe of Linux,
//!         the load moved under that probe: it is not compared, and Linux
//!         is probed again at once)
//!
//!   next probe once the run can afford it:
//!        spent + expected loss ≤ probe_cost · (windows so far + 1)
//!        (spent never below that budget less `savings`: the run does not
//!        save up for a burst, and a probe expected to lose more than
//!        `savings` waits for max_gap)
//!        expected loss = 1 − (the other arm's last score / the champion's
//!        last window), at least 0 (halved every `forecast_halflife`
//!        champion windows since the last probe, where set, while Linux
//!        looks blind or always: `forecast_ages`): a champion
//!        that got worse than the other arm was is checked at once (a
//!        leading learner even where the budget is spent: Linux is the
//!        safe side); `assumed_loss` before the other arm was ever
//!        measured (so the first probe waits
//!        assumed_loss / probe_cost windows: the 15th, after 4.2 s,
//!        by default),
//!        0 when Linux's last window spent >= blind_waiting of its CPU
//!        time in waiting code (spinning at barriers: probe at once), or
//!        its threads spent >= blind_queued of their runnable time queued
//!        for a CPU while the program had fewer CPUs than it may use;
//!        never more than `max_gap` champion windows between probes;
//!        none while Linux rebalances (one of its last 2 windows scored
//!        below half its median: the load moved; a probe would hand the
//!        threads back to where they ran before and be scored in the
//!        turmoil), except to confirm a switch;
//!        the learner's first probe, made at once on a blind spot, lost:
//!        once more `blind_retry_after` windows later, outside the budget,
//!        if Linux's window still shows the blind spot (and is not taken
//!        for its median: rebalancing); the program may have left the
//!        phase the first probe met (start-up, a first touch);
//!        held back (up to `max_gap`) once two of the learner's probes in
//!        a row lost while it moved no thread (the policy reports its
//!        places each period, `placed`): the same probe would lose
//!        again, until Linux's window score moves by more than
//!        `replay_change` from the one it lost to, or the learner's
//!        threads change (`learner_changed`), or Linux's threads come to
//!        run `remote_gap` farther from their memory than the learner's
//!        did in that probe (a tie would now go to the learner);
//!        such a held probe, when it comes, ends after the
//!        HOPELESS_PERIODS periods after its first if they average below
//!        HOPELESS_SHARE of Linux's level and it still moved no thread;
//!        after k of the learner's probes in a row tied with Linux (within
//!        `margin` either way) while it moved no thread, at least 2^k
//!        (up to `max_gap`) of Linux's windows (`tie_backoff`), until a
//!        probe does not tie or Linux's score moves by more than
//!        `replay_change` (or its threads drift from their memory, as
//!        above): ties cost no budget, yet every probe's
//!        switches cost something no window scores; the same back-off for
//!        Linux's probes, the learner champion, that tie or lose while
//!        Linux's threads ran farther from their memory by `remote_gap`
//!        (not once Linux's last score is more than `margin` above the
//!        learner's last window: it is probed at once)
//!
//!   score of a window = mean application progress over its periods,
//!   the first left out (threads are still moving there), the first
//!   `settle` where the window's arm differs from the last window's (a
//!   probe settles into its placement, and the window after it starts
//!   from what the probe left); a champion's window in a row, where it is
//!   compared with the other arm's (before above), over its periods after
//!   the first `settle` too: both sides of a comparison are scored on the
//!   same periods of their windows, or a program whose progress cycles in
//!   step with the windows favours the side scored later
//! ```
//!
//! By default Linux is champion (`first = "os"`) and the learner's first
//! window is a probe once the run is long enough that a wrong pin costs at
//! most `probe_cost` of it: short runs stay Linux's. Where Linux is already
//! right (blocking synchronisation with one thread per free core, independent
//! work next to a load) the learner's probes lose and stay rare; where the
//! learner finds something the OS cannot see (threads that meet often, next
//! to another program's load), its probe wins and Linux's windows become the
//! rare ones. Probing a loser costs at most about `probe_cost` of the run
//! however much worse it is. Comparing each probe with the windows on both
//! sides of it cancels load that changes steadily. Progress is the application's own
//! rate (heartbeats, or instructions) where the target knows it, else the sum
//! of the threads' speeds; the engine passes it in
//! [`crate::PeriodInput::progress`].
//!
//! Handing back ([`HandBack`]): Linux does not undo a pin. Once the
//! learner's window has moved the threads, widening their masks leaves them
//! where the learner put them (and their memory where Linux first put it),
//! so Linux's later windows would measure the learner's leftovers, not
//! Linux. At the end of every Linux window the policy asks where each thread
//! ran ([`crate::Policy::wants_cores`]); the first period of Linux's next
//! window pins each thread back to where it ran at the end of Linux's last
//! window as champion (a probe of Linux, while the learner leads, follows
//! the learner's window and would hand back its leftovers; except a probe
//! that had windows to rebalance after the load moved: its end is Linux's,
//! made for the load as it is now), and
//! the periods after it give Linux the whole machine from there. That first
//! period is not scored.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::{PeriodInput, ThreadKey};

/// Settings of the guard (`[learn.guard]` in the configuration).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GuardConfig {
    /// Compare the learner with the OS while running; off: learn only.
    pub enabled: bool,
    /// Core periods per window (more than `settle`).
    pub window: u32,
    /// Periods at the start of a window whose arm differs from the last
    /// window's that are not scored, at least 1 (a champion's windows in a
    /// row leave out their first only): the threads are moving, the
    /// program may need longer to settle into the new placement (caches
    /// refilled; likely, beside another scheduling group's load, that
    /// group's share of a CPU its thread just came to growing), and the
    /// window after a probe starts from what the probe left behind. The
    /// champion's window before a probe is compared on the same periods
    /// (its first `settle` left out too), so both sides of the comparison
    /// sample the same part of their windows.
    pub settle: u32,
    /// A probe must beat the champion by this share to take over, in [0, 1).
    pub margin: f64,
    /// Share of the run the probes may cost: the worse the other arm
    /// measured, the rarer it is probed, in (0, 1).
    pub probe_cost: f64,
    /// Loss assumed for an arm never measured, in [0, 1]: its first probe
    /// waits until the run so far can pay for it.
    pub assumed_loss: f64,
    /// Longest run of champion windows between two probes (at least 1),
    /// whatever the budget says: a change of load is noticed within it.
    pub max_gap: u32,
    /// The champion before anything was measured: `os` (the learner's
    /// first window is a probe and it takes over only once it measures
    /// better) or `learn` (Linux's first window is the probe).
    pub first: Arm,
    /// Where Linux is blind: when the threads spend at least this share of
    /// their CPU time in waiting code (spinning at barriers, in locks) in
    /// Linux's windows, the learner, never measured yet, is probed at once
    /// instead of after `assumed_loss / probe_cost` windows. In [0, 1]; 1
    /// turns it off. Needs a target that tells waiting from work (the
    /// `useful` metric).
    pub blind_waiting: f64,
    /// Where Linux is blind, too: when the threads spend at least this
    /// share of their runnable time queued for a CPU in Linux's windows
    /// while the program runs on fewer CPUs than it may use (another
    /// program has the rest, and Linux keeps the program off them), the
    /// learner, never measured yet, is probed at once. In [0, 1]; 1 turns
    /// it off.
    pub blind_queued: f64,
    /// A probe that beats the champion by more than this share takes over
    /// without the old champion being probed again right after; a smaller
    /// win is confirmed at once. At least `margin`.
    pub decisive: f64,
    /// Once two of the learner's probes in a row lost while it moved no
    /// thread (it tried nothing new), the next one would be the same
    /// again: it waits (up to `max_gap` windows) until Linux's window score
    /// moves by more than this share from the score the last one lost to,
    /// the learner's threads change, or Linux's threads come to run
    /// `remote_gap` farther from their memory than the learner's did in
    /// that probe. At least 0; 0 turns it off (every probe the budget
    /// allows).
    pub replay_change: f64,
    /// The most of the unspent budget carried over for later probes, in
    /// windows' worth of progress (0.225: one probe losing 22.5%): probes
    /// that keep losing come at the budget's pace, never in a burst, and a
    /// probe expected to lose more waits for `max_gap`. At least 0 (taken
    /// as `probe_cost` below it); a large value removes the limit.
    pub savings: f64,
    /// Once the learner's probes tied with Linux's windows (neither ahead
    /// by `margin`) k times in a row while Linux is champion and the
    /// learner moved no thread in them, the next one waits 2^k of Linux's
    /// windows (at most `max_gap`), until a probe does not tie, Linux's
    /// score moves by more than `replay_change`, or its threads drift
    /// `remote_gap` farther from their memory than the learner's did in
    /// the last tie: where
    /// the windows cannot tell the two apart (threads that fill every CPU,
    /// no heartbeats), a probe still costs its switches, which no window
    /// scores. Off: a tie costs nothing and probes come as the budget
    /// allows.
    pub tie_backoff: bool,
    /// The other arm's last score forecasts its next probe's loss; after
    /// this many champion windows without a probe the forecast counts half,
    /// after twice as many a quarter, and so on: a probe made in a phase
    /// the program has left (a first touch that ends at a barrier) must not
    /// keep the other arm out for the rest of the run. What the probes
    /// really lose is still charged in full. 0 (the default): the forecast
    /// counts in full until the next probe.
    pub forecast_halflife: u32,
    /// When the forecast ages (`forecast_halflife`): `always`, or
    /// `while-linux-blind` (the default), only while Linux is champion and
    /// its last window showed a blind spot (`blind_waiting`,
    /// `blind_queued`): the signs that say a pin may win are still there,
    /// so an old loss is more likely the phase it met than the pin's.
    pub forecast_ages: ForecastAges,
    /// Where the learner's first probe came at once (Linux's window showed
    /// a blind spot) and lost, and Linux's windows still show it this many
    /// windows later, the learner is probed once more then, outside the
    /// budget: a program's first phase (start-up, a first touch of its
    /// memory ending at a barrier) says little of the placement it runs
    /// in after. Once per run; its loss is charged as any probe's. 0 turns
    /// it off.
    pub blind_retry_after: u32,
    /// A tie goes to the arm whose threads ran nearer their memory: where
    /// the learner's probe ties Linux's windows (neither ahead by
    /// `margin`) and at least this larger share of the threads' memory
    /// ([`crate::PeriodInput::remote`]) lay on other nodes than theirs in
    /// Linux's windows than in the learner's, the learner takes the lead,
    /// and Linux, probed to confirm it, must beat it by `margin` to take it
    /// back. Run time cannot see memory stalls: a thread that Linux moved
    /// away from its memory is as busy and slower. In (0, 1]; 1 turns it
    /// off, as does a target that cannot tell (one memory node).
    pub remote_gap: f64,
}

/// When the guard's forecast of a probe's loss fades
/// ([`GuardConfig::forecast_ages`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ForecastAges {
    /// After every champion window without a probe.
    Always,
    /// Only while Linux is champion and its last window looked blind.
    WhileLinuxBlind,
}

impl Default for GuardConfig {
    fn default() -> Self {
        GuardConfig {
            enabled: true,
            window: 6,
            settle: 1,
            margin: 0.02,
            probe_cost: 0.015,
            assumed_loss: 0.225,
            max_gap: 64,
            first: Arm::Os,
            blind_waiting: 0.25,
            blind_queued: 0.3,
            decisive: 0.5,
            replay_change: 0.1,
            savings: 0.225,
            tie_backoff: true,
            forecast_halflife: 0,
            forecast_ages: ForecastAges::WhileLinuxBlind,
            blind_retry_after: 4,
            remote_gap: 0.05,
        }
    }
}

/// What a period showed of Linux's blind spots (each `None` where the
/// target cannot tell): the share of the threads' CPU time in waiting code,
/// and the share of their runnable time queued for a CPU while the program
/// had fewer CPUs than it may use ([`crate::PeriodInput::waiting`],
/// [`crate::PeriodInput::queued`]).
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Signs<T> {
    pub waiting: T,
    pub queued: T,
    /// The share of the threads' memory on other nodes than the ones they
    /// ran on ([`crate::PeriodInput::remote`]): not a blind spot by itself,
    /// it decides ties ([`GuardConfig::remote_gap`]).
    pub remote: T,
}

impl Signs<Option<f64>> {
    /// The signs of `input`'s period.
    pub fn of(input: &crate::PeriodInput<'_>) -> Self {
        Signs {
            waiting: input.waiting,
            queued: input.queued,
            remote: input.remote,
        }
    }
}

/// Linux's windows as champion that [`Guard::linux_level`] looks back on.
const LINUX_LEVEL_WINDOWS: usize = 16;

/// Linux windows in a row at their own level after one taken for the
/// median before Linux counts as settled again (its recovery after a load
/// moved comes and goes: the modelled Linux's spinning threads scored 45, 2,
/// 1, 49, 1 in the windows after one).
const CALM_WINDOWS: u32 = 2;

/// The learner, champion, fell below this share of its window before
/// (the load moved onto the places it holds): a probe of Linux then may go
/// on for [`LINUX_CATCH_UP_WINDOWS`] more windows.
const LEARNER_DROP: f64 = 0.75;

/// Windows a probe of Linux may add after the learner's score dropped, each
/// only while Linux's score still rises by more than `margin` and stays
/// below the learner's: Linux hands its threads back to where it had them
/// before the load moved and needs a few windows to rebalance (the modelled
/// Linux's barrier threads scored 7.9, 8.4, 8.9, 9.5, 10.7 in the windows
/// after one), so one window of it would be scored in the turmoil.
const LINUX_CATCH_UP_WINDOWS: u32 = 2;

/// A probe of a learner that replays places lost twice in a row ends once
/// this many of its periods after the first measured below [`HOPELESS_SHARE`] of Linux
/// ([`Guard::probe_is_hopeless`]).
const HOPELESS_PERIODS: u32 = 2;

/// See [`HOPELESS_PERIODS`]. The held round-robin pin of 256 threads that
/// spin at barriers, beside a load that moves between nodes, scored 1-25
/// against Linux's 55-75 in each of its probes (sim, 8x32 `barrier-spin` D),
/// every `max_gap` windows.
const HOPELESS_SHARE: f64 = 0.5;

/// How many of Linux's own periods its memory level averages over, in
/// effect ([`Guard::linux_remote_level`]): about 10 s at the default 50 ms
/// period, so Linux's long windows, where its balancer carries threads away
/// from their memory as the run goes on, outweigh its short ones next to
/// the learner's probes, which start from placements the learner left.
const REMOTE_LEVEL_PERIODS: f64 = 200.0;

/// Who places the threads during a window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Arm {
    /// The learning policy's places.
    Learn,
    /// Every thread on the whole machine: Linux decides.
    Os,
}

impl Arm {
    fn other(self) -> Arm {
        match self {
            Arm::Learn => Arm::Os,
            Arm::Os => Arm::Learn,
        }
    }
}

/// The guard's state machine: one call of [`Guard::next`] per period.
#[derive(Clone, Debug)]
pub struct Guard {
    cfg: GuardConfig,
    champion: Arm,
    /// Champion windows run since the last probe.
    since_probe: u32,
    /// Windows closed so far.
    windows: u64,
    /// Sum of the probes' losses (each a share of one window's progress).
    spent: f64,
    /// The other arm's last score (its probe, or its last windows as
    /// champion before it lost): what a probe of it is expected to yield.
    other: Option<f64>,
    /// The champion just took over: probe the old one once more at once.
    confirm: bool,
    /// The probe in progress, or the last one, was such a confirmation
    /// (set as each probe starts).
    confirming: bool,
    /// Arm of the window in progress and periods of it decided so far.
    window_arm: Arm,
    window_period: u32,
    /// The current window's arm differs from the last window's: its first
    /// `settle` periods are not scored (it is scored on `late`, else on
    /// `early`).
    switched: bool,
    /// Progress summed over all its periods but the first, settling or
    /// not: the score of a window that follows one of the same arm, and
    /// what [`Guard::probe_is_hopeless`] looks at (a placement far below
    /// Linux's is so from its first periods on).
    early: (f64, u32),
    /// Progress summed over its periods after the first `settle`, whether
    /// its arm switched or not: what a champion window scores where it is
    /// compared with the other arm's, so both are scored on the same
    /// periods of their windows (a program whose progress cycles in step
    /// with the windows would otherwise favour the arm scored later).
    /// With `settle = 1` these are the scored periods.
    late: (f64, u32),
    /// Score of the last champion window before the pending probe, over
    /// its periods after the first `settle`.
    before: Option<f64>,
    /// Score of the champion window before that one, while the same arm
    /// has been champion (a one-window drop must not look like a blind spot).
    earlier: Option<f64>,
    /// Score of the probe waiting for the champion window after it.
    probe: Option<f64>,
    /// The share of the threads' memory on other nodes in the champion's
    /// window before the pending probe, and in the probe
    /// ([`GuardConfig::remote_gap`]).
    remote_before: Option<f64>,
    probe_remote: Option<f64>,
    /// The learner took the lead on a tie where Linux's threads ran
    /// farther from their memory: Linux's probe to confirm it must win.
    lead_on_locality: bool,
    /// Linux's share of the threads' memory on other nodes, each scored
    /// period of its own windows weighing `1 - 1 / REMOTE_LEVEL_PERIODS`
    /// of the one after it: (weighted sum, weight).
    linux_remote: (f64, f64),
    /// The progress of the first period of the window in progress (not
    /// scored: the threads move then), and of the pending probe's.
    first: Option<f64>,
    probe_first: Option<f64>,
    /// Linux's last [`LINUX_LEVEL_WINDOWS`] windows as champion, newest
    /// last: what Linux is worth while it rebalances ([`Guard::linux_level`]).
    linux_recent: VecDeque<f64>,
    /// Linux's windows in a row as champion scored at their own level, not
    /// taken for the median ([`Guard::linux_level`]): below
    /// [`CALM_WINDOWS`], Linux is still rebalancing and is not probed.
    linux_calm: u32,
    /// The learner's places in the first period of its window in progress
    /// ([`Guard::placed`]), whether every period since kept them, and
    /// whether the probe waiting for the champion window after it did.
    window_places: Vec<(ThreadKey, usize)>,
    settled: bool,
    probe_settled: bool,
    /// Linux's score that the learner's last probe lost to while the
    /// learner had settled: the same probe again would lose again, so it
    /// waits for that score to change ([`GuardConfig::replay_change`]).
    replay: Option<f64>,
    /// The learner's probes lost in a row while it moved no thread.
    settled_losses: u32,
    /// How many of the learner's probes in a row tied with Linux (Linux
    /// champion), and Linux's score at the last of them.
    ties: Option<(u32, f64)>,
    /// The share of the threads' memory on other nodes in the learner's
    /// last probe compared, Linux champion, where Linux's threads did not
    /// run farther from theirs by `remote_gap` then: a hold in place
    /// (`replay` or `ties`) started at that probe, so once they do, it
    /// ends (the same probe, tying again, would now go to the learner).
    hold_remote: Option<f64>,
    /// Signs of Linux's blind spots summed over the scored periods of the
    /// window in progress.
    signs_sum: Signs<f64>,
    signs_count: Signs<u32>,
    /// Their means over the last window Linux placed the threads.
    os_signs: Signs<Option<f64>>,
    /// A probe of Linux going on after the learner's score dropped
    /// ([`LINUX_CATCH_UP_WINDOWS`]): the windows it added so far and the
    /// score of its last one (its best: it goes on only while rising).
    catch_up: Option<(u32, f64)>,
    /// The probe of Linux whose window ended last had windows to rebalance
    /// ([`Guard::linux_catches_up`]): where it ended is Linux's own.
    probe_rebalanced: bool,
    /// The period last passed to [`Guard::next`] ended a window of Linux's
    /// own ([`Guard::ended_linux_s_own_window`]).
    linux_own_window_ended: bool,
    /// Where the run stands with the one retry of a lost first probe made
    /// on Linux's blind spot ([`GuardConfig::blind_retry_after`]).
    blind_retry: BlindRetry,
    /// The learner's probes compared with Linux champion so far, and the
    /// last one's score over the Linux level it was compared with
    /// ([`Guard::learner_probes_compared`]).
    learner_probes: (u64, f64),
    /// Periods decided by each arm, and how often the champion changed.
    stats: GuardStats,
}

/// The one retry of a lost first probe made on Linux's blind spot, from
/// the first probe to the end of the run:
///
/// ```text
/// NotYet --first probe, Linux never beaten, looks blind--> FirstProbe
/// FirstProbe --won, or lost with blind_retry_after = 0--> NotYet
/// FirstProbe --lost--> Pending
/// Pending --blind_retry_after windows later, still blind, not rebalancing:
///           the retry; or any other probe first--> Spent
/// Pending --Linux no longer looks blind, or lost the lead--> Spent
/// ```
///
/// (`NotYet` again after the first probe changes nothing in practice: that
/// probe left a measure of the other arm, so no later probe is a first.)
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlindRetry {
    NotYet,
    FirstProbe,
    Pending,
    Spent,
}

/// What [`Guard::linux_catches_up`] makes of a probe of Linux's window.
#[derive(Clone, Copy, Debug, PartialEq)]
enum CatchUp {
    /// It goes on for one more window.
    GoesOn,
    /// It ended, with this score (the best of its windows' where it went
    /// on).
    Ended(Option<f64>),
}

/// What the guard did over a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct GuardStats {
    pub learn_periods: u64,
    pub os_periods: u64,
    pub switches: u64,
}

impl GuardStats {
    /// Share of the periods decided so far that were the OS's (0 before any).
    pub fn os_share(&self) -> f64 {
        self.os_periods as f64 / (self.os_periods + self.learn_periods).max(1) as f64
    }
}

impl Guard {
    pub fn new(cfg: GuardConfig) -> Self {
        let first = if cfg.enabled { cfg.first } else { Arm::Learn };
        Guard {
            cfg,
            champion: first,
            since_probe: 0,
            windows: 0,
            spent: 0.0,
            other: None,
            confirm: false,
            confirming: false,
            window_arm: first,
            window_period: 0,
            switched: true,
            early: (0.0, 0),
            late: (0.0, 0),
            before: None,
            earlier: None,
            linux_recent: VecDeque::new(),
            linux_calm: CALM_WINDOWS,
            probe: None,
            remote_before: None,
            probe_remote: None,
            lead_on_locality: false,
            linux_remote: (0.0, 0.0),
            first: None,
            probe_first: None,
            window_places: Vec::new(),
            settled: false,
            probe_settled: false,
            replay: None,
            settled_losses: 0,
            blind_retry: BlindRetry::NotYet,
            ties: None,
            hold_remote: None,
            signs_sum: Signs::default(),
            signs_count: Signs::default(),
            os_signs: Signs::default(),
            catch_up: None,
            probe_rebalanced: false,
            linux_own_window_ended: false,
            learner_probes: (0, 0.0),
            stats: GuardStats::default(),
        }
    }

    /// How many of the learner's probes were compared with Linux champion
    /// so far, and how the last one did: its score over the level of
    /// Linux's windows it was compared with (above 1 + `margin`: it won).
    /// The policy tells which of its placements did better against Linux.
    pub fn learner_probes_compared(&self) -> (u64, f64) {
        self.learner_probes
    }

    /// The arm that has won the comparisons so far.
    pub fn champion(&self) -> Arm {
        self.champion
    }

    /// Linux is blind to this program: the learner is champion and its last
    /// score beat Linux's last by more than `decisive`. Leaving a thread to
    /// Linux (a whole-node action) is then known to lose.
    pub fn os_blind(&self) -> bool {
        self.cfg.enabled
            && self.champion == Arm::Learn
            && matches!((self.other, self.before), (Some(os), Some(learn)) if learn > os * (1.0 + self.cfg.decisive))
    }

    /// Linux's last window showed a blind spot: its threads spent at least
    /// `blind_waiting` of their CPU time in waiting code, or at least
    /// `blind_queued` of their runnable time queued for a CPU while the
    /// program had fewer CPUs than it may use.
    fn linux_looks_blind(&self) -> bool {
        let at_least = |sign: Option<f64>, threshold: f64| threshold < 1.0 && sign.is_some_and(|v| v >= threshold);
        at_least(self.os_signs.waiting, self.cfg.blind_waiting) || at_least(self.os_signs.queued, self.cfg.blind_queued)
    }

    /// Records where the learner put the threads in the period
    /// [`Guard::next`] just gave it (`place` aligned with `threads`; other
    /// periods are ignored). Only for a policy whose places follow from
    /// what it measured (best replies, a spread), not one that draws them
    /// at random: its next probe may explore what this one did not. Once
    /// two probes in a row lost while every period kept the places of its
    /// first (the learner tried nothing new: its next probe would be the
    /// same), the next is held back while nothing changes
    /// ([`GuardConfig::replay_change`]).
    pub fn placed(&mut self, threads: &[crate::ThreadSample], place: &[usize]) {
        if !self.cfg.enabled || self.window_arm != Arm::Learn {
            return;
        }
        let now = threads.iter().map(|t| t.key).zip(place.iter().copied());
        if self.window_period == 1 {
            self.window_places.clear();
            self.window_places.extend(now);
            self.settled = true;
        } else {
            self.settled = self.settled && now.eq(self.window_places.iter().copied());
        }
    }

    /// The learner's threads changed (one appeared or ended, or the NUMA
    /// level moved one): its next probe is a new placement.
    pub fn learner_changed(&mut self) {
        self.replay = None;
        self.settled_losses = 0;
    }

    /// The arm the last call of [`Guard::next`] returned.
    pub fn arm(&self) -> Arm {
        self.window_arm
    }

    pub fn stats(&self) -> GuardStats {
        self.stats
    }

    /// What Linux is worth when its last windows scored `recent`: `recent`
    /// itself, unless that fell below half the median of Linux's last
    /// [`LINUX_LEVEL_WINDOWS`] windows as champion (it rebalances after a
    /// load moved: the modelled Linux needs about 8 windows to move spinning
    /// threads off a node the load reached), then that median. A Linux
    /// blind for good drags the median down within half as many windows.
    fn linux_level(&self, recent: f64) -> f64 {
        if self.linux_recent.len() < LINUX_LEVEL_WINDOWS / 2 {
            return recent;
        }
        let mut sorted: Vec<f64> = self.linux_recent.iter().copied().collect();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[sorted.len() / 2];
        if recent < median * 0.5 { median } else { recent }
    }

    /// Whether the probe of Linux whose window just scored `score` goes on
    /// for one more window: the learner, champion, dropped below
    /// [`LEARNER_DROP`] of its window before (the load moved), Linux's score
    /// is still below the learner's, and, after the first window, still
    /// rising by more than `margin`; at most [`LINUX_CATCH_UP_WINDOWS`]
    /// more. What each added window lost against the learner is charged
    /// to the budget. Once it ends, the probe's score is the best of its
    /// windows': what Linux reached once it had rebalanced (spinning
    /// threads' windows swing from one to the next).
    fn linux_catches_up(&mut self, score: Option<f64>) -> CatchUp {
        let previous = self.catch_up.take();
        self.probe_rebalanced = false;
        let (Arm::Os, Arm::Learn, Some(now), Some(learner)) = (self.window_arm, self.champion, score, self.before)
        else {
            return CatchUp::Ended(score);
        };
        let added = match previous {
            None if self.earlier.is_some_and(|earlier| learner < earlier * LEARNER_DROP) => 0,
            None => return CatchUp::Ended(score),
            Some((added, best)) => {
                if now <= best * (1.0 + self.cfg.margin) {
                    self.probe_rebalanced = true;
                    return CatchUp::Ended(Some(now.max(best)));
                }
                added
            }
        };
        self.probe_rebalanced = true;
        if added >= LINUX_CATCH_UP_WINDOWS || now * (1.0 + self.cfg.margin) >= learner || learner <= 0.0 {
            return CatchUp::Ended(score);
        }
        self.spent += (1.0 - now / learner).max(0.0);
        self.catch_up = Some((added + 1, now));
        CatchUp::GoesOn
    }

    /// The learner's probe in progress replays places that lost twice in a
    /// row (it moved no thread in them, nor so far in this one) and its
    /// periods after the first, [`HOPELESS_PERIODS`] of them (settling or
    /// not: far below Linux is far below), average below
    /// [`HOPELESS_SHARE`] of Linux's level: it ends there, scored on them
    /// where none of its settled periods came yet.
    /// A learner still moving threads is left its whole window (its threads
    /// settle beside their memory, and its score climbs within the window).
    /// Asked before the window's last period, which closes it anyway.
    fn probe_is_hopeless(&self) -> bool {
        self.window_arm == Arm::Learn
            && self.champion == Arm::Os
            && self.settled_losses >= 2
            && self.settled
            && self.early.1 >= HOPELESS_PERIODS
            && self.before.is_some_and(|before| {
                before > 0.0 && self.early.0 / f64::from(self.early.1) < HOPELESS_SHARE * self.linux_level(before)
            })
    }

    /// Where the threads ran at the end of the Linux window that just ended
    /// is Linux's own placement, to hand back at the start of its next
    /// window ([`HandBack`]): Linux is champion, or the window was a probe
    /// that had windows to rebalance after the load moved (it started from
    /// a placement made for the load before, and ends where Linux took the
    /// threads from there). An ordinary probe of Linux is not: it starts
    /// from Linux's last placement as champion, but the learner's window
    /// before it moved the threads and may have moved their memory.
    fn linux_window_is_its_own(&self) -> bool {
        self.champion == Arm::Os || self.probe_rebalanced
    }

    /// The period last passed to [`Guard::next`] ended a window Linux
    /// placed on its own ([`Guard::linux_window_is_its_own`]): where the
    /// threads ran then is Linux's placement, for [`HandBack::places`] to
    /// record. Cores asked for at the end of other windows of Linux's
    /// (ordinary probes while the learner leads) or for other reasons are
    /// not.
    pub fn ended_linux_s_own_window(&self) -> bool {
        self.linux_own_window_ended
    }

    /// The period just decided is the last one of a window Linux placed:
    /// where the threads ran at its end is Linux's placement to hand back.
    pub fn os_window_ending(&self) -> bool {
        self.cfg.enabled && self.window_arm == Arm::Os && self.window_period >= self.window_length()
    }

    /// Linux's share of the threads' memory on other nodes over its own
    /// windows' recent periods ([`REMOTE_LEVEL_PERIODS`]), `None` before
    /// one measured it.
    fn linux_remote_level(&self) -> Option<f64> {
        let (sum, weight) = self.linux_remote;
        (weight > 0.0).then(|| sum / weight)
    }

    /// Linux's distance from its memory as the locality rules take it: the
    /// larger of `near` (its windows next to a probe, or its last one) and
    /// its own windows' level ([`Guard::linux_remote_level`]), whichever
    /// is known.
    fn linux_remote_at_least(&self, near: Option<f64>) -> Option<f64> {
        match (near, self.linux_remote_level()) {
            (Some(near), Some(level)) => Some(near.max(level)),
            (near, level) => near.or(level),
        }
    }

    /// Periods per window: `window`, and at least one scored period.
    fn window_length(&self) -> u32 {
        self.cfg.window.max(self.cfg.settle.max(1) + 1)
    }

    /// Takes the progress measured over the period that just ended (under
    /// the arm returned by the previous call; `None` when nothing was
    /// measured) and the signs it showed of Linux's blind spots, and returns
    /// the arm for the next period.
    /// Disabled: always [`Arm::Learn`].
    pub fn next(&mut self, progress: Option<f64>, signs: Signs<Option<f64>>) -> Arm {
        if !self.cfg.enabled {
            self.stats.learn_periods += 1;
            return Arm::Learn;
        }
        // The period just measured is the window's `window_period`-th; the
        // first of a window is not scored, nor the first `settle` of a
        // window whose arm differs from the last one's.
        let unscored = if self.switched { self.cfg.settle.max(1) } else { 1 };
        let scored = self.window_period > unscored;
        let progress = progress.filter(|p| p.is_finite() && *p >= 0.0);
        if self.window_period == 1 {
            self.first = progress;
        }
        if self.window_period >= 2
            && let Some(progress) = progress
        {
            self.early.0 += progress;
            self.early.1 += 1;
            if self.window_period > self.cfg.settle.max(1) {
                self.late.0 += progress;
                self.late.1 += 1;
            }
        }
        if scored {
            let share = |value: Option<f64>| value.filter(|v| (0.0..=1.0).contains(v));
            if let Some(waiting) = share(signs.waiting) {
                self.signs_sum.waiting += waiting;
                self.signs_count.waiting += 1;
            }
            if let Some(queued) = share(signs.queued) {
                self.signs_sum.queued += queued;
                self.signs_count.queued += 1;
            }
            if let Some(remote) = share(signs.remote) {
                self.signs_sum.remote += remote;
                self.signs_count.remote += 1;
                if self.window_arm == Arm::Os && self.linux_window_is_its_own() {
                    let keep = 1.0 - 1.0 / REMOTE_LEVEL_PERIODS;
                    let (sum, weight) = self.linux_remote;
                    self.linux_remote = (sum * keep + remote, weight * keep + 1.0);
                }
            }
        }
        let window_ends = self.window_period >= self.window_length();
        let linux_window_ends = window_ends && self.window_arm == Arm::Os;
        if window_ends || self.probe_is_hopeless() {
            let arm = self.window_arm;
            self.close_window();
            self.switched = self.window_arm != arm;
        }
        self.linux_own_window_ended = linux_window_ends && self.linux_window_is_its_own();
        self.window_period += 1;
        match self.window_arm {
            Arm::Learn => self.stats.learn_periods += 1,
            Arm::Os => self.stats.os_periods += 1,
        }
        self.window_arm
    }

    /// Scores the window that just ended, settles a pending comparison, and
    /// picks the next window's arm.
    fn close_window(&mut self) {
        let mean = |sum: f64, count: u32| (count > 0).then(|| sum / f64::from(count));
        let (early, late) = (mean(self.early.0, self.early.1), mean(self.late.0, self.late.1));
        // A switched window is scored after its settle periods; a hopeless
        // probe may end before them: it is scored on the ones it had.
        let score = if self.switched { late.or(early) } else { early };
        let late_score = late.or(score);
        // Settled only if the policy said so in this window's periods.
        let settled = std::mem::take(&mut self.settled);
        self.early = (0.0, 0);
        self.late = (0.0, 0);
        let remote = mean(self.signs_sum.remote, self.signs_count.remote);
        if self.window_arm == Arm::Os {
            // A sign Linux's window did not measure keeps its last value.
            let (sum, count) = (self.signs_sum, self.signs_count);
            self.os_signs.waiting = mean(sum.waiting, count.waiting).or(self.os_signs.waiting);
            self.os_signs.queued = mean(sum.queued, count.queued).or(self.os_signs.queued);
            self.os_signs.remote = remote.or(self.os_signs.remote);
        }
        self.signs_sum = Signs::default();
        self.signs_count = Signs::default();
        self.window_period = 0;
        self.windows += 1;

        if self.window_arm != self.champion {
            // Where Linux's window showed a blind spot and the learner's
            // probe beat it by more than `decisive`, two signs agree: the
            // learner takes over without a Linux window after the probe.
            if self.champion == Arm::Os
                && self.linux_looks_blind()
                && let (Some(probe), Some(before)) = (score, self.before)
                && before > 0.0
                && let level = self.linux_level(before).max(self.earlier.unwrap_or(0.0))
                && probe > level * (1.0 + self.cfg.decisive)
            {
                self.learner_probes = (self.learner_probes.0 + 1, probe / level);
                self.champion = Arm::Learn;
                self.stats.switches += 1;
                self.ties = None;
                self.other = Some(before);
                self.replay = None;
                self.settled_losses = 0;
                self.before = Some(probe);
                self.remote_before = remote;
                self.lead_on_locality = false;
                self.earlier = None;
                self.since_probe = 0;
                return;
            }
            let CatchUp::Ended(score) = self.linux_catches_up(score) else {
                return;
            };
            // A probe ended: the next window is the champion's, to compare.
            self.probe = score;
            self.probe_remote = remote;
            self.probe_first = self.first.take();
            self.probe_settled = self.window_arm == Arm::Learn && settled;
            self.window_arm = self.champion;
            return;
        }
        // The learner, champion, dropped below LEARNER_DROP of its window
        // before in the window after a probe of Linux: the load moved under
        // the probe, which measured neither placement. Linux is probed again
        // at once, and may catch up ([`Guard::linux_catches_up`]).
        let probe = self.probe.take();
        let moved_under_probe = self.champion == Arm::Learn
            && probe.is_some()
            && matches!((self.before, score), (Some(before), Some(after)) if after < before * LEARNER_DROP);
        if moved_under_probe {
            self.confirm = true;
        }
        if let Some(probe) = probe.filter(|_| !moved_under_probe) {
            let blind_first = self.blind_retry == BlindRetry::FirstProbe;
            if blind_first {
                self.blind_retry = BlindRetry::NotYet;
            }
            // Linux's windows while it rebalances are not what it is worth
            // (each side of the probe: a load that moved right after it
            // must not halve Linux's mean).
            let level = |score: f64| match self.champion {
                Arm::Os => self.linux_level(score),
                Arm::Learn => score,
            };
            let base = match (self.before.map(level), score.map(level)) {
                (Some(a), Some(b)) => Some((a + b) / 2.0),
                (a, b) => a.or(b),
            };
            if let Some(base) = base.filter(|&b| b > 0.0) {
                if self.champion == Arm::Os {
                    self.learner_probes = (self.learner_probes.0 + 1, probe / base);
                }
                let won = probe > base * (1.0 + self.cfg.margin);
                let tied = !won && probe >= base * (1.0 - self.cfg.margin);
                // How much more of the threads' memory lay on other nodes
                // in Linux's windows than in the learner's (each side: the
                // mean of its windows that measured it).
                let (linux_remote, learner_remote) = {
                    let champion = match (self.remote_before, remote) {
                        (Some(a), Some(b)) => Some((a + b) / 2.0),
                        (a, b) => a.or(b),
                    };
                    let (linux, learner) = match self.champion {
                        Arm::Os => (champion, self.probe_remote),
                        Arm::Learn => (self.probe_remote, champion),
                    };
                    // Linux's windows next to a probe start from where the
                    // learner left the threads and their memory; where its
                    // own windows have run farther on the whole, that counts.
                    (self.linux_remote_at_least(linux), learner)
                };
                let linux_farther = matches!((linux_remote, learner_remote), (Some(linux), Some(learner))
                    if self.cfg.remote_gap < 1.0 && linux - learner >= self.cfg.remote_gap);
                // A tie where Linux's threads ran farther from their memory
                // goes to the learner: run time does not show memory stalls.
                let won_on_locality = self.champion == Arm::Os && tied && linux_farther;
                // Linux, probed right after the learner took the lead (to
                // confirm it), ties it (within `margin`): the lead is not
                // confirmed, Linux leads again. Kept on a tie, a learner
                // that won on one window where Linux dipped had Linux probed
                // after every window in which Linux's last score came out
                // above its own, half of them on noise (sim, 2x14
                // `independent` C.1, a program reporting nothing: 1.031x
                // Linux).
                let linux_ties =
                    self.champion == Arm::Learn && self.confirming && tied && !(self.lead_on_locality && linux_farther);
                if won || linux_ties || won_on_locality {
                    self.champion = self.champion.other();
                    self.stats.switches += 1;
                    self.ties = None;
                    self.other = Some(base);
                    self.replay = None;
                    self.settled_losses = 0;
                    // A lucky window must not decide for long: the old
                    // champion is probed again at once, unless the win was
                    // decisive (where Linux is blind, the learner's probe
                    // more than doubles the progress, and every probe of
                    // Linux costs most of a window) or a tie gave Linux
                    // the lead back.
                    self.confirm = (won && probe < base * (1.0 + self.cfg.decisive)) || won_on_locality;
                    self.lead_on_locality = won_on_locality;
                    self.since_probe = 0;
                    self.before = Some(probe);
                    self.remote_before = self.probe_remote;
                    self.earlier = None;
                    self.window_arm = self.champion;
                    return;
                }
                // A tie counts only where the learner moved no thread in
                // its window (it tried what it has learned, not something
                // new: one still drawing its places learns only in its
                // probes, and they must go on).
                if self.champion == Arm::Learn {
                    // Linux, probed, lost or tied while its threads ran
                    // farther from their memory: the probes back off as
                    // ties do (what they lose shows in no score).
                    self.ties = linux_farther.then(|| (self.ties.map_or(0, |(count, _)| count) + 1, base));
                } else if probe < base * (1.0 - self.cfg.margin) {
                    self.ties = None;
                } else if self.probe_settled {
                    let count = self.ties.map_or(0, |(count, _)| count);
                    self.ties = Some((count + 1, base));
                }
                // A hold that starts here (a tie above, or a second loss
                // below) ends once Linux's threads run farther from their
                // memory than the learner's did in this probe.
                self.hold_remote = match self.champion {
                    Arm::Os if self.cfg.remote_gap < 1.0 && !linux_farther => learner_remote,
                    _ => None,
                };
                self.spent += (1.0 - probe / base).max(0.0);
                // What the probe cost the champion's own window after it
                // (threads handed back, caches and queues refilled); a
                // champion that fell below the probe changed by itself (the
                // load moved, its placement went bad), which is not the
                // probe's doing.
                if let (Some(before), Some(after)) = (self.before, score)
                    && before > 0.0
                    && after >= probe
                {
                    self.spent += (1.0 - after / before).max(0.0);
                    // Each charge counts the window whole at its score; the
                    // first periods of a learner's probe and of Linux's
                    // window after it, which no score counts (the threads
                    // move twice), may have lost more: charged, never
                    // credited (the budget errs on Linux's side; credited,
                    // 4x8 `barrier` D in the simulator went from 0.68 to
                    // 0.72 of Linux). Not for probes of Linux, the safe side:
                    // a leading learner must not hand back later.
                    if self.champion == Arm::Os {
                        let periods = f64::from(self.window_length());
                        if let Some(first) = self.probe_first {
                            self.spent += ((probe - first) / base).max(0.0) / periods;
                        }
                        if let Some(first) = self.first {
                            self.spent += ((after - first) / before).max(0.0) / periods;
                        }
                    }
                }
                self.other = Some(probe);
                if blind_first && self.cfg.blind_retry_after > 0 {
                    self.blind_retry = BlindRetry::Pending;
                }
                // Held after the second such loss in a row: one window can
                // mislead (a program starting up, a passing load), and the
                // same places may win the next time.
                if std::mem::take(&mut self.probe_settled) {
                    self.settled_losses += 1;
                    if self.settled_losses >= 2 && self.cfg.replay_change > 0.0 {
                        self.replay = Some(base);
                    }
                } else {
                    self.settled_losses = 0;
                }
            }
        }
        if let Some(score) = score {
            self.earlier = self.before;
            self.before = late_score;
            self.remote_before = remote.or(self.remote_before);
            if self.champion == Arm::Os {
                if self.linux_recent.len() == LINUX_LEVEL_WINDOWS {
                    self.linux_recent.pop_front();
                }
                self.linux_recent.push_back(score);
                self.linux_calm = if self.linux_level(score) == score {
                    self.linux_calm.saturating_add(1)
                } else {
                    0
                };
            }
        }
        self.since_probe += 1;
        let expected_loss = match (self.other, self.before) {
            (Some(other), Some(current)) if current > 0.0 => {
                let ages = match self.cfg.forecast_ages {
                    ForecastAges::Always => true,
                    ForecastAges::WhileLinuxBlind => self.champion == Arm::Os && self.linux_looks_blind(),
                };
                let age = match self.cfg.forecast_halflife {
                    halflife if halflife > 0 && ages => 0.5f64.powf(f64::from(self.since_probe) / f64::from(halflife)),
                    _ => 1.0,
                };
                (1.0 - other / current).max(0.0) * age
            }
            // Never measured: Linux's threads spinning in waiting code, or
            // queued for a CPU while others had the program's CPUs, say a
            // pin may win much; otherwise assume it loses.
            _ if self.champion == Arm::Os && self.linux_looks_blind() => 0.0,
            _ => self.cfg.assumed_loss,
        };

        // The learner's last two probes lost without it moving a thread:
        // the same probe would lose the same way while Linux's score stays
        // where it was.
        if let (Some(lost_to), Some(current)) = (self.replay, self.before)
            && (current - lost_to).abs() > lost_to.abs() * self.cfg.replay_change
        {
            self.replay = None;
        }
        // Linux's threads now run farther from their memory than the
        // learner's did in the probe that started the hold: that probe,
        // tying again, would go to the learner (run time does not show
        // memory stalls; sim, 4x8 `pipeline` C.1: Linux's rotations
        // across nodes left 0.2 of the memory remote, the learner's
        // held placement none).
        if self.champion == Arm::Os
            && let Some(learner) = self.hold_remote
            && let Some(linux) = self.linux_remote_at_least(self.os_signs.remote)
            && linux - learner >= self.cfg.remote_gap
        {
            self.replay = None;
            self.ties = None;
            self.hold_remote = None;
        }
        let replays = self.champion == Arm::Os && self.replay.is_some();
        // Ties in a row: Linux keeps the threads for 2^ties windows, unless
        // its score moved (the load changed).
        if let (Some((_, tied_at)), Some(current)) = (self.ties, self.before)
            && (current - tied_at).abs() > tied_at.abs() * self.cfg.replay_change
        {
            self.ties = None;
        }
        let tie_wait = match self.ties {
            Some((count, _)) if self.cfg.tie_backoff => (1u32 << count.min(16)).min(self.cfg.max_gap.max(1)),
            _ => 0,
        };
        // (With a margin for rounding: 0.015 x 15 falls just short of 0.225
        // in floating point, which put the first probe a window late.)
        let budget = self.cfg.probe_cost * (self.windows + 1) as f64 + 1e-9;
        // No saving up for a burst: what the run did not spend counts up to
        // `savings`, so probes that keep losing come at the budget's pace,
        // not one after each champion window (a burst of them after the
        // load moved kept Linux's balancer from settling), and a probe
        // expected to lose more than `savings` comes only every `max_gap`
        // windows.
        self.spent = self.spent.max(budget - self.cfg.savings.max(self.cfg.probe_cost));
        // The learner leads but its last window fell below Linux's last
        // score: Linux, the safe side, is probed at once even where earlier
        // probes overspent the budget (a probe that met the load moving
        // can charge a whole window), or the run would stay with a
        // learner gone wrong for up to `max_gap` windows.
        let linux_overdue = self.champion == Arm::Learn
            && matches!((self.other, self.before), (Some(os), Some(current)) if os > current * (1.0 + self.cfg.margin));
        // Linux rebalances after a load moved (a score of its last
        // CALM_WINDOWS fell below half its median): a probe now would hand
        // the threads back to where they ran before the move and be scored
        // in the turmoil. At most about `LINUX_LEVEL_WINDOWS / 2` windows:
        // a Linux blind for good drags its median down by then.
        let rebalancing = self.champion == Arm::Os && self.linux_calm < CALM_WINDOWS;
        let affordable = !replays
            && !rebalancing
            && (self.since_probe >= tie_wait || linux_overdue)
            && (linux_overdue || self.spent + expected_loss <= budget);
        // The learner's first probe, made at once where Linux looked blind,
        // lost: once, while Linux still looks blind, it is tried again
        // outside the budget (the first may have met a phase the program
        // has left); not while Linux's score is taken for its median (it is
        // rebalancing: a probe would be compared with that median and
        // lose), and not at all once Linux no longer looks blind.
        let mut retry_now = false;
        if self.blind_retry == BlindRetry::Pending && self.since_probe >= self.cfg.blind_retry_after {
            if self.champion != Arm::Os || !self.linux_looks_blind() {
                self.blind_retry = BlindRetry::Spent;
            } else if !rebalancing {
                retry_now = true;
            }
        }
        let overdue = !rebalancing && self.since_probe >= self.cfg.max_gap.max(1);
        let confirming = std::mem::take(&mut self.confirm);
        if confirming || affordable || retry_now || overdue {
            self.confirming = confirming;
            self.blind_retry = match self.blind_retry {
                // The retry, or a probe made for another reason before it:
                // either way the learner has been measured again.
                BlindRetry::Pending | BlindRetry::Spent => BlindRetry::Spent,
                // Never measured, probed at once on Linux's blind spot.
                _ if self.champion == Arm::Os && self.other.is_none() && self.linux_looks_blind() => {
                    BlindRetry::FirstProbe
                }
                _ => BlindRetry::NotYet,
            };
            self.since_probe = 0;
            self.window_arm = self.champion.other();
        }
    }
}

/// Linux's placement at the end of its last window, handed back when its
/// next window starts (see the module doc).
#[derive(Clone, Debug, Default)]
pub struct HandBack {
    /// Core place of every thread that was running at the end of Linux's
    /// last window and whose core the target knew.
    cores: BTreeMap<ThreadKey, usize>,
    /// The arm of the period decided last.
    last: Option<Arm>,
}

impl HandBack {
    /// The core place `key` ran on at the end of Linux's last window, if
    /// known.
    pub fn core_of(&self, key: ThreadKey) -> Option<usize> {
        self.cores.get(&key).copied()
    }

    /// Records the cores in `input` where they are Linux's own placement
    /// (`record`: the period ended a window Linux placed on its own,
    /// [`Guard::ended_linux_s_own_window`] after [`Guard::next`]), then returns the
    /// places for the period `arm` runs:
    /// `None` for the learner's periods; for a Linux period, `whole` for
    /// every thread, except in the first period after a learner's period,
    /// where each thread goes back to the core it had under Linux (`whole`
    /// if it had none: it started since).
    ///
    /// Linux's ordinary probes, while the learner is champion, are not
    /// recorded: each follows a window of the learner's, so where it ends
    /// is partly the learner's, and a placement handed back from one probe
    /// to the next drifts further from Linux's own with every probe. Each
    /// probe starts from where Linux last had the threads as champion
    /// instead.
    pub fn places(&mut self, input: &PeriodInput<'_>, arm: Arm, whole: usize, record: bool) -> Option<Vec<usize>> {
        if let Some(cores) = input.cores.filter(|_| self.last == Some(Arm::Os) && record) {
            self.cores = input
                .threads
                .iter()
                .zip(cores)
                .filter_map(|(thread, core)| Some((thread.key, (*core)?)))
                .collect();
        }
        let restore = self.last == Some(Arm::Learn);
        self.last = Some(arm);
        (arm == Arm::Os).then(|| {
            input
                .threads
                .iter()
                .map(|thread| {
                    restore
                        .then(|| self.cores.get(&thread.key).copied())
                        .flatten()
                        .unwrap_or(whole)
                })
                .collect()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Short windows, the learner first, and no wait before the first
    /// probe, so the comparisons start at once.
    fn cfg() -> GuardConfig {
        GuardConfig {
            window: 4,
            first: Arm::Learn,
            assumed_loss: 0.0,
            probe_cost: 0.02,
            ..GuardConfig::default()
        }
    }

    #[test]
    fn by_default_linux_runs_until_the_run_can_afford_a_probe() {
        // Nothing measured yet: a probe is assumed to lose 22.5%, which
        // 1.5% of the run pays for after 15 windows (90 periods of 6).
        let mut guard = Guard::new(GuardConfig::default());
        let arms = run(
            &mut guard,
            84 + 6 + 6,
            |arm, _| if arm == Arm::Learn { 2.0 } else { 1.0 },
        );
        assert!(arms[..84].iter().all(|&a| a == Arm::Os), "{arms:?}");
        assert!(arms[84..90].iter().all(|&a| a == Arm::Learn), "{arms:?}");
        guard.next(Some(1.0), Signs::default());
        assert_eq!(guard.champion(), Arm::Learn, "the learner's probe won");
    }

    #[test]
    fn with_linux_first_the_learner_must_measure_better() {
        let linux_first = GuardConfig {
            first: Arm::Os,
            ..cfg()
        };
        let mut guard = Guard::new(linux_first);
        let arms = run(&mut guard, 12, |arm, _| if arm == Arm::Learn { 2.0 } else { 1.0 });
        assert_eq!(&arms[..12], &[[Arm::Os; 4], [Arm::Learn; 4], [Arm::Os; 4]].concat());
        guard.next(Some(1.0), Signs::default());
        assert_eq!(guard.champion(), Arm::Learn, "the learner's probe won");
        let mut tie = Guard::new(linux_first);
        run(&mut tie, 200, |_, _| 1.0);
        assert_eq!(tie.champion(), Arm::Os, "a tie leaves Linux in charge");
    }

    #[test]
    fn windows_are_scored_after_their_settle_periods() {
        // Measured on the real machine (docs/bench.md, "What a window
        // carries over"): a probe of the learner climbs to its level over
        // its first periods, and Linux's window after it starts from what
        // the probe left. Here the learner's placement is 10% better once
        // settled, its first two periods half as good, and Linux's first
        // two after it as good as the learner's.
        let champion_and_learner_periods = |settle: u32| {
            let mut guard = Guard::new(GuardConfig {
                window: 6,
                settle,
                assumed_loss: 0.0,
                ..GuardConfig::default()
            });
            let rate = |arm: Arm, k: u32| match arm {
                Arm::Learn if k <= 2 => 0.5,
                Arm::Learn => 1.1,
                Arm::Os if k <= 2 => 1.1,
                Arm::Os => 1.0,
            };
            // The arm of the last period and how many periods it has run.
            let mut last: Option<(Arm, u32)> = None;
            let mut learner = 0;
            for _ in 0..1200 {
                let arm = guard.next(last.map(|(arm, k)| rate(arm, k)), Signs::default());
                learner += usize::from(arm == Arm::Learn);
                last = Some(match last {
                    Some((previous, k)) if previous == arm => (arm, k + 1),
                    _ => (arm, 1),
                });
            }
            (guard.champion(), learner)
        };
        let (champion, learner) = champion_and_learner_periods(1);
        assert_eq!(champion, Arm::Os, "the probes' first periods hide the learner's lead");
        // Its probes lose by little, so they come often.
        assert!(learner < 600, "{learner} of 1200 periods the learner's");
        let (champion, learner) = champion_and_learner_periods(3);
        assert_eq!(champion, Arm::Learn, "scored once settled, the learner leads");
        assert!(learner > 900, "{learner} of 1200 periods the learner's");
    }

    #[test]
    fn a_progress_cycle_in_step_with_the_windows_favours_neither_arm() {
        // Both arms place equally well, but the program's progress cycles
        // every 3 periods (a slow phase in each, as the simulator's 100 ms
        // barrier rounds do at two thirds of a core's speed), in step with
        // 6-period windows. Scoring a probe on periods 4-6 (one whole cycle)
        // against Linux's windows in a row on periods 2-6 (two slow periods
        // of five or one, by the phase) would make one side look 10% better.
        for settle in [1, 3] {
            for phase in 0..3 {
                let mut guard = Guard::new(GuardConfig {
                    window: 6,
                    settle,
                    assumed_loss: 0.0,
                    ..GuardConfig::default()
                });
                let rate = |t: u32| if (t + phase) % 3 == 2 { 0.4 } else { 1.0 };
                for t in 0..1200 {
                    guard.next((t > 0).then(|| rate(t)), Signs::default());
                    // The learner keeps its places: its ties hold its next
                    // probes back, so Linux's windows come in a row.
                    guard.placed(&ONE_THREAD, &[0]);
                }
                assert_eq!(guard.champion(), Arm::Os, "settle {settle}, phase {phase}");
                assert_eq!(guard.stats().switches, 0, "settle {settle}, phase {phase}");
            }
        }
    }

    #[test]
    fn a_probe_pays_for_what_it_cost_linux_s_window_after_it() {
        // The learner's probes lose (0.85 against 1.0). In one run Linux's
        // window right after each probe comes out 10% slower (threads handed
        // back, queues refilled): that cost must make the probes rarer, not
        // more frequent (compared with the mean of the windows around it,
        // the dip alone makes the probe look cheaper).
        let linux_first = GuardConfig {
            first: Arm::Os,
            // Savings for a probe losing 15% or more.
            savings: 0.3,
            ..cfg()
        };
        let learner_periods = |dip: f64| {
            let mut guard = Guard::new(linux_first);
            let mut last: Option<Arm> = None;
            let mut after_probe = false;
            let mut learner = 0;
            for _ in 0..4000 {
                let progress = last.map(|arm| match arm {
                    Arm::Learn => 0.85,
                    Arm::Os if after_probe => 1.0 - dip,
                    Arm::Os => 1.0,
                });
                let arm = guard.next(progress, Signs::default());
                if arm == Arm::Learn {
                    learner += 1;
                    after_probe = true;
                } else if last == Some(Arm::Os) && guard.window_period == 1 {
                    // A new Linux window started after a whole Linux one.
                    after_probe = false;
                }
                last = Some(arm);
            }
            assert_eq!(guard.champion(), Arm::Os);
            learner
        };
        let (calm, disrupted) = (learner_periods(0.0), learner_periods(0.1));
        assert!(calm > 0, "the learner is probed now and then");
        assert!(
            disrupted < calm,
            "probes disrupting Linux's next window: {disrupted} learner periods, without: {calm}"
        );
    }

    /// Runs `periods` periods where the arm of the period before call
    /// `period` measured `measure(arm, period)` (its progress and signs; the
    /// first call measures nothing), and returns the arms in order.
    fn run_measured(
        guard: &mut Guard,
        periods: usize,
        measure: impl Fn(Arm, usize) -> (f64, Signs<Option<f64>>),
    ) -> Vec<Arm> {
        let mut arms = Vec::new();
        let mut last: Option<Arm> = None;
        for period in 0..periods {
            let (progress, signs) = match last.map(|arm| measure(arm, period)) {
                Some((progress, signs)) => (Some(progress), signs),
                None => (None, Signs::default()),
            };
            let arm = guard.next(progress, signs);
            arms.push(arm);
            last = Some(arm);
        }
        arms
    }

    /// A guard with windows of 4 periods, run for `periods` periods where
    /// each arm yields `(progress, waiting share)` = `measure(arm, window)`
    /// (the period measured is the one before the call, in window
    /// (period - 1) / 4); returns the guard and the arms in order.
    fn run_in_windows_of_4(periods: usize, measure: impl Fn(Arm, usize) -> (f64, f64)) -> (Guard, Vec<Arm>) {
        let mut guard = Guard::new(GuardConfig {
            window: 4,
            ..GuardConfig::default()
        });
        let arms = run_measured(&mut guard, periods, |arm, period| {
            let (progress, waiting) = measure(arm, (period - 1) / 4);
            let signs = Signs {
                waiting: Some(waiting),
                queued: None,
                remote: None,
            };
            (progress, signs)
        });
        (guard, arms)
    }

    /// Runs `periods` periods where each arm yields the progress `rate(arm,
    /// period)` and no signs, and returns the arms in order.
    fn run(guard: &mut Guard, periods: usize, rate: impl Fn(Arm, usize) -> f64) -> Vec<Arm> {
        run_measured(guard, periods, |arm, period| (rate(arm, period), Signs::default()))
    }

    /// Progress per period: the learner's placement twice as good as
    /// Linux's until period `drop_at`, then half as good.
    fn learner_twice_as_good_until(drop_at: usize) -> impl Fn(Arm, usize) -> f64 {
        move |arm, period| match arm {
            Arm::Os => 1.0,
            Arm::Learn if period < drop_at => 2.0,
            Arm::Learn => 0.5,
        }
    }

    /// Linux first, both arms at 1.0 (a tie), Linux's threads with
    /// `linux_remote` of their memory on other nodes and the learner's
    /// with none: the arms of `periods` periods.
    fn tie_with_remote(linux_remote: Option<f64>, periods: usize) -> (Guard, Vec<Arm>) {
        let mut guard = Guard::new(GuardConfig {
            first: Arm::Os,
            ..cfg()
        });
        let arms = run_measured(&mut guard, periods, |arm, _| {
            let remote = match arm {
                Arm::Os => linux_remote,
                Arm::Learn => linux_remote.map(|_| 0.0),
            };
            (
                1.0,
                Signs {
                    remote,
                    ..Signs::default()
                },
            )
        });
        (guard, arms)
    }

    #[test]
    fn linux_s_distance_from_its_memory_is_what_its_own_long_windows_showed() {
        // Linux's balancer carries its threads away from their memory as its
        // windows run on: near it (0.02 on other nodes) in its first 8
        // periods in a row, far (0.3) after; the learner's threads always
        // near, and every window ties. Linux's probe to confirm the
        // learner's lead is 4 periods long and looks as near as the
        // learner: judged by it alone, the tie gave Linux the lead back
        // after every such probe (Linux had half the run). Judged by
        // what Linux's own windows showed, the learner keeps the lead.
        let in_a_row = std::cell::Cell::new((Arm::Learn, 0usize));
        let mut guard = Guard::new(GuardConfig {
            first: Arm::Os,
            assumed_loss: GuardConfig::default().assumed_loss,
            ..cfg()
        });
        let arms = run_measured(&mut guard, 800, |arm, _| {
            let (last, count) = in_a_row.get();
            let count = if arm == last { count + 1 } else { 1 };
            in_a_row.set((arm, count));
            let remote = match arm {
                Arm::Os if count > 8 => 0.3,
                Arm::Os => 0.02,
                Arm::Learn => 0.0,
            };
            (
                1.0,
                Signs {
                    remote: Some(remote),
                    ..Signs::default()
                },
            )
        });
        let os_share = arms.iter().filter(|&&a| a == Arm::Os).count() as f64 / arms.len() as f64;
        assert!(os_share < 0.15, "{os_share}");
        assert_eq!(guard.champion(), Arm::Learn);
    }

    /// Default settings, every window tying (1.0) and the learner keeping
    /// its places; the learner's threads near their memory (0.0 on other
    /// nodes), Linux's at 0.02 until period `drift_at` and 0.2 after (its
    /// balancer carried them across nodes). Returns the first period the
    /// learner leads in, if it does.
    fn learner_leads_after_linux_drifts_from_its_memory(drift_at: usize) -> Option<usize> {
        let mut guard = Guard::new(GuardConfig::default());
        let mut last: Option<Arm> = None;
        for period in 0..3000 {
            let remote = match last {
                Some(Arm::Os) if period >= drift_at => 0.2,
                Some(Arm::Os) => 0.02,
                _ => 0.0,
            };
            let signs = Signs {
                remote: Some(remote),
                ..Signs::default()
            };
            last = Some(guard.next(last.map(|_| 1.0), signs));
            guard.placed(&ONE_THREAD, &[0]);
            if guard.champion() == Arm::Learn {
                return Some(period);
            }
        }
        None
    }

    #[test]
    fn a_held_probe_comes_once_linux_s_threads_run_farther_from_their_memory_than_the_learner_s() {
        // The learner's probes tie and Linux's threads run as near their
        // memory: each tie doubles the wait for the next probe (2, 4, 8,
        // ... windows). Linux's threads then drift 0.2 from their memory
        // (sim, 4x8 `pipeline` C.1: the balancer's rotations across nodes):
        // the held probe comes at once and, tying again, goes to the
        // learner, where before it waited out the back-off.
        assert_eq!(learner_leads_after_linux_drifts_from_its_memory(usize::MAX), None);
        let drift_at = 600;
        let led = learner_leads_after_linux_drifts_from_its_memory(drift_at).expect("the learner takes the lead");
        assert!(led > drift_at, "{led}");
        assert!(
            led < drift_at + 4 * 6,
            "the learner leads from period {led}, Linux drifted at {drift_at}"
        );
    }

    #[test]
    fn a_tie_goes_to_the_learner_where_linux_s_threads_ran_farther_from_their_memory() {
        let os_share = |arms: &[Arm]| arms.iter().filter(|&&a| a == Arm::Os).count() as f64 / arms.len() as f64;
        // Nothing known of memory, or Linux's threads as near it as the
        // learner's: a tie leaves Linux in charge, probed now and then.
        for linux_remote in [None, Some(0.03)] {
            let (guard, arms) = tie_with_remote(linux_remote, 800);
            assert_eq!(guard.champion(), Arm::Os, "{linux_remote:?}");
            assert!(os_share(&arms) >= 0.5, "{linux_remote:?}: {}", os_share(&arms));
        }
        // Linux's threads farther by more than `remote_gap`: the learner
        // leads after its first probe, Linux's probe to confirm it ties and
        // does not take it back, and Linux's later probes, which lose what
        // no score shows, back off: the learner has nearly all the run.
        let (guard, arms) = tie_with_remote(Some(0.3), 800);
        assert_eq!(guard.champion(), Arm::Learn);
        assert_eq!(
            &arms[..16],
            &[[Arm::Os; 4], [Arm::Learn; 4], [Arm::Os; 4], [Arm::Learn; 4]].concat()
        );
        assert!(os_share(&arms) < 0.1, "{}", os_share(&arms));
        // Off: the same as not knowing.
        let mut guard = Guard::new(GuardConfig {
            first: Arm::Os,
            remote_gap: 1.0,
            ..cfg()
        });
        run_measured(&mut guard, 800, |arm, _| {
            let remote = Some(if arm == Arm::Os { 0.3 } else { 0.0 });
            (
                1.0,
                Signs {
                    remote,
                    ..Signs::default()
                },
            )
        });
        assert_eq!(guard.champion(), Arm::Os);
    }

    #[test]
    fn linux_measured_better_takes_the_lead_back_however_far_its_threads_ran_from_their_memory() {
        // Linux's threads farther from their memory, but its progress 10%
        // ahead from window 40 on (the load changed): its next probe wins.
        let mut guard = Guard::new(GuardConfig {
            first: Arm::Os,
            ..cfg()
        });
        run_measured(&mut guard, 800, |arm, period| {
            let (progress, remote) = match arm {
                Arm::Os if period > 160 => (1.1, 0.3),
                Arm::Os => (1.0, 0.3),
                Arm::Learn => (1.0, 0.0),
            };
            (
                progress,
                Signs {
                    remote: Some(remote),
                    ..Signs::default()
                },
            )
        });
        assert_eq!(guard.champion(), Arm::Os);
    }

    /// How many periods after `from` Linux first placed the threads.
    fn periods_until_linux(arms: &[Arm], from: usize) -> usize {
        arms[from..].iter().position(|&a| a == Arm::Os).expect("Linux probed")
    }

    /// Periods with Linux's threads spending `waiting` of their CPU time in
    /// waiting code, the learner's twice as fast as Linux's.
    fn run_waiting(guard: &mut Guard, periods: usize, waiting: f64) -> Vec<Arm> {
        let signs = Signs {
            waiting: Some(waiting),
            queued: None,
            remote: None,
        };
        run_signs(guard, periods, signs)
    }

    /// Periods where Linux's windows show `os_signs` (the learner's show
    /// little of either), the learner's twice as fast as Linux's.
    fn run_signs(guard: &mut Guard, periods: usize, os_signs: Signs<Option<f64>>) -> Vec<Arm> {
        run_measured(guard, periods, |arm, _| match arm {
            Arm::Os => (1.0, os_signs),
            Arm::Learn => (
                2.0,
                Signs {
                    waiting: os_signs.waiting.map(|_| 0.05),
                    queued: os_signs.queued.map(|_| 0.05),
                    remote: None,
                },
            ),
        })
    }

    /// Linux at 1.0 with its threads queued (60% of their runnable time in
    /// its first window, `queued_later` in the ones after the learner's
    /// first probe), that probe (at once) at 0.8, the program's phase then
    /// changing so that the learner's places make `learner_later`: which
    /// windows were the learner's, of the first 64.
    fn learner_windows_after_a_probe_in_another_phase(
        cfg: GuardConfig,
        queued_later: f64,
        learner_later: f64,
    ) -> Vec<bool> {
        let mut guard = Guard::new(cfg);
        let arms = run_measured(&mut guard, 6 * 64, |arm, period| match arm {
            Arm::Os => (
                1.0,
                Signs {
                    waiting: None,
                    queued: Some(if period < 6 { 0.6 } else { queued_later }),
                    remote: None,
                },
            ),
            Arm::Learn => (
                if period < 13 { 0.8 } else { learner_later },
                Signs {
                    waiting: None,
                    queued: Some(0.05),
                    remote: None,
                },
            ),
        });
        let windows: Vec<bool> = arms.chunks(6).map(|w| w.contains(&Arm::Learn)).collect();
        assert!(windows[1], "the first probe comes at once: {windows:?}");
        windows
    }

    /// The window of the learner's second probe in that run, where its
    /// places make 1.3 after the first phase.
    fn second_probe_after_a_probe_in_another_phase(cfg: GuardConfig, queued_later: f64) -> usize {
        let windows = learner_windows_after_a_probe_in_another_phase(cfg, queued_later, 1.3);
        match windows.iter().skip(2).position(|&learner| learner) {
            Some(index) => index + 2,
            None => panic!("no second probe: {windows:?}"),
        }
    }

    #[test]
    fn a_forecast_that_ages_lets_the_learner_back_sooner_after_a_probe_in_another_phase() {
        use ForecastAges::{Always, WhileLinuxBlind};
        let cfg = |forecast_halflife, forecast_ages| GuardConfig {
            forecast_halflife,
            forecast_ages,
            blind_retry_after: 0,
            ..GuardConfig::default()
        };
        // Charged 20% for its first probe and forecast to lose 20% again,
        // the learner waits until the budget (1.5% a window) covers both:
        // window 26 (7.8 s). With the forecast halved every 8 windows the
        // budget covers the spent 20% and what is left of the forecast by
        // window 17.
        assert_eq!(second_probe_after_a_probe_in_another_phase(cfg(0, Always), 0.6), 26);
        assert_eq!(second_probe_after_a_probe_in_another_phase(cfg(8, Always), 0.6), 17);
        assert_eq!(
            second_probe_after_a_probe_in_another_phase(cfg(8, WhileLinuxBlind), 0.6),
            17
        );
        // Linux's threads no longer queued: nothing says the loss was the
        // phase's rather than the pin's, so the forecast holds unless it
        // ages always.
        assert_eq!(
            second_probe_after_a_probe_in_another_phase(cfg(8, WhileLinuxBlind), 0.1),
            26
        );
        assert_eq!(second_probe_after_a_probe_in_another_phase(cfg(8, Always), 0.1), 17);
        assert_eq!(
            second_probe_after_a_probe_in_another_phase(cfg(0, WhileLinuxBlind), 0.6),
            26
        );
    }

    #[test]
    fn a_lost_first_probe_on_linux_s_blind_spot_is_retried_once_while_linux_still_looks_blind() {
        let retry = |after| GuardConfig {
            blind_retry_after: after,
            ..GuardConfig::default()
        };
        // Lost at window 1, Linux's windows 2-5 still blind: tried again at
        // window 6, outside the budget, and it wins.
        assert_eq!(second_probe_after_a_probe_in_another_phase(retry(4), 0.6), 6);
        assert_eq!(second_probe_after_a_probe_in_another_phase(retry(2), 0.6), 4);
        // It won by less than `decisive`: Linux is probed again at once,
        // loses, and the learner keeps the threads but for Linux's probes.
        let windows = learner_windows_after_a_probe_in_another_phase(retry(4), 0.6, 1.3);
        assert!(windows[10..].iter().all(|&learner| learner), "{windows:?}");
        // Linux no longer blind: no retry, the budget's pace.
        assert_eq!(second_probe_after_a_probe_in_another_phase(retry(4), 0.1), 26);
        // Off: the budget's pace.
        assert_eq!(second_probe_after_a_probe_in_another_phase(retry(0), 0.6), 26);
        // Where the learner keeps losing, the retry comes once: then the
        // budget's pace (spent: two losses of 20%).
        let windows = learner_windows_after_a_probe_in_another_phase(retry(4), 0.6, 0.8);
        let probes: Vec<usize> = (0..windows.len()).filter(|&w| windows[w]).collect();
        assert_eq!(&probes[..2], &[1, 6], "{windows:?}");
        assert!(probes[2] > 6 + 20, "{probes:?}");
    }

    #[test]
    fn where_linux_queues_threads_beside_other_programs_the_learner_is_probed_at_once() {
        let queued = |share: f64| Signs {
            waiting: None,
            queued: Some(share),
            remote: None,
        };
        let mut guard = Guard::new(GuardConfig::default());
        let arms = run_signs(&mut guard, 12, queued(0.6));
        assert_eq!(&arms[..12], &[[Arm::Os; 6], [Arm::Learn; 6]].concat());
        // Below blind_queued (0.3) the learner waits for the budget.
        let mut guard = Guard::new(GuardConfig::default());
        let arms = run_signs(&mut guard, 90, queued(0.2));
        assert!(arms[..84].iter().all(|&a| a == Arm::Os), "{arms:?}");
        assert!(arms[84..90].iter().all(|&a| a == Arm::Learn));
        // blind_queued = 1 turns it off.
        let mut guard = Guard::new(GuardConfig {
            blind_queued: 1.0,
            ..GuardConfig::default()
        });
        let arms = run_signs(&mut guard, 84, queued(1.0));
        assert!(arms.iter().all(|&a| a == Arm::Os));
    }

    #[test]
    fn where_linux_leaves_threads_spinning_the_learner_is_probed_at_once() {
        // Default settings: one window of Linux with 60% waiting, then the
        // learner's probe, which wins.
        let mut guard = Guard::new(GuardConfig::default());
        let arms = run_waiting(&mut guard, 18, 0.6);
        // The probe doubled the progress of a window that showed the blind
        // spot: the learner takes over without a Linux window after it.
        assert_eq!(&arms[..18], &[[Arm::Os; 6], [Arm::Learn; 6], [Arm::Learn; 6]].concat());
        assert_eq!(guard.champion(), Arm::Learn);
        // A win under `decisive` is compared with a Linux window as usual.
        let mut guard = Guard::new(GuardConfig {
            decisive: 1.5,
            ..GuardConfig::default()
        });
        let arms = run_waiting(&mut guard, 18, 0.6);
        assert_eq!(&arms[..18], &[[Arm::Os; 6], [Arm::Learn; 6], [Arm::Os; 6]].concat());
        // Below the threshold the learner waits for the budget, as without samples.
        let mut guard = Guard::new(GuardConfig::default());
        let arms = run_waiting(&mut guard, 90, 0.2);
        assert!(arms[..84].iter().all(|&a| a == Arm::Os), "{arms:?}");
        assert!(arms[84..90].iter().all(|&a| a == Arm::Learn));
        // blind_waiting = 1 turns it off.
        let mut guard = Guard::new(GuardConfig {
            blind_waiting: 1.0,
            ..GuardConfig::default()
        });
        let arms = run_waiting(&mut guard, 84, 1.0);
        assert!(arms.iter().all(|&a| a == Arm::Os));
    }

    #[test]
    fn one_bad_linux_window_is_not_a_blind_spot() {
        // Linux's first window makes 10 units of work per second; its
        // second drops to `dip` and shows waiting threads (a load moved,
        // Linux is rebalancing); the learner's probe then makes 3. Against
        // a lasting blind spot (Linux at 1 in both windows) that is a
        // decisive win and the learner takes over at once; after a single
        // bad window it is compared with Linux's next window as usual.
        let arms_after = |first: f64| {
            let (_, arms) = run_in_windows_of_4(16, |arm, window| match (arm, window) {
                (Arm::Learn, _) => (3.0, 0.05),
                (Arm::Os, 0) => (first, 0.05),
                (Arm::Os, _) => (1.0, 0.9),
            });
            arms
        };
        let expected = |fourth: Arm| [[Arm::Os; 4], [Arm::Os; 4], [Arm::Learn; 4], [fourth; 4]].concat();
        assert_eq!(arms_after(1.0), expected(Arm::Learn), "a lasting blind spot");
        assert_eq!(arms_after(10.0), expected(Arm::Os), "one bad window");
    }

    #[test]
    fn linux_rebalancing_after_the_load_moved_is_not_a_blind_spot() {
        // Linux makes 10 units of work per second for 12 windows, then
        // drops to 1 with its threads spinning (the load moved and Linux is
        // moving them), for `dip` windows. The learner's probe, at once on
        // the blind-spot sign, makes 3: far above Linux's dip, far below
        // what Linux made before it. A short dip is Linux rebalancing, and
        // the learner does not take over; a lasting one drags the median of
        // Linux's last 16 windows down, and then it does.
        let champion_at_end = |dip: usize| {
            let (guard, arms) = run_in_windows_of_4(4 * 60, |arm, window| match arm {
                Arm::Learn => (3.0, 0.05),
                Arm::Os if (12..12 + dip).contains(&window) => (1.0, 0.9),
                Arm::Os => (10.0, 0.05),
            });
            let learner_windows = arms.iter().filter(|&&arm| arm == Arm::Learn).count() / 4;
            (guard.champion(), learner_windows)
        };
        let (champion, probes) = champion_at_end(3);
        assert_eq!(champion, Arm::Os);
        assert!(
            (1..=3).contains(&probes),
            "probed at once, not kept: {probes} learner windows"
        );
        assert_eq!(champion_at_end(1000).0, Arm::Learn, "a lasting blind spot");
    }

    #[test]
    fn linux_is_not_probed_while_it_rebalances_after_the_load_moved() {
        // Linux makes 10 a period, the learner 9.5 (its probes lose a
        // little and come every few windows). In window 41 the load moves
        // and Linux's recovery comes and goes (1, 1, 6, 1, 1, 6 in windows
        // 41-46, then 10): its scores look far worse than the learner's
        // last, but a probe now would hand the threads back to where they
        // ran before the move and be scored in the turmoil. The next one
        // waits until two of Linux's windows in a row are back above half
        // its median (46 and 47).
        let dip = [1.0, 1.0, 6.0, 1.0, 1.0, 6.0];
        let (guard, arms) = run_in_windows_of_4(4 * 80, |arm, window| match arm {
            Arm::Learn => (9.5, 0.05),
            Arm::Os if (41..47).contains(&window) => (dip[window - 41], 0.05),
            Arm::Os => (10.0, 0.05),
        });
        let learner_windows: Vec<usize> = (0..arms.len() / 4).filter(|&w| arms[4 * w] == Arm::Learn).collect();
        assert!(
            learner_windows.iter().any(|&w| w < 40) && learner_windows.iter().any(|&w| w > 47),
            "probed before and after: {learner_windows:?}"
        );
        assert!(
            !learner_windows.iter().any(|&w| (42..=47).contains(&w)),
            "no probe while Linux rebalances: {learner_windows:?}"
        );
        assert_eq!(guard.champion(), Arm::Os);
    }

    /// The learner leads (12 a period against Linux's 10) until the load
    /// moves in window `moved`: from then on the learner makes 7, and
    /// Linux, handed back its placement of before the move, makes 4, 6, 9
    /// and then 10 in its windows after the move (it rebalances), and
    /// `straddling` in a window of its own that the move falls in. Returns
    /// the guard and the windows' arms.
    fn load_moves_under_the_learner(moved: usize, straddling: f64) -> (Guard, Vec<Arm>) {
        let linux_periods_after = std::cell::Cell::new(0usize);
        let (guard, arms) = run_in_windows_of_4(4 * 120, |arm, window| match arm {
            Arm::Learn if window < moved => (12.0, 0.05),
            Arm::Learn => (7.0, 0.05),
            Arm::Os if window < moved => (10.0, 0.05),
            Arm::Os if window == moved => (straddling, 0.05),
            Arm::Os => {
                linux_periods_after.set(linux_periods_after.get() + 1);
                let rebalanced = [4.0, 6.0, 9.0];
                (
                    rebalanced
                        .get((linux_periods_after.get() - 1) / 4)
                        .copied()
                        .unwrap_or(10.0),
                    0.05,
                )
            }
        });
        let windows = arms.chunks(4).map(|window| window[0]).collect();
        (guard, windows)
    }

    #[test]
    fn after_the_load_moved_under_the_learner_a_probe_of_linux_has_windows_to_rebalance() {
        // The load moves in a window of the learner's (40): Linux, probed
        // at once since the learner fell below its last score, gets up to 2
        // more windows while its score rises and stays below the learner's
        // (4, 6, 9) and takes over; scored on its first window alone (4) it
        // lost and the learner kept its 7 for up to max_gap windows.
        let (_, before) = load_moves_under_the_learner(usize::MAX, 0.0);
        assert_eq!(before[39], Arm::Learn, "the learner leads before the move: {before:?}");
        let (guard, windows) = load_moves_under_the_learner(40, 0.0);
        assert_eq!(guard.champion(), Arm::Os);
        assert_eq!(&windows[41..44], &[Arm::Os; 3], "{windows:?}");
        let linux_after: usize = windows[44..60].iter().filter(|&&arm| arm == Arm::Os).count();
        assert!(linux_after >= 14, "Linux keeps the threads: {windows:?}");
        // The load moves in a window of Linux's probe, which scores what the
        // learner then makes (7): the probe measured neither placement and
        // is made again at once, with the windows to rebalance.
        let moved = (40..).find(|&w| before[w] == Arm::Os).unwrap();
        let (guard, windows) = load_moves_under_the_learner(moved, 7.0);
        assert_eq!(guard.champion(), Arm::Os, "{windows:?}");
        assert_eq!(
            &windows[moved + 1..moved + 5],
            &[Arm::Learn, Arm::Os, Arm::Os, Arm::Os],
            "{windows:?}"
        );
    }

    /// One thread, for [`Guard::placed`].
    const ONE_THREAD: [crate::ThreadSample; 1] = [crate::ThreadSample::of(1, None)];

    #[test]
    fn a_probe_pays_for_the_first_periods_it_moves_the_threads_in() {
        // The learner's probes lose 3% in their scored periods, and the
        // first period of every window that switches arm (the probe's own,
        // and Linux's right after it: the threads move) measures `first`.
        // No score counts those periods; the budget must: where they lose
        // half a period's progress, probes come more rarely than where they
        // lose nothing.
        let linux_first = GuardConfig {
            first: Arm::Os,
            ..cfg()
        };
        let learner_periods = |first: f64| {
            let mut guard = Guard::new(linux_first);
            let (mut before_last, mut last): (Option<Arm>, Option<Arm>) = (None, None);
            let mut learner = 0;
            for _ in 0..4000 {
                let switched = before_last.is_some() && before_last != last;
                let progress = last.map(|arm| match arm {
                    _ if switched => first,
                    Arm::Learn => 0.97,
                    Arm::Os => 1.0,
                });
                let arm = guard.next(progress, Signs::default());
                if arm == Arm::Learn {
                    learner += 1;
                }
                before_last = last;
                last = Some(arm);
            }
            assert_eq!(guard.champion(), Arm::Os);
            learner
        };
        let (smooth, moving) = (learner_periods(1.0), learner_periods(0.5));
        assert!(moving > 0, "the learner is probed now and then");
        assert!(
            (moving as f64) < 0.8 * smooth as f64,
            "probes whose switches cost half a period: {moving} learner periods, at no cost: {smooth}"
        );
    }

    /// The periods that start a learner window when Linux makes
    /// `linux(period)` and the learner 0.8; the learner keeps its thread on
    /// one place when `settled`, else moves it every period.
    fn learner_window_starts(cfg: GuardConfig, settled: bool, linux: impl Fn(usize) -> f64) -> Vec<usize> {
        window_starts(cfg, settled, |_| 0.8, None, linux)
    }

    /// As [`learner_window_starts`], the learner making `learner(linux's
    /// score)`, and its threads changing every `change_every` periods if
    /// given (threads that end, as a divide-and-conquer program's leaves do).
    fn window_starts(
        cfg: GuardConfig,
        settled: bool,
        learner: impl Fn(f64) -> f64,
        change_every: Option<usize>,
        linux: impl Fn(usize) -> f64,
    ) -> Vec<usize> {
        let arms = window_arms(cfg, settled, learner, change_every, linux);
        (0..arms.len())
            .filter(|&period| arms[period] == Arm::Learn && (period == 0 || arms[period - 1] != Arm::Learn))
            .collect()
    }

    /// The arm of each of 3000 periods in the run [`window_starts`]
    /// describes; Linux is champion at its end.
    fn window_arms(
        cfg: GuardConfig,
        settled: bool,
        learner: impl Fn(f64) -> f64,
        change_every: Option<usize>,
        linux: impl Fn(usize) -> f64,
    ) -> Vec<Arm> {
        let mut guard = Guard::new(cfg);
        let mut arms: Vec<Arm> = Vec::with_capacity(3000);
        for period in 0..3000 {
            let progress = arms.last().map(|arm| match arm {
                Arm::Learn => learner(linux(period)),
                Arm::Os => linux(period),
            });
            arms.push(guard.next(progress, Signs::default()));
            guard.placed(&ONE_THREAD, &[if settled { 0 } else { period % 2 }]);
            if change_every.is_some_and(|every| period % every == 0) {
                guard.learner_changed();
            }
        }
        assert_eq!(guard.champion(), Arm::Os);
        arms
    }

    #[test]
    fn a_settled_learner_s_lost_probe_waits_until_linux_s_score_moves() {
        let steady = |_| 1.0;
        // 500 windows: the budget pays for a probe losing 20% every 13.3.
        let replaying = learner_window_starts(GuardConfig::default(), false, steady);
        assert!(replaying.len() >= 33, "{replaying:?}");
        let off = GuardConfig {
            replay_change: 0.0,
            ..GuardConfig::default()
        };
        assert_eq!(
            learner_window_starts(off, true, steady),
            replaying,
            "replay_change = 0: as before"
        );
        // A learner that moved nothing in its probes would replay them:
        // after the second such loss only max_gap (64 windows) brings it
        // back while Linux stays at 1. One loss alone holds nothing.
        let held = learner_window_starts(GuardConfig::default(), true, steady);
        assert!(held.len() <= 10, "{held:?}");
        assert_eq!(&held[..2], &replaying[..2], "the first two probes as the budget says");
        assert!(held[2..].windows(2).all(|w| w[1] - w[0] >= 6 * 64), "{held:?}");
        assert!(held[2] - held[1] >= 6 * 64, "{held:?}");
        // Linux's score moving by more than replay_change (a load arrived;
        // Linux still the better) brings the probe back within two windows.
        let held = learner_window_starts(
            GuardConfig::default(),
            true,
            |period| if period < 1500 { 1.0 } else { 0.8 },
        );
        let next = held.iter().find(|&&p| p >= 1500).expect("a probe after the change");
        assert!(*next <= 1500 + 2 * 6, "{held:?}");
        // Noise inside it does not.
        let held = learner_window_starts(
            GuardConfig::default(),
            true,
            |period| if period % 12 < 6 { 0.96 } else { 1.04 },
        );
        assert!(held.len() <= 9, "{held:?}");
    }

    /// The lengths (periods) of the learner's windows in 3000 periods where
    /// Linux makes 1 and the learner `learner`, moving no thread if
    /// `settled`.
    fn learner_window_lengths(settled: bool, learner: f64) -> Vec<usize> {
        let arms = window_arms(GuardConfig::default(), settled, |_| learner, None, |_| 1.0);
        arms.chunk_by(|a, b| a == b)
            .filter(|run| run[0] == Arm::Learn)
            .map(<[Arm]>::len)
            .collect()
    }

    #[test]
    fn a_held_probe_far_below_linux_ends_after_two_scored_periods() {
        let window = GuardConfig::default().window as usize;
        // Two whole probes lost while the learner moved nothing; the later
        // ones, held for max_gap, end after their unscored period and two
        // scored ones at a fifth of Linux.
        let hopeless = learner_window_lengths(true, 0.2);
        assert!(hopeless.len() >= 4, "{hopeless:?}");
        assert_eq!(&hopeless[..2], &[window, window], "{hopeless:?}");
        assert!(hopeless[2..].iter().all(|&n| n == 1 + 2), "{hopeless:?}");
        // Not where the learner still moves threads, nor above half of Linux.
        let moving = learner_window_lengths(false, 0.2);
        assert!(moving.iter().all(|&n| n == window), "{moving:?}");
        let close = learner_window_lengths(true, 0.6);
        assert!(close.len() >= 4 && close.iter().all(|&n| n == window), "{close:?}");
    }

    /// The learner window starts of a learner that ties with Linux (both
    /// make `linux(period)`) and whose threads change every 4 windows.
    fn tied_learner_window_starts(cfg: GuardConfig, settled: bool, linux: impl Fn(usize) -> f64) -> Vec<usize> {
        window_starts(cfg, settled, |score| score, Some(24), linux)
    }

    #[test]
    fn a_settled_learner_that_ties_with_linux_is_probed_ever_more_rarely() {
        let steady = |_| 1.0;
        // Without the back-off, a tie costs no budget, and the learner's
        // threads changing every 4 windows end the replay rule's wait:
        // a probe every few windows, all run long.
        let off = GuardConfig {
            tie_backoff: false,
            ..GuardConfig::default()
        };
        let every = tied_learner_window_starts(off, true, steady);
        assert!(every.len() >= 100, "{} probes: {every:?}", every.len());
        // With it, the k-th tie in a row makes the next probe wait 2^k of
        // Linux's windows, up to max_gap (64), whatever the threads do.
        let backed = tied_learner_window_starts(GuardConfig::default(), true, steady);
        let gaps: Vec<usize> = backed.windows(2).map(|w| (w[1] - w[0]) / 6).collect();
        assert!(backed.len() <= 15, "{gaps:?}");
        assert!(gaps.windows(2).all(|g| g[1] >= g[0]), "{gaps:?}");
        assert!(gaps.iter().any(|&g| g >= 64), "{gaps:?}");
        // A learner still moving threads in its probes is learning there:
        // its ties do not hold it back.
        let learning = tied_learner_window_starts(GuardConfig::default(), false, steady);
        assert!(learning.len() >= 100, "{learning:?}");
        assert_eq!(learning, tied_learner_window_starts(off, false, steady));
        // Linux's score moving by more than replay_change (the load
        // changed) ends the wait: a probe within two windows.
        let moved = tied_learner_window_starts(
            GuardConfig::default(),
            true,
            |period| {
                if period < 1500 { 1.0 } else { 1.2 }
            },
        );
        let next = moved.iter().find(|&&p| p >= 1500).expect("a probe after the change");
        assert!(*next <= 1500 + 2 * 6, "{moved:?}");
    }

    #[test]
    fn a_change_of_the_learner_s_threads_ends_the_wait() {
        // Linux makes 1.0, the settled learner's probes 0.8 (as above).
        fn step(guard: &mut Guard, last: &mut Option<Arm>) -> Arm {
            let progress = last.map(|arm| if arm == Arm::Learn { 0.8 } else { 1.0 });
            let arm = guard.next(progress, Signs::default());
            guard.placed(&ONE_THREAD, &[0]);
            *last = Some(arm);
            arm
        }
        // The probe comes as soon as the budget allows: a probe losing 20%
        // every 0.2 / 0.015 = 13.3 windows (no savings beyond `savings`).
        fn probed_within_the_budget_s_pace(guard: &mut Guard, last: &mut Option<Arm>) -> bool {
            (0..15 * 6).any(|_| step(guard, last) == Arm::Learn)
        }
        let mut guard = Guard::new(GuardConfig::default());
        let mut last = None;
        for _ in 0..1500 {
            step(&mut guard, &mut last);
        }
        assert!(guard.replay.is_some(), "the settled learner's lost probe is held");
        let (mut changed, mut changed_last) = (guard.clone(), last);
        changed.learner_changed();
        assert!(
            probed_within_the_budget_s_pace(&mut changed, &mut changed_last),
            "a new placement is probed"
        );
        assert!(
            !probed_within_the_budget_s_pace(&mut guard, &mut last),
            "the same one waits"
        );
    }

    #[test]
    fn probes_that_keep_losing_come_at_the_budget_s_pace_after_a_long_wait() {
        // Linux makes 1.0 and the settled learner's probes 0.7 for 250
        // windows (held: the budget goes unspent); then Linux's score moves
        // (0.8, a load arrived) and the learner moves its threads again,
        // still losing 12.5% per probe. Unspent budget is not saved up: the
        // probes come at most every 0.125 / 0.015 windows, not one after
        // each Linux window.
        let mut guard = Guard::new(GuardConfig::default());
        let mut last: Option<Arm> = None;
        let mut probes_after = 0;
        for period in 0..1500 + 60 * 6 {
            let changed = period >= 1500;
            let progress = last.map(|arm| match (arm, changed) {
                (Arm::Learn, _) => 0.7,
                (Arm::Os, false) => 1.0,
                (Arm::Os, true) => 0.8,
            });
            let arm = guard.next(progress, Signs::default());
            guard.placed(&ONE_THREAD, &[if changed { period % 2 } else { 0 }]);
            if changed && arm == Arm::Learn && last != Some(Arm::Learn) {
                probes_after += 1;
            }
            last = Some(arm);
        }
        // 60 windows: one probe's savings (0.225) and 60 x 0.015 pay for 9.
        assert!((2..=10).contains(&probes_after), "{probes_after} probes in 60 windows");
        assert_eq!(guard.champion(), Arm::Os);
    }

    #[test]
    fn linux_is_blind_only_while_the_learner_leads_it_by_more_than_decisive() {
        // Default settings (Linux champion first): the learner's probe
        // measures 2x Linux's progress and takes over.
        let mut guard = Guard::new(GuardConfig::default());
        assert!(!guard.os_blind(), "nothing measured yet");
        run_waiting(&mut guard, 19, 0.6);
        assert_eq!(guard.champion(), Arm::Learn);
        assert!(guard.os_blind());
        // A lead of 30% (under decisive = 50%) is a win, not blindness.
        let mut guard = Guard::new(GuardConfig::default());
        run(&mut guard, 400, |arm, _| if arm == Arm::Learn { 1.3 } else { 1.0 });
        assert_eq!(guard.champion(), Arm::Learn);
        assert!(!guard.os_blind());
        // Disabled, the guard measures nothing and says nothing.
        let mut guard = Guard::new(GuardConfig {
            enabled: false,
            ..GuardConfig::default()
        });
        run(&mut guard, 400, |arm, _| if arm == Arm::Learn { 3.0 } else { 1.0 });
        assert!(!guard.os_blind());
    }

    #[test]
    fn disabled_always_learns() {
        let mut guard = Guard::new(GuardConfig {
            enabled: false,
            ..cfg()
        });
        let arms = run(&mut guard, 50, |arm, _| if arm == Arm::Os { 2.0 } else { 1.0 });
        assert!(arms.iter().all(|&a| a == Arm::Learn));
        assert_eq!(guard.stats().learn_periods, 50);
        assert_eq!(guard.stats().os_share(), 0.0);
    }

    #[test]
    fn windows_alternate_at_first_then_probes_get_rarer_the_worse_the_os_is() {
        let mut guard = Guard::new(cfg());
        let arms = run(&mut guard, 2000, |arm, _| if arm == Arm::Learn { 2.0 } else { 1.0 });
        // Learn window, Os probe, Learn window (compared: learn stays), ...
        assert_eq!(&arms[..12], &[[Arm::Learn; 4], [Arm::Os; 4], [Arm::Learn; 4]].concat());
        assert_eq!(guard.champion(), Arm::Learn);
        assert_eq!(guard.stats().switches, 0);
        // Each Os probe loses half a window's progress: more than the run
        // saves up (`savings`, 0.225), so one comes every max_gap (64)
        // windows.
        let os_windows = arms.iter().filter(|&&a| a == Arm::Os).count() / 4;
        assert!((7..=8).contains(&os_windows), "{os_windows} Os windows of 500");
        let tail_os = arms[1000..].iter().filter(|&&a| a == Arm::Os).count();
        assert!(tail_os > 0, "the Os is still probed");
    }

    proptest::proptest! {
        /// However much worse the other arm is, probing it costs at most
        /// `probe_cost` of the run, plus what the first probe lost beyond
        /// the loss assumed for it.
        #[test]
        fn probing_a_loser_costs_at_most_probe_cost_of_the_run(
            loss in 0.03f64..1.0,
            assumed_loss in 0.0f64..0.5,
            windows in 10usize..600,
        ) {
            let cfg = GuardConfig { assumed_loss, max_gap: u32::MAX, ..GuardConfig::default() };
            let mut guard = Guard::new(cfg);
            let window = cfg.window as usize;
            let arms = run(&mut guard, windows * window, |arm, _| if arm == Arm::Os { 1.0 } else { 1.0 - loss });
            let learn_windows = arms.iter().filter(|&&a| a == Arm::Learn).count() as f64 / window as f64;
            let budget = cfg.probe_cost * windows as f64 + (loss - assumed_loss).max(0.0);
            proptest::prop_assert!(learn_windows * loss <= budget + 1e-9,
                "{learn_windows} learner windows losing {loss} each, budget {budget}");
            proptest::prop_assert_eq!(guard.champion(), Arm::Os);
        }
    }

    #[test]
    fn a_champion_that_falls_below_the_other_arm_is_checked_at_once() {
        // The learner is twice as good, so Linux is probed rarely; then the
        // learner's placement goes bad (half Linux's progress): Linux gets
        // a probe within a few windows, not a gap later, and takes over.
        let mut guard = Guard::new(cfg());
        let drop_at = 400;
        let arms = run(&mut guard, 600, learner_twice_as_good_until(drop_at));
        assert_eq!(guard.champion(), Arm::Os);
        let first_os_after = periods_until_linux(&arms, drop_at);
        assert!(
            first_os_after <= 3 * 4,
            "Linux probed {first_os_after} periods after the drop"
        );
        assert!(arms[drop_at + 6 * 4..].iter().filter(|&&a| a == Arm::Os).count() > 150);
    }

    #[test]
    fn a_leading_learner_that_falls_below_linux_is_checked_at_once_even_right_after_a_costly_probe() {
        // The learner is twice as good, so each probe of Linux loses 50%
        // and spends 25 windows of the 2% budget. The learner's placement
        // goes bad right after such a probe: Linux, the safe side, is
        // probed within a few windows all the same, not once the budget has
        // caught up, and takes over.
        let steady = run(&mut Guard::new(cfg()), 400, learner_twice_as_good_until(usize::MAX));
        let last_probe_end = steady.iter().rposition(|&a| a == Arm::Os).expect("Linux probed") + 1;
        assert!(
            last_probe_end > 100,
            "Linux was probed after the start: {last_probe_end}"
        );
        // The drop comes once the learner's window after that probe has
        // settled the comparison.
        let drop_at = last_probe_end + 4;
        let mut guard = Guard::new(cfg());
        let arms = run(&mut guard, drop_at + 200, learner_twice_as_good_until(drop_at));
        assert_eq!(arms[..drop_at], steady[..drop_at], "the same run until the drop");
        let first_os_after = periods_until_linux(&arms, drop_at);
        assert!(
            first_os_after <= 2 * 4,
            "Linux probed {first_os_after} periods after the drop"
        );
        assert_eq!(guard.champion(), Arm::Os);
    }

    #[test]
    fn a_lucky_window_is_checked_again_at_once() {
        // Linux's first probe window is lucky (3x); otherwise the learner is
        // 1.5x Linux. Linux takes over, the learner is probed right after
        // one window and takes back the lead.
        let mut guard = Guard::new(cfg());
        let mut os_windows = 0;
        let mut arms = Vec::new();
        let mut last: Option<Arm> = None;
        for period in 0..40 {
            let progress = last.map(|arm| match arm {
                Arm::Learn => 1.5,
                Arm::Os if os_windows <= 1 && period < 9 => 3.0,
                Arm::Os => 1.0,
            });
            let arm = guard.next(progress, Signs::default());
            if arm == Arm::Os && last != Some(Arm::Os) {
                os_windows += 1;
            }
            arms.push(arm);
            last = Some(arm);
        }
        let windows: Vec<Arm> = arms.chunks(4).map(|w| w[0]).collect();
        use Arm::{Learn as L, Os as O};
        assert_eq!(&windows[..6], &[L, O, L, O, L, O], "{windows:?}");
        assert_eq!(guard.champion(), Arm::Learn);
        assert_eq!(guard.stats().switches, 2);
    }

    #[test]
    fn max_gap_bounds_the_wait_between_probes() {
        let cfg = GuardConfig { max_gap: 3, ..cfg() };
        let mut guard = Guard::new(cfg);
        let arms = run(&mut guard, 400, |arm, _| if arm == Arm::Learn { 1.0 } else { 0.1 });
        // Learn, Os probe, then at most 3 Learn windows before the next.
        let windows: Vec<Arm> = arms.chunks(4).map(|w| w[0]).collect();
        let longest = windows.split(|&a| a == Arm::Os).skip(1).map(<[Arm]>::len).max();
        assert_eq!(longest, Some(3), "{windows:?}");
    }

    #[test]
    fn a_probe_nearly_as_good_as_the_champion_is_tried_often() {
        // 1% worse: probing every other window costs ~0.5% of the run.
        let mut guard = Guard::new(cfg());
        let arms = run(&mut guard, 400, |arm, _| if arm == Arm::Learn { 1.01 } else { 1.0 });
        let os = arms.iter().filter(|&&a| a == Arm::Os).count();
        assert_eq!(guard.champion(), Arm::Learn);
        assert!(os * 3 >= 400, "{os} Os periods of 400");
    }

    #[test]
    fn the_os_takes_over_when_it_measures_better_and_learning_is_still_probed() {
        let mut guard = Guard::new(cfg());
        let arms = run(&mut guard, 400, |arm, _| if arm == Arm::Os { 1.0 } else { 0.6 });
        assert_eq!(guard.champion(), Arm::Os);
        assert_eq!(guard.stats().switches, 1);
        let stats = guard.stats();
        let counted = arms.iter().filter(|&&a| a == Arm::Os).count() as f64 / arms.len() as f64;
        assert!((stats.os_share() - counted).abs() < 1e-12 && counted > 0.5, "{stats:?}");
        // Os probe in window 2, decided after window 3: Os from window 4 on.
        assert!(arms[12..16].iter().all(|&a| a == Arm::Os));
        let learn_tail = arms[100..].iter().filter(|&&a| a == Arm::Learn).count();
        assert!(learn_tail > 0, "the learner is still probed");
        // 40% worse: probed about every 20 windows (0.4 / 0.02).
        assert!(learn_tail * 10 <= 300, "{learn_tail} learn periods of the last 300");
    }

    #[test]
    fn differences_inside_the_margin_keep_the_champion() {
        let mut guard = Guard::new(cfg());
        run(&mut guard, 400, |arm, _| if arm == Arm::Os { 1.01 } else { 1.0 });
        assert_eq!(guard.champion(), Arm::Learn);
        assert_eq!(guard.stats().switches, 0);
    }

    #[test]
    fn a_lead_won_on_one_dip_of_linux_that_linux_then_ties_goes_back_to_linux() {
        // The learner ties Linux (both 1.0), but Linux's window right before
        // the learner's first probe dips to 0.9: the probe beats the mean
        // of Linux's windows around it and takes the lead.
        let os_first = GuardConfig {
            first: Arm::Os,
            ..cfg()
        };
        let steady = run(&mut Guard::new(os_first), 100, |_, _| 1.0);
        let first_probe = steady.iter().position(|&a| a == Arm::Learn).expect("a probe");
        let window = os_first.window as usize;
        let dip = first_probe - window + 1..=first_probe;
        let rate = |arm: Arm, period: usize| {
            if arm == Arm::Os && dip.contains(&period) {
                0.9
            } else {
                1.0
            }
        };
        // Linux, probed at once to confirm that lead, ties it: the lead is
        // not confirmed and Linux leads again; the learner, holding its
        // places, ties in its later probes, which come ever more rarely.
        let mut guard = Guard::new(os_first);
        let mut arms: Vec<Arm> = Vec::new();
        for period in 0..800 {
            let progress = arms.last().map(|&arm| rate(arm, period));
            arms.push(guard.next(progress, Signs::default()));
            guard.placed(&ONE_THREAD, &[0]);
        }
        assert_eq!(guard.stats().switches, 2, "the lead taken, then given back");
        assert_eq!(guard.champion(), Arm::Os);
        let learner_after = arms[400..].iter().filter(|&&a| a == Arm::Learn).count();
        assert!(
            learner_after < 40,
            "the learner placed {learner_after} of the last 400 periods"
        );
    }

    #[test]
    fn the_champion_follows_a_change_in_which_arm_is_better() {
        let mut guard = Guard::new(cfg());
        let better = |arm: Arm, period: usize| {
            let learn_wins = period >= 200;
            if (arm == Arm::Learn) == learn_wins { 1.0 } else { 0.5 }
        };
        run(&mut guard, 200, better);
        assert_eq!(guard.champion(), Arm::Os);
        let arms = run(&mut guard, 400, |arm, p| better(arm, p + 200));
        assert_eq!(guard.champion(), Arm::Learn);
        assert!(arms[300..].iter().filter(|&&a| a == Arm::Learn).count() > 80);
    }

    #[test]
    fn steady_drift_does_not_make_a_probe_win() {
        // Progress falls 1% a period whatever the arm (load growing): the
        // probe sits between its neighbours, so the champion stays.
        let mut guard = Guard::new(cfg());
        run(&mut guard, 300, |_, period| 100.0 * 0.99f64.powi(period as i32));
        assert_eq!(guard.stats().switches, 0);
    }

    #[test]
    fn the_first_period_of_a_window_is_not_scored() {
        // Whatever happens in a window's first period (threads moving) must
        // not decide: Os is terrible only there, better elsewhere.
        let mut guard = Guard::new(cfg());
        let mut arms: Vec<Arm> = Vec::new();
        let mut last: Option<Arm> = None;
        for _ in 0..200 {
            let first_of_window = arms.len() >= 2 && arms[arms.len() - 1] != arms[arms.len() - 2];
            let progress = last.map(|arm| match (arm, first_of_window) {
                (Arm::Os, true) => 0.0,
                (Arm::Os, false) => 2.0,
                (Arm::Learn, _) => 1.0,
            });
            let arm = guard.next(progress, Signs::default());
            arms.push(arm);
            last = Some(arm);
        }
        assert_eq!(guard.champion(), Arm::Os);
    }

    #[test]
    fn missing_progress_decides_nothing() {
        let mut guard = Guard::new(cfg());
        for _ in 0..100 {
            guard.next(None, Signs::default());
        }
        assert_eq!(guard.champion(), Arm::Learn);
        assert_eq!(guard.stats().switches, 0);
    }

    fn input<'a>(threads: &'a [crate::ThreadSample], cores: Option<&'a [Option<usize>]>) -> PeriodInput<'a> {
        PeriodInput {
            cores,
            ..PeriodInput::of(0, 0.0, threads)
        }
    }

    fn samples(keys: &[ThreadKey]) -> Vec<crate::ThreadSample> {
        keys.iter()
            .map(|&key| crate::ThreadSample::of(key, Some(1.0)))
            .collect()
    }

    #[test]
    fn linux_gets_back_the_cores_it_had_in_the_first_period_of_its_next_window() {
        const WHOLE: usize = 9;
        let mut hand_back = HandBack::default();
        let three = samples(&[1, 2, 3]);
        // Linux's window; at its end the target says where the threads ran.
        assert_eq!(
            hand_back.places(&input(&three, None), Arm::Os, WHOLE, true),
            Some(vec![WHOLE; 3])
        );
        let cores = [Some(4), None, Some(0)];
        assert_eq!(
            hand_back.places(&input(&three, Some(&cores)), Arm::Learn, WHOLE, true),
            None
        );
        // The learner's window: cores reported now are the learner's, not Linux's.
        let moved = [Some(1), Some(1), Some(1)];
        assert_eq!(
            hand_back.places(&input(&three, Some(&moved)), Arm::Learn, WHOLE, true),
            None
        );
        // Linux again, with thread 2 gone and thread 4 new: each goes back
        // where Linux had it, once; a thread Linux never placed gets the whole machine.
        let after = samples(&[1, 3, 4]);
        assert_eq!(
            hand_back.places(&input(&after, None), Arm::Os, WHOLE, true),
            Some(vec![4, 0, WHOLE])
        );
        assert_eq!(
            hand_back.places(&input(&after, None), Arm::Os, WHOLE, true),
            Some(vec![WHOLE; 3])
        );
        // The learner takes over. Where Linux's probe leaves the threads is
        // partly the learner's doing: its next probe starts again from
        // where Linux had them as champion.
        let drifted = [Some(5), Some(5), Some(6)];
        assert_eq!(
            hand_back.places(&input(&after, Some(&drifted)), Arm::Learn, WHOLE, false),
            None
        );
        assert_eq!(
            hand_back.places(&input(&after, None), Arm::Os, WHOLE, false),
            Some(vec![4, 0, WHOLE])
        );
        // A probe that wins makes Linux champion again: its end is recorded.
        assert_eq!(
            hand_back.places(&input(&after, Some(&drifted)), Arm::Os, WHOLE, true),
            Some(vec![WHOLE; 3])
        );
        assert_eq!(hand_back.places(&input(&after, None), Arm::Learn, WHOLE, true), None);
        assert_eq!(
            hand_back.places(&input(&after, None), Arm::Os, WHOLE, true),
            Some(vec![5, 5, 6])
        );
    }

    #[test]
    fn the_policy_asks_where_threads_ran_in_the_last_period_of_linux_windows_only() {
        let mut guard = Guard::new(GuardConfig {
            first: Arm::Os,
            ..cfg()
        });
        let mut asked = Vec::new();
        for _ in 0..12 {
            let arm = guard.next(Some(1.0), Signs::default());
            asked.push((arm, guard.os_window_ending()));
        }
        // Windows of 4 periods: Linux's first window ends at its 4th period.
        let ends: Vec<usize> = asked.iter().enumerate().filter(|(_, a)| a.1).map(|(i, _)| i).collect();
        assert!(!ends.is_empty(), "{asked:?}");
        for &i in &ends {
            assert_eq!(asked[i].0, Arm::Os, "{asked:?}");
            assert!(
                i + 1 >= 4 && (i + 1) % 4 == 0,
                "period {i} is not a window's last: {asked:?}"
            );
        }
        let disabled = Guard::new(GuardConfig {
            enabled: false,
            ..cfg()
        });
        assert!(!disabled.os_window_ending());
    }

    #[test]
    fn only_the_end_of_linux_s_own_windows_is_recorded_for_the_hand_back() {
        // Linux champion until the learner, twice as good, takes over; then
        // Linux's windows are ordinary probes, which follow the learner's
        // window and end partly where the learner put the threads.
        let mut guard = Guard::new(GuardConfig {
            first: Arm::Os,
            ..cfg()
        });
        let rate = learner_twice_as_good_until(usize::MAX);
        let (mut own, mut probes_ended) = (0, 0);
        let mut last = None;
        for period in 0..2000 {
            let progress = last.map(|arm| rate(arm, period));
            let ending = guard.os_window_ending();
            let champion = guard.champion();
            let arm = guard.next(progress, Signs::default());
            let recorded = guard.ended_linux_s_own_window();
            assert!(
                !recorded || ending,
                "period {period}: recorded outside the end of Linux's window"
            );
            // (A window after which the champion changed is left out.)
            if ending && champion == Arm::Os && guard.champion() == Arm::Os {
                assert!(
                    recorded,
                    "period {period}: the end of Linux's window as champion not recorded"
                );
                own += 1;
            } else if ending && champion == Arm::Learn && guard.champion() == Arm::Learn {
                assert!(
                    !recorded,
                    "period {period}: the end of an ordinary probe of Linux recorded"
                );
                probes_ended += 1;
            }
            last = Some(arm);
        }
        assert_eq!(guard.champion(), Arm::Learn);
        assert!(own >= 1 && probes_ended >= 1, "own {own}, probes {probes_ended}");
    }
}
