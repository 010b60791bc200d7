//! The pinlearn manager: learn where each thread of a running program should
//! run, and re-pin it.
//!
//! ```text
//!   Request (settings, --cpus, --trace)
//!      │ Session::prepare: validate everything before touching any thread
//!      ▼
//!   Session ─► Engine (policy over Places) ◄──── Target seam ────► LiveProcess (/proc, schedstat,
//!      │            ▲ step() once per T_CPU                              perf, heartbeats,
//!      │            │                                                    sched_setaffinity)
//!      ▼            │                                                 or a simulated machine
//!   supervise::run / attach (real time, signals)   inprocess::Manager (thread in the app)
//!      │
//!      ▼
//!   restore masks ─► Summary (text or JSON), trace CSV
//! ```

pub mod bubbles;
pub mod config;
pub mod declared;
mod engine;
mod error;
pub mod events;
pub mod inprocess;
pub mod levels;
pub mod live;
pub mod memory;
pub mod outside;
mod pace;
mod places;
pub mod preload;
pub mod session;
pub mod status;
pub mod supervise;
pub mod target;
mod trace;

pub use config::{ManagerPriority, MemoryFollows, Metric, PolicyChoice, Settings, format_duration, parse_duration};
pub use declared::{BubbleApi, BubbleId, DeclaredBubbles};
pub use engine::{Engine, PlaceShare, RemoteShare, ThreadSummary};
pub use error::EngineError;
pub use inprocess::{Manager, Registrar, Registration};
pub use places::Places;
pub use session::{Request, Session};
pub use supervise::{GuardSummary, Stop, Summary};
pub use target::{Target, ThreadInfo, printable, queued_share};
pub use trace::Trace;
