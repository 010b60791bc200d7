//! The library `pinlearn run --preload` loads into a program nobody changed
//! (`LD_PRELOAD`), so that pinlearn sees what the program would have told
//! it through the in-process API: its progress, and which threads belong
//! together.
//!
//! ```text
//!   the program calls            this library                          then
//!   ─────────────────            ────────────                          ────
//!   GOMP_parallel(fn, data) ───► each team thread runs fn(data), then beat(1) ─► the real GOMP_parallel
//!   GOMP_parallel_start(fn, data) (GCC before 4.9): the same for the team,
//!   GOMP_parallel_end()      ───► the real call, then beat(1) for the thread that started the region
//!   GOMP_barrier()           ─┐
//!   GOMP_loop_end[_nowait]() ─┼► the real call, then beat(1) (a barrier passed)
//!   pthread_barrier_wait(b)  ─┘        └─► heartbeat channel ─► pinlearn scores the thread by its beats
//!   libomp: ompt_start_tool ───► an OMPT tool: sync_region end of a barrier ─► beat(1)
//!   pthread_create(start)    ───► creator C: bubble "C" (made once, nested in the bubble C is in),
//!                                 C moved into it ─► the real pthread_create(started)
//!                                 new thread: joins "C", then start(arg)   └─► bubble channel
//!   thread ends              ───► taken out of its bubble
//! ```
//!
//! Which parts work comes from `PINLEARN_PRELOAD` (`heartbeats`, `threads`;
//! [`pinlearn_engine::preload`]), set by `run`. The thread tree is declared
//! only by the process `run` started (its parent is the pid in
//! `PINLEARN_PRELOAD_PARENT`; pinlearn reads that process's bubble channel)
//! and only when `run` passed its places (`PINLEARN_LEVELS`, set with the
//! bubbles policies); a forked child stops declaring.
//!
//! # Never the program's failure
//!
//! Every replaced function calls the real one (`dlsym(RTLD_NEXT)`) with the
//! program's own arguments and returns what it returns. The bookkeeping
//! around it cannot unwind into the program (a panic is caught and turns
//! the part off) and cannot fail it: when the channel cannot be written or
//! a declaration is refused (the channel is full, too many bubbles), one
//! line goes to stderr and the part stops for the rest of the process. The
//! threads of a region still meet at the real barriers: results do not
//! change.
//!
//! LLVM's OpenMP runtime (libomp) is reached through its tool interface
//! instead: the library is an OMPT tool (`ompt_start_tool`) whose
//! `sync_region` callback beats when a team thread leaves a barrier.
//!
//! The combined `parallel for` entry points (`GOMP_parallel_loop_*`, and
//! their `_start` forms before GCC 4.9) need nothing of their own: the body
//! GCC compiles for them ends each thread's share with
//! `GOMP_loop_end_nowait`, which beats.

use pinlearn_engine::outside::{LEVELS_ENV, OutsideBubbles};
use pinlearn_engine::preload::{PARENT_ENV, PARTS_ENV, Preload};
use pinlearn_engine::{BubbleApi, BubbleId};
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::{CStr, c_int, c_uint, c_void};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Mutex, Once, OnceLock};

/// A function of the next library in the search order (the one this library
/// stands in front of), looked up once.
struct Next {
    name: &'static CStr,
    address: AtomicUsize,
}

impl Next {
    const fn new(name: &'static CStr) -> Self {
        Next {
            name,
            address: AtomicUsize::new(0),
        }
    }

    /// The real function's address. Only called from a replaced function,
    /// which the program can only call when the real one is loaded: a
    /// missing one is a broken process, said and ended.
    fn address(&self) -> usize {
        let known = self.address.load(Ordering::Acquire);
        if known != 0 {
            return known;
        }
        // SAFETY: dlsym with a NUL-terminated name; RTLD_NEXT is valid in a shared object.
        let found = unsafe { libc::dlsym(libc::RTLD_NEXT, self.name.as_ptr()) } as usize;
        if found == 0 {
            eprintln!(
                "pinlearn preload: {} is not in the libraries after this one; unset LD_PRELOAD",
                self.name.to_string_lossy()
            );
            std::process::abort();
        }
        self.address.store(found, Ordering::Release);
        found
    }
}

type StartRoutine = extern "C" fn(*mut c_void) -> *mut c_void;
type PthreadCreate =
    unsafe extern "C" fn(*mut libc::pthread_t, *const libc::pthread_attr_t, StartRoutine, *mut c_void) -> c_int;
type PthreadBarrierWait = unsafe extern "C" fn(*mut libc::pthread_barrier_t) -> c_int;
type RegionFn = unsafe extern "C" fn(*mut c_void);
type GompParallel = unsafe extern "C" fn(RegionFn, *mut c_void, c_uint, c_uint);
type GompVoid = unsafe extern "C" fn();
type GompParallelStart = unsafe extern "C" fn(RegionFn, *mut c_void, c_uint);

static PTHREAD_CREATE: Next = Next::new(c"pthread_create");
static PTHREAD_BARRIER_WAIT: Next = Next::new(c"pthread_barrier_wait");
static GOMP_PARALLEL: Next = Next::new(c"GOMP_parallel");
static GOMP_PARALLEL_START: Next = Next::new(c"GOMP_parallel_start");
static GOMP_PARALLEL_END: Next = Next::new(c"GOMP_parallel_end");
static GOMP_BARRIER: Next = Next::new(c"GOMP_barrier");
static GOMP_LOOP_END: Next = Next::new(c"GOMP_loop_end");
static GOMP_LOOP_END_NOWAIT: Next = Next::new(c"GOMP_loop_end_nowait");

/// The parts `run` switched on; none when the variable is absent or not
/// understood (said once).
fn parts() -> Preload {
    static PARTS: OnceLock<Preload> = OnceLock::new();
    *PARTS.get_or_init(|| match std::env::var(PARTS_ENV) {
        Ok(text) => text.parse().unwrap_or_else(|e| {
            eprintln!("pinlearn preload: {PARTS_ENV}={text:?}: {e}; the library does nothing");
            Preload::default()
        }),
        Err(_) => Preload::default(),
    })
}

/// Off once a beat failed in a way that would repeat (a panic).
static BEATS_OFF: AtomicBool = AtomicBool::new(false);

/// One unit of progress for the calling thread.
fn counted() {
    if !parts().heartbeats || BEATS_OFF.load(Ordering::Relaxed) {
        return;
    }
    if catch_unwind(|| pinlearn_heartbeat::beat(1)).is_err() {
        BEATS_OFF.store(true, Ordering::Relaxed);
    }
}

/// `pthread_barrier_wait`, counted once the barrier is passed.
///
/// # Safety
/// As the real function: `barrier` is an initialised barrier.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_barrier_wait(barrier: *mut libc::pthread_barrier_t) -> c_int {
    // SAFETY: the address of the real pthread_barrier_wait, whose type this is.
    let real: PthreadBarrierWait = unsafe { std::mem::transmute(PTHREAD_BARRIER_WAIT.address()) };
    // SAFETY: the program's own call, passed on.
    let passed = unsafe { real(barrier) };
    counted();
    passed
}

/// Calls the real `next` (a libgomp function of no arguments and no
/// result), then counts a beat.
///
/// # Safety
/// `next` names such a function, and the program called it.
unsafe fn call_then_count(next: &Next) {
    // SAFETY: the real function, whose type the caller vouches for.
    let real: GompVoid = unsafe { std::mem::transmute(next.address()) };
    // SAFETY: the program's own call, passed on.
    unsafe { real() };
    counted();
}

/// `GOMP_barrier` (an explicit `#pragma omp barrier`, and the end of a
/// statically scheduled loop), counted once passed.
///
/// # Safety
/// As the real function: called by a thread of an OpenMP team.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_barrier() {
    // SAFETY: the program's own call to a libgomp function of no arguments.
    unsafe { call_then_count(&GOMP_BARRIER) };
}

/// `GOMP_loop_end` (the end of a dynamically scheduled loop, with its
/// barrier), counted.
///
/// # Safety
/// As the real function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_loop_end() {
    // SAFETY: the program's own call to a libgomp function of no arguments.
    unsafe { call_then_count(&GOMP_LOOP_END) };
}

/// `GOMP_loop_end_nowait` (a loop's end without its barrier), counted.
///
/// # Safety
/// As the real function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_loop_end_nowait() {
    // SAFETY: the program's own call to a libgomp function of no arguments.
    unsafe { call_then_count(&GOMP_LOOP_END_NOWAIT) };
}

/// The body of a parallel region and its argument, for the team threads.
struct Region {
    body: RegionFn,
    data: *mut c_void,
}

/// What every team thread runs instead of the region's body: the body,
/// then a beat (its share of the region done).
unsafe extern "C" fn region_piece(region: *mut c_void) {
    // SAFETY: `region` is the Region on the stack of the GOMP_parallel call
    // below, which returns only after every team thread finished this.
    let region = unsafe { &*(region as *const Region) };
    // SAFETY: the program's region body with its own argument.
    unsafe { (region.body)(region.data) };
    counted();
}

/// `GOMP_parallel` (a `#pragma omp parallel` region): every team thread
/// beats when its share of the region is done.
///
/// # Safety
/// As the real function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_parallel(body: RegionFn, data: *mut c_void, threads: c_uint, flags: c_uint) {
    // SAFETY: the real GOMP_parallel, whose type this is.
    let real: GompParallel = unsafe { std::mem::transmute(GOMP_PARALLEL.address()) };
    if !parts().heartbeats {
        // SAFETY: the program's own call, passed on.
        return unsafe { real(body, data, threads, flags) };
    }
    let mut region = Region { body, data };
    // SAFETY: region_piece runs body(data) on every team thread; `region`
    // outlives the call, which joins the team before it returns.
    unsafe { real(region_piece, (&raw mut region).cast(), threads, flags) }
}

thread_local! {
    /// The regions this thread opened with `GOMP_parallel_start` and has
    /// not ended yet (they nest), kept until their `GOMP_parallel_end`.
    /// Boxed: the team holds each Region's address, which must not move
    /// when the vector grows.
    #[allow(clippy::vec_box)]
    static OPEN_REGIONS: std::cell::RefCell<Vec<Box<Region>>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// `GOMP_parallel_start` (GCC before 4.9: the thread that starts the region
/// runs its own share by calling the body itself, then
/// `GOMP_parallel_end`): every other team thread beats when its share is
/// done.
///
/// # Safety
/// As the real function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_parallel_start(body: RegionFn, data: *mut c_void, threads: c_uint) {
    // SAFETY: the real GOMP_parallel_start, whose type this is.
    let real: GompParallelStart = unsafe { std::mem::transmute(GOMP_PARALLEL_START.address()) };
    if !parts().heartbeats {
        // SAFETY: the program's own call, passed on.
        return unsafe { real(body, data, threads) };
    }
    let region = Box::new(Region { body, data });
    let pointer: *const Region = &*region;
    if OPEN_REGIONS.try_with(|open| open.borrow_mut().push(region)).is_err() {
        // The thread is being torn down: no bookkeeping, the plain call.
        // SAFETY: the program's own call, passed on.
        return unsafe { real(body, data, threads) };
    }
    // SAFETY: region_piece runs body(data) on every other team thread; the
    // Region lives in OPEN_REGIONS until GOMP_parallel_end has joined them.
    unsafe { real(region_piece, pointer.cast_mut().cast(), threads) }
}

/// `GOMP_parallel_end`: the real call (the team is joined), then the
/// region's bookkeeping goes and the thread that started it beats.
///
/// # Safety
/// As the real function: ends the region the calling thread started.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn GOMP_parallel_end() {
    // SAFETY: the real GOMP_parallel_end, a function of no arguments.
    let real: GompVoid = unsafe { std::mem::transmute(GOMP_PARALLEL_END.address()) };
    // SAFETY: the program's own call, passed on.
    unsafe { real() };
    if parts().heartbeats
        && OPEN_REGIONS
            .try_with(|open| open.borrow_mut().pop())
            .ok()
            .flatten()
            .is_some()
    {
        counted();
    }
}

/// OMPT's `ompt_data_t`: a word the runtime keeps for the tool.
#[repr(C)]
#[derive(Clone, Copy)]
union OmptData {
    value: u64,
    ptr: *mut c_void,
}

/// OMPT's `ompt_function_lookup_t`: the runtime's entry points by name.
type OmptLookup = unsafe extern "C" fn(*const std::ffi::c_char) -> Option<unsafe extern "C" fn()>;
/// OMPT's `ompt_set_callback_t`.
type OmptSetCallback = unsafe extern "C" fn(c_int, Option<unsafe extern "C" fn()>) -> c_int;

/// OMPT's `ompt_start_tool_result_t`.
#[repr(C)]
pub struct OmptStartToolResult {
    initialize: unsafe extern "C" fn(OmptLookup, c_int, *mut OmptData) -> c_int,
    finalize: unsafe extern "C" fn(*mut OmptData),
    tool_data: OmptData,
}

/// `ompt_callback_sync_region` (OpenMP 5.0 `ompt_callbacks_t`).
const OMPT_CALLBACK_SYNC_REGION: c_int = 23;
/// `ompt_scope_end`.
const OMPT_SCOPE_END: c_int = 2;
/// The `ompt_sync_region_t` kinds that are barriers: `barrier` (1, older
/// runtimes), `barrier_implicit` (2), `barrier_explicit` (3),
/// `barrier_implementation` (4), `barrier_implicit_workshare` (8) and
/// `barrier_implicit_parallel` (9, the end of a parallel region).
fn is_barrier(kind: c_int) -> bool {
    matches!(kind, 1..=4 | 8 | 9)
}

/// Every barrier a thread of the team passed: one beat.
unsafe extern "C" fn ompt_sync_region(
    kind: c_int,
    endpoint: c_int,
    _parallel: *mut OmptData,
    _task: *mut OmptData,
    _return_address: *const c_void,
) {
    if endpoint == OMPT_SCOPE_END && is_barrier(kind) {
        counted();
    }
}

/// Registers [`ompt_sync_region`]; the tool stays active only if the
/// runtime took it.
unsafe extern "C" fn ompt_initialize(lookup: OmptLookup, _device: c_int, _data: *mut OmptData) -> c_int {
    // SAFETY: the runtime's lookup with a NUL-terminated name.
    let Some(set) = (unsafe { lookup(c"ompt_set_callback".as_ptr()) }) else {
        return 0;
    };
    // SAFETY: `ompt_set_callback` has this type (OpenMP 5.0 §4.6.1.3).
    let set: OmptSetCallback = unsafe { std::mem::transmute(set) };
    // SAFETY: ompt_sync_region has the type of ompt_callback_sync_region_t;
    // the runtime calls it through the generic pointer it asks for.
    let callback = unsafe {
        std::mem::transmute::<
            unsafe extern "C" fn(c_int, c_int, *mut OmptData, *mut OmptData, *const c_void),
            unsafe extern "C" fn(),
        >(ompt_sync_region)
    };
    // SAFETY: registering a callback that only counts.
    let took = unsafe { set(OMPT_CALLBACK_SYNC_REGION, Some(callback)) };
    // ompt_set_error 0, ompt_set_never 1, ompt_set_impossible 2: nothing
    // will come; sometimes (3, 4) or always (5): keep the tool.
    c_int::from(took >= 3)
}

unsafe extern "C" fn ompt_finalize(_data: *mut OmptData) {}

/// The OMPT entry point LLVM's OpenMP runtime (libomp, also Intel's) looks
/// for at start-up: with `heartbeats` on, this library is its tool and
/// counts every barrier a team thread passes (the implicit one at the end
/// of each parallel region included).
///
/// # Safety
/// Called by the OpenMP runtime as OpenMP 5.0 §4.2.1 says.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn ompt_start_tool(
    _omp_version: c_uint,
    _runtime_version: *const std::ffi::c_char,
) -> *mut OmptStartToolResult {
    if !parts().heartbeats {
        return std::ptr::null_mut();
    }
    // The runtime keeps the pointer and may write tool_data: a leaked,
    // writable allocation, made once.
    static RESULT: AtomicUsize = AtomicUsize::new(0);
    let made = RESULT.load(Ordering::Acquire);
    if made != 0 {
        return made as *mut OmptStartToolResult;
    }
    let result = Box::into_raw(Box::new(OmptStartToolResult {
        initialize: ompt_initialize,
        finalize: ompt_finalize,
        tool_data: OmptData { value: 0 },
    }));
    match RESULT.compare_exchange(0, result as usize, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => result,
        Err(first) => {
            // SAFETY: ours, never handed out.
            drop(unsafe { Box::from_raw(result) });
            first as *mut OmptStartToolResult
        }
    }
}

/// The thread tree of this process, as declared so far.
struct Tree {
    api: OutsideBubbles,
    /// The bubble each thread of the tree is in.
    bubble_of: HashMap<u32, BubbleId>,
    /// The bubble each creator made for itself and the threads it starts.
    made: HashMap<u32, BubbleId>,
}

enum TreeState {
    /// Nothing declared yet (the channel is made on the first thread start).
    Unopened,
    Open(Box<Tree>),
    Off,
}

static TREE: Mutex<TreeState> = Mutex::new(TreeState::Unopened);
/// Set in a forked child (another process: pinlearn does not read its
/// channel, and another thread may have held [`TREE`] at the fork) and when
/// the tree was turned off: [`TREE`] is not touched again.
static TREE_OFF: AtomicBool = AtomicBool::new(false);
/// The bubble channel, removed when the process exits normally.
static CHANNEL: OnceLock<(u32, PathBuf)> = OnceLock::new();

extern "C" fn forked_child() {
    TREE_OFF.store(true, Ordering::Relaxed);
}

extern "C" fn remove_channel_at_exit() {
    if let Some((pid, path)) = CHANNEL.get()
        && *pid == std::process::id()
    {
        let _ = std::fs::remove_file(path);
    }
}

/// Whether this process declares its thread tree.
fn tree_wanted() -> bool {
    static WANTED: OnceLock<bool> = OnceLock::new();
    *WANTED.get_or_init(|| {
        if !parts().threads || std::env::var_os(LEVELS_ENV).is_none() {
            return false;
        }
        // SAFETY: getppid cannot fail.
        let parent = unsafe { libc::getppid() };
        std::env::var(PARENT_ENV).is_ok_and(|pid| pid.trim() == parent.to_string())
    })
}

/// The tree, or `None` when it is off; `f`'s error turns it off with one
/// line on stderr.
fn with_tree<T>(f: impl FnOnce(&mut Tree, u32) -> Result<T, String>) -> Option<T> {
    if TREE_OFF.load(Ordering::Relaxed) || !tree_wanted() {
        return None;
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut state = TREE.lock().unwrap_or_else(|p| p.into_inner());
        if matches!(*state, TreeState::Unopened) {
            static FORK: Once = Once::new();
            // SAFETY: registering a handler that only stores an atomic.
            FORK.call_once(|| unsafe {
                libc::pthread_atfork(None, None, Some(forked_child));
            });
            match OutsideBubbles::connect() {
                Ok(api) => {
                    if CHANNEL.set((std::process::id(), api.path().to_path_buf())).is_ok() {
                        // SAFETY: registering a handler that removes one file.
                        unsafe { libc::atexit(remove_channel_at_exit) };
                    }
                    *state = TreeState::Open(Box::new(Tree {
                        api,
                        bubble_of: HashMap::new(),
                        made: HashMap::new(),
                    }));
                }
                Err(e) => {
                    *state = TreeState::Off;
                    return Err(format!("cannot open the bubble channel ({e})"));
                }
            }
        }
        let TreeState::Open(tree) = &mut *state else {
            return Ok(None);
        };
        // SAFETY: gettid cannot fail.
        let me = unsafe { libc::gettid() } as u32;
        match f(tree, me) {
            Ok(value) => Ok(Some(value)),
            Err(e) => {
                *state = TreeState::Off;
                Err(e)
            }
        }
    }));
    let why = match outcome {
        Ok(Ok(value)) => return value,
        Ok(Err(why)) => why,
        Err(_) => "a panic in its bookkeeping".to_string(),
    };
    if !TREE_OFF.swap(true, Ordering::Relaxed) {
        eprintln!("pinlearn preload: {why}; the thread tree is not declared from now on");
    }
    None
}

/// Takes the calling thread out of its bubble when it ends.
struct Member(Cell<u32>);

impl Drop for Member {
    fn drop(&mut self) {
        let tid = self.0.get();
        if tid == 0 {
            return;
        }
        with_tree(|tree, _| {
            tree.made.remove(&tid);
            if tree.bubble_of.remove(&tid).is_some() {
                tree.api.remove_thread(tid).map_err(|e| e.to_string())?;
            }
            Ok(())
        });
    }
}

thread_local! {
    static MEMBER: Member = const { Member(Cell::new(0)) };
}

/// Remembers that the calling thread is in a bubble (and leaves it when it ends).
fn joined(tid: u32) {
    let _ = MEMBER.try_with(|m| m.0.set(tid));
}

/// In a creator about to start a thread: the bubble holding the creator and
/// the threads it starts, made (and the creator moved into it) the first time.
fn bubble_for_children() -> Option<BubbleId> {
    with_tree(|tree, me| {
        if let Some(&bubble) = tree.made.get(&me) {
            return Ok(bubble);
        }
        let outer = tree.bubble_of.get(&me).copied();
        let name = format!("threads of {me} #{}", tree.api.bubbles().count());
        let bubble = tree.api.create(Some(&name), outer).map_err(|e| e.to_string())?;
        if outer.is_some() {
            tree.api.remove_thread(me).map_err(|e| e.to_string())?;
        }
        tree.api.insert_thread(bubble, me).map_err(|e| e.to_string())?;
        tree.bubble_of.insert(me, bubble);
        tree.made.insert(me, bubble);
        joined(me);
        Ok(bubble)
    })
}

/// A new thread's start routine and the bubble it joins first.
struct Start {
    routine: StartRoutine,
    arg: *mut c_void,
    bubble: BubbleId,
}

/// What a thread started through [`pthread_create`] runs: it joins its
/// creator's bubble, then runs the program's routine.
extern "C" fn started(start: *mut c_void) -> *mut c_void {
    // SAFETY: the Box made by pthread_create below, handed over to this thread only.
    let start = unsafe { Box::from_raw(start.cast::<Start>()) };
    let bubble = start.bubble;
    with_tree(|tree, me| {
        if tree.bubble_of.remove(&me).is_some() {
            // A thread with this id ended without its exit being seen.
            tree.api.remove_thread(me).map_err(|e| e.to_string())?;
        }
        tree.api.insert_thread(bubble, me).map_err(|e| e.to_string())?;
        tree.bubble_of.insert(me, bubble);
        joined(me);
        Ok(())
    });
    (start.routine)(start.arg)
}

/// `pthread_create`: with the thread tree on, the new thread joins its
/// creator's bubble before it runs the program's routine.
///
/// # Safety
/// As the real function.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pthread_create(
    thread: *mut libc::pthread_t,
    attr: *const libc::pthread_attr_t,
    routine: StartRoutine,
    arg: *mut c_void,
) -> c_int {
    // SAFETY: the real pthread_create, whose type this is.
    let real: PthreadCreate = unsafe { std::mem::transmute(PTHREAD_CREATE.address()) };
    let Some(bubble) = bubble_for_children() else {
        // SAFETY: the program's own call, passed on.
        return unsafe { real(thread, attr, routine, arg) };
    };
    let start = Box::into_raw(Box::new(Start { routine, arg, bubble }));
    // SAFETY: the program's call with its attributes; `started` takes the Box.
    let made = unsafe { real(thread, attr, started, start.cast()) };
    if made != 0 {
        // No thread took it.
        // SAFETY: the Box made above, not handed over.
        drop(unsafe { Box::from_raw(start) });
    }
    made
}
