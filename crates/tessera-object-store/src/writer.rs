//! The [`ObjectWriter`] of [`ObjectStoreStorage`](crate::ObjectStoreStorage): one `PUT` for
//! a small object, a multipart upload (parts in parallel) for a large one.

use std::io::ErrorKind;
use std::sync::Arc;

use object_store::path::Path;
use object_store::{MultipartUpload, ObjectStoreExt, PutPayload};
use tessera_storage::{Error, ObjectWriter, Op, Result};
use tokio::task::JoinHandle;

use crate::runtime;
use crate::storage::{Inner, ObjectStoreStorage};

/// Collects pieces into parts of `part_size` bytes; the first full part starts a multipart
/// upload, and each part uploads on the runtime while the caller goes on (at most
/// `in_flight` at once). Dropped unfinished, the upload is aborted.
pub(crate) struct MultipartWriter {
    inner: Arc<Inner>,
    location: Path,
    path: String,
    key: String,
    part_size: usize,
    in_flight: usize,
    buffer: Vec<u8>,
    size: u64,
    upload: Option<std::sync::Mutex<Box<dyn MultipartUpload>>>,
    parts: Vec<JoinHandle<object_store::Result<()>>>,
    done: bool,
}

impl MultipartWriter {
    pub(crate) fn new(
        inner: Arc<Inner>,
        location: Path,
        path: String,
        key: String,
        part_size: usize,
        in_flight: usize,
    ) -> Self {
        MultipartWriter {
            inner,
            location,
            path,
            key,
            part_size,
            in_flight: in_flight.max(1),
            buffer: Vec::new(),
            size: 0,
            upload: None,
            parts: Vec::new(),
            done: false,
        }
    }

    fn error(&self, e: object_store::Error) -> Error {
        let kind = if matches!(e, object_store::Error::NotFound { .. }) {
            ErrorKind::NotFound
        } else {
            ErrorKind::Other
        };
        Error::io(Op::Write, &self.path, std::io::Error::new(kind, format!("{}: {e}", self.uri())))
    }

    fn uri(&self) -> String {
        format!("{} (key {})", self.path, self.location)
    }

    fn runtime_error(&self, e: std::io::Error) -> Error {
        Error::io(Op::Write, &self.path, e)
    }

    /// Waits for the oldest part upload.
    fn wait_oldest(&mut self) -> Result<()> {
        if self.parts.is_empty() {
            return Ok(());
        }
        let handle = self.parts.remove(0);
        let joined = runtime::run(handle).map_err(|e| self.runtime_error(e))?;
        match joined {
            Ok(Ok(())) => Ok(()),
            Ok(Err(e)) => Err(self.error(e)),
            Err(e) => Err(self.runtime_error(std::io::Error::other(e.to_string()))),
        }
    }

    /// Starts the upload if needed and sends the buffered bytes as one part.
    fn send_part(&mut self) -> Result<()> {
        if self.upload.is_none() {
            let (store, location) = (Arc::clone(&self.inner.store), self.location.clone());
            let started = runtime::run(async move { store.put_multipart(&location).await })
                .map_err(|e| self.runtime_error(e))?
                .map_err(|e| self.error(e))?;
            self.upload = Some(std::sync::Mutex::new(started));
        }
        while self.parts.len() >= self.in_flight {
            self.wait_oldest()?;
        }
        let data = std::mem::take(&mut self.buffer);
        let future = {
            let Some(upload) = &self.upload else { unreachable!("started above") };
            let mut upload = upload.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            upload.put_part(PutPayload::from(data))
        };
        let handle = runtime::handle().map_err(|e| self.runtime_error(e))?.spawn(future);
        self.parts.push(handle);
        Ok(())
    }
}

impl ObjectWriter for MultipartWriter {
    fn write_all(&mut self, mut data: &[u8]) -> Result<()> {
        while !data.is_empty() {
            let room = self.part_size - self.buffer.len();
            let take = room.min(data.len());
            self.buffer.extend_from_slice(&data[..take]);
            self.size += take as u64;
            data = &data[take..];
            if self.buffer.len() == self.part_size {
                self.send_part()?;
            }
        }
        Ok(())
    }

    fn finish(mut self: Box<Self>) -> Result<u64> {
        if self.upload.is_none() {
            // Small: one PUT.
            let data = std::mem::take(&mut self.buffer);
            let (store, location) = (Arc::clone(&self.inner.store), self.location.clone());
            runtime::run(async move { store.put(&location, PutPayload::from(data)).await })
                .map_err(|e| self.runtime_error(e))?
                .map_err(|e| self.error(e))?;
        } else {
            if !self.buffer.is_empty() {
                self.send_part()?;
            }
            while !self.parts.is_empty() {
                self.wait_oldest()?;
            }
            let Some(upload) = self.upload.take() else { unreachable!("checked above") };
            let mut upload = upload.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
            let completed = runtime::run(async move {
                let result = upload.complete().await;
                if result.is_err() {
                    let _ = upload.abort().await;
                }
                result
            })
            .map_err(|e| self.runtime_error(e))?;
            completed.map_err(|e| self.error(e))?;
        }
        self.done = true;
        ObjectStoreStorage::written(&self.inner, &self.key);
        Ok(self.size)
    }
}

impl Drop for MultipartWriter {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        for part in self.parts.drain(..) {
            part.abort();
        }
        if let Some(upload) = self.upload.take() {
            let mut upload = upload.into_inner().unwrap_or_else(std::sync::PoisonError::into_inner);
            runtime::spawn_detached(async move {
                let _ = upload.abort().await;
            });
        }
    }
}
