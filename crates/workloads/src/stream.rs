//! The STREAM triad: a memory-bandwidth-bound loop over arrays far larger
//! than the caches, for the memory side of placement (NUMA nodes, shared
//! memory controllers, first-touch page placement).
//!
//! ```text
//!   a, b, c: 3 arrays of 8 x 2^20 x size f64 (64 MiB each at --size 1), allocated untouched
//!   thread "stream-t" owns elements [t*len/threads, (t+1)*len/threads):
//!     first touch: writes its chunks of a, b, c (pages land on its NUMA node)
//!     ── barrier ── start clock
//!     run r = 1..runs, in blocks of 64 Ki elements, work_done(1) per block:
//!       (runs: --runs, or as many as stream --gigabytes at 24 bytes an element)
//!       r odd:  a[i] = b[i] + 3 c[i]        r even: b[i] = a[i] + 3 c[i]
//!     stop clock, sum its chunk of the array written last
//!   bandwidth = 24 bytes x len x runs / (last stop - first start)
//!   checksum  = sum of the last array, must equal len x (1 + 6 runs) exactly
//! ```
//!
//! # What it models
//!
//! McCalpin's STREAM benchmark (triad kernel, bandwidth counted as STREAM
//! does: two 8-byte loads and one 8-byte store per element), run with the
//! usual OpenMP static schedule: each thread touches its own contiguous chunk
//! first, so on a NUMA machine its pages live on the node it ran on at that
//! moment. Alternating the destination array keeps every run a triad while
//! making each run's values depend on the previous one, so the final values
//! have a closed form (b = 1, c = 2, scalar 3: the written value after r runs
//! is 1 + 6r) and the checksum is checked exactly.
//!
//! # Options
//!
//! `--size auto` (the default) makes the three arrays together at least four
//! times the last-level caches that serve the process's CPUs (hwloc), and
//! never less than `--size 1`: arrays that fit in the caches measure the
//! caches, not the memory (our test machine's virtual CPUs see a 260 MiB L3,
//! which holds `--size 0.5` whole). Where hwloc knows no cache size, auto is
//! `--size 1`; the report says which (`array_size_from`). `--size F` scales
//! each array to F x 64 MiB. `--runs N` (default 40: about 44 GB counted at
//! the auto size of our test machine, 2 s at 22 GB/s; the timed part excludes
//! the first touch).

use crate::barrier::{Barrier, SyncMode};
use crate::common::{Common, WorkError};
use std::fmt;
use std::str::FromStr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Elements of one array at `--size 1` (64 MiB of f64).
const BASE_ELEMENTS: f64 = (64 << 20) as f64 / 8.0;
/// Bytes STREAM counts for an element of a triad sweep: two 8-byte loads
/// and one 8-byte store.
const BYTES_PER_ELEMENT: u64 = 24;
/// Elements per heartbeat unit.
const BLOCK: usize = 64 << 10;
const SCALAR: f64 = 3.0;
const B_START: f64 = 1.0;
const C_VALUE: f64 = 2.0;

/// The three arrays together, at least this many times the last-level
/// caches (`ArraySize::Auto`).
pub const CACHE_MULTIPLE: u64 = 4;

/// How large each of the three arrays is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ArraySize {
    /// From the machine's last-level caches ([`size_for_caches`]).
    Auto,
    /// This many times 64 MiB.
    Times(f64),
}

impl ArraySize {
    /// Auto, or a finite size above 0.
    fn is_valid(self) -> bool {
        match self {
            ArraySize::Auto => true,
            ArraySize::Times(size) => size.is_finite() && size > 0.0,
        }
    }
}

impl fmt::Display for ArraySize {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArraySize::Auto => f.write_str("auto"),
            ArraySize::Times(size) => write!(f, "{size}"),
        }
    }
}

impl FromStr for ArraySize {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        if text == "auto" {
            return Ok(ArraySize::Auto);
        }
        match text.parse::<f64>() {
            Ok(size) if ArraySize::Times(size).is_valid() => Ok(ArraySize::Times(size)),
            _ => Err(format!(
                "{text:?} is not an array size: give auto or a positive number (times 64 MiB per array)"
            )),
        }
    }
}

/// How many times the triad sweeps the arrays.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Sweeps {
    /// This many times.
    Runs(u32),
    /// As many times as it takes to count this many 10^9 bytes (24 bytes an
    /// element per sweep, as STREAM counts), at least once.
    Gigabytes(u32),
}

impl Sweeps {
    /// The number of sweeps over arrays of `elements` each, `None` if it is
    /// 0 or does not fit a `u32`.
    pub fn runs(self, elements: usize) -> Option<u32> {
        match self {
            Sweeps::Runs(runs) => Some(runs).filter(|&runs| runs > 0),
            Sweeps::Gigabytes(0) => None,
            Sweeps::Gigabytes(gigabytes) => {
                let per_sweep = BYTES_PER_ELEMENT * elements.max(1) as u64;
                u32::try_from((u64::from(gigabytes) * 1_000_000_000).div_ceil(per_sweep)).ok()
            }
        }
    }
}

/// Options of the stream workload.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Each array's size
    pub size: ArraySize,
    /// How many times the triad sweeps the arrays
    pub sweeps: Sweeps,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            size: ArraySize::Auto,
            sweeps: Sweeps::Gigabytes(44),
        }
    }
}

/// The array size (times 64 MiB) whose three arrays together hold at least
/// [`CACHE_MULTIPLE`] times `cache_bytes`, in steps of 1/4, at least 1.
pub fn size_for_caches(cache_bytes: u64) -> f64 {
    let array_bytes = (CACHE_MULTIPLE * cache_bytes).div_ceil(3) as f64;
    let quarters = (4.0 * array_bytes / (BASE_ELEMENTS * 8.0)).ceil();
    (quarters / 4.0).max(1.0)
}

/// The size in times 64 MiB and where it came from, for the report.
fn resolve_size(size: ArraySize, cache_bytes: impl FnOnce() -> Option<u64>) -> (f64, String) {
    match size {
        ArraySize::Times(size) => (size, "--size".to_string()),
        ArraySize::Auto => match cache_bytes() {
            Some(bytes) => (
                size_for_caches(bytes),
                format!("auto: {CACHE_MULTIPLE} x the last-level caches ({} MiB)", bytes >> 20),
            ),
            None => (1.0, "auto: the cache size is unknown, so --size 1".to_string()),
        },
    }
}

/// What a stream run measured.
#[derive(serde::Serialize, Debug, Clone)]
pub struct Report {
    /// Elements per array.
    pub elements: usize,
    /// MiB per array.
    pub array_mib: f64,
    /// How the size was chosen: `--size`, or auto from the caches.
    pub array_size_from: String,
    /// Sweeps over the arrays (`--runs`, or from `--gigabytes`).
    pub runs: u32,
    /// STREAM-counted bandwidth, 10^9 bytes per second (24 bytes per element per run).
    pub bandwidth_gbs: f64,
    /// Seconds spent in the timed runs (first start to last stop).
    pub timed_s: f64,
    /// Sum of the array written last (checked against the closed form).
    pub checksum: f64,
}

/// The value the triad writes in run `run` (1-based).
fn value_after(run: u32) -> f64 {
    B_START + f64::from(run) * SCALAR * C_VALUE
}

/// The machine's memory (`MemTotal` of /proc/meminfo), if readable.
fn memory_total_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// One thread's part of the three arrays.
struct Chunk<'a> {
    a: &'a mut [f64],
    b: &'a mut [f64],
    c: &'a mut [f64],
}

/// Runs the triad; returns (checksum, timed seconds).
fn run_triad(elements: usize, runs: u32, common: &Common) -> Result<(f64, f64), WorkError> {
    // Zeroed allocations of this size come straight from mmap: no page is
    // touched until a thread writes its chunk.
    let (mut a, mut b, mut c) = (vec![0.0f64; elements], vec![0.0f64; elements], vec![0.0f64; elements]);
    let threads = common.threads;
    let mut chunks = Vec::with_capacity(threads);
    let (mut rest_a, mut rest_b, mut rest_c) = (&mut a[..], &mut b[..], &mut c[..]);
    for t in 0..threads {
        let len = elements * (t + 1) / threads - elements * t / threads;
        let (chunk_a, tail_a) = std::mem::take(&mut rest_a).split_at_mut(len);
        let (chunk_b, tail_b) = std::mem::take(&mut rest_b).split_at_mut(len);
        let (chunk_c, tail_c) = std::mem::take(&mut rest_c).split_at_mut(len);
        (rest_a, rest_b, rest_c) = (tail_a, tail_b, tail_c);
        chunks.push(Mutex::new(Some(Chunk {
            a: chunk_a,
            b: chunk_b,
            c: chunk_c,
        })));
    }
    let barrier = Barrier::new(threads, SyncMode::Block, Duration::ZERO);
    let per_thread = common.spawn_workers("stream", |t| {
        let chunk = chunks[t].lock().unwrap_or_else(PoisonError::into_inner).take();
        let Chunk { a, b, c } = chunk.expect("each chunk is taken by its own thread once");
        a.fill(0.0);
        b.fill(B_START);
        c.fill(C_VALUE);
        barrier.wait();
        let start = Instant::now();
        for run in 1..=runs {
            let (destination, source): (&mut [f64], &[f64]) =
                if run % 2 == 1 { (&mut *a, &*b) } else { (&mut *b, &*a) };
            for ((dst, src), c) in destination
                .chunks_mut(BLOCK)
                .zip(source.chunks(BLOCK))
                .zip(c.chunks(BLOCK))
            {
                for ((d, &s), &c) in dst.iter_mut().zip(src).zip(c) {
                    *d = s + SCALAR * c;
                }
                common.work_done(1);
            }
        }
        let stop = Instant::now();
        let last = if runs % 2 == 1 { &*a } else { &*b };
        (start, stop, last.iter().sum::<f64>())
    })?;
    let first_start = per_thread
        .iter()
        .map(|(start, _, _)| *start)
        .min()
        .expect("at least one thread");
    let last_stop = per_thread
        .iter()
        .map(|(_, stop, _)| *stop)
        .max()
        .expect("at least one thread");
    let checksum = per_thread.iter().map(|(_, _, sum)| sum).sum();
    Ok((checksum, last_stop.duration_since(first_start).as_secs_f64()))
}

/// Runs the stream workload.
pub fn run(opts: &Options, common: &Common) -> Result<Report, WorkError> {
    if !opts.size.is_valid() || matches!(opts.sweeps, Sweeps::Runs(0) | Sweeps::Gigabytes(0)) {
        return Err(WorkError::BadInput(
            "--size must be auto or a positive number, and --runs and --gigabytes at least 1".into(),
        ));
    }
    let (size, array_size_from) = resolve_size(opts.size, pinlearn_topology::Topology::detect_last_level_cache_bytes);
    let elements = (BASE_ELEMENTS * size).round() as usize;
    if elements < common.threads {
        return Err(WorkError::BadInput(format!(
            "--size {size} gives {elements} elements per array, fewer than the {} threads",
            common.threads
        )));
    }
    let needed = 3 * 8 * elements as u64;
    if let Some(total) = memory_total_bytes().filter(|&total| needed > total / 4 * 3) {
        return Err(WorkError::BadInput(format!(
            "--size {size} ({array_size_from}) needs {} MiB for the three arrays, more than 3/4 of this machine's {} MiB: give a smaller --size",
            needed >> 20,
            total >> 20
        )));
    }
    // Every partial sum must stay an exact integer in f64.
    let runs = opts
        .sweeps
        .runs(elements)
        .filter(|&runs| elements as f64 * value_after(runs) < 2f64.powi(53))
        .ok_or_else(|| {
            WorkError::BadInput("--size x --runs (or --gigabytes) is too large to check the result exactly".into())
        })?;
    let blocks_per_run: u64 = (0..common.threads)
        .map(|t| (elements * (t + 1) / common.threads - elements * t / common.threads).div_ceil(BLOCK) as u64)
        .sum();
    common.start("stream: triad sweeps", blocks_per_run * u64::from(runs));
    let (checksum, timed_s) = run_triad(elements, runs, common)?;
    common.finish();
    let expected = elements as f64 * value_after(runs);
    if checksum != expected {
        return Err(WorkError::WrongResult(format!(
            "stream checksum {checksum}, expected {expected}"
        )));
    }
    Ok(Report {
        elements,
        array_mib: (elements * 8) as f64 / f64::from(1 << 20),
        array_size_from,
        runs,
        bandwidth_gbs: BYTES_PER_ELEMENT as f64 * elements as f64 * f64::from(runs) / timed_s / 1e9,
        timed_s,
        checksum,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_is_exact_on_small_arrays() {
        for (threads, runs) in [(1, 1), (3, 4), (4, 7)] {
            // 1/256 of the default: 32 Ki elements, 256 KiB per array.
            let opts = Options {
                size: ArraySize::Times(1.0 / 256.0),
                sweeps: Sweeps::Runs(runs),
            };
            let common = Common::new(threads, 1, true).expect("valid settings");
            let report = run(&opts, &common).expect("stream runs");
            assert_eq!(report.elements, 32 << 10);
            assert_eq!(report.checksum, (32 << 10) as f64 * (1.0 + 6.0 * f64::from(runs)));
            assert!(report.bandwidth_gbs > 0.0);
        }
    }

    #[test]
    fn uneven_split_touches_every_element() {
        let common = Common::new(3, 1, true).expect("valid settings");
        let (checksum, _) = run_triad(1000, 2, &common).expect("runs");
        assert_eq!(checksum, 1000.0 * value_after(2));
    }

    #[test]
    fn bad_sizes_are_rejected() {
        let common = Common::new(2, 1, true).expect("valid settings");
        for (size, sweeps) in [
            (0.0, Sweeps::Runs(1)),
            (-1.0, Sweeps::Runs(1)),
            (f64::NAN, Sweeps::Runs(1)),
            (1.0, Sweeps::Runs(0)),
            (1.0, Sweeps::Gigabytes(0)),
            (1e-9, Sweeps::Runs(1)),
            (1e7, Sweeps::Runs(1)),
            // 8 Ki elements a sweep of 196 KB: 5 x 10^9 runs do not fit a u32.
            (1.0 / 1024.0, Sweeps::Gigabytes(1_000_000)),
        ] {
            let opts = Options {
                size: ArraySize::Times(size),
                sweeps,
            };
            assert!(
                matches!(run(&opts, &common), Err(WorkError::BadInput(_))),
                "{size} {sweeps:?}"
            );
        }
    }

    #[test]
    fn auto_arrays_hold_four_times_the_caches_and_never_less_than_size_1() {
        const MIB: u64 = 1 << 20;
        // Our test machine's 260 MiB L3: 1040 MiB over three arrays is
        // 346.7 MiB each, 5.42 x 64 MiB, rounded up to 5.5.
        assert_eq!(size_for_caches(260 * MIB), 5.5);
        // 48 MiB of cache: 64 MiB per array is exactly enough.
        assert_eq!(size_for_caches(48 * MIB), 1.0);
        assert_eq!(size_for_caches(48 * MIB + 1), 1.25);
        assert_eq!(size_for_caches(8 * MIB), 1.0, "never below --size 1");
        for cache in [1, 7 * MIB, 260 * MIB, 2048 * MIB] {
            let arrays = 3.0 * size_for_caches(cache) * 64.0 * MIB as f64;
            assert!(arrays >= (CACHE_MULTIPLE * cache) as f64, "{cache}");
        }
        assert_eq!(resolve_size(ArraySize::Auto, || Some(260 * MIB)).0, 5.5);
        assert!(resolve_size(ArraySize::Auto, || Some(260 * MIB)).1.contains("260 MiB"));
        let (size, from) = resolve_size(ArraySize::Auto, || None);
        assert_eq!(size, 1.0);
        assert!(from.contains("unknown"), "{from}");
        assert_eq!(
            resolve_size(ArraySize::Times(0.5), || Some(260 * MIB)),
            (0.5, "--size".to_string())
        );
    }

    #[test]
    fn gigabytes_sweep_the_arrays_as_often_as_the_bytes_take() {
        // 64 MiB arrays: 8 Mi elements, 201.3 MB counted a sweep.
        let elements = 8 << 20;
        assert_eq!(Sweeps::Gigabytes(44).runs(elements), Some(219));
        // Four times the arrays, a quarter of the sweeps (rounded up): the
        // same bytes whatever the caches made the size.
        assert_eq!(Sweeps::Gigabytes(44).runs(4 * elements), Some(55));
        assert_eq!(Sweeps::Gigabytes(1).runs(1 << 30), Some(1), "at least one sweep");
        assert_eq!(Sweeps::Runs(7).runs(elements), Some(7));
        assert_eq!(Sweeps::Runs(0).runs(elements), None);
        let common = Common::new(2, 1, true).expect("valid settings");
        let opts = Options {
            size: ArraySize::Times(1.0 / 256.0),
            sweeps: Sweeps::Gigabytes(1),
        };
        // 32 Ki elements, 786432 bytes a sweep: 1272 sweeps for 10^9 bytes.
        let report = run(&opts, &common).expect("stream runs");
        assert_eq!(report.runs, 1272);
        assert_eq!(report.checksum, (32 << 10) as f64 * (1.0 + 6.0 * 1272.0));
    }

    #[test]
    fn sizes_parse_as_auto_or_a_positive_number() {
        assert_eq!("auto".parse::<ArraySize>(), Ok(ArraySize::Auto));
        assert_eq!("0.5".parse::<ArraySize>(), Ok(ArraySize::Times(0.5)));
        for bad in ["0", "-1", "NaN", "inf", "big", ""] {
            assert!(bad.parse::<ArraySize>().is_err(), "{bad}");
        }
        assert_eq!(ArraySize::Times(0.5).to_string(), "0.5");
        assert_eq!(ArraySize::Auto.to_string(), "auto");
    }
}
