//! `--bubbles FILE`: rules that put the threads of unmodified programs in
//! nested bubbles, for `--policy bubbles`.
//!
//! ```text
//!   FILE (TOML)                          BubbleRules::parse (all checks, before
//!   [[bubble]]                           anything is pinned: exit 2 on error)
//!   name = "solver"                         │
//!   threads = "^solver-"  # regex on names  ├─► BubbleSet (policy crate: nesting)
//!   pids = [1234]         # or processes    └─► one matcher per bubble
//!   process_trees = [99]  # or processes with all they start
//!   in = "job"            # nested in job
//!   priority = 1          # placed first                 │
//!   burst = "node"        # opens at NUMA nodes          ▼ classify(ThreadInfo), per
//!   load = 2.0            # instead of its threads'      thread while its name settles
//!                                                        (first five periods)
//!   a thread goes in the first bubble whose pattern or PID list matches
//!   (process_trees: its process or one of the processes that started it,
//!   as pinlearn saw them start); matching two is said once per pair of
//!   bubbles
//!
//!   auto = "process"   (top level) a thread no rule matches goes in the
//!   bubble of its process, "process PID", nested in the bubble of the
//!   process that started it
//!
//!   threads = "^rank(?<bubble>\d+)-"   a group named `bubble` in the pattern:
//!   each value it takes ("0", "1", ...) makes a bubble NAME/VALUE nested in
//!   NAME, created when its first thread appears (with the rule's priority
//!   and burst level; NAME itself then has no burst level)
//! ```
//!
//! Thread names come from the supervised program (untrusted): they are only
//! matched, with the regex crate's linear-time engine.

use crate::EngineError;
use crate::target::ThreadInfo;
use pinlearn_policy::{BubbleSet, BubbleSpec, PlaceKind, PlaceTree};
use regex::Regex;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Largest rules file read (a rules file is a few lines).
const MAX_RULES_BYTES: u64 = 1 << 20;

/// The name of the pattern group whose values make nested bubbles.
const SPLIT_GROUP: &str = "bubble";

/// Most bubbles made while a program runs (from pattern groups and
/// processes): names and processes come from the supervised program, which
/// must not grow the set without bound.
pub const MAX_MADE_BUBBLES: usize = 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesFile {
    auto: Option<String>,
    #[serde(default)]
    bubble: Vec<Rule>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Rule {
    name: String,
    threads: Option<String>,
    #[serde(default)]
    pids: Vec<u32>,
    #[serde(default)]
    process_trees: Vec<u32>,
    #[serde(rename = "in")]
    within: Option<String>,
    #[serde(default)]
    priority: i32,
    burst: Option<String>,
    load: Option<f64>,
}

/// How a bubble's threads are recognised.
#[derive(Clone, Debug)]
struct Matcher {
    /// Index in the bubble set.
    bubble: usize,
    threads: Option<Regex>,
    pids: Vec<u32>,
    /// Processes whose descendants' threads go here too.
    trees: Vec<u32>,
    /// Thread ids (bubbles a program declares itself, not rules files).
    tids: Vec<u32>,
    /// The pattern has a `bubble` group: each of its values makes a nested
    /// bubble with this priority and burst level.
    split: Option<(i32, Option<PlaceKind>)>,
}

impl Matcher {
    /// `lineage`: the thread's process and the processes that started it,
    /// nearest first.
    fn matches(&self, who: &ThreadInfo, lineage: &[u32]) -> bool {
        self.pids.contains(&who.pid)
            || self.tids.contains(&who.tid)
            || self.threads.as_ref().is_some_and(|re| re.is_match(&who.name))
            || lineage.iter().any(|pid| self.trees.contains(pid))
    }
}

/// The bubbles of a rules file and how to recognise their threads.
#[derive(Clone, Debug)]
pub struct BubbleRules {
    set: BubbleSet,
    /// In file order: the first match wins.
    matchers: Vec<Matcher>,
    /// Pairs of bubbles (by index) already said to match one thread.
    overlaps_said: BTreeSet<(usize, usize)>,
    /// Bubbles made from pattern groups: (rule's bubble, value) -> bubble.
    split_bubbles: std::collections::HashMap<(usize, String), usize>,
    /// `auto = "process"`: the bubble of each process, and the process that
    /// started each process seen.
    process_bubbles: Option<std::collections::HashMap<u32, usize>>,
    process_parents: std::collections::HashMap<u32, u32>,
    /// Bubbles made while running (pattern groups and processes).
    made: usize,
    /// Said that no more bubbles are made.
    made_full_said: bool,
    notes: Vec<String>,
    source: String,
    /// Loads the program declared for its threads (by thread id), used
    /// instead of the measured ones.
    thread_loads: BTreeMap<u32, f64>,
}

impl BubbleRules {
    /// Reads and checks the rules file at `path`.
    pub fn read(path: &Path) -> Result<Self, EngineError> {
        let shown = path.display().to_string();
        let file = std::fs::File::open(path)
            .map_err(|e| EngineError::bad_input(format!("cannot read bubbles file {shown}: {e}")))?;
        let mut text = String::new();
        use std::io::Read as _;
        file.take(MAX_RULES_BYTES + 1)
            .read_to_string(&mut text)
            .map_err(|e| EngineError::bad_input(format!("cannot read bubbles file {shown}: {e}")))?;
        if text.len() as u64 > MAX_RULES_BYTES {
            return Err(EngineError::bad_input(format!(
                "bubbles file {shown} is larger than {MAX_RULES_BYTES} bytes: a rules file is a few lines"
            )));
        }
        Self::parse(&text, &shown)
    }

    /// Checks the rules in `text`; `source` names the file in errors.
    pub fn parse(text: &str, source: &str) -> Result<Self, EngineError> {
        let bad = |why: String| EngineError::bad_input(format!("bubbles file {source}: {why}"));
        let file: RulesFile = toml::from_str(text).map_err(|e| {
            // toml's message spans several lines (the offending line and a caret).
            let first = e.message().lines().next().unwrap_or("not valid TOML").to_string();
            let at = e
                .span()
                .map(|span| format!(" (line {})", text[..span.start.min(text.len())].lines().count().max(1)))
                .unwrap_or_default();
            bad(format!("{first}{at}"))
        })?;
        let by_process = match file.auto.as_deref() {
            None => false,
            Some("process") => true,
            Some(other) => {
                return Err(bad(format!(
                    "auto = {other:?}: the only automatic grouping is \"process\""
                )));
            }
        };
        if file.bubble.is_empty() && !by_process {
            return Err(bad(
                "no [[bubble]] is declared and no auto = \"process\"; see docs/bubbles.md for the format".into(),
            ));
        }
        let mut specs = Vec::with_capacity(file.bubble.len());
        // Each rule's pattern, burst level and whether it splits, read once.
        let mut compiled = Vec::with_capacity(file.bubble.len());
        for rule in &file.bubble {
            let burst = match &rule.burst {
                None => None,
                Some(level) => Some(PlaceKind::from_level_name(level).ok_or_else(|| {
                    let levels: Vec<&str> = PlaceKind::LEVELS.iter().map(|(_, w)| *w).collect();
                    bad(format!(
                        "bubble {:?}: unknown burst level {level:?}: use one of {}",
                        rule.name,
                        levels.join(", ")
                    ))
                })?),
            };
            let threads = match &rule.threads {
                None => None,
                Some(pattern) => Some(Regex::new(pattern).map_err(|e| {
                    let why = e.to_string();
                    let why = why
                        .lines()
                        .last()
                        .unwrap_or("not a regular expression")
                        .trim()
                        .to_string();
                    bad(format!("bubble {:?}: threads pattern {pattern:?}: {why}", rule.name))
                })?),
            };
            let splits = threads
                .as_ref()
                .is_some_and(|re| re.capture_names().flatten().any(|n| n == SPLIT_GROUP));
            compiled.push((threads, burst, splits));
            specs.push(BubbleSpec {
                name: rule.name.clone(),
                parent: rule.within.clone(),
                priority: rule.priority,
                // A splitting rule's level belongs to the bubbles it makes.
                burst: if splits { None } else { burst },
                load: rule.load,
            });
        }
        let set = BubbleSet::new(specs).map_err(|e| bad(e.to_string()))?;
        let mut matchers = Vec::new();
        let mut pid_owner: std::collections::HashMap<u32, &str> = Default::default();
        for (rule, (threads, burst, splits)) in file.bubble.iter().zip(compiled) {
            let bubble = set.index(&rule.name).expect("checked by BubbleSet::new");
            for &pid in rule.pids.iter().chain(&rule.process_trees) {
                if let Some(other) = pid_owner.insert(pid, &rule.name) {
                    return Err(bad(format!(
                        "PID {pid} is listed in bubbles {other:?} and {:?}: a thread goes in one bubble",
                        rule.name
                    )));
                }
            }
            let has_children = set.iter().any(|b| b.parent == Some(bubble));
            let by_process = !rule.pids.is_empty() || !rule.process_trees.is_empty();
            if threads.is_none() && !by_process && !has_children {
                return Err(bad(format!(
                    "bubble {:?} can hold no thread: give threads = \"PATTERN\", pids = [...], process_trees = \
                     [...], or nest bubbles in it",
                    rule.name
                )));
            }
            if threads.is_some() || by_process {
                let split = splits.then_some((rule.priority, burst));
                matchers.push(Matcher {
                    bubble,
                    threads,
                    pids: rule.pids.clone(),
                    trees: rule.process_trees.clone(),
                    tids: Vec::new(),
                    split,
                });
            }
        }
        Ok(BubbleRules {
            set,
            matchers,
            overlaps_said: BTreeSet::new(),
            split_bubbles: Default::default(),
            process_bubbles: by_process.then(Default::default),
            process_parents: Default::default(),
            made: 0,
            made_full_said: false,
            notes: Vec::new(),
            source: source.to_string(),
            thread_loads: BTreeMap::new(),
        })
    }

    /// Bubbles declared by the program itself (the simulator's workloads):
    /// `members[b]` are the thread ids in bubble `b` of `set`.
    ///
    /// # Panics
    /// If `members` does not have one list per bubble of `set`.
    pub fn declared(set: BubbleSet, members: Vec<Vec<u32>>) -> Self {
        assert_eq!(set.len(), members.len(), "one member list per bubble");
        let matchers = members
            .into_iter()
            .enumerate()
            .filter(|(_, tids)| !tids.is_empty())
            .map(|(bubble, tids)| Matcher {
                bubble,
                threads: None,
                pids: Vec::new(),
                trees: Vec::new(),
                tids,
                split: None,
            })
            .collect();
        BubbleRules {
            set,
            matchers,
            overlaps_said: BTreeSet::new(),
            split_bubbles: Default::default(),
            process_bubbles: None,
            process_parents: Default::default(),
            made: 0,
            made_full_said: false,
            notes: Vec::new(),
            source: "the program's declarations".into(),
            thread_loads: BTreeMap::new(),
        }
    }

    /// With the loads the program declared for some of its threads (by
    /// thread id; 0 for a thread that only waits).
    pub fn with_thread_loads(mut self, loads: BTreeMap<u32, f64>) -> Self {
        self.thread_loads = loads;
        self
    }

    /// The load declared for thread `tid`, if any.
    pub fn thread_load(&self, tid: u32) -> Option<f64> {
        self.thread_loads.get(&tid).copied()
    }

    /// Whether any thread has a declared load.
    pub fn has_thread_loads(&self) -> bool {
        !self.thread_loads.is_empty()
    }

    /// The bubbles, for the policy.
    pub fn set(&self) -> &BubbleSet {
        &self.set
    }

    /// Refuses burst levels the machine (as `tree` shows it) lacks.
    pub fn check_levels(&self, tree: &PlaceTree) -> Result<(), EngineError> {
        let split_levels = self.matchers.iter().filter_map(|m| {
            let kind = m.split?.1?;
            (!tree.has_level(kind)).then(|| (self.set.get(m.bubble).name.clone(), kind))
        });
        let missing = self.set.missing_levels(tree).into_iter().chain(split_levels).next();
        if let Some((bubble, kind)) = missing {
            let present: Vec<&str> = PlaceKind::LEVELS
                .iter()
                .filter(|(k, _)| tree.has_level(*k))
                .map(|(_, w)| *w)
                .collect();
            return Err(EngineError::bad_input(format!(
                "bubbles file {}: bubble {bubble:?} opens at level {}, which this topology lacks (it has {})",
                self.source,
                kind.level_name(),
                present.join(", ")
            )));
        }
        Ok(())
    }

    /// The bubble of `who`: the first rule that matches. A thread matching
    /// two rules is said once per pair of bubbles (see [`Self::take_notes`]).
    pub fn classify(&mut self, who: &ThreadInfo) -> Option<usize> {
        if who.ppid != 0 {
            self.process_parents.insert(who.pid, who.ppid);
        }
        let lineage = self.lineage(who.pid);
        let mut matching = self.matchers.iter().filter(|m| m.matches(who, &lineage));
        let Some(matcher) = matching.next() else {
            return self.process_bubble(&lineage);
        };
        let first = matcher.bubble;
        let split = matcher.split.and_then(|(priority, burst)| {
            let value = matcher
                .threads
                .as_ref()?
                .captures(&who.name)?
                .name(SPLIT_GROUP)?
                .as_str()
                .to_string();
            Some((value, priority, burst))
        });
        let second = matching.next().map(|m| m.bubble);
        let bubble = match split {
            Some((value, priority, burst)) => self.split_bubble(first, value, priority, burst),
            None => first,
        };
        if let Some(second) = second
            && self.overlaps_said.insert((first, second))
        {
            self.notes.push(format!(
                "thread {} ({:?}) matches bubbles {:?} and {:?}; it goes in {:?} (the first rule)",
                who.tid,
                who.name,
                self.set.get(first).name,
                self.set.get(second).name,
                self.set.get(first).name
            ));
        }
        Some(bubble)
    }

    /// Process `pid` and the processes that started it, nearest first, as
    /// far as pinlearn saw them start (at most 64: PIDs are reused, so a
    /// chain of parents may loop).
    fn lineage(&self, pid: u32) -> Vec<u32> {
        let mut lineage = vec![pid];
        while lineage.len() < 64 {
            match self.process_parents.get(lineage.last().expect("not empty")) {
                Some(&ppid) if !lineage.contains(&ppid) => lineage.push(ppid),
                _ => break,
            }
        }
        lineage
    }

    /// The bubble NAME/VALUE nested in `parent` for a pattern group's
    /// value, made on first use; `parent` itself when no more bubbles may be
    /// made or the name is taken.
    fn split_bubble(&mut self, parent: usize, value: String, priority: i32, burst: Option<PlaceKind>) -> usize {
        if let Some(&bubble) = self.split_bubbles.get(&(parent, value.clone())) {
            return bubble;
        }
        let parent_name = self.set.get(parent).name.clone();
        let spec = BubbleSpec {
            name: format!("{parent_name}/{value}"),
            parent: Some(parent_name),
            priority,
            burst,
            load: None,
        };
        let bubble = self.make(spec).unwrap_or(parent);
        self.split_bubbles.insert((parent, value), bubble);
        bubble
    }

    /// `auto = "process"`: the bubble "process PID" of the first process of
    /// `lineage` ([`Self::lineage`]), nested in the bubble of the process
    /// that started it (made first if need be, down from the farthest);
    /// `None` without `auto`, or when no more bubbles may be made.
    fn process_bubble(&mut self, lineage: &[u32]) -> Option<usize> {
        self.process_bubbles.as_ref()?;
        let mut parent = None;
        for &pid in lineage.iter().rev() {
            if let Some(&bubble) = self.process_bubbles.as_ref()?.get(&pid) {
                parent = Some(bubble);
                continue;
            }
            let spec = BubbleSpec {
                name: format!("process {pid}"),
                parent: parent.map(|p| self.set.get(p).name.clone()),
                priority: 0,
                burst: None,
                load: None,
            };
            // A process whose bubble cannot be made goes in its parent's.
            parent = self.make(spec).or(parent);
            if let Some(bubble) = parent {
                self.process_bubbles.as_mut()?.insert(pid, bubble);
            }
        }
        parent
    }

    /// Adds a bubble made while running, unless [`MAX_MADE_BUBBLES`] were
    /// made already or the name is taken (each said once).
    fn make(&mut self, spec: BubbleSpec) -> Option<usize> {
        if self.made >= MAX_MADE_BUBBLES {
            if !std::mem::replace(&mut self.made_full_said, true) {
                self.notes.push(format!(
                    "{MAX_MADE_BUBBLES} bubbles were made while the program ran; threads that would need a new one go in its parent"
                ));
            }
            return None;
        }
        match self.set.add(spec) {
            Ok(bubble) => {
                self.made += 1;
                Some(bubble)
            }
            Err(error) => {
                self.notes.push(format!("{error}; its threads go in its parent"));
                None
            }
        }
    }

    /// Notes not yet shown to the user.
    pub fn take_notes(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn who(pid: u32, name: &str) -> ThreadInfo {
        ThreadInfo {
            pid,
            tid: pid + 1,
            name: name.to_string(),
            ppid: 0,
        }
    }

    /// A thread of process `pid`, started by process `ppid`.
    fn thread(pid: u32, ppid: u32, name: &str) -> ThreadInfo {
        ThreadInfo {
            pid,
            tid: pid * 10,
            name: name.to_string(),
            ppid,
        }
    }

    fn error(text: &str) -> String {
        BubbleRules::parse(text, "r.toml").unwrap_err().to_string()
    }

    #[test]
    fn names_and_pids_put_threads_in_the_first_matching_bubble() {
        let mut rules = BubbleRules::parse(
            "[[bubble]]\nname = \"a\"\nthreads = \"^grpa-\"\n[[bubble]]\nname = \"b\"\nthreads = \"^grp\"\npids = [77]\n",
            "r.toml",
        )
        .unwrap();
        let (a, b) = (rules.set().index("a"), rules.set().index("b"));
        assert_eq!(rules.classify(&who(1, "grpa-0")), a);
        assert_eq!(rules.classify(&who(1, "grpb-0")), b);
        assert_eq!(rules.classify(&who(77, "main")), b);
        assert_eq!(rules.classify(&who(1, "main")), None);
        let notes = rules.take_notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("matches bubbles \"a\" and \"b\""), "{notes:?}");
        rules.classify(&who(2, "grpa-1"));
        assert!(rules.take_notes().is_empty(), "said once per pair");
    }

    #[test]
    fn a_bubble_group_in_the_pattern_makes_one_nested_bubble_per_value() {
        let mut rules = BubbleRules::parse(
            "[[bubble]]\nname = \"mpi\"\nthreads = \"^rank(?<bubble>\\\\d+)-\"\nburst = \"node\"\npriority = 3\n",
            "r.toml",
        )
        .unwrap();
        let mpi = rules.set().index("mpi").unwrap();
        assert_eq!(rules.set().get(mpi).burst, None, "the level goes to the groups");
        let zero = rules.classify(&who(1, "rank0-a")).unwrap();
        assert_eq!(rules.classify(&who(1, "rank0-b")), Some(zero));
        let one = rules.classify(&who(2, "rank1-a")).unwrap();
        assert_ne!(zero, one);
        let set = rules.set();
        assert_eq!(set.get(zero).name, "mpi/0");
        assert_eq!(set.get(one).parent, Some(mpi));
        assert_eq!((set.get(one).burst, set.get(one).priority), (Some(PlaceKind::Node), 3));
        assert_eq!(rules.classify(&who(3, "other")), None);
        assert!(rules.take_notes().is_empty());
    }

    #[test]
    fn pattern_groups_make_a_bounded_number_of_bubbles() {
        let mut rules =
            BubbleRules::parse("[[bubble]]\nname = \"t\"\nthreads = \"^(?<bubble>.*)$\"\n", "r.toml").unwrap();
        let parent = rules.set().index("t").unwrap();
        for value in 0..MAX_MADE_BUBBLES {
            assert_ne!(rules.classify(&who(1, &format!("n{value}"))), Some(parent));
        }
        assert_eq!(rules.classify(&who(1, "one-more")), Some(parent));
        assert_eq!(rules.classify(&who(1, "and-another")), Some(parent));
        assert_eq!(rules.set().len(), MAX_MADE_BUBBLES + 1);
        let notes = rules.take_notes();
        assert_eq!(notes.len(), 1, "{notes:?}");
    }

    #[test]
    fn auto_process_nests_each_process_in_the_one_that_started_it() {
        let mut rules = BubbleRules::parse(
            "auto = \"process\"\n[[bubble]]\nname = \"io\"\nthreads = \"^io-\"\n",
            "r.toml",
        )
        .unwrap();
        let root = rules.classify(&thread(100, 0, "main")).unwrap();
        let child = rules.classify(&thread(200, 100, "worker")).unwrap();
        let grandchild = rules.classify(&thread(300, 200, "worker")).unwrap();
        let set = rules.set();
        assert_eq!(set.get(root).name, "process 100");
        assert_eq!(set.get(root).parent, None);
        assert_eq!(set.get(child).parent, Some(root));
        assert_eq!(set.get(grandchild).parent, Some(child));
        assert_eq!(rules.classify(&thread(200, 100, "worker-2")), Some(child));
        // Rules come first.
        assert_eq!(rules.classify(&thread(200, 100, "io-0")), rules.set().index("io"));
        let err = BubbleRules::parse("auto = \"thread\"\n", "r.toml")
            .unwrap_err()
            .to_string();
        assert!(err.contains("the only automatic grouping is \"process\""), "{err}");
        let only_auto = BubbleRules::parse("auto = \"process\"\n", "r.toml").unwrap();
        assert!(only_auto.set().is_empty());
    }

    #[test]
    fn auto_process_survives_parents_that_loop_through_reused_pids() {
        let mut rules = BubbleRules::parse("auto = \"process\"\n", "r.toml").unwrap();
        // 500 was started by 600 (its bubble made with 500's), and (a
        // reused PID) 600 by 500: the chain of parents loops.
        let first = rules.classify(&thread(500, 600, "a")).unwrap();
        let second = rules.classify(&thread(600, 500, "b")).unwrap();
        let third = rules.classify(&thread(700, 600, "c")).unwrap();
        let set = rules.set();
        assert_eq!(set.get(first).name, "process 500");
        assert_eq!(set.get(second).name, "process 600");
        assert_eq!(set.get(first).parent, Some(second));
        assert_eq!(set.get(third).parent, Some(second));
        assert_eq!(set.len(), 3, "no bubble made twice");
        assert_eq!(rules.classify(&thread(500, 600, "a-2")), Some(first));
    }

    #[test]
    fn a_process_tree_holds_the_threads_of_every_process_it_starts() {
        let mut rules = BubbleRules::parse(
            "[[bubble]]\nname = \"job\"\nprocess_trees = [100]\n[[bubble]]\nname = \"io\"\nthreads = \"^io-\"\n",
            "r.toml",
        )
        .unwrap();
        let job = rules.set().index("job");
        assert_eq!(rules.classify(&thread(100, 0, "launcher")), job);
        assert_eq!(rules.classify(&thread(200, 100, "rank0")), job);
        assert_eq!(rules.classify(&thread(300, 200, "helper")), job, "a grandchild");
        assert_eq!(rules.classify(&thread(400, 0, "other")), None, "another tree");
        assert_eq!(rules.classify(&thread(500, 400, "other-child")), None);
        // The first matching rule wins, as for names and PIDs.
        assert_eq!(rules.classify(&thread(200, 100, "io-1")), job);
        // A chain of parents that loops (PIDs reused) ends.
        assert_eq!(rules.classify(&thread(600, 700, "a")), None);
        assert_eq!(rules.classify(&thread(700, 600, "b")), None);
        assert!(
            error("[[bubble]]\nname = \"a\"\npids = [5]\n[[bubble]]\nname = \"b\"\nprocess_trees = [5]\n")
                .contains("PID 5 is listed in bubbles \"a\" and \"b\"")
        );
        assert!(error("[[bubble]]\nname = \"a\"\nprocess_trees = [-1]\n").contains("r.toml"));
    }

    #[test]
    fn nesting_priority_burst_and_load_reach_the_bubble_set() {
        let rules = BubbleRules::parse(
            "[[bubble]]\nname = \"inner\"\nin = \"outer\"\nthreads = \"x\"\nburst = \"L3\"\npriority = 2\nload = 1.5\n[[bubble]]\nname = \"outer\"\n",
            "r.toml",
        )
        .unwrap();
        let set = rules.set();
        let inner = set.get(set.index("inner").unwrap());
        assert_eq!(inner.parent, set.index("outer"));
        assert_eq!(inner.burst, Some(PlaceKind::L3));
        assert_eq!((inner.priority, inner.load), (2, Some(1.5)));
    }

    #[test]
    fn bad_rules_are_one_clear_line() {
        let cases = [
            ("[[bubble]\nname = 1", "bubbles file r.toml:"),
            ("", "no [[bubble]] is declared"),
            (
                "[[bubble]]\nname = \"a\"\nthreads = \"x\"\nburst = \"socket\"\n",
                "unknown burst level \"socket\"",
            ),
            (
                "[[bubble]]\nname = \"a\"\nin = \"a\"\nthreads = \"x\"\n",
                "nested in itself",
            ),
            (
                "[[bubble]]\nname = \"a\"\npids = [5]\n[[bubble]]\nname = \"b\"\npids = [5]\n",
                "PID 5 is listed in bubbles \"a\" and \"b\"",
            ),
            ("[[bubble]]\nname = \"a\"\nthreads = \"(\"\n", "threads pattern \"(\""),
            ("[[bubble]]\nname = \"a\"\n", "can hold no thread"),
            (
                "[[bubble]]\nname = \"a\"\nthreads = \"x\"\ncolour = 1\n",
                "unknown field `colour`",
            ),
            (
                "[[bubble]]\nname = \"a\"\nthreads = \"x\"\nload = -1.0\n",
                "load -1 is not a number",
            ),
        ];
        for (text, expected) in cases {
            let message = error(text);
            assert!(message.contains(expected), "{text:?}: {message}");
            assert!(!message.contains('\n'), "{text:?}: {message}");
        }
    }
}
