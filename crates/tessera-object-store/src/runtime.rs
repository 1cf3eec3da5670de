//! The tokio runtime every [`ObjectStoreStorage`](crate::ObjectStoreStorage) hands its
//! futures to, so that the synchronous [`Storage`](tessera_storage::Storage) trait works from
//! any thread: plain threads, rayon workers, and the worker or blocking threads of another
//! tokio runtime (DataFusion calls Tessera from `spawn_blocking`).
//!
//! The runtime is created once per process, on threads of its own, and never dropped (a
//! runtime may not be dropped inside an async context). A process forked from one that had
//! started it (Python's multiprocessing, Dask's process workers) inherits the runtime without
//! its threads, so a call in a child builds the child's own runtime; the inherited one is
//! left untouched. A call spawns its future there and waits on a channel: it never calls
//! `Handle::block_on`, which panics on a runtime's worker thread.

use std::future::Future;
use std::io;
use std::sync::Mutex;
use std::sync::mpsc::sync_channel;

use tokio::runtime::{Builder, Handle, Runtime};

/// The runtime of the process that built it, by process id (leaked: never dropped). The lock
/// is held only to read or set this pair.
static RUNTIME: Mutex<Option<(u32, &'static Runtime)>> = Mutex::new(None);

/// The shared runtime's handle, creating the runtime on first use in this process.
pub(crate) fn handle() -> io::Result<Handle> {
    let pid = std::process::id();
    let mut slot = RUNTIME.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some((owner, rt)) = *slot
        && owner == pid
    {
        return Ok(rt.handle().clone());
    }
    let threads = std::thread::available_parallelism().map_or(2, usize::from).clamp(2, 8);
    let runtime = Builder::new_multi_thread()
        .worker_threads(threads)
        .thread_name("tessera-object-store")
        .enable_all()
        .build()
        .map_err(|e| io::Error::other(format!("cannot start the object-store runtime: {e}")))?;
    let runtime: &'static Runtime = Box::leak(Box::new(runtime));
    *slot = Some((pid, runtime));
    Ok(runtime.handle().clone())
}

/// Runs `future` on the shared runtime and waits for its output on the calling thread.
///
/// # Errors
///
/// When the runtime cannot be started, or the future panicked.
pub(crate) fn run<F>(future: F) -> io::Result<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let handle = handle()?;
    let (tx, rx) = sync_channel(1);
    handle.spawn(async move {
        // The receiver waits until this is sent; it is only gone if the caller panicked.
        let _ = tx.send(future.await);
    });
    rx.recv().map_err(|_| io::Error::other("an object-store request panicked"))
}

/// Starts `future` on the shared runtime without waiting for it (aborting uploads on drop).
pub(crate) fn spawn_detached<F>(future: F)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    if let Ok(handle) = handle() {
        drop(handle.spawn(future));
    }
}
