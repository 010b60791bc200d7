//! Which code addresses of a process are *waiting* code: the OpenMP
//! runtimes' barrier and idle loops, MPI progress engines, spin locks,
//! `sched_yield`. CPU-clock samples that land there are time a thread spent
//! waiting for others, not work ([`super::probe::CpuSamples`] counts them).
//!
//! ```text
//!   /proc/PID/maps ──► executable mappings backed by a file
//!       │  file name matches a waiting library (libgomp.so*, ...)
//!       │      └─► the whole mapping is waiting code
//!       │  file name matches a library of a waiting symbol (libc.so*:sched_yield)
//!       │      └─► read the ELF file (object crate): each matching function's
//!       │          [value, value + size) moved into the mapping by its segment
//!       ▼
//!   WaitingCode: sorted, merged address ranges + the executable ranges
//!       classify(ip) = Waiting | Work | Unmapped (code mapped after the build)
//! ```
//!
//! The rules are [`WaitingRules`] (settings `[sampling]`, defaults in
//! [`WaitingRules::default`]); building is pure given the maps text and a
//! way to read files, so it is tested on recorded maps.

use glob::Pattern;
use object::{Object, ObjectSegment, ObjectSymbol};
use procfs::FromBufRead;
use procfs::process::{MMPermissions, MMapPath, MemoryMaps};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::Path;

/// Which code counts as waiting: whole libraries by file name, and single
/// functions as `LIBRARY:SYMBOL`, both shell globs (`*`, `?`, `[...]`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WaitingRules {
    /// Libraries whose every instruction is waiting or runtime overhead.
    pub libraries: Vec<String>,
    /// Functions that wait, as `LIBRARY:SYMBOL`.
    pub symbols: Vec<String>,
}

impl Default for WaitingRules {
    /// The OpenMP runtimes (GNU libgomp, LLVM libomp, Intel libiomp5): their
    /// code runs between the program's parallel loops (barriers, idle
    /// workers, loop scheduling); the program's loop bodies are outlined in
    /// its own binary. Spin and yield paths of the C library, and the
    /// progress loops of Open MPI (libopen-pal, libmpi), MPICH and UCX.
    fn default() -> Self {
        let strings = |list: &[&str]| list.iter().map(|s| (*s).to_string()).collect();
        WaitingRules {
            libraries: strings(&["libgomp.so*", "libgomp-*.so*", "libomp.so*", "libiomp5.so*"]),
            symbols: strings(&[
                "libc.so*:pthread_spin_lock",
                "libc.so*:pthread_barrier_wait",
                "libc.so*:sched_yield",
                "libc.so*:__sched_yield",
                "libc.so*:__lll_lock_wait*",
                "libpthread.so*:pthread_spin_lock",
                "libpthread.so*:pthread_barrier_wait",
                "libopen-pal.so*:opal_progress*",
                "libmpi.so*:ompi_request_default_wait*",
                "libmpi.so*:MPIDI_CH3I_Progress*",
                "libmpi.so*:MPID_Progress_wait*",
                "libmpi.so*:MPIDI_progress_test*",
                "libucp.so*:ucp_worker_progress*",
                "libuct*.so*:uct_*progress*",
            ]),
        }
    }
}

/// [`WaitingRules`] compiled: glob patterns, one error per bad pattern.
#[derive(Clone, Debug)]
pub struct CompiledRules {
    libraries: Vec<Pattern>,
    symbols: Vec<(Pattern, Pattern)>,
}

impl WaitingRules {
    /// Compiles the globs; the error names the rule and what is wrong.
    pub fn compile(&self) -> Result<CompiledRules, String> {
        let glob = |text: &str, what: &str| {
            Pattern::new(text).map_err(|e| format!("waiting {what} pattern {text:?}: {}", e.msg))
        };
        let libraries = self
            .libraries
            .iter()
            .map(|text| glob(text, "library"))
            .collect::<Result<_, _>>()?;
        let symbols = self
            .symbols
            .iter()
            .map(|text| {
                let (library, symbol) = text
                    .split_once(':')
                    .filter(|(l, s)| !l.is_empty() && !s.is_empty())
                    .ok_or_else(|| {
                        format!("waiting symbol {text:?} is not LIBRARY:SYMBOL (e.g. \"libc.so*:sched_yield\")")
                    })?;
                Ok((glob(library, "symbol library")?, glob(symbol, "symbol")?))
            })
            .collect::<Result<_, String>>()?;
        Ok(CompiledRules { libraries, symbols })
    }
}

/// Where one sample's instruction pointer fell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CodeKind {
    Waiting,
    Work,
    /// Outside every executable mapping known at the build (new code).
    Unmapped,
}

/// The waiting and executable address ranges of one process.
#[derive(Clone, Debug, Default)]
pub struct WaitingCode {
    /// Sorted, disjoint [start, end).
    waiting: Vec<(u64, u64)>,
    /// Sorted [start, end) of every executable mapping.
    executable: Vec<(u64, u64)>,
    /// Files whose symbols could not be read (said once by the caller).
    pub unreadable: Vec<String>,
}

/// Reads the file behind one mapping: `(path, start, end)` to bytes.
pub type ReadFile<'a> = dyn FnMut(&str, u64, u64) -> Option<Vec<u8>> + 'a;

impl WaitingCode {
    /// Builds the ranges from `/proc/PID/maps` text; `read` gives the bytes of
    /// a mapped file (for symbol rules), `None` when it cannot be read.
    pub fn build(maps_text: &[u8], rules: &CompiledRules, read: &mut ReadFile<'_>) -> Result<Self, String> {
        let maps = MemoryMaps::from_buf_read(maps_text).map_err(|e| format!("unreadable maps: {e}"))?;
        let mut code = WaitingCode::default();
        let mut symbols_of: HashMap<String, Option<FunctionRanges>> = HashMap::new();
        for map in maps.0.iter().filter(|m| m.perms.contains(MMPermissions::EXECUTE)) {
            let (start, end) = map.address;
            code.executable.push((start, end));
            let MMapPath::Path(path) = &map.pathname else {
                continue;
            };
            let path_text = path.to_string_lossy();
            let file_name = file_name_of(&path_text);
            if rules.libraries.iter().any(|p| p.matches(file_name)) {
                code.waiting.push((start, end));
                continue;
            }
            let wanted: Vec<&Pattern> = rules
                .symbols
                .iter()
                .filter(|(library, _)| library.matches(file_name))
                .map(|(_, symbol)| symbol)
                .collect();
            if wanted.is_empty() {
                continue;
            }
            // (file offset, size) of every matching function, once per file.
            let found = symbols_of
                .entry(format!(
                    "{path_text}\0{}",
                    wanted.iter().map(|p| p.as_str()).collect::<Vec<_>>().join("\0")
                ))
                .or_insert_with(|| read(&path_text, start, end).and_then(|bytes| symbol_file_ranges(&bytes, &wanted)));
            match found {
                None => {
                    if !code.unreadable.contains(&path_text.to_string()) {
                        code.unreadable.push(path_text.to_string());
                    }
                }
                Some(ranges) => {
                    for &(file_offset, size) in ranges.iter() {
                        // The mapping shows file bytes [offset, offset + len) at start.
                        if file_offset >= map.offset && file_offset < map.offset + (end - start) {
                            let at = start + (file_offset - map.offset);
                            code.waiting.push((at, (at + size).min(end)));
                        }
                    }
                }
            }
        }
        code.waiting = merge(code.waiting);
        code.executable.sort_unstable();
        Ok(code)
    }

    /// What kind of code `ip` is in.
    pub fn classify(&self, ip: u64) -> CodeKind {
        if contains(&self.waiting, ip) {
            CodeKind::Waiting
        } else if contains(&self.executable, ip) {
            CodeKind::Work
        } else {
            CodeKind::Unmapped
        }
    }

    /// Bytes of waiting code found (for `pinlearn topo` and tests).
    pub fn waiting_bytes(&self) -> u64 {
        self.waiting.iter().map(|(s, e)| e - s).sum()
    }
}

/// The last path component, without a " (deleted)" mark.
fn file_name_of(path: &str) -> &str {
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    Path::new(path).file_name().and_then(|n| n.to_str()).unwrap_or(path)
}

/// (file offset, size) of functions.
type FunctionRanges = Vec<(u64, u64)>;

/// (file offset, size) of each defined function whose name matches one of
/// `wanted`, from the ELF symbol and dynamic symbol tables; `None` when the
/// bytes are not an object file.
fn symbol_file_ranges(bytes: &[u8], wanted: &[&Pattern]) -> Option<FunctionRanges> {
    let file = object::File::parse(bytes).ok()?;
    // Loaded segments: (address, size, file offset).
    let segments: Vec<(u64, u64, u64)> = file
        .segments()
        .map(|s| (s.address(), s.size(), s.file_range().0))
        .collect();
    let mut ranges = Vec::new();
    for symbol in file.symbols().chain(file.dynamic_symbols()) {
        if symbol.kind() != object::SymbolKind::Text || symbol.is_undefined() || symbol.size() == 0 {
            continue;
        }
        let Ok(name) = symbol.name() else { continue };
        // Versioned dynamic names carry "@VERSION" in some tables.
        let name = name.split('@').next().unwrap_or(name);
        if !wanted.iter().any(|p| p.matches(name)) {
            continue;
        }
        let address = symbol.address();
        if let Some(&(seg_address, _, seg_offset)) = segments
            .iter()
            .find(|&&(a, size, _)| address >= a && address < a + size)
        {
            ranges.push((address - seg_address + seg_offset, symbol.size()));
        }
    }
    ranges.sort_unstable();
    ranges.dedup();
    Some(ranges)
}

fn merge(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

fn contains(ranges: &[(u64, u64)], ip: u64) -> bool {
    let at = ranges.partition_point(|&(start, _)| start <= ip);
    at > 0 && ip < ranges[at - 1].1
}

/// Reads a file mapped by process `pid`: through `/proc/PID/map_files`
/// (works for deleted files, needs privilege), else through the process's
/// root. Files over 256 MiB are not read.
pub fn read_mapped_file(pid: u32, path: &str, start: u64, end: u64) -> Option<Vec<u8>> {
    const MAX_BYTES: u64 = 256 << 20;
    let candidates = [
        format!("/proc/{pid}/map_files/{start:x}-{end:x}"),
        format!("/proc/{pid}/root{path}"),
    ];
    candidates.iter().find_map(|candidate| {
        let file = std::fs::File::open(candidate).ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || meta.len() > MAX_BYTES {
            return None;
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        std::io::Read::read_to_end(&mut std::io::Read::take(file, MAX_BYTES), &mut bytes).ok()?;
        Some(bytes)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a01000 r--p 00000000 08:01 1000 /tmp/omp/stencil
55d0c0a01000-55d0c0a02000 r-xp 00001000 08:01 1000 /tmp/omp/stencil
7f0000000000-7f0000010000 r--p 00000000 08:01 2000 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0
7f0000010000-7f0000030000 r-xp 00010000 08:01 2000 /usr/lib/x86_64-linux-gnu/libgomp.so.1.0.0
7f1000000000-7f1000028000 r--p 00000000 08:01 3000 /usr/lib/x86_64-linux-gnu/libc.so.6
7f1000028000-7f10001bd000 r-xp 00028000 08:01 3000 /usr/lib/x86_64-linux-gnu/libc.so.6
7ffc00000000-7ffc00002000 r-xp 00000000 00:00 0 [vdso]
";

    fn no_files(_: &str, _: u64, _: u64) -> Option<Vec<u8>> {
        None
    }

    #[test]
    fn whole_waiting_libraries_and_program_code() {
        let rules = WaitingRules::default().compile().unwrap();
        let code = WaitingCode::build(MAPS.as_bytes(), &rules, &mut no_files).unwrap();
        assert_eq!(
            code.classify(0x7f0000010000),
            CodeKind::Waiting,
            "first byte of libgomp's text"
        );
        assert_eq!(code.classify(0x7f000002ffff), CodeKind::Waiting);
        assert_eq!(
            code.classify(0x7f0000030000),
            CodeKind::Unmapped,
            "one past libgomp's text"
        );
        assert_eq!(
            code.classify(0x7f0000000100),
            CodeKind::Unmapped,
            "libgomp's data is not code"
        );
        assert_eq!(code.classify(0x55d0c0a01800), CodeKind::Work, "the program's own loop");
        assert_eq!(code.classify(0x7ffc00000010), CodeKind::Work, "vdso");
        assert_eq!(
            code.classify(0x7f1000100000),
            CodeKind::Work,
            "libc with its file unreadable"
        );
        assert_eq!(code.unreadable, ["/usr/lib/x86_64-linux-gnu/libc.so.6"]);
    }

    #[test]
    fn symbols_are_found_in_a_real_elf_file_and_relocated() {
        // This test binary is an ELF file with symbols: make one of its own
        // functions a waiting symbol and map it at a made-up address.
        let exe = std::env::current_exe().unwrap();
        let bytes = std::fs::read(&exe).unwrap();
        let wanted = Pattern::new("*merge*").unwrap();
        let ranges = symbol_file_ranges(&bytes, &[&wanted]).expect("an ELF file");
        assert!(!ranges.is_empty(), "the test binary has a function named *merge*");
        let (file_offset, size) = ranges[0];
        let start = 0x7e00_0000_0000u64;
        let maps = format!(
            "{start:x}-{:x} r-xp 00000000 08:01 42 /opt/app/libfake.so.1\n",
            start + bytes.len() as u64
        );
        let rules = WaitingRules {
            libraries: vec![],
            symbols: vec!["libfake.so*:*merge*".into()],
        }
        .compile()
        .unwrap();
        let mut reads = 0;
        let mut read = |path: &str, _: u64, _: u64| {
            reads += 1;
            assert_eq!(path, "/opt/app/libfake.so.1");
            Some(bytes.clone())
        };
        let code = WaitingCode::build(maps.as_bytes(), &rules, &mut read).unwrap();
        assert_eq!(reads, 1);
        assert_eq!(code.classify(start + file_offset), CodeKind::Waiting);
        assert_eq!(code.classify(start + file_offset + size - 1), CodeKind::Waiting);
        assert!(code.waiting_bytes() >= size);
        // Some byte of the file is work: the waiting ranges are functions, not the file.
        assert!(code.waiting_bytes() < bytes.len() as u64);
    }

    #[test]
    fn bad_rules_say_which() {
        let bad = WaitingRules {
            libraries: vec!["lib[gomp".into()],
            symbols: vec![],
        };
        let error = bad.compile().unwrap_err();
        assert!(error.contains("\"lib[gomp\""), "{error}");
        let bad = WaitingRules {
            libraries: vec![],
            symbols: vec!["sched_yield".into()],
        };
        assert!(bad.compile().unwrap_err().contains("LIBRARY:SYMBOL"));
    }

    #[test]
    fn ranges_merge_and_search() {
        let merged = merge(vec![(10, 20), (15, 30), (40, 50), (30, 35)]);
        assert_eq!(merged, [(10, 35), (40, 50)]);
        assert!(contains(&merged, 10) && contains(&merged, 34) && !contains(&merged, 35));
        assert!(!contains(&merged, 9) && contains(&merged, 49) && !contains(&merged, 50));
        assert!(!contains(&[], 1));
    }

    #[test]
    fn deleted_files_keep_their_name() {
        assert_eq!(file_name_of("/usr/lib/libgomp.so.1 (deleted)"), "libgomp.so.1");
        assert_eq!(file_name_of("libgomp.so.1"), "libgomp.so.1");
    }
}
