//! A local S3 emulator for tests: moto's server (`python -m moto.server`, from the PyPI
//! packages `moto[s3]`, `flask` and `flask-cors` that `cargo xtask` installs into
//! `target/reference-venv`), started on loopback at a free port and stopped with the value (or
//! the process).
//!
//! Tests that need it run only when `TESSERA_S3_TESTS=1` ([`tests_enabled`]), so plain
//! `cargo test` stays offline; `cargo xtask test` sets it.
//!
//! ```no_run
//! use tessera_object_store::emulator::S3Emulator;
//!
//! let s3 = S3Emulator::start(&tessera_object_store::emulator::python())?;
//! s3.create_bucket("test")?;
//! let storage = s3.storage("s3://test/my_array")?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::io::{self, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::ObjectStoreStorage;

/// The environment variable that turns the emulator tests on (`1`).
pub const ENABLE_VAR: &str = "TESSERA_S3_TESTS";
/// The environment variable naming the python that has moto (default: the reference venv).
pub const PYTHON_VAR: &str = "TESSERA_S3_PYTHON";
/// The credentials the emulator accepts (it checks none).
pub const ACCESS_KEY: &str = "testing";

/// Runs moto's server and exits when standard input closes, so the server never outlives the
/// process that started it, even one that is killed.
const SERVER_SCRIPT: &str = "import os, sys, threading\n\
def watch():\n    sys.stdin.read()\n    os._exit(0)\n\
threading.Thread(target=watch, daemon=True).start()\n\
from moto.server import main\n\
main(sys.argv[1:])\n";

/// Whether the tests that need the emulator should run (`TESSERA_S3_TESTS=1`).
#[must_use]
pub fn tests_enabled() -> bool {
    std::env::var(ENABLE_VAR).is_ok_and(|v| v == "1" || v.eq_ignore_ascii_case("true"))
}

/// The python to run moto with: `$TESSERA_S3_PYTHON`, else the reference venv's python of
/// this workspace (`target/reference-venv/bin/python`).
#[must_use]
pub fn python() -> PathBuf {
    if let Some(p) = std::env::var_os(PYTHON_VAR) {
        return PathBuf::from(p);
    }
    let workspace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..");
    workspace.join("target/reference-venv/bin/python")
}

/// A running moto server on `127.0.0.1`; dropping it stops the server.
#[derive(Debug)]
pub struct S3Emulator {
    child: Child,
    port: u16,
}

impl S3Emulator {
    /// Starts moto's server with `python` on a free loopback port and waits (up to 60 s)
    /// until it answers.
    ///
    /// # Errors
    ///
    /// When python or moto cannot be run, or the server does not come up.
    pub fn start(python: &std::path::Path) -> io::Result<Self> {
        let port = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?.local_addr()?.port();
        let child = Command::new(python)
            .args(["-c", SERVER_SCRIPT, "-H", "127.0.0.1", "-p", &port.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| {
                io::Error::new(
                    e.kind(),
                    format!("{}: cannot run moto's server: {e}", python.display()),
                )
            })?;
        let mut emulator = S3Emulator { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if emulator.request("GET", "/").is_ok() {
                return Ok(emulator);
            }
            if let Some(status) = emulator.child.try_wait()? {
                return Err(io::Error::other(format!(
                    "moto's server exited ({status}); are `moto[s3]`, `flask` and `flask-cors` installed in {}?",
                    python.display()
                )));
            }
            if Instant::now() > deadline {
                return Err(io::Error::new(io::ErrorKind::TimedOut, "moto's server did not start"));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// The emulator shared by every test of this process, started on first use; it stops
    /// when the process ends. `None` (with the reason printed) when it cannot start.
    pub fn shared() -> Option<&'static S3Emulator> {
        static SHARED: OnceLock<Option<S3Emulator>> = OnceLock::new();
        SHARED
            .get_or_init(|| match S3Emulator::start(&python()) {
                Ok(s3) => Some(s3),
                Err(e) => {
                    eprintln!("cannot start the S3 emulator: {e}");
                    None
                }
            })
            .as_ref()
    }

    /// The endpoint URL (`http://127.0.0.1:PORT`).
    #[must_use]
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The port the server listens on.
    #[must_use]
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The standard AWS variables that point a client at this emulator.
    #[must_use]
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID", ACCESS_KEY.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", ACCESS_KEY.to_owned()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ENDPOINT_URL", self.endpoint()),
            ("AWS_ALLOW_HTTP", "true".to_owned()),
            ("AWS_VIRTUAL_HOSTED_STYLE_REQUEST", "false".to_owned()),
        ]
    }

    /// Creates bucket `name` (succeeds if it exists).
    ///
    /// # Errors
    ///
    /// When the server does not answer or refuses.
    pub fn create_bucket(&self, name: &str) -> io::Result<()> {
        let status = self.request("PUT", &format!("/{name}"))?;
        if (200..300).contains(&status) || status == 409 {
            Ok(())
        } else {
            Err(io::Error::other(format!("creating bucket {name}: HTTP {status}")))
        }
    }

    /// A storage rooted at `uri` (`s3://bucket/prefix`) on this emulator, whatever the
    /// process environment says.
    ///
    /// # Errors
    ///
    /// As [`ObjectStoreStorage::from_uri_with`].
    pub fn storage(&self, uri: &str) -> crate::Result<ObjectStoreStorage> {
        let env = self.env();
        let options = env.iter().map(|(k, v)| (k.to_ascii_lowercase(), v.clone()));
        ObjectStoreStorage::from_uri_with(uri, options)
    }

    /// One unsigned HTTP/1.1 request without a body; returns the status code.
    fn request(&self, method: &str, target: &str) -> io::Result<u16> {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(5))?;
        stream.set_read_timeout(Some(Duration::from_secs(30)))?;
        write!(
            stream,
            "{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\n\
             Connection: close\r\n\r\n",
            self.port
        )?;
        let mut response = Vec::new();
        stream.read_to_end(&mut response)?;
        let text = String::from_utf8_lossy(&response);
        text.split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| io::Error::other("not an HTTP response"))
    }
}

impl Drop for S3Emulator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
