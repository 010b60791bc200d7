//! Bubbles a program declares itself: the in-process half of paper 001's
//! API (Marcel's `bubble_init`, `inserttask`, `insertbubble`, `setprio`,
//! `set sched level`), for programs that know which of their threads belong
//! together.
//!
//! ```text
//!   app threads ── create / insert_thread / insert_bubble / remove_thread /
//!                  set_priority / set_burst / set_load / set_thread_load / shake
//!        │            (checked at once: a bad call is an error, nothing changes)
//!        ▼
//!   DeclaredBubbles (shared, version bumped by every change)
//!        │  Engine::step, each period (or at once on a wake-up,
//!        │  inprocess::Registrar::wake_up): changed since last seen?
//!        ▼
//!   BubbleRules::declared(set, members) ─► the bubbles policy's input
//! ```
//!
//! A bubble is known by its [`BubbleId`] (the order of creation); its name
//! is the caller's or `bubble N`. Everything here is pure bookkeeping under
//! one lock: no syscall, so it is tested without a kernel.

use crate::EngineError;
use crate::bubbles::BubbleRules;
use pinlearn_heartbeat::BubbleOp;
use pinlearn_policy::{BubbleSet, BubbleSpec, PlaceKind};
use pinlearn_topology::CpuSet;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};

/// Most bubbles a program may declare.
pub const MAX_DECLARED_BUBBLES: usize = 65_536;

/// Longest bubble name, in bytes.
pub const MAX_BUBBLE_NAME: usize = 256;

/// A bubble declared by the program: its place in the order of creation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct BubbleId(pub u32);

#[derive(Clone, Debug)]
struct Declared {
    spec: BubbleSpec,
    parent: Option<usize>,
}

#[derive(Debug, Default)]
struct State {
    bubbles: Vec<Declared>,
    names: HashMap<String, usize>,
    /// The bubble of each thread put in one.
    thread_bubble: BTreeMap<u32, usize>,
    /// The loads declared for threads (by thread id).
    thread_load: BTreeMap<u32, f64>,
    /// Bumped by every change.
    version: u64,
    /// Bumped by every shake.
    shakes: u64,
}

/// The bubbles a program declares, shared between its threads and the
/// manager (cheap to clone: one shared state).
#[derive(Clone, Debug)]
pub struct DeclaredBubbles {
    state: Arc<Mutex<State>>,
    /// Why declarations are refused (the manager does not place bubbles).
    refused: Option<String>,
    /// The levels of the machine's tree (burst levels outside it are refused);
    /// `None`: not known, every level is taken.
    levels: Option<Vec<PlaceKind>>,
}

/// What the engine takes from the declarations when they changed.
pub(crate) struct DeclaredSnapshot {
    pub version: u64,
    pub rules: BubbleRules,
    pub shakes: u64,
}

impl DeclaredBubbles {
    /// Declarations placed by a manager whose tree has `levels`.
    pub fn new(levels: Option<Vec<PlaceKind>>) -> Self {
        DeclaredBubbles {
            state: Arc::default(),
            refused: None,
            levels,
        }
    }

    /// Declarations nobody places: every call says `why`.
    pub fn refusing(why: impl Into<String>) -> Self {
        DeclaredBubbles {
            state: Arc::default(),
            refused: Some(why.into()),
            levels: None,
        }
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, EngineError> {
        if let Some(why) = &self.refused {
            return Err(EngineError::bad_input(why.clone()));
        }
        Ok(self.state.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Creates a bubble nested in `parent` (`None`: the root). `name`:
    /// unique, at most [`MAX_BUBBLE_NAME`] bytes, no control characters;
    /// `None` names it `bubble N`.
    pub fn create(&self, name: Option<&str>, parent: Option<BubbleId>) -> Result<BubbleId, EngineError> {
        let mut state = self.lock()?;
        let id = state.bubbles.len();
        if id >= MAX_DECLARED_BUBBLES {
            return Err(EngineError::bad_input(format!(
                "{MAX_DECLARED_BUBBLES} bubbles are declared already: reuse bubbles rather than creating more"
            )));
        }
        let parent = parent.map(|p| state.index(p)).transpose()?;
        let name = match name {
            Some(name) => {
                if name.trim().is_empty() || name.len() > MAX_BUBBLE_NAME || name.chars().any(char::is_control) {
                    return Err(EngineError::bad_input(format!(
                        "bubble name {name:?}: give 1 to {MAX_BUBBLE_NAME} bytes without control characters"
                    )));
                }
                name.to_string()
            }
            None => format!("bubble {id}"),
        };
        if state.names.contains_key(&name) {
            return Err(EngineError::bad_input(format!(
                "bubble {name:?} is declared twice: give each bubble its own name"
            )));
        }
        let mut spec = BubbleSpec::new(name.clone());
        spec.parent = parent.map(|p| state.bubbles[p].spec.name.clone());
        state.bubbles.push(Declared { spec, parent });
        state.names.insert(name, id);
        state.version += 1;
        Ok(BubbleId(id as u32))
    }

    /// Puts thread `tid` in `bubble`. A thread is in one bubble at a time:
    /// one already in another must be removed first.
    pub fn insert_thread(&self, bubble: BubbleId, tid: u32) -> Result<(), EngineError> {
        let mut state = self.lock()?;
        let index = state.index(bubble)?;
        if tid == 0 {
            return Err(EngineError::bad_input(
                "thread id 0: give the id of a thread of this program",
            ));
        }
        match state.thread_bubble.get(&tid) {
            Some(&at) if at == index => return Ok(()),
            Some(&at) => {
                return Err(EngineError::bad_input(format!(
                    "thread {tid} is in bubble {:?} already: remove it before putting it in {:?}",
                    state.bubbles[at].spec.name, state.bubbles[index].spec.name
                )));
            }
            None => {}
        }
        state.thread_bubble.insert(tid, index);
        state.version += 1;
        Ok(())
    }

    /// Takes thread `tid` out of its bubble (back to the root).
    pub fn remove_thread(&self, tid: u32) -> Result<(), EngineError> {
        if !self.take_out(tid)? {
            return Err(EngineError::bad_input(format!(
                "thread {tid} is in no bubble (a thread leaves its bubble when it ends)"
            )));
        }
        Ok(())
    }

    /// Takes thread `tid` out of its bubble; whether it was in one.
    fn take_out(&self, tid: u32) -> Result<bool, EngineError> {
        let mut state = self.lock()?;
        let was_in = state.thread_bubble.remove(&tid).is_some();
        if was_in {
            state.version += 1;
        }
        Ok(was_in)
    }

    /// Nests `child` (a bubble of the root) in `bubble`.
    pub fn insert_bubble(&self, bubble: BubbleId, child: BubbleId) -> Result<(), EngineError> {
        let mut state = self.lock()?;
        let (outer, inner) = (state.index(bubble)?, state.index(child)?);
        if let Some(parent) = state.bubbles[inner].parent {
            if parent == outer {
                return Ok(());
            }
            return Err(EngineError::bad_input(format!(
                "bubble {:?} is nested in {:?} already: a bubble has one parent",
                state.bubbles[inner].spec.name, state.bubbles[parent].spec.name
            )));
        }
        let mut at = Some(outer);
        while let Some(place) = at {
            if place == inner {
                return Err(EngineError::bad_input(format!(
                    "bubble {:?} cannot go in {:?}: a bubble cannot hold itself or its own ancestors",
                    state.bubbles[inner].spec.name, state.bubbles[outer].spec.name
                )));
            }
            at = state.bubbles[place].parent;
        }
        let parent_name = state.bubbles[outer].spec.name.clone();
        let declared = &mut state.bubbles[inner];
        declared.parent = Some(outer);
        declared.spec.parent = Some(parent_name);
        state.version += 1;
        Ok(())
    }

    /// Higher priorities are placed first.
    pub fn set_priority(&self, bubble: BubbleId, priority: i32) -> Result<(), EngineError> {
        self.change(bubble, |spec| spec.priority = priority)
    }

    /// The level at which the bubble opens (`machine`, `package`, `die`,
    /// `l3`, `node` or `core`), or `None` for wherever the spread needs.
    pub fn set_burst(&self, bubble: BubbleId, level: Option<&str>) -> Result<(), EngineError> {
        let burst = match level {
            None => None,
            Some(level) => {
                let names: Vec<&str> = PlaceKind::LEVELS.iter().map(|(_, w)| *w).collect();
                let kind = PlaceKind::from_level_name(level).ok_or_else(|| {
                    EngineError::bad_input(format!("unknown level {level:?}: use one of {}", names.join(", ")))
                })?;
                if let Some(levels) = &self.levels
                    && !levels.contains(&kind)
                {
                    let present: Vec<&str> = levels.iter().map(|k| k.level_name()).collect();
                    return Err(EngineError::bad_input(format!(
                        "level {level:?} is not in this machine's tree (it has {})",
                        present.join(", ")
                    )));
                }
                Some(kind)
            }
        };
        self.change(bubble, |spec| spec.burst = burst)
    }

    /// The bubble's load instead of the sum of its threads' (a number >= 0),
    /// or `None` to count its threads again.
    pub fn set_load(&self, bubble: BubbleId, load: Option<f64>) -> Result<(), EngineError> {
        if let Some(load) = load
            && !(load.is_finite() && load >= 0.0)
        {
            return Err(EngineError::bad_input(format!(
                "load {load} is not a number of at least 0"
            )));
        }
        self.change(bubble, |spec| spec.load = load)
    }

    /// Thread `tid`'s load instead of its measured one (a number >= 0: 0
    /// for a thread that only waits, as a parent joining its children), or
    /// `None` to measure it again. Held until changed or the thread ends.
    pub fn set_thread_load(&self, tid: u32, load: Option<f64>) -> Result<(), EngineError> {
        if let Some(load) = load
            && !(load.is_finite() && load >= 0.0)
        {
            return Err(EngineError::bad_input(format!(
                "load {load} is not a number of at least 0"
            )));
        }
        if tid == 0 {
            return Err(EngineError::bad_input(
                "thread id 0: give the id of a thread of this program",
            ));
        }
        let mut state = self.lock()?;
        let changed = match load {
            Some(load) => state.thread_load.insert(tid, load) != Some(load),
            None => state.thread_load.remove(&tid).is_some(),
        };
        if changed {
            state.version += 1;
        }
        Ok(())
    }

    /// Forgets the bubble and the declared load of threads that ended: a
    /// thread id the kernel gives again names another thread, which starts
    /// in no bubble, measured. Called by the engine as it retires threads.
    pub(crate) fn forget_threads(&self, tids: &[u32]) {
        let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let mut changed = false;
        for tid in tids {
            changed |= state.thread_bubble.remove(tid).is_some();
            changed |= state.thread_load.remove(tid).is_some();
        }
        if changed {
            state.version += 1;
        }
    }

    /// Asks for a fresh spread of everything, ignoring where threads are.
    pub fn shake(&self) -> Result<(), EngineError> {
        let mut state = self.lock()?;
        state.shakes += 1;
        state.version += 1;
        Ok(())
    }

    /// Says whether `bubble` exists (an error naming how many do).
    pub fn check(&self, bubble: BubbleId) -> Result<(), EngineError> {
        self.lock()?.index(bubble).map(drop)
    }

    /// Carries out a declaration read from a bubble channel, with the
    /// checks of the call it stands for (a wake-up only checks its bubble:
    /// outside the program, declarations are placed at the next period;
    /// removing a thread in no bubble is not an error here: the manager
    /// takes a thread out of its bubble when it sees it end, before the
    /// program may).
    pub fn apply(&self, op: &BubbleOp) -> Result<(), EngineError> {
        match op {
            BubbleOp::Create { bubble, parent, name } => {
                let made = self.create(Some(name), parent.map(BubbleId))?;
                if made.0 != *bubble {
                    return Err(EngineError::bad_input(format!(
                        "bubble {name:?} was sent as number {bubble} but is number {} here",
                        made.0
                    )));
                }
                Ok(())
            }
            BubbleOp::InsertThread { bubble, tid } => self.insert_thread(BubbleId(*bubble), *tid),
            // The program checked it against its own declarations; here the
            // thread may have ended already, which took it out.
            BubbleOp::RemoveThread { tid } => self.take_out(*tid).map(drop),
            BubbleOp::InsertBubble { bubble, child } => self.insert_bubble(BubbleId(*bubble), BubbleId(*child)),
            BubbleOp::SetPriority { bubble, priority } => self.set_priority(BubbleId(*bubble), *priority),
            BubbleOp::SetBurst { bubble, level } => self.set_burst(BubbleId(*bubble), level.as_deref()),
            BubbleOp::SetLoad { bubble, load } => self.set_load(BubbleId(*bubble), *load),
            BubbleOp::Shake => self.shake(),
            BubbleOp::WakeUp { bubble } => self.check(BubbleId(*bubble)),
            BubbleOp::SetThreadLoad { tid, load } => self.set_thread_load(*tid, *load),
        }
    }

    /// The bubble called `name`.
    pub fn find(&self, name: &str) -> Option<BubbleId> {
        let state = self.lock().ok()?;
        state.names.get(name).map(|&i| BubbleId(i as u32))
    }

    /// How many bubbles are declared (the number the next one gets).
    pub fn count(&self) -> usize {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).bubbles.len()
    }

    /// The version of the declarations (bumped by every change).
    pub fn version(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).version
    }

    fn change(&self, bubble: BubbleId, edit: impl FnOnce(&mut BubbleSpec)) -> Result<(), EngineError> {
        let mut state = self.lock()?;
        let index = state.index(bubble)?;
        edit(&mut state.bubbles[index].spec);
        state.version += 1;
        Ok(())
    }

    /// The declarations as bubble rules, if they changed since `seen`
    /// (`None` for the first call: nothing declared yet is version 0).
    pub(crate) fn snapshot_since(&self, seen: u64) -> Option<DeclaredSnapshot> {
        let state = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if state.version == seen {
            return None;
        }
        let specs: Vec<BubbleSpec> = state.bubbles.iter().map(|b| b.spec.clone()).collect();
        let set = BubbleSet::new(specs).expect("declarations are checked as they are made");
        let mut members = vec![Vec::new(); set.len()];
        let set_index: Vec<usize> = state
            .bubbles
            .iter()
            .map(|b| set.index(&b.spec.name).expect("every declared bubble is in the set"))
            .collect();
        for (&tid, &bubble) in &state.thread_bubble {
            members[set_index[bubble]].push(tid);
        }
        Some(DeclaredSnapshot {
            version: state.version,
            rules: BubbleRules::declared(set, members).with_thread_loads(state.thread_load.clone()),
            shakes: state.shakes,
        })
    }
}

/// The bubble calls of paper 001 as a program makes them, whether the
/// manager runs inside the program ([`crate::Registrar`]) or outside it
/// ([`crate::outside::OutsideBubbles`], over the bubble channel).
pub trait BubbleApi {
    /// The declarations, checked as the manager will check them.
    fn bubbles(&self) -> &DeclaredBubbles;
    /// Puts thread `tid` in `bubble` (and under an in-process manager).
    fn insert_thread(&self, bubble: BubbleId, tid: u32) -> Result<(), EngineError>;
    /// Puts the calling thread in `bubble`.
    fn insert_current_thread(&self, bubble: BubbleId) -> Result<(), EngineError>;
    /// Places everything declared so far: at once in-process, at the next
    /// period from outside.
    fn wake_up(&self, bubble: BubbleId) -> Result<(), EngineError>;
    /// The places of each level, outermost first (the machine is one place).
    fn levels(&self) -> &[(PlaceKind, Vec<CpuSet>)];

    fn create(&self, name: Option<&str>, parent: Option<BubbleId>) -> Result<BubbleId, EngineError> {
        self.bubbles().create(name, parent)
    }
    fn remove_thread(&self, tid: u32) -> Result<(), EngineError> {
        self.bubbles().remove_thread(tid)
    }
    fn insert_bubble(&self, bubble: BubbleId, child: BubbleId) -> Result<(), EngineError> {
        self.bubbles().insert_bubble(bubble, child)
    }
    fn set_priority(&self, bubble: BubbleId, priority: i32) -> Result<(), EngineError> {
        self.bubbles().set_priority(bubble, priority)
    }
    fn set_burst(&self, bubble: BubbleId, level: Option<&str>) -> Result<(), EngineError> {
        self.bubbles().set_burst(bubble, level)
    }
    fn set_load(&self, bubble: BubbleId, load: Option<f64>) -> Result<(), EngineError> {
        self.bubbles().set_load(bubble, load)
    }
    /// Thread `tid`'s load instead of its measured one (0: it only waits).
    fn set_thread_load(&self, tid: u32, load: Option<f64>) -> Result<(), EngineError> {
        self.bubbles().set_thread_load(tid, load)
    }
    fn shake(&self) -> Result<(), EngineError> {
        self.bubbles().shake()
    }

    /// How many places the level called `level` has (`machine`, `package`,
    /// `die`, `l3`, `node` or `core`); 0 when the tree lacks that level.
    fn places(&self, level: &str) -> Result<usize, EngineError> {
        Ok(level_places(self.levels(), level)?.len())
    }

    /// The CPUs of place `index` of level `level`.
    fn place_cpus(&self, level: &str, index: usize) -> Result<CpuSet, EngineError> {
        let places = level_places(self.levels(), level)?;
        places.get(index).cloned().ok_or_else(|| {
            EngineError::bad_input(format!(
                "level {level:?} has {} places here: {index} is not one of them",
                places.len()
            ))
        })
    }
}

/// The places of the level called `level` among `levels`.
fn level_places<'a>(levels: &'a [(PlaceKind, Vec<CpuSet>)], level: &str) -> Result<&'a [CpuSet], EngineError> {
    let kind = PlaceKind::from_level_name(level).ok_or_else(|| {
        let names: Vec<&str> = PlaceKind::LEVELS.iter().map(|(_, w)| *w).collect();
        EngineError::bad_input(format!("unknown level {level:?}: use one of {}", names.join(", ")))
    })?;
    Ok(levels
        .iter()
        .find(|(k, _)| *k == kind)
        .map_or(&[][..], |(_, places)| places.as_slice()))
}

impl State {
    fn index(&self, bubble: BubbleId) -> Result<usize, EngineError> {
        let index = bubble.0 as usize;
        if index < self.bubbles.len() {
            Ok(index)
        } else {
            Err(EngineError::bad_input(format!(
                "bubble {} does not exist: {} bubbles are declared",
                bubble.0,
                self.bubbles.len()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::ThreadInfo;

    fn thread(tid: u32) -> ThreadInfo {
        ThreadInfo {
            pid: 1,
            tid,
            name: format!("t{tid}"),
            ppid: 0,
        }
    }

    #[test]
    fn declarations_become_nested_bubbles_holding_their_threads() {
        let declared = DeclaredBubbles::new(None);
        let job = declared.create(Some("job"), None).unwrap();
        let left = declared.create(None, Some(job)).unwrap();
        let right = declared.create(Some("right"), None).unwrap();
        declared.insert_bubble(job, right).unwrap();
        declared.insert_thread(left, 11).unwrap();
        declared.insert_thread(right, 12).unwrap();
        declared.set_priority(right, 3).unwrap();
        declared.set_burst(job, Some("node")).unwrap();
        declared.set_load(left, Some(2.5)).unwrap();
        let snapshot = declared.snapshot_since(0).unwrap();
        assert_eq!(snapshot.version, declared.version());
        let mut rules = snapshot.rules;
        let set = rules.set().clone();
        let (job_at, left_at, right_at) = (
            set.index("job").unwrap(),
            set.index("bubble 1").unwrap(),
            set.index("right").unwrap(),
        );
        assert_eq!(set.get(left_at).parent, Some(job_at));
        assert_eq!(set.get(right_at).parent, Some(job_at));
        assert_eq!(set.get(right_at).priority, 3);
        assert_eq!(set.get(job_at).burst, Some(PlaceKind::Node));
        assert_eq!(set.get(left_at).load, Some(2.5));
        assert_eq!(rules.classify(&thread(11)), Some(left_at));
        assert_eq!(rules.classify(&thread(12)), Some(right_at));
        assert_eq!(rules.classify(&thread(13)), None);
        assert!(declared.snapshot_since(snapshot.version).is_none(), "nothing changed");

        declared.remove_thread(11).unwrap();
        let snapshot = declared.snapshot_since(snapshot.version).unwrap();
        let mut rules = snapshot.rules;
        assert_eq!(rules.classify(&thread(11)), None);
        assert_eq!(declared.find("right"), Some(right));
        assert!(!rules.has_thread_loads());

        declared.set_thread_load(12, Some(0.0)).unwrap();
        let version = declared.version();
        assert!(version > snapshot.version);
        let rules = declared.snapshot_since(snapshot.version).unwrap().rules;
        assert_eq!((rules.thread_load(12), rules.thread_load(11)), (Some(0.0), None));
        declared.set_thread_load(12, Some(0.0)).unwrap();
        assert_eq!(declared.version(), version, "the same load again changes nothing");
        declared.set_thread_load(12, None).unwrap();
        assert_eq!(declared.snapshot_since(version).unwrap().rules.thread_load(12), None);
    }

    #[test]
    fn bad_declarations_are_refused_and_change_nothing() {
        let declared = DeclaredBubbles::new(Some(vec![PlaceKind::Machine, PlaceKind::Node, PlaceKind::Core]));
        let a = declared.create(Some("a"), None).unwrap();
        let b = declared.create(Some("b"), Some(a)).unwrap();
        declared.insert_thread(a, 7).unwrap();
        let before = declared.version();
        let cases: Vec<(Result<(), EngineError>, &str)> = vec![
            (declared.create(Some("a"), None).map(drop), "declared twice"),
            (declared.create(Some(""), None).map(drop), "give 1 to 256 bytes"),
            (
                declared.create(Some("x\ny"), None).map(drop),
                "without control characters",
            ),
            (
                declared.create(None, Some(BubbleId(9))).map(drop),
                "bubble 9 does not exist",
            ),
            (declared.insert_thread(b, 7), "thread 7 is in bubble \"a\" already"),
            (declared.insert_thread(b, 0), "thread id 0"),
            (declared.insert_bubble(b, a), "cannot hold itself or its own ancestors"),
            (declared.insert_bubble(a, a), "cannot hold itself"),
            (declared.remove_thread(8), "thread 8 is in no bubble"),
            (declared.set_burst(a, Some("socket")), "unknown level \"socket\""),
            (
                declared.set_burst(a, Some("l3")),
                "not in this machine's tree (it has machine, node, core)",
            ),
            (declared.set_load(a, Some(-1.0)), "not a number of at least 0"),
            (declared.set_load(a, Some(f64::NAN)), "not a number of at least 0"),
            (declared.set_thread_load(7, Some(-0.5)), "not a number of at least 0"),
            (
                declared.set_thread_load(7, Some(f64::INFINITY)),
                "not a number of at least 0",
            ),
            (declared.set_thread_load(0, Some(0.0)), "thread id 0"),
        ];
        for (result, expected) in cases {
            let message = result.unwrap_err().to_string();
            assert!(message.contains(expected), "{message}");
            assert!(!message.contains('\n'), "{message}");
        }
        assert_eq!(declared.version(), before, "a refused call changes nothing");
        let c = declared.create(Some("c"), None).unwrap();
        declared.insert_bubble(b, c).unwrap();
        let err = declared.insert_bubble(a, c).unwrap_err().to_string();
        assert!(err.contains("nested in \"b\" already"), "{err}");
        declared
            .insert_thread(a, 7)
            .expect("putting a thread where it is changes nothing");
    }

    #[test]
    fn a_thread_the_manager_saw_end_can_still_be_removed_over_the_channel() {
        let declared = DeclaredBubbles::new(None);
        let a = declared.create(Some("a"), None).expect("create");
        declared.insert_thread(a, 7).expect("insert");
        declared.forget_threads(&[7]);
        // The program's own call (in-process) says why it failed...
        let err = declared.remove_thread(7).unwrap_err().to_string();
        assert!(err.contains("leaves its bubble when it ends"), "{err}");
        // ...while the same call read from a channel is carried out.
        declared
            .apply(&BubbleOp::RemoveThread { tid: 7 })
            .expect("a removal that the thread's end did already");
        let version = declared.version();
        declared.forget_threads(&[7, 8]);
        assert_eq!(
            declared.version(),
            version,
            "forgetting unknown threads changes nothing"
        );
    }

    #[test]
    fn a_manager_that_places_no_bubbles_refuses_declarations_with_its_reason() {
        let declared = DeclaredBubbles::refusing("the manager's policy is learn: start it with policy = \"bubbles\"");
        let err = declared.create(Some("a"), None).unwrap_err().to_string();
        assert!(
            err.contains("policy = \\\"bubbles\\\"") || err.contains("policy = \"bubbles\""),
            "{err}"
        );
        assert!(declared.snapshot_since(0).is_none());
    }
}
