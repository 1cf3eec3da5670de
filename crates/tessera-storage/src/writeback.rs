//! Early writeback of large local files: while a file is still being appended to, a helper
//! thread asks the kernel (`fdatasync`) to put what was written so far on disk, so that the
//! sync which ends the write waits for the last part only instead of the whole file.

use std::fs::File;
use std::io;
use std::sync::mpsc::{self, SyncSender};
use std::thread::JoinHandle;

/// Bytes appended to a file between two writeback requests.
pub(crate) const WRITEBACK_BYTES: u64 = 32 << 20;

/// The helper thread syncing one file on request.
#[derive(Debug)]
pub(crate) struct Writeback {
    requests: Option<SyncSender<()>>,
    thread: Option<JoinHandle<io::Result<()>>>,
}

impl Writeback {
    /// Starts the helper on a second handle of `file`.
    ///
    /// # Errors
    /// When the handle cannot be cloned or the thread cannot be started.
    pub(crate) fn start(file: &File) -> io::Result<Self> {
        let file = file.try_clone()?;
        // One request may wait while a sync runs; more would only repeat it.
        let (requests, received) = mpsc::sync_channel::<()>(1);
        let thread = std::thread::Builder::new().name("tessera-writeback".into()).spawn(
            move || -> io::Result<()> {
                for () in received {
                    file.sync_data()?;
                }
                Ok(())
            },
        )?;
        Ok(Writeback { requests: Some(requests), thread: Some(thread) })
    }

    /// Asks for everything written so far to go to disk, without waiting (a request while
    /// another is still queued is covered by that one).
    pub(crate) fn request(&self) {
        if let Some(r) = &self.requests {
            let _ = r.try_send(());
        }
    }

    /// Waits for the helper to finish the sync under way.
    ///
    /// # Errors
    /// The first error a sync met (reported here, since the kernel may not report a failed
    /// writeback to a later sync of the same file).
    pub(crate) fn finish(mut self) -> io::Result<()> {
        self.stop()
    }

    fn stop(&mut self) -> io::Result<()> {
        drop(self.requests.take());
        match self.thread.take() {
            Some(t) => {
                t.join().unwrap_or_else(|_| Err(io::Error::other("writeback thread panicked")))
            }
            None => Ok(()),
        }
    }
}

impl Drop for Writeback {
    fn drop(&mut self) {
        let _ = self.stop();
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Seek, Write};

    use super::*;

    #[test]
    fn requests_while_writing_then_finish() {
        let mut file = tempfile::tempfile().unwrap();
        let wb = Writeback::start(&file).unwrap();
        for i in 0..50u8 {
            file.write_all(&[i; 4096]).unwrap();
            wb.request();
        }
        wb.finish().unwrap();
        file.rewind().unwrap();
        let mut back = Vec::new();
        file.read_to_end(&mut back).unwrap();
        assert_eq!(back.len(), 50 * 4096);
        assert!(back.chunks(4096).enumerate().all(|(i, c)| c.iter().all(|&b| b == i as u8)));
        // Dropped without finishing: the helper stops too.
        let wb = Writeback::start(&file).unwrap();
        wb.request();
        drop(wb);
    }
}
