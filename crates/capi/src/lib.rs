//! The C ABI: the papers' in-process mode for C and C++ programs.
//!
//! ```text
//!   C program                         this crate                    pinlearn-engine
//!   pinlearn_start(toml, mode) ─────► Request from TOML ──────────► Manager::start (own thread)
//!   pinlearn_start_on(.., topology, map) ─► the same on a given topology ─► Manager::start_on
//!   pinlearn_register_thread(m) ────► Manager::register_current_thread
//!   pinlearn_bubble_*(m, ..) ───────► Registrar: DeclaredBubbles (create, insert, priority,
//!                                      burst level, load, shake), wake_up (placed at once)
//!   pinlearn_places / _place_cpus ──► Registrar::places / place_cpus (topology queries)
//!   pinlearn_connect() ─────────────► OutsideBubbles: the same calls, sent over the bubble
//!                                      channel to a pinlearn supervising the program from outside
//!   pinlearn_heartbeat(units) ──────► pinlearn_heartbeat::beat (readable from outside too)
//!   pinlearn_stop(m) ───────────────► Manager::stop ─► summary JSON (free with pinlearn_free_string)
//!   pinlearn_last_error() ◄───────── the calling thread's last error message
//! ```
//!
//! The header `include/pinlearn.h` is generated from this file by cbindgen;
//! a test fails when it is out of date (`PINLEARN_BLESS=1 cargo test -p
//! pinlearn-capi` rewrites it).

use pinlearn_engine::outside::OutsideBubbles;
use pinlearn_engine::{BubbleApi, BubbleId, EngineError, Manager, Registration, Request, Settings};
use pinlearn_topology::{CpuSet, Topology};
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_double, c_int};
use std::ptr;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

fn set_error(message: String) {
    let message = CString::new(message.replace('\0', " ")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = message);
}

/// Supervise every thread of the process (except the manager's own).
pub const PINLEARN_ALL_THREADS: c_int = 0;
/// Supervise only threads that call `pinlearn_register_thread`.
pub const PINLEARN_REGISTERED_THREADS: c_int = 1;

/// An in-process manager started by `pinlearn_start`, or the bubble
/// channel to a pinlearn outside the program opened by `pinlearn_connect`.
pub struct PinlearnManager {
    handle: Handle,
}

enum Handle {
    InProcess(Manager),
    Outside(OutsideBubbles),
}

impl PinlearnManager {
    fn api(&self) -> &dyn BubbleApi {
        match &self.handle {
            Handle::InProcess(manager) => manager.registrar(),
            Handle::Outside(outside) => outside,
        }
    }
}

/// Starts the manager on a thread of its own.
///
/// `config_toml`: the same TOML as `pinlearn --config` (NULL or "" for the
/// defaults). `mode`: `PINLEARN_ALL_THREADS` or `PINLEARN_REGISTERED_THREADS`.
/// Returns NULL on error; `pinlearn_last_error()` says why.
///
/// # Safety
/// `config_toml` must be NULL or a valid NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_start(config_toml: *const c_char, mode: c_int) -> *mut PinlearnManager {
    // SAFETY: the caller's promise is passed on.
    unsafe { pinlearn_start_on(config_toml, mode, ptr::null(), ptr::null()) }
}

/// `pinlearn_start` on a given topology instead of the machine's:
/// `topology` is an hwloc synthetic string (`"node:2 core:4 pu:1"`) or an
/// lstopo XML file, `topology_map` the real CPUs (a list such as `"0-7"`)
/// that the PUs of a synthetic topology stand for, in order (NULL for an
/// XML file). `topology` NULL: the machine's, as `pinlearn_start`.
///
/// # Safety
/// Each string must be NULL or a valid NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_start_on(
    config_toml: *const c_char,
    mode: c_int,
    topology: *const c_char,
    topology_map: *const c_char,
) -> *mut PinlearnManager {
    let started = (|| {
        // SAFETY: the caller promises NULL or valid C strings.
        let (text, topology, map) = unsafe { (text(config_toml)?, text(topology)?, text(topology_map)?) };
        let registration = match mode {
            PINLEARN_ALL_THREADS => Registration::All,
            PINLEARN_REGISTERED_THREADS => Registration::Explicit,
            other => {
                return Err(format!(
                    "unknown mode {other}: use PINLEARN_ALL_THREADS or PINLEARN_REGISTERED_THREADS"
                ));
            }
        };
        let settings = Settings::from_toml_str(text.unwrap_or_default()).map_err(|e| format!("configuration {e}"))?;
        let request = Request {
            settings,
            cpus: None,
            trace: None,
            bubbles: None,
            watchdog: None,
        };
        let manager = match topology {
            None => Manager::start(&request, registration),
            Some(spec) => Manager::start_on(&request, registration, &given_topology(spec, map)?),
        };
        manager.map_err(|e| e.to_string())
    })();
    match started {
        Ok(manager) => Box::into_raw(Box::new(PinlearnManager {
            handle: Handle::InProcess(manager),
        })),
        Err(e) => {
            set_error(format!("pinlearn_start: {e}"));
            ptr::null_mut()
        }
    }
}

/// The text of a C string argument (`None` for NULL).
///
/// # Safety
/// `s` must be NULL or a valid NUL-terminated string.
unsafe fn text<'a>(s: *const c_char) -> Result<Option<&'a str>, String> {
    if s.is_null() {
        return Ok(None);
    }
    // SAFETY: the caller promises a valid C string.
    let bytes = unsafe { CStr::from_ptr(s) };
    bytes
        .to_str()
        .map(Some)
        .map_err(|_| format!("{:?} is not UTF-8", bytes.to_string_lossy()))
}

/// The topology of `pinlearn_start_on`, mapped onto the real CPUs.
fn given_topology(spec: &str, map: Option<&str>) -> Result<Topology, String> {
    let map = map
        .map(CpuSet::parse_list)
        .transpose()
        .map_err(|e| format!("topology_map: {e}"))?;
    Topology::from_spec_onto(spec, map.as_ref()).map_err(|e| e.to_string())
}

/// Puts the calling thread under the manager. Returns 0, or -1 if `manager` is NULL.
///
/// # Safety
/// `manager` must be NULL or a pointer returned by `pinlearn_start` and not yet stopped.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_register_thread(manager: *const PinlearnManager) -> c_int {
    // SAFETY: the caller promises a live manager or NULL.
    match unsafe { manager.as_ref() } {
        Some(m) => {
            if let Handle::InProcess(manager) = &m.handle {
                manager.register_current_thread();
            }
            0
        }
        None => {
            set_error("pinlearn_register_thread: manager is NULL".into());
            -1
        }
    }
}

/// Reports `units` of finished work for the calling thread (its progress,
/// which `--metric heartbeat` learns from). Never fails.
#[unsafe(no_mangle)]
pub extern "C" fn pinlearn_heartbeat(units: u64) {
    pinlearn_heartbeat::beat(units);
}

/// Stops the manager, puts back every thread's affinity, frees `manager`,
/// and returns the run summary as JSON (free it with `pinlearn_free_string`),
/// or NULL on error.
///
/// # Safety
/// `manager` must be NULL or a pointer returned by `pinlearn_start`, used at most once here.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_stop(manager: *mut PinlearnManager) -> *mut c_char {
    if manager.is_null() {
        set_error("pinlearn_stop: manager is NULL".into());
        return ptr::null_mut();
    }
    // SAFETY: the pointer came from Box::into_raw in pinlearn_start.
    let manager = unsafe { Box::from_raw(manager) };
    let manager = match manager.handle {
        Handle::InProcess(manager) => manager,
        // Closing the channel removes it; the summary is the outside pinlearn's.
        Handle::Outside(_) => return CString::new("{}").map(CString::into_raw).unwrap_or(ptr::null_mut()),
    };
    match manager.stop() {
        Ok(summary) => {
            let json = serde_json::to_string(&summary).unwrap_or_default();
            CString::new(json).map(CString::into_raw).unwrap_or(ptr::null_mut())
        }
        Err(e) => {
            set_error(format!("pinlearn_stop: {e}"));
            ptr::null_mut()
        }
    }
}

/// Frees a string returned by pinlearn.
///
/// # Safety
/// `s` must be NULL or a string returned by pinlearn, freed once.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_free_string(s: *mut c_char) {
    if !s.is_null() {
        // SAFETY: allocated by CString::into_raw above.
        drop(unsafe { CString::from_raw(s) });
    }
}

/// The calling thread's last error message ("" if none). Valid until the
/// next pinlearn call on this thread.
#[unsafe(no_mangle)]
pub extern "C" fn pinlearn_last_error() -> *const c_char {
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

/// The root of the bubble tree, as a parent for `pinlearn_bubble_create`.
pub const PINLEARN_ROOT: c_int = -1;

/// Opens this process's bubble channel to the pinlearn that supervises it
/// from outside (`pinlearn run --policy bubbles` or `attach`): the returned
/// handle takes the `pinlearn_bubble_*` calls and topology queries as a
/// manager started in the process does (`pinlearn_register_thread` does
/// nothing: the outside pinlearn sees every thread). Declarations are
/// placed at pinlearn's next period; a wake-up does not wait.
/// `pinlearn_stop` closes the channel and returns "{}". Returns NULL on
/// error; `pinlearn_last_error()` says why.
#[unsafe(no_mangle)]
pub extern "C" fn pinlearn_connect() -> *mut PinlearnManager {
    match OutsideBubbles::connect() {
        Ok(outside) => Box::into_raw(Box::new(PinlearnManager {
            handle: Handle::Outside(outside),
        })),
        Err(e) => {
            set_error(format!("pinlearn_connect: {e}"));
            ptr::null_mut()
        }
    }
}

/// The manager's bubble calls, or the error to report for `function`.
///
/// # Safety
/// `manager` must be NULL or a live manager.
unsafe fn registrar<'a>(manager: *const PinlearnManager, function: &str) -> Result<&'a dyn BubbleApi, String> {
    // SAFETY: the caller promises a live manager or NULL.
    match unsafe { manager.as_ref() } {
        Some(m) => Ok(m.api()),
        None => Err(format!("{function}: manager is NULL")),
    }
}

/// A bubble number from C.
fn bubble_id(bubble: c_int) -> Result<BubbleId, String> {
    u32::try_from(bubble)
        .map(BubbleId)
        .map_err(|_| format!("bubble {bubble} does not exist: bubbles are numbered from 0"))
}

/// A thread id from C: 0 is the calling thread.
fn thread_id(tid: c_int) -> Result<u32, String> {
    match tid {
        0 => Ok(pinlearn_engine::live::current_tid()),
        t if t > 0 => Ok(t as u32),
        t => Err(format!(
            "thread id {t}: give a thread id of this program, or 0 for the calling thread"
        )),
    }
}

/// Runs `call`, turning its error into -1 and `pinlearn_last_error()`.
fn status(function: &str, call: impl FnOnce() -> Result<c_int, String>) -> c_int {
    match call() {
        Ok(value) => value,
        Err(e) => {
            let e = if e.starts_with(function) {
                e
            } else {
                format!("{function}: {e}")
            };
            set_error(e);
            -1
        }
    }
}

fn engine_error(e: EngineError) -> String {
    e.to_string()
}

/// Creates a bubble nested in `parent` (`PINLEARN_ROOT` for the root),
/// called `name` (NULL: "bubble N"). Returns its number (0, 1, ...) or -1.
/// The manager must run `policy = "bubbles"` without a rules file.
///
/// # Safety
/// `manager`: NULL or live; `name`: NULL or a valid NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_bubble_create(
    manager: *const PinlearnManager,
    parent: c_int,
    name: *const c_char,
) -> c_int {
    status("pinlearn_bubble_create", || {
        // SAFETY: the caller's promises.
        let (registrar, name) = unsafe { (registrar(manager, "pinlearn_bubble_create")?, text(name)?) };
        let parent = if parent == PINLEARN_ROOT {
            None
        } else {
            Some(bubble_id(parent)?)
        };
        let id = registrar.create(name, parent).map_err(engine_error)?;
        c_int::try_from(id.0).map_err(|_| "too many bubbles".to_string())
    })
}

/// Puts thread `tid` (0: the calling thread) in `bubble`, and under the
/// manager. A thread is in one bubble at a time. Returns 0 or -1.
///
/// # Safety
/// `manager` must be NULL or a live manager.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_bubble_insert_thread(
    manager: *const PinlearnManager,
    bubble: c_int,
    tid: c_int,
) -> c_int {
    status("pinlearn_bubble_insert_thread", || {
        // SAFETY: the caller's promise.
        let registrar = unsafe { registrar(manager, "pinlearn_bubble_insert_thread")? };
        let bubble = bubble_id(bubble)?;
        match tid {
            0 => registrar.insert_current_thread(bubble),
            _ => registrar.insert_thread(bubble, thread_id(tid)?),
        }
        .map_err(engine_error)?;
        Ok(0)
    })
}

/// Nests `child` (a bubble of the root) in `bubble`. Returns 0 or -1.
///
/// # Safety
/// `manager` must be NULL or a live manager.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_bubble_insert_bubble(
    manager: *const PinlearnManager,
    bubble: c_int,
    child: c_int,
) -> c_int {
    status("pinlearn_bubble_insert_bubble", || {
        // SAFETY: the caller's promise.
        let registrar = unsafe { registrar(manager, "pinlearn_bubble_insert_bubble")? };
        registrar
            .insert_bubble(bubble_id(bubble)?, bubble_id(child)?)
            .map_err(engine_error)?;
        Ok(0)
    })
}

/// Takes thread `tid` (0: the calling thread) out of its bubble. Returns 0 or -1.
///
/// # Safety
/// `manager` must be NULL or a live manager.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_bubble_remove_thread(manager: *const PinlearnManager, tid: c_int) -> c_int {
    status("pinlearn_bubble_remove_thread", || {
        // SAFETY: the caller's promise.
        let registrar = unsafe { registrar(manager, "pinlearn_bubble_remove_thread")? };
        registrar.remove_thread(thread_id(tid)?).map_err(engine_error)?;
        Ok(0)
    })
}

/// Higher priorities are placed first. Returns 0 or -1.
///
/// # Safety
/// `manager` must be NULL or a live manager.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_bubble_set_priority(
    manager: *const PinlearnManager,
    bubble: c_int,
    priority: c_int,
) -> c_int {
    status("pinlearn_bubble_set_priority", || {
        // SAFETY: the caller's promise.
        let registrar = unsafe { registrar(manager, "pinlearn_bubble_set_priority")? };
        registrar
            .set_priority(bubble_id(bubble)?, priority)
            .map_err(engine_error)?;
        Ok(0)
    })
}

/// The level at which `bubble` opens (its burst level): "machine",
/// "package", "die", "l3", "node" or "core"; NULL for wherever the spread
/// needs. A level this machine's tree lacks is refused. Returns 0 or -1.
///
/// # Safety
/// `manager`: NULL or live; `level`: NULL or a valid NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_bubble_set_burst(
    manager: *const PinlearnManager,
    bubble: c_int,
    level: *const c_char,
) -> c_int {
    status("pinlearn_bubble_set_burst", || {
        // SAFETY: the caller's promises.
        let (registrar, level) = unsafe { (registrar(manager, "pinlearn_bubble_set_burst")?, text(level)?) };
        registrar.set_burst(bubble_id(bubble)?, level).map_err(engine_error)?;
        Ok(0)
    })
}

/// The load of `bubble` instead of the sum of its threads' (one per
/// running thread): a number >= 0, or `PINLEARN_LOAD_OF_THREADS` to count
/// its threads again. Returns 0 or -1.
///
/// # Safety
/// `manager` must be NULL or a live manager.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_bubble_set_load(
    manager: *const PinlearnManager,
    bubble: c_int,
    load: c_double,
) -> c_int {
    status("pinlearn_bubble_set_load", || {
        // SAFETY: the caller's promise.
        let registrar = unsafe { registrar(manager, "pinlearn_bubble_set_load")? };
        let load = (load != PINLEARN_LOAD_OF_THREADS).then_some(load);
        registrar.set_load(bubble_id(bubble)?, load).map_err(engine_error)?;
        Ok(0)
    })
}

/// For `pinlearn_bubble_set_load`: the bubble weighs what its threads do.
pub const PINLEARN_LOAD_OF_THREADS: c_double = -1.0;

/// The load of thread `tid` (0: the caller) instead of its measured one
/// (1 while it runs): a number >= 0, 0 for a thread that will only wait
/// (a parent joining its children: the spread then leaves it high in the
/// tree and gives the cores to the threads that compute), or
/// `PINLEARN_LOAD_MEASURED` to measure it again. Held until changed or the
/// thread ends; takes effect at the next period or wake-up. Returns 0 or -1.
///
/// # Safety
/// `manager` must be NULL or a live manager.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_thread_set_load(
    manager: *const PinlearnManager,
    tid: c_int,
    load: c_double,
) -> c_int {
    status("pinlearn_thread_set_load", || {
        // SAFETY: the caller's promise.
        let registrar = unsafe { registrar(manager, "pinlearn_thread_set_load")? };
        let tid = thread_id(tid)?;
        let load = (load != PINLEARN_LOAD_MEASURED).then_some(load);
        registrar.set_thread_load(tid, load).map_err(engine_error)?;
        Ok(0)
    })
}

/// For `pinlearn_thread_set_load`: the thread weighs what it is measured to.
pub const PINLEARN_LOAD_MEASURED: c_double = -1.0;

/// Places every bubble as declared so far at once: returns once the
/// manager has taken a period with them (so threads that live shorter
/// than a period are placed too). Returns 0 or -1.
///
/// # Safety
/// `manager` must be NULL or a live manager.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_bubble_wake_up(manager: *const PinlearnManager, bubble: c_int) -> c_int {
    status("pinlearn_bubble_wake_up", || {
        // SAFETY: the caller's promise.
        let registrar = unsafe { registrar(manager, "pinlearn_bubble_wake_up")? };
        registrar.wake_up(bubble_id(bubble)?).map_err(engine_error)?;
        Ok(0)
    })
}

/// Spreads everything afresh at the next period, ignoring where threads
/// are (the paper's shake). Returns 0 or -1.
///
/// # Safety
/// `manager` must be NULL or a live manager.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_bubble_shake(manager: *const PinlearnManager) -> c_int {
    status("pinlearn_bubble_shake", || {
        // SAFETY: the caller's promise.
        let registrar = unsafe { registrar(manager, "pinlearn_bubble_shake")? };
        registrar.shake().map_err(engine_error)?;
        Ok(0)
    })
}

/// How many places the manager's tree has at `level` ("machine",
/// "package", "die", "l3", "node" or "core"; 0 when it lacks that level),
/// or -1 for an unknown level name.
///
/// # Safety
/// `manager`: NULL or live; `level`: a valid NUL-terminated string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_places(manager: *const PinlearnManager, level: *const c_char) -> c_int {
    status("pinlearn_places", || {
        // SAFETY: the caller's promises.
        let (registrar, level) = unsafe { (registrar(manager, "pinlearn_places")?, text(level)?) };
        let count = registrar.places(level.ok_or("level is NULL")?).map_err(engine_error)?;
        c_int::try_from(count).map_err(|_| "too many places".to_string())
    })
}

/// The CPUs of place `index` of `level`: writes up to `capacity` CPU
/// numbers, lowest first, into `cpus` and returns how many the place has
/// (more than `capacity` means some were left out), or -1.
///
/// # Safety
/// `manager`: NULL or live; `level`: a valid NUL-terminated string;
/// `cpus`: room for `capacity` ints (may be NULL when `capacity` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn pinlearn_place_cpus(
    manager: *const PinlearnManager,
    level: *const c_char,
    index: c_int,
    cpus: *mut c_int,
    capacity: c_int,
) -> c_int {
    status("pinlearn_place_cpus", || {
        // SAFETY: the caller's promises.
        let (registrar, level) = unsafe { (registrar(manager, "pinlearn_place_cpus")?, text(level)?) };
        let index = usize::try_from(index).map_err(|_| format!("place {index} does not exist"))?;
        let set = registrar
            .place_cpus(level.ok_or("level is NULL")?, index)
            .map_err(engine_error)?;
        let capacity = usize::try_from(capacity).unwrap_or(0);
        if capacity > 0 && cpus.is_null() {
            return Err("cpus is NULL".into());
        }
        for (i, cpu) in set.iter().take(capacity).enumerate() {
            // SAFETY: i < capacity, and the caller gave room for capacity ints.
            unsafe { *cpus.add(i) = cpu as c_int };
        }
        c_int::try_from(set.len()).map_err(|_| "too many CPUs".to_string())
    })
}
