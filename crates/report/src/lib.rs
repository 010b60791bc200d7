//! Numbers to reports: summary statistics, tables (aligned text and
//! Markdown) and SVG plots, shared by `pinlearn bench` (real runs) and
//! `pinlearn sim` (modelled runs).
//!
//! ```text
//!   completion times ─► stats() ─► Stats { n, mean, median, dev, min, max }
//!                                     │
//!   rows of cells ──────────────────► Table ─► to_text()      (terminal)
//!                                     │      └► to_markdown()  (docs, --markdown)
//!                                     ▼
//!   (scheduler, Stats) ─────────────► bar_plot()   ─► SVG: median bars, min-max whiskers
//!   (scheduler, [(time, speed)]) ───► speed_plot() ─► SVG: one line per scheduler
//! ```
//!
//! `Output` is where a report goes: a file or stdout (`-`).
//!
//! Plots are SVG only: text goes into `<text>` elements that the viewer lays
//! out, so no font library and no system fonts are needed.

mod output;
mod plot;
mod stats;
mod table;

pub use output::Output;
pub use plot::{Axes, bar_plot, speed_plot};
pub use stats::{MedianInterval, Stats, median_interval, stats};
pub use table::Table;

/// Why a report could not be written.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// Nothing to draw: every series or bar was empty or not finite.
    #[error("cannot draw {path}: {what}")]
    NoData { path: String, what: String },
    /// The SVG backend failed (usually: the file cannot be created).
    #[error("cannot write plot {path}: {reason}")]
    Draw { path: String, reason: String },
}
