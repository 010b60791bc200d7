//! The C ABI: the papers' in-process mode for C and C++ programs.
//!
//! ```text
//!   C program                         this crate                    pinlearn-engine
//!   pinlearn_start(toml, mode) ─────► Request from TOML ──────────► Manager::start (own thread)
//!   pinlearn_register_thread(m) ────► Manager::register_current_thread
//!   pinlearn_heartbeat(units) ──────► pinlearn_heartbeat::beat (readable from outside too)
//!   pinlearn_stop(m) ───────────────► Manager::stop ─► summary JSON (free with pinlearn_free_string)
//!   pinlearn_last_error() ◄───────── the calling thread's last error message
//! ```
//!
//! The header `include/pinlearn.h` is generated from this file by cbindgen;
//! a test fails when it is out of date (`PINLEARN_BLESS=1 cargo test -p
//! pinlearn-capi` rewrites it).

use pinlearn_engine::{Manager, Registration, Request, Settings};
use std::cell::RefCell;
use std::ffi::{CStr, CString, c_char, c_int};
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

/// An in-process manager started by `pinlearn_start`.
pub struct PinlearnManager {
    manager: Manager,
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
    let text = if config_toml.is_null() {
        String::new()
    } else {
        // SAFETY: the caller promises a valid C string.
        match unsafe { CStr::from_ptr(config_toml) }.to_str() {
            Ok(text) => text.to_string(),
            Err(_) => {
                set_error("pinlearn_start: the configuration is not UTF-8".into());
                return ptr::null_mut();
            }
        }
    };
    let registration = match mode {
        PINLEARN_ALL_THREADS => Registration::All,
        PINLEARN_REGISTERED_THREADS => Registration::Explicit,
        other => {
            set_error(format!(
                "pinlearn_start: unknown mode {other}: use PINLEARN_ALL_THREADS or PINLEARN_REGISTERED_THREADS"
            ));
            return ptr::null_mut();
        }
    };
    let settings = match Settings::from_toml_str(&text) {
        Ok(settings) => settings,
        Err(e) => {
            set_error(format!("pinlearn_start: configuration {e}"));
            return ptr::null_mut();
        }
    };
    let request = Request {
        settings,
        cpus: None,
        trace: None,
        bubbles: None,
        watchdog: None,
    };
    match Manager::start(&request, registration) {
        Ok(manager) => Box::into_raw(Box::new(PinlearnManager { manager })),
        Err(e) => {
            set_error(format!("pinlearn_start: {e}"));
            ptr::null_mut()
        }
    }
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
            m.manager.register_current_thread();
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
    match manager.manager.stop() {
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
