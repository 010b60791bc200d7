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
//!   WaitingCode: sorted, merged address ranges + the executable mappings
//!       classify(ip) = Waiting | Work | Unmapped (code mapped after the build)
//!       classify_sample(ip, read): as classify, and Work that lies in a spin
//!           loop is Waiting (spin.rs: the code around ip is read once; a
//!           loop found is remembered whole, an address in none by itself)
//! ```
//!
//! The rules are [`WaitingRules`] (settings `[sampling]`, defaults in
//! [`WaitingRules::default`]); building is pure given the maps text and a
//! way to read files, so it is tested on recorded maps.

use super::spin::{Isa, REACH, spin_loop_around};
use glob::Pattern;
use object::{Object, ObjectSegment, ObjectSymbol};
use procfs::FromBufRead;
use procfs::process::{MMPermissions, MMapPath, MemoryMaps};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
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
    /// Whether samples in a short loop around a spin-wait hint (x86 PAUSE,
    /// Arm YIELD/WFE/ISB) count as waiting in any code (see `spin.rs`).
    pub spin_loops: bool,
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
            spin_loops: true,
        }
    }
}

/// [`WaitingRules`] compiled: glob patterns, one error per bad pattern.
#[derive(Clone, Debug)]
pub struct CompiledRules {
    libraries: Vec<Pattern>,
    symbols: Vec<(Pattern, Pattern)>,
    spin_loops: bool,
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
        Ok(CompiledRules {
            libraries,
            symbols,
            spin_loops: self.spin_loops,
        })
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
    /// Every executable mapping, sorted by address.
    executable: Vec<CodeMapping>,
    /// Files whose symbols could not be read (said once by the caller).
    pub unreadable: Vec<String>,
    /// The instruction set whose spin loops are looked for, `None` when
    /// not looked for (turned off, or an instruction set not known).
    spin_isa: Option<Isa>,
    /// Spin loops found so far, sorted, disjoint [start, end).
    spin_loops: Vec<(u64, u64)>,
    /// Sampled addresses outside the named waiting code found in no spin
    /// loop (at most [`MAX_WORK_ADDRESSES`] remembered).
    work_addresses: HashSet<u64>,
}

/// One executable mapping: `[start, end)` and, when it maps a file, the
/// file's path and the file offset of `start`.
#[derive(Clone, Debug)]
struct CodeMapping {
    start: u64,
    end: u64,
    file: Option<(String, u64)>,
}

/// Sampled addresses remembered per process as lying in no spin loop (a
/// program's hot code is a few thousand addresses; past this, the code is
/// read again for each new one).
const MAX_WORK_ADDRESSES: usize = 1 << 16;

/// Spin loops remembered per process (a program has a few; past this, the
/// code around each new address is read again).
const MAX_SPIN_LOOPS: usize = 1 << 12;

/// The file behind an executable mapping, as `/proc/PID/maps` shows it:
/// its path and the mapping's `[start, end)` and file offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MappedFile<'a> {
    pub path: &'a str,
    pub start: u64,
    pub end: u64,
    pub offset: u64,
}

impl MappedFile<'_> {
    /// The file offset of the byte mapped at `address`.
    pub fn offset_of(&self, address: u64) -> u64 {
        self.offset + (address - self.start)
    }
}

/// Reads the whole file behind one mapping.
pub type ReadFile<'a> = dyn FnMut(MappedFile<'_>) -> Option<Vec<u8>> + 'a;

/// Reads code bytes: `(address, length, the file mapped there)` to bytes,
/// `None` when they cannot be read.
pub type ReadCode<'a> = dyn FnMut(u64, usize, Option<MappedFile<'_>>) -> Option<Vec<u8>> + 'a;

impl WaitingCode {
    /// Builds the ranges from `/proc/PID/maps` text; `read` gives the bytes of
    /// a mapped file (for symbol rules), `None` when it cannot be read.
    pub fn build(maps_text: &[u8], rules: &CompiledRules, read: &mut ReadFile<'_>) -> Result<Self, String> {
        let maps = MemoryMaps::from_buf_read(maps_text).map_err(|e| format!("unreadable maps: {e}"))?;
        let mut code = WaitingCode {
            spin_isa: Isa::native().filter(|_| rules.spin_loops),
            ..WaitingCode::default()
        };
        let mut symbols_of: HashMap<String, Option<FunctionRanges>> = HashMap::new();
        for map in maps.0.iter().filter(|m| m.perms.contains(MMPermissions::EXECUTE)) {
            let (start, end) = map.address;
            let MMapPath::Path(path) = &map.pathname else {
                code.executable.push(CodeMapping { start, end, file: None });
                continue;
            };
            let path_text = path.to_string_lossy();
            code.executable.push(CodeMapping {
                start,
                end,
                file: Some((path_text.to_string(), map.offset)),
            });
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
                .or_insert_with(|| {
                    let file = MappedFile {
                        path: &path_text,
                        start,
                        end,
                        offset: map.offset,
                    };
                    read(file).and_then(|bytes| symbol_file_ranges(&bytes, &wanted))
                });
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
        code.executable.sort_unstable_by_key(|m| m.start);
        Ok(code)
    }

    /// What kind of code `ip` is in, by the named waiting code alone.
    pub fn classify(&self, ip: u64) -> CodeKind {
        if contains(&self.waiting, ip) {
            CodeKind::Waiting
        } else if self.mapping_of(ip).is_some() {
            CodeKind::Work
        } else {
            CodeKind::Unmapped
        }
    }

    /// What kind of code the sample at `ip` is in: as [`Self::classify`],
    /// and work that lies in a spin loop is waiting. The first sample at an
    /// address in no known loop reads the code around it with `read` (see
    /// `spin.rs`); a loop found answers for all its addresses after that.
    pub fn classify_sample(&mut self, ip: u64, read: &mut ReadCode<'_>) -> CodeKind {
        let kind = self.classify(ip);
        let Some(isa) = self.spin_isa.filter(|_| kind == CodeKind::Work) else {
            return kind;
        };
        if contains(&self.spin_loops, ip) {
            return CodeKind::Waiting;
        }
        if self.work_addresses.contains(&ip) {
            return CodeKind::Work;
        }
        let found = self
            .read_around(ip, read)
            .and_then(|(base, bytes)| spin_loop_around(isa, &bytes, base, ip));
        match found {
            Some(spin_loop) => {
                if self.spin_loops.len() < MAX_SPIN_LOOPS {
                    // merge sorts: no need to insert in order first.
                    self.spin_loops.push(spin_loop);
                    self.spin_loops = merge(std::mem::take(&mut self.spin_loops));
                }
                CodeKind::Waiting
            }
            None => {
                if self.work_addresses.len() < MAX_WORK_ADDRESSES {
                    self.work_addresses.insert(ip);
                }
                CodeKind::Work
            }
        }
    }

    /// The code bytes within [`REACH`] of `ip` inside its mapping, with the
    /// address of the first.
    fn read_around(&self, ip: u64, read: &mut ReadCode<'_>) -> Option<(u64, Vec<u8>)> {
        let mapping = self.mapping_of(ip)?;
        let base = ip.saturating_sub(REACH).max(mapping.start);
        let end = ip.saturating_add(REACH).min(mapping.end);
        let file = mapping.file.as_ref().map(|(path, offset)| MappedFile {
            path,
            start: mapping.start,
            end: mapping.end,
            offset: *offset,
        });
        let bytes = read(base, (end - base) as usize, file)?;
        Some((base, bytes))
    }

    fn mapping_of(&self, ip: u64) -> Option<&CodeMapping> {
        let at = self.executable.partition_point(|m| m.start <= ip);
        self.executable[..at].last().filter(|m| ip < m.end)
    }

    /// Spin loops found so far (for tests and notes).
    pub fn spin_loops_found(&self) -> usize {
        self.spin_loops.len()
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

/// Opens the regular file that process `pid` maps at `[start, end)`:
/// through `/proc/PID/map_files` (works for deleted files, needs
/// privilege), else by its path under the process's root.
pub fn open_mapped_file(pid: u32, file: MappedFile<'_>) -> Option<(std::fs::File, std::fs::Metadata)> {
    let path = file.path.strip_suffix(" (deleted)").unwrap_or(file.path);
    let candidates = [
        format!("/proc/{pid}/map_files/{:x}-{:x}", file.start, file.end),
        format!("/proc/{pid}/root{path}"),
    ];
    candidates.iter().find_map(|candidate| {
        let opened = std::fs::File::open(candidate).ok()?;
        let meta = opened.metadata().ok()?;
        meta.is_file().then_some((opened, meta))
    })
}

/// Reads the whole file process `pid` maps at `[start, end)` (see
/// [`open_mapped_file`]). Files over 256 MiB are not read.
pub fn read_mapped_file(pid: u32, file: MappedFile<'_>) -> Option<Vec<u8>> {
    const MAX_BYTES: u64 = 256 << 20;
    let (opened, meta) = open_mapped_file(pid, file).filter(|(_, meta)| meta.len() <= MAX_BYTES)?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    std::io::Read::read_to_end(&mut std::io::Read::take(opened, MAX_BYTES), &mut bytes).ok()?;
    Some(bytes)
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

    fn no_files(_: MappedFile<'_>) -> Option<Vec<u8>> {
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
            spin_loops: false,
        }
        .compile()
        .unwrap();
        let mut reads = 0;
        let mut read = |file: MappedFile<'_>| {
            reads += 1;
            assert_eq!(file.path, "/opt/app/libfake.so.1");
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
    fn a_spin_loop_in_the_programs_code_is_read_once_and_counted_waiting() {
        if Isa::native() != Some(Isa::X86_64) {
            return;
        }
        // The program's text maps file offset 0x1000 at 0x55d0c0a01000; a
        // pause loop at file offset 0x1400 (mov eax,[rdi]; test; jne +6;
        // pause; jmp back), the rest of the page nops.
        let mut file = vec![0x90u8; 0x2000];
        file[0x1400..0x140c].copy_from_slice(&[0x8B, 0x07, 0x85, 0xC0, 0x75, 0x06, 0xF3, 0x90, 0xEB, 0xF6, 0x90, 0x90]);
        let rules = WaitingRules::default().compile().unwrap();
        let mut code = WaitingCode::build(MAPS.as_bytes(), &rules, &mut no_files).unwrap();
        let reads = std::cell::RefCell::new(Vec::new());
        let mut read = |address: u64, len: usize, mapped: Option<MappedFile<'_>>| {
            let mapped = mapped.expect("the program's text is a file");
            assert_eq!(mapped.path, "/tmp/omp/stencil");
            assert_eq!((mapped.start, mapped.end), (0x55d0c0a01000, 0x55d0c0a02000));
            let offset = mapped.offset_of(address);
            assert_eq!(offset, address - 0x55d0c0a01000 + 0x1000, "file offset of the address");
            reads.borrow_mut().push(address);
            Some(file[offset as usize..offset as usize + len].to_vec())
        };
        let in_loop = 0x55d0c0a01404;
        assert_eq!(code.classify_sample(in_loop, &mut read), CodeKind::Waiting);
        assert_eq!(code.classify_sample(in_loop, &mut read), CodeKind::Waiting);
        // Another address of the same loop: known without reading.
        assert_eq!(code.classify_sample(in_loop + 5, &mut read), CodeKind::Waiting);
        assert_eq!(code.classify_sample(0x55d0c0a01800, &mut read), CodeKind::Work, "nops");
        assert_eq!(code.classify_sample(0x55d0c0a01800, &mut read), CodeKind::Work);
        assert_eq!(
            code.classify_sample(0x7f0000010000, &mut read),
            CodeKind::Waiting,
            "libgomp"
        );
        assert_eq!(code.classify(in_loop), CodeKind::Work, "named waiting code alone");
        assert_eq!(
            *reads.borrow(),
            [in_loop - REACH, 0x55d0c0a01800 - REACH],
            "the loop read once, the work address once, libgomp never"
        );
        // The window stops at the mapping's first byte.
        let first = 0x55d0c0a01010;
        code.classify_sample(first, &mut read);
        assert_eq!(reads.borrow().last(), Some(&0x55d0c0a01000));
        assert_eq!(code.spin_loops_found(), 1);
    }

    #[test]
    fn bad_rules_say_which() {
        let bad = WaitingRules {
            libraries: vec!["lib[gomp".into()],
            ..WaitingRules::default()
        };
        let error = bad.compile().unwrap_err();
        assert!(error.contains("\"lib[gomp\""), "{error}");
        let bad = WaitingRules {
            symbols: vec!["sched_yield".into()],
            ..WaitingRules::default()
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
