//! The bubble calls of a program supervised from outside (`pinlearn run` or
//! `attach`): checked in the program as an in-process manager would check
//! them, then sent over the bubble channel.
//!
//! ```text
//!   pinlearn_connect() ─► OutsideBubbles::connect
//!        │  places: $PINLEARN_LEVELS (set by `pinlearn run --policy bubbles`:
//!        │          the places pinlearn itself uses), else this machine's
//!        │          topology within the process's CPUs
//!        ▼
//!   create / insert / ... ─► DeclaredBubbles (local checks, numbers) ─► BubbleChannelWriter::append
//!        ─► pinlearn: LiveProcess reads the channel every period ─► the same checks ─► the spread
//! ```
//!
//! A wake-up from outside cannot wait for the manager: it is sent, and
//! the bubbles are placed at pinlearn's next period.

use crate::EngineError;
use crate::declared::{BubbleApi, BubbleId, DeclaredBubbles};
use crate::places::Places;
use pinlearn_heartbeat::{BubbleChannelWriter, BubbleOp};
use pinlearn_policy::PlaceKind;
use pinlearn_topology::{CpuSet, Topology};

/// Environment variable through which `pinlearn run` tells the program its
/// places: `LEVEL=CPUS|CPUS|...;LEVEL=...` (see [`encode_levels`]).
pub const LEVELS_ENV: &str = "PINLEARN_LEVELS";

/// `levels` as the value of [`LEVELS_ENV`]: `machine=0-7;node=0-3|4-7;core=0|1|...`.
pub fn encode_levels(levels: &[(PlaceKind, Vec<CpuSet>)]) -> String {
    levels
        .iter()
        .map(|(kind, places)| {
            let places: Vec<String> = places.iter().map(ToString::to_string).collect();
            format!("{}={}", kind.level_name(), places.join("|"))
        })
        .collect::<Vec<_>>()
        .join(";")
}

/// The levels of a [`LEVELS_ENV`] value.
pub fn decode_levels(text: &str) -> Result<Vec<(PlaceKind, Vec<CpuSet>)>, String> {
    text.split(';')
        .map(|level| {
            let (name, places) = level
                .split_once('=')
                .ok_or_else(|| format!("{level:?} is not LEVEL=CPUS|CPUS..."))?;
            let kind = PlaceKind::from_level_name(name).ok_or_else(|| format!("unknown level {name:?}"))?;
            let places = places
                .split('|')
                .map(|cpus| CpuSet::parse_list(cpus).map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            Ok((kind, places))
        })
        .collect()
}

/// A program's bubbles, sent to the pinlearn supervising it.
#[derive(Debug)]
pub struct OutsideBubbles {
    declared: DeclaredBubbles,
    writer: BubbleChannelWriter,
    levels: Vec<(PlaceKind, Vec<CpuSet>)>,
}

impl OutsideBubbles {
    /// Creates this process's bubble channel; the places come from
    /// [`LEVELS_ENV`] when `pinlearn run` set it, else from this machine.
    pub fn connect() -> Result<Self, EngineError> {
        let levels = match std::env::var(LEVELS_ENV) {
            Ok(text) => {
                decode_levels(&text).map_err(|why| EngineError::bad_input(format!("{LEVELS_ENV}={text:?}: {why}")))?
            }
            Err(_) => {
                let allowed = crate::live::get_affinity(0)
                    .map_err(|e| EngineError::io("cannot read this process's affinity", e))?;
                let machine = Topology::detect()
                    .map_err(|e| EngineError::io("cannot read the machine topology", std::io::Error::other(e)))?;
                let topology = machine
                    .restrict(&allowed)
                    .map_err(|e| EngineError::bad_input(e.to_string()))?;
                Places::new(&topology).levels()
            }
        };
        // The tree has a machine place above the nodes only when there
        // are two nodes or more (with one, the node is the root).
        let nodes = levels
            .iter()
            .find(|(kind, _)| *kind == PlaceKind::Node)
            .map_or(1, |(_, places)| places.len());
        let burst = levels
            .iter()
            .map(|(kind, _)| *kind)
            .filter(|&kind| kind != PlaceKind::Machine || nodes > 1)
            .collect();
        let writer = BubbleChannelWriter::create()
            .map_err(|e| EngineError::io("cannot create the bubble channel", std::io::Error::other(e)))?;
        Ok(OutsideBubbles {
            declared: DeclaredBubbles::new(Some(burst)),
            writer,
            levels,
        })
    }

    /// The channel file.
    pub fn path(&self) -> &std::path::Path {
        self.writer.path()
    }

    /// Checks `op`'s text fits a record, makes the change here with
    /// `local`, then sends `op`.
    fn send<T>(&self, op: BubbleOp, local: impl FnOnce() -> Result<T, EngineError>) -> Result<T, EngineError> {
        op.encode().map_err(EngineError::bad_input)?;
        let value = local()?;
        self.writer
            .append(&op)
            .map_err(|e| EngineError::io(e, std::io::Error::other("write")))?;
        Ok(value)
    }
}

impl BubbleApi for OutsideBubbles {
    fn bubbles(&self) -> &DeclaredBubbles {
        &self.declared
    }

    fn levels(&self) -> &[(PlaceKind, Vec<CpuSet>)] {
        &self.levels
    }

    fn create(&self, name: Option<&str>, parent: Option<BubbleId>) -> Result<BubbleId, EngineError> {
        // The number the next bubble gets, for its default name.
        let next = self.declared.count();
        let name = name.map_or_else(|| format!("bubble {next}"), str::to_string);
        let op = BubbleOp::Create {
            bubble: next as u32,
            parent: parent.map(|p| p.0),
            name: name.clone(),
        };
        self.send(op, || self.declared.create(Some(&name), parent))
    }

    fn insert_thread(&self, bubble: BubbleId, tid: u32) -> Result<(), EngineError> {
        self.send(BubbleOp::InsertThread { bubble: bubble.0, tid }, || {
            self.declared.insert_thread(bubble, tid)
        })
    }

    fn insert_current_thread(&self, bubble: BubbleId) -> Result<(), EngineError> {
        self.insert_thread(bubble, crate::live::current_tid())
    }

    fn remove_thread(&self, tid: u32) -> Result<(), EngineError> {
        self.send(BubbleOp::RemoveThread { tid }, || self.declared.remove_thread(tid))
    }

    fn insert_bubble(&self, bubble: BubbleId, child: BubbleId) -> Result<(), EngineError> {
        self.send(
            BubbleOp::InsertBubble {
                bubble: bubble.0,
                child: child.0,
            },
            || self.declared.insert_bubble(bubble, child),
        )
    }

    fn set_priority(&self, bubble: BubbleId, priority: i32) -> Result<(), EngineError> {
        self.send(
            BubbleOp::SetPriority {
                bubble: bubble.0,
                priority,
            },
            || self.declared.set_priority(bubble, priority),
        )
    }

    fn set_burst(&self, bubble: BubbleId, level: Option<&str>) -> Result<(), EngineError> {
        let op = BubbleOp::SetBurst {
            bubble: bubble.0,
            level: level.map(str::to_string),
        };
        self.send(op, || self.declared.set_burst(bubble, level))
    }

    fn set_load(&self, bubble: BubbleId, load: Option<f64>) -> Result<(), EngineError> {
        self.send(BubbleOp::SetLoad { bubble: bubble.0, load }, || {
            self.declared.set_load(bubble, load)
        })
    }

    fn set_thread_load(&self, tid: u32, load: Option<f64>) -> Result<(), EngineError> {
        self.send(BubbleOp::SetThreadLoad { tid, load }, || {
            self.declared.set_thread_load(tid, load)
        })
    }

    fn shake(&self) -> Result<(), EngineError> {
        self.send(BubbleOp::Shake, || self.declared.shake())
    }

    fn wake_up(&self, bubble: BubbleId) -> Result<(), EngineError> {
        self.send(BubbleOp::WakeUp { bubble: bubble.0 }, || self.declared.check(bubble))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_travel_through_the_environment_unchanged() {
        let levels = vec![
            (PlaceKind::Machine, vec![CpuSet::parse_list("0-3").unwrap()]),
            (
                PlaceKind::Node,
                vec![CpuSet::parse_list("0-1").unwrap(), CpuSet::parse_list("2,3").unwrap()],
            ),
        ];
        let text = encode_levels(&levels);
        assert_eq!(text, "machine=0-3;node=0-1|2-3");
        assert_eq!(decode_levels(&text).unwrap(), levels);
        for bad in ["node", "rack=0", "node=0|x", ""] {
            assert!(decode_levels(bad).is_err(), "{bad:?}");
        }
    }
}
