//! A Ballista cluster of `tessera-ballista` processes on 127.0.0.1 (a scheduler and two
//! executors with one slot each, round-robin task distribution): SQL over dense and sparse
//! arrays, local and on the S3 emulator, and through `tessera sql --cluster`, returns what a
//! single-node `SessionContext` returns, both executors run tasks, and a query that loses an
//! executor gives the right answer or a clear error, never a wrong one. Child processes are
//! killed when the test ends, and their logs are printed when it fails.
//!
//! Two clusters in all: one answers every query (local arrays, S3, the command line), the
//! other loses an executor. Each start-up of three debug processes costs seconds on a loaded
//! CI machine; each test prints how long its phases took.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::prelude::{SessionConfig, SessionContext};
use tessera::{Array, ArraySchema, ArrayType, Attribute, Datatype, Dimension, Storage};
use tessera_datafusion::TesseraTable;
use tessera_object_store::emulator::S3Emulator;

const BIN: &str = env!("CARGO_BIN_EXE_tessera-ballista");
/// Partitions each scan is cut into, on the cluster and on one node alike.
const PARTITIONS: usize = 4;

// ---------------------------------------------------------------------------------------
// The cluster

/// A free port on 127.0.0.1 (free when asked; the test binds it right after).
fn free_port() -> u16 {
    TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap().local_addr().unwrap().port()
}

/// One child process and the file its output goes to.
struct Proc {
    name: String,
    child: Child,
    log: PathBuf,
}

/// The scheduler and executors; dropping it kills them all (and prints their logs when the
/// test is failing).
struct Cluster {
    dir: tempfile::TempDir,
    procs: Vec<Proc>,
    port: u16,
    env: Vec<(String, String)>,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for p in &mut self.procs {
            let _ = p.child.kill();
            let _ = p.child.wait();
        }
        if std::thread::panicking() {
            for p in &self.procs {
                let text = std::fs::read_to_string(&p.log).unwrap_or_default();
                let lines: Vec<&str> = text.lines().collect();
                let tail = &lines[lines.len().saturating_sub(150)..];
                eprintln!(
                    "===== log of {} ({} lines, last {}) =====",
                    p.name,
                    lines.len(),
                    tail.len()
                );
                for l in tail {
                    eprintln!("{l}");
                }
            }
        }
    }
}

impl Cluster {
    /// Starts a scheduler and `executors` executors with `env` in their environment, and
    /// waits until every executor has registered.
    fn start(executors: usize, env: Vec<(String, String)>) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut cluster = Cluster { dir, procs: Vec::new(), port, env };
        let events = cluster.dir.path().join("events");
        std::fs::create_dir_all(&events).unwrap();
        let p = port.to_string();
        cluster.spawn(
            "scheduler",
            &[
                "scheduler",
                "--bind-host",
                "127.0.0.1",
                "--bind-port",
                &p,
                "--external-host",
                "127.0.0.1",
                "--task-distribution",
                "round-robin",
                "--event-log-dir",
                events.to_str().unwrap(),
                "--executor-timeout-seconds",
                "8",
                "--expire-dead-executor-interval-seconds",
                "2",
            ],
        );
        // An executor that finds no scheduler listening exits at once (`Could not connect to
        // scheduler`): the scheduler answers first, then the executors start.
        cluster.wait_ready(0);
        for e in 0..executors {
            cluster.add_executor(e);
        }
        cluster.wait_ready(executors);
        cluster
    }

    fn spawn(&mut self, name: &str, args: &[&str]) {
        let log = self.dir.path().join(format!("{name}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let err = out.try_clone().unwrap();
        let child = Command::new(BIN)
            .args(args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {BIN}: {e}"));
        self.procs.push(Proc { name: name.to_owned(), child, log });
    }

    fn add_executor(&mut self, e: usize) {
        let work = self.dir.path().join(format!("work{e}"));
        std::fs::create_dir_all(&work).unwrap();
        let (sp, p1, p2, p3) = (
            self.port.to_string(),
            free_port().to_string(),
            free_port().to_string(),
            free_port().to_string(),
        );
        self.spawn(
            &format!("executor{e}"),
            &[
                "executor",
                "--scheduler-host",
                "127.0.0.1",
                "--scheduler-port",
                &sp,
                "--bind-host",
                "127.0.0.1",
                "--external-host",
                "127.0.0.1",
                "--bind-port",
                &p1,
                "--bind-grpc-port",
                &p2,
                "--bind-health-port",
                &p3,
                "--vcores",
                "1",
                "--executor-heartbeat-interval-seconds",
                "1",
                "--work-dir",
                work.to_str().unwrap(),
            ],
        );
    }

    /// Waits (up to 60 s) until the scheduler's REST API lists `n` executors (`0`: until it
    /// answers).
    fn wait_ready(&mut self, n: usize) {
        let start = Instant::now();
        loop {
            for p in &mut self.procs {
                if let Ok(Some(status)) = p.child.try_wait() {
                    panic!("{} exited early: {status}", p.name);
                }
            }
            if let Some(body) = http_get(self.port, "/api/executors")
                && let Ok(serde_json::Value::Array(list)) = serde_json::from_str(&body)
                && list.len() >= n
            {
                return;
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "the cluster did not come up in 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn url(&self) -> String {
        format!("df://127.0.0.1:{}", self.port)
    }

    /// How many tasks each executor's log shows it ran.
    fn tasks_per_executor(&self) -> Vec<usize> {
        self.procs
            .iter()
            .filter(|p| p.name.starts_with("executor"))
            .map(|p| {
                std::fs::read_to_string(&p.log)
                    .unwrap_or_default()
                    .lines()
                    .filter(|l| l.contains("Execute task") || l.contains("Received task"))
                    .count()
            })
            .collect()
    }

    fn kill(&mut self, name: &str) {
        let p = self.procs.iter_mut().find(|p| p.name == name).unwrap();
        p.child.kill().unwrap();
        p.child.wait().unwrap();
    }

    fn log(&self, name: &str) -> String {
        let p = self.procs.iter().find(|p| p.name == name).unwrap();
        std::fs::read_to_string(&p.log).unwrap_or_default()
    }
}

/// The body of `GET path` on 127.0.0.1:`port` (HTTP/1.1), or `None` when it fails.
fn http_get(port: u16, path: &str) -> Option<String> {
    let mut s = TcpStream::connect((Ipv4Addr::LOCALHOST, port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(s, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") {
        return None;
    }
    if head.to_ascii_lowercase().contains("transfer-encoding: chunked") {
        return Some(dechunk(body));
    }
    Some(body.to_owned())
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let Ok(n) = usize::from_str_radix(size.trim(), 16) else { break };
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

// ---------------------------------------------------------------------------------------
// The arrays

/// A sparse array `pts`: x (int64), y (int32); i (int32, nullable), f (float64), s (utf8
/// var, nullable); two fragments.
fn write_points(storage: Arc<dyn Storage>, n: u64) {
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 9_999_999).tile_i64(1000))
        .dimension(Dimension::new("y", Datatype::Int32).domain_i64(0, 99).tile_i64(10))
        .attribute(Attribute::new("i", Datatype::Int32).nullable(true))
        .attribute(Attribute::new("f", Datatype::Float64))
        .attribute(Attribute::new("s", Datatype::StringUtf8).var().nullable(true))
        .capacity(1000)
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let array = Array::open(storage).unwrap();
    for (frag, ts) in [(0u64, 10u64), (1, 20)] {
        let m = if frag == 0 { n } else { n / 5 };
        let xs: Vec<i64> = (0..m).map(|k| ((k * 7919 + frag) % (n * 3)) as i64).collect();
        let ys: Vec<i32> = (0..m).map(|k| (k * 13 % 100) as i32).collect();
        let is: Vec<i32> = (0..m).map(|k| ((k * 7 + frag * 3) % 40) as i32).collect();
        let fs: Vec<f64> = (0..m).map(|k| k as f64 / 7.0).collect();
        let ss: Vec<String> = (0..m)
            .map(|k| format!("s{}{}", (k + frag) % 10, "x".repeat((k % 4) as usize)))
            .collect();
        array
            .write()
            .values("x", &xs)
            .values("y", &ys)
            .values("i", &is)
            .validity("i", (0..m).map(|k| u8::from(k % 9 != 4)).collect())
            .values("f", &fs)
            .var_values("s", &ss)
            .validity("s", (0..m).map(|k| u8::from(k % 11 != 2)).collect())
            .timestamp(ts)
            .submit()
            .unwrap();
    }
}

/// A dense array `grid`: r, c (int32, 1..=40); v (int64), w (float32, quarters: exact sums).
fn write_grid(storage: Arc<dyn Storage>) {
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int32).domain_i64(1, 40).tile_i64(8))
        .dimension(Dimension::new("c", Datatype::Int32).domain_i64(1, 40).tile_i64(8))
        .attribute(Attribute::new("v", Datatype::Int64))
        .attribute(Attribute::new("w", Datatype::Float32))
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let n = 36 * 40;
    let v: Vec<i64> = (0..n).map(|k| k * 3 - 500).collect();
    let w: Vec<f32> = (0..n).map(|k| (k % 97) as f32 / 4.0).collect();
    Array::open(storage)
        .unwrap()
        .write()
        .range_i64("r", 1, 36)
        .range_i64("c", 1, 40)
        .values("v", &v)
        .values("w", &w)
        .timestamp(5)
        .submit()
        .unwrap();
}

/// A sparse array `tags`: k (int64, 0..=49) and name (utf8 var).
fn write_tags(storage: Arc<dyn Storage>) {
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("k", Datatype::Int64).domain_i64(0, 49).tile_i64(10))
        .attribute(Attribute::new("name", Datatype::StringUtf8).var())
        .build()
        .unwrap();
    Array::create(storage.clone(), &schema, &[]).unwrap();
    let ks: Vec<i64> = (0..50).step_by(3).collect();
    let names: Vec<String> =
        ks.iter().map(|k| format!("tag-{}", "ab".repeat((*k % 5) as usize + 1))).collect();
    Array::open(storage)
        .unwrap()
        .write()
        .values("k", &ks)
        .var_values("name", &names)
        .timestamp(7)
        .submit()
        .unwrap();
}

const QUERIES: &[&str] = &[
    // filters on dimensions and attributes
    "SELECT x, y, i, s FROM pts WHERE x BETWEEN 1000 AND 6000 AND i > 20 ORDER BY x, y",
    "SELECT x, y, s FROM pts WHERE s IS NULL AND y < 50 ORDER BY x, y",
    "SELECT r, c, v, w FROM grid WHERE r >= 5 AND r < 30 AND c IN (1, 7, 13) AND v % 2 = 0 ORDER BY r, c",
    // GROUP BY with aggregates (a nullable group key, nullable values)
    "SELECT s, count(*) AS n, count(i) AS ni, sum(i) AS si, min(f) AS lo, max(x) AS hi FROM pts GROUP BY s ORDER BY s",
    "SELECT r, sum(v) AS sv, avg(w) AS aw, count(*) AS n FROM grid GROUP BY r ORDER BY r",
    "SELECT count(*), count(i), count(s), sum(y) FROM pts",
    // ORDER BY and LIMIT
    "SELECT x, y, f FROM pts ORDER BY f DESC, x, y LIMIT 17",
    "SELECT c, max(v) - min(v) AS spread FROM grid WHERE w > 10 GROUP BY c ORDER BY spread DESC, c LIMIT 5",
    // joins of two arrays
    "SELECT p.x, p.y, t.name FROM pts p JOIN tags t ON p.i = t.k WHERE p.x < 3000 ORDER BY p.x, p.y",
    "SELECT g.r, count(*) AS n, sum(p.i) AS si FROM grid g JOIN pts p ON g.r = p.y AND g.c = p.i GROUP BY g.r ORDER BY g.r",
    "SELECT t.name, count(p.x) AS n FROM tags t LEFT JOIN pts p ON p.i = t.k GROUP BY t.name ORDER BY t.name",
    // var-sized strings
    "SELECT upper(s) AS u, length(s) AS l, count(*) AS n FROM pts WHERE s LIKE 's1%' GROUP BY s ORDER BY u",
];

fn local_context() -> SessionContext {
    SessionContext::new_with_config(SessionConfig::new().with_target_partitions(PARTITIONS))
}

/// Registers the three arrays at `uris` (`pts`, `grid`, `tags`), opened with `open`.
fn register(ctx: &SessionContext, uris: &[(&str, String)], open: &dyn Fn(&str) -> Array) {
    for (name, uri) in uris {
        let table = TesseraTable::new(uri.clone(), open(uri)).unwrap().with_partitions(PARTITIONS);
        ctx.register_table(*name, Arc::new(table)).unwrap();
    }
}

async fn run(ctx: &SessionContext, sql: &str) -> datafusion::error::Result<Vec<RecordBatch>> {
    ctx.sql(sql).await?.collect().await
}

fn text(batches: &[RecordBatch]) -> String {
    pretty_format_batches(batches).unwrap().to_string()
}

/// Runs every query on the cluster and on one node over the same arrays; they must agree,
/// and both executors must have run tasks.
async fn queries_agree(cluster: &Cluster, uris: &[(&str, String)], open: &dyn Fn(&str) -> Array) {
    let local = local_context();
    register(&local, uris, open);
    let remote = tessera_ballista::remote_context(&cluster.url()).await.unwrap();
    register(&remote, uris, open);
    let before = cluster.tasks_per_executor();
    for sql in QUERIES {
        let want = text(&run(&local, sql).await.unwrap_or_else(|e| panic!("local {sql}: {e}")));
        let got = tokio::time::timeout(Duration::from_secs(120), run(&remote, sql))
            .await
            .unwrap_or_else(|_| panic!("cluster {sql}: no answer in 120 s"))
            .unwrap_or_else(|e| panic!("cluster {sql}: {e}"));
        let got = text(&got);
        assert_eq!(got, want, "{sql}");
        assert!(want.lines().count() > 4, "{sql}: too few rows to mean anything:\n{want}");
    }
    let after = cluster.tasks_per_executor();
    let ran: Vec<usize> = after.iter().zip(&before).map(|(a, b)| a - b).collect();
    eprintln!("tasks per executor: {ran:?}");
    assert!(ran.iter().all(|&n| n > 0), "an executor ran no task: {ran:?}");
}

/// Prints how long a phase of a test took, from `since` (the step's time in CI is the build
/// plus the sum of these).
fn took(what: &str, since: Instant) {
    eprintln!("{what}: {:.1} s", since.elapsed().as_secs_f64());
}

/// One cluster answers everything that does not kill an executor: the queries over local
/// arrays, the same over arrays on moto's S3 server (the scheduler and executors get the AWS
/// variables, this process opens the arrays with explicit storages), and `tessera sql
/// --cluster`, which must print what `tessera sql` prints. Needs moto (the venv's python,
/// `TESSERA_S3_PYTHON`) and the workspace's `tessera` binary (`TESSERA_BIN`); `cargo xtask
/// test` sets both.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs the S3 emulator (moto) and TESSERA_BIN: `cargo xtask test` runs it"]
async fn the_cluster_answers_as_one_node() {
    let tessera = std::env::var_os("TESSERA_BIN")
        .expect("TESSERA_BIN must name the workspace's tessera binary (cargo xtask test sets it)");
    let t = Instant::now();
    let python = tessera_object_store::emulator::python();
    let s3 = S3Emulator::start(&python).expect("the S3 emulator (moto) should start");
    let bucket = format!("ballista-{}", std::process::id());
    s3.create_bucket(&bucket).unwrap();
    took("moto started", t);
    let env: Vec<(String, String)> =
        s3.env().into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let t = Instant::now();
    let cluster = Cluster::start(2, env);
    took("cluster started", t);

    let t = Instant::now();
    let data = tempfile::tempdir().unwrap();
    let local = |name: &str| data.path().join(name).to_str().unwrap().to_owned();
    write_points(Arc::new(tessera::LocalStorage::new(local("pts"))), 3000);
    write_grid(Arc::new(tessera::LocalStorage::new(local("grid"))));
    write_tags(Arc::new(tessera::LocalStorage::new(local("tags"))));
    let uris = [("pts", local("pts")), ("grid", local("grid")), ("tags", local("tags"))];
    queries_agree(&cluster, &uris, &|uri| tessera::open(uri).unwrap()).await;
    took("local arrays: the queries agree", t);

    let t = Instant::now();
    let uri = |name: &str| format!("s3://{bucket}/{name}");
    write_points(Arc::new(s3.storage(&uri("pts")).unwrap()), 3000);
    write_grid(Arc::new(s3.storage(&uri("grid")).unwrap()));
    write_tags(Arc::new(s3.storage(&uri("tags")).unwrap()));
    let uris = [("pts", uri("pts")), ("grid", uri("grid")), ("tags", uri("tags"))];
    let open = |u: &str| Array::open(Arc::new(s3.storage(u).unwrap())).unwrap();
    queries_agree(&cluster, &uris, &open).await;
    took("arrays on S3: the queries agree", t);

    let t = Instant::now();
    tessera_sql_cluster_prints_as_local(&cluster, &tessera, data.path());
    took("tessera sql --cluster", t);
}

/// `tessera sql --cluster` prints what `tessera sql` prints (over the local arrays `pts` and
/// `grid` in `data`), and fails on one line for a scheduler that is not there or a malformed
/// URL.
fn tessera_sql_cluster_prints_as_local(
    cluster: &Cluster,
    tessera: &std::ffi::OsStr,
    data: &std::path::Path,
) {
    let tables = [
        format!("pts={}", data.join("pts").display()),
        format!("grid={}", data.join("grid").display()),
    ];
    let sql = |cluster_url: Option<&str>, q: &str, format: &str| -> (bool, String, String) {
        let mut cmd = Command::new(tessera);
        cmd.arg("sql").arg(q).args(["--format", format]);
        for t in &tables {
            cmd.args(["--table", t]);
        }
        if let Some(u) = cluster_url {
            cmd.args(["--cluster", u]).env("TESSERA_BALLISTA", BIN);
        }
        let out = cmd.output().unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for (q, format) in [
        ("SELECT x, y, i, s FROM pts WHERE i IS NULL OR x < 900 ORDER BY x, y", "jsonl"),
        ("SELECT r, sum(v) AS sv, count(*) AS n FROM grid GROUP BY r ORDER BY r", "csv"),
        (
            "SELECT p.x, g.v FROM pts p JOIN grid g ON p.y = g.c AND p.i = g.r ORDER BY p.x, g.v",
            "table",
        ),
    ] {
        let (ok_l, want, err_l) = sql(None, q, format);
        assert!(ok_l, "{q}: {err_l}");
        assert!(want.lines().count() > 4, "{q}: too few rows to mean anything:\n{want}");
        let (ok_c, got, err_c) = sql(Some(&cluster.url()), q, format);
        assert!(ok_c, "{q} on the cluster: {err_c}");
        assert_eq!(got, want, "{q}");
    }
    // A scheduler that is not there: a one-line error naming the cluster.
    let dead = format!("df://127.0.0.1:{}", free_port());
    let (ok, _, err) = sql(Some(&dead), "SELECT count(*) FROM pts", "csv");
    assert!(!ok);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    // A malformed cluster URL.
    let (ok, _, err) = sql(Some("http://127.0.0.1:1"), "SELECT count(*) FROM pts", "csv");
    assert!(!ok);
    assert!(err.contains("df://HOST:PORT"), "{err}");
}

/// Kills one of two executors (SIGKILL) as soon as it starts a task of a 32-partition
/// GROUP BY: the query answers exactly as one node does after Ballista reschedules (or fails
/// with an error), and the executor left answers the next query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_executor_never_gives_a_wrong_answer() {
    let t = Instant::now();
    let mut cluster = Cluster::start(2, Vec::new());
    took("cluster started", t);
    let t = Instant::now();
    let data = tempfile::tempdir().unwrap();
    let path = data.path().join("big").to_str().unwrap().to_owned();
    // 32 partitions of one task each keep the query running long after the first task
    // starts; the cells only need to be many enough for every partition to hold some.
    write_points(Arc::new(tessera::LocalStorage::new(&path)), 40_000);
    let uris = [("pts", path.clone())];
    let open = |u: &str| tessera::open(u).unwrap();
    let sql =
        "SELECT y, count(*) AS n, sum(i) AS si, count(s) AS ns FROM pts GROUP BY y ORDER BY y";
    let local = local_context();
    register(&local, &uris, &open);
    let want = text(&run(&local, sql).await.unwrap());

    let remote = tessera_ballista::remote_context(&cluster.url()).await.unwrap();
    for (name, uri) in &uris {
        // Many small partitions: the query is still running when the executor dies.
        let table = TesseraTable::new(uri.clone(), open(uri)).unwrap().with_partitions(32);
        remote.register_table(*name, Arc::new(table)).unwrap();
    }
    let query = {
        let remote = remote.clone();
        tokio::spawn(async move {
            tokio::time::timeout(Duration::from_secs(180), run(&remote, sql)).await
        })
    };
    // Kill executor 1 once it has started a task of this query.
    let start = Instant::now();
    let killed = loop {
        if cluster.tasks_per_executor()[1] > 0 {
            cluster.kill("executor1");
            break true;
        }
        if query.is_finished() || start.elapsed() > Duration::from_secs(60) {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let outcome = query.await.unwrap().expect("the query neither answered nor failed in 180 s");
    eprintln!("executor killed mid-query: {killed}");
    match outcome {
        Ok(batches) => assert_eq!(text(&batches), want, "a wrong answer after losing an executor"),
        Err(e) => {
            let msg = e.to_string();
            eprintln!("the query failed (allowed): {msg}");
            assert!(killed, "the query failed without losing an executor: {msg}");
            assert!(!msg.trim().is_empty());
        }
    }
    took("the query that lost an executor", t);
    // What the scheduler said about the lost executor (for the record in the test output).
    for l in cluster.log("scheduler").lines() {
        let low = l.to_ascii_lowercase();
        if ["lost", "dead", "remov", "expire", "fail"].iter().any(|w| low.contains(w)) {
            eprintln!("scheduler: {l}");
        }
    }
    // The cluster still answers with the executor left.
    let t = Instant::now();
    let again = tokio::time::timeout(Duration::from_secs(120), run(&remote, sql))
        .await
        .expect("no answer in 120 s after the executor was lost");
    match again {
        Ok(batches) => assert_eq!(text(&batches), want),
        Err(e) => panic!("the cluster with one executor left failed: {e}"),
    }
    took("the same query on the executor left", t);
}
