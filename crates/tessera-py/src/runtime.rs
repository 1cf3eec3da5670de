//! Running engine calls from Python: off the GIL, on a worker pool that survives `fork`, and
//! interruptible by Ctrl-C.
//!
//! Every call that touches storage goes through [`run`]: on Python's main thread, the work
//! runs on a thread of its own (inside the package's rayon pool, so the engine's parallel
//! decoding uses it), while the calling thread waits without the GIL and checks for signals
//! every 50 ms; on other threads, which get no signals, it goes to the pool directly. On Ctrl-C the
//! call raises `KeyboardInterrupt` at once; the abandoned work finishes in the background
//! and its result is dropped (a write still commits whole or not at all).
//!
//! rayon's global pool does not survive `fork` (the child has its threads' bookkeeping but
//! not the threads), so the package keeps its own pool and builds a new one when it finds
//! itself in a new process.

use crossbeam_channel::{RecvTimeoutError, bounded as sync_channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use pyo3::prelude::*;

use crate::errors::tiledb_error;

/// The pool of this process: (process id, pool).
static POOL: Mutex<Option<(u32, Arc<rayon::ThreadPool>)>> = Mutex::new(None);

/// The worker pool of this process, built on first use and again after a `fork`.
pub(crate) fn current_pool() -> PyResult<Arc<rayon::ThreadPool>> {
    let pid = std::process::id();
    let mut slot = POOL.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((owner, pool)) = slot.as_ref()
        && *owner == pid
    {
        return Ok(pool.clone());
    }
    // A pool inherited through fork has no threads in this process: it is never used or
    // dropped again (dropping it would wait on threads that do not exist).
    if let Some(old) = slot.take() {
        std::mem::forget(old);
    }
    let pool = rayon::ThreadPoolBuilder::new()
        .thread_name(|i| format!("tessera-{i}"))
        .build()
        .map_err(|e| tiledb_error(format!("cannot start the worker pool: {e}")))?;
    let pool = Arc::new(pool);
    *slot = Some((pid, pool.clone()));
    Ok(pool)
}

/// Whether the calling thread is Python's main thread: the only one that runs signal
/// handlers, so the only one worth keeping responsive to Ctrl-C.
fn on_main_thread(py: Python<'_>) -> bool {
    let check = || -> PyResult<bool> {
        let threading = py.import("threading")?;
        let main = threading.call_method0("main_thread")?;
        let current = threading.call_method0("current_thread")?;
        Ok(main.is(&current))
    };
    // When in doubt, keep the interruptible path.
    check().unwrap_or(true)
}

/// Runs `work` without the GIL on the package's pool and returns its result; on the main
/// thread, raises `KeyboardInterrupt` (or whatever a signal handler raises) if a signal
/// arrives first.
///
/// Other threads (a Dask worker's task threads, a thread pool's) never see signals, so
/// there the work is handed to the pool directly: a thread of its own and a channel cost
/// two more wake-ups per call, which on a loaded machine cost more than a small read.
pub(crate) fn run<T, F>(py: Python<'_>, work: F) -> PyResult<T>
where
    T: Send + 'static,
    F: FnOnce() -> PyResult<T> + Send + 'static,
{
    let pool = current_pool()?;
    if !on_main_thread(py) {
        let out = py.detach(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| pool.install(work)))
        });
        return out.unwrap_or_else(|_| {
            Err(tiledb_error("the engine call panicked (a bug: please report it)"))
        });
    }
    let (tx, rx) = sync_channel(1);
    std::thread::Builder::new()
        .name("tessera-call".into())
        .spawn(move || {
            let out = pool.install(work);
            // The caller may have gone (interrupted): then the result is dropped.
            let _ = tx.send(out);
        })
        .map_err(|e| tiledb_error(format!("cannot start a worker thread: {e}")))?;
    loop {
        match py.detach(|| rx.recv_timeout(Duration::from_millis(50))) {
            Ok(out) => return out,
            Err(RecvTimeoutError::Timeout) => py.check_signals()?,
            Err(RecvTimeoutError::Disconnected) => {
                return Err(tiledb_error("the engine call panicked (a bug: please report it)"));
            }
        }
    }
}
