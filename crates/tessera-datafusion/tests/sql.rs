//! SQL over Tessera arrays: every query's result equals the direct Tessera read with the
//! same ranges and condition, EXPLAIN shows what was pushed down, and a scan rebuilt from
//! its serialised spec returns the same rows.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::execution::TaskContext;
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::{SessionConfig, SessionContext};
use tessera::layers::types::CELL_VAL_NUM_VAR;
use tessera::{
    ArraySchema, ArrayType, Attribute, Datatype, Dimension, Enumeration, EnumerationRef,
};
use tessera_arrow::{Projection, read_all};
use tessera_datafusion::{TesseraExec, TesseraScanSpec, TesseraTable};

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata").join(rel)
}

/// A sparse array `pts`: x (int64), y (int32); i (int32, nullable), f (float64), s (utf8
/// var, nullable), t (datetime_ms), color (enumeration, nullable).
fn make_points(dir: &Path) -> PathBuf {
    let colors = Enumeration {
        name: "colors".into(),
        path: String::new(),
        datatype: Datatype::StringUtf8,
        cell_val_num: CELL_VAL_NUM_VAR,
        ordered: false,
        data: b"redgreenblue".to_vec(),
        offsets: Some(vec![0, 3, 8]),
    };
    let mut color = Attribute::new("color", Datatype::UInt8).nullable(true);
    color.enumeration = Some("colors".into());
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 999).tile_i64(100))
        .dimension(Dimension::new("y", Datatype::Int32).domain_i64(0, 99).tile_i64(10))
        .attribute(Attribute::new("i", Datatype::Int32).nullable(true))
        .attribute(Attribute::new("f", Datatype::Float64))
        .attribute(Attribute::new("s", Datatype::StringUtf8).var().nullable(true))
        .attribute(Attribute::new("t", Datatype::DatetimeMs))
        .attribute(color)
        .enumeration(EnumerationRef { name: "colors".into(), path: String::new() })
        .capacity(16)
        .build()
        .unwrap();
    let path = dir.join("pts");
    tessera::create_with_enumerations(&path, &schema, &[colors]).unwrap();
    let array = tessera::open(&path).unwrap();
    // Two fragments, the second overwriting some cells of the first.
    for (frag, ts) in [(0u64, 10u64), (1, 20)] {
        let n = if frag == 0 { 200 } else { 40 };
        let xs: Vec<i64> = (0..n).map(|k| (k * 37 % 1000) as i64).collect();
        let ys: Vec<i32> = (0..n).map(|k| (k * 13 % 100) as i32).collect();
        let is: Vec<i32> = (0..n).map(|k| ((k * 7 + frag * 3) % 100) as i32).collect();
        let fs: Vec<f64> = (0..n).map(|k| k as f64 / 7.0).collect();
        let ss: Vec<String> = (0..n).map(|k| format!("s{}", (k + frag) % 10)).collect();
        let ts_: Vec<i64> = (0..n).map(|k| 1_000 * k as i64).collect();
        let cs: Vec<u8> = (0..n).map(|k| (k % 3) as u8).collect();
        array
            .write()
            .values("x", &xs)
            .values("y", &ys)
            .values("i", &is)
            .validity("i", (0..n).map(|k| u8::from(k % 9 != 4)).collect())
            .values("f", &fs)
            .var_values("s", &ss)
            .validity("s", (0..n).map(|k| u8::from(k % 11 != 2)).collect())
            .values("t", &ts_)
            .values("color", &cs)
            .validity("color", (0..n).map(|k| u8::from(k % 13 != 5)).collect())
            .timestamp(ts)
            .submit()
            .unwrap();
    }
    path
}

/// A dense array `grid`: r, c (int32, 1..20); v (int64), w (float32); rows 1..=12 written.
fn make_grid(dir: &Path) -> PathBuf {
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int32).domain_i64(1, 20).tile_i64(5))
        .dimension(Dimension::new("c", Datatype::Int32).domain_i64(1, 20).tile_i64(5))
        .attribute(Attribute::new("v", Datatype::Int64))
        .attribute(Attribute::new("w", Datatype::Float32))
        .build()
        .unwrap();
    let path = dir.join("grid");
    tessera::create(&path, &schema).unwrap();
    let n = 12 * 20;
    let v: Vec<i64> = (0..n).map(|k| k * 3 - 100).collect();
    let w: Vec<f32> = (0..n).map(|k| k as f32 / 4.0).collect();
    tessera::open(&path)
        .unwrap()
        .write()
        .range_i64("r", 1, 12)
        .range_i64("c", 1, 20)
        .values("v", &v)
        .values("w", &w)
        .timestamp(5)
        .submit()
        .unwrap();
    path
}

struct Fixture {
    _dir: tempfile::TempDir,
    ctx: SessionContext,
    paths: Vec<(&'static str, PathBuf)>,
}

fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let config = SessionConfig::new().with_target_partitions(4);
    let ctx = SessionContext::new_with_config(config);
    let paths = vec![
        ("pts", make_points(dir.path())),
        ("grid", make_grid(dir.path())),
        ("del", testdata("fragments/sparse_deletes")),
        ("sa", testdata("fragments/sparse_attrs")),
        ("dov", testdata("fragments/dense_overwrites")),
    ];
    for (name, path) in &paths {
        ctx.register_table(*name, Arc::new(TesseraTable::open(path).unwrap())).unwrap();
    }
    Fixture { _dir: dir, ctx, paths }
}

async fn run(ctx: &SessionContext, sql: &str) -> Vec<RecordBatch> {
    ctx.sql(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
        .collect()
        .await
        .unwrap_or_else(|e| panic!("{sql}: {e}"))
}

async fn explain(ctx: &SessionContext, sql: &str) -> String {
    let batches = run(ctx, &format!("EXPLAIN {sql}")).await;
    pretty_format_batches(&batches).unwrap().to_string()
}

/// One query and its direct equivalent.
struct Case {
    table: &'static str,
    sql: &'static str,
    /// Ranges of the direct read.
    ranges: &'static [(&'static str, i64, i64)],
    /// Condition of the direct read.
    condition: Option<&'static str>,
    /// Attributes (None: all, with every dimension).
    attrs: Option<&'static [&'static str]>,
    /// What EXPLAIN must show (the pushdown).
    shows: &'static [&'static str],
}

const CASES: &[Case] = &[
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE x BETWEEN 10 AND 50",
        ranges: &[("x", 10, 50)],
        condition: None,
        attrs: None,
        shows: &["ranges=[x: 10..=50]"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE x >= 100 AND x < 200",
        ranges: &[("x", 100, 199)],
        condition: None,
        attrs: None,
        shows: &["ranges=[x: 100..=199]"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE y = 26",
        ranges: &[("y", 26, 26)],
        condition: None,
        attrs: None,
        shows: &["y: 26..=26"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE x IN (37, 74, 370, 999)",
        ranges: &[("x", 37, 37), ("x", 74, 74), ("x", 370, 370), ("x", 999, 999)],
        condition: None,
        attrs: None,
        shows: &["x: 37..=37, 74..=74, 370..=370, 999..=999"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE x < 50 OR x > 900",
        ranges: &[("x", 0, 49), ("x", 901, 999)],
        condition: None,
        attrs: None,
        shows: &["x: 0..=49, 901..="],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE x <> 37 AND x < 100",
        ranges: &[("x", 0, 36), ("x", 38, 99)],
        condition: None,
        attrs: None,
        shows: &["x: 0..=36, 38..=99"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE i > 50",
        ranges: &[],
        condition: Some("i > 50"),
        attrs: None,
        shows: &["condition=i > 50"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE i IS NULL",
        ranges: &[],
        condition: Some("i is null"),
        attrs: None,
        shows: &["condition=i is null"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE s = 's3'",
        ranges: &[],
        condition: Some("s == 's3'"),
        attrs: None,
        shows: &["condition=s == 's3'"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE s IN ('s1', 's2') AND x < 500",
        ranges: &[("x", 0, 499)],
        condition: Some("s in ['s1', 's2']"),
        attrs: None,
        shows: &["x: 0..=499", "condition=(s == 's1') or (s == 's2')"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE color = 'red'",
        ranges: &[],
        condition: Some("color == 'red'"),
        attrs: None,
        shows: &["condition=color == 'red'"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE color <> 'blue' AND y > 50",
        ranges: &[("y", 51, 99)],
        condition: Some("color != 'blue'"),
        attrs: None,
        shows: &["y: 51..=", "color != 'blue'"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE NOT (i < 20) AND x BETWEEN 0 AND 600",
        ranges: &[("x", 0, 600)],
        condition: Some("i >= 20"),
        attrs: None,
        shows: &["x: 0..=600", "condition=i >= 20"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE i < 10 OR i > 90",
        ranges: &[],
        condition: Some("i < 10 or i > 90"),
        attrs: None,
        shows: &["condition=(i < 10) or (i > 90)"],
    },
    Case {
        table: "pts",
        sql: "SELECT x, y, s FROM pts WHERE i BETWEEN 10 AND 20",
        ranges: &[],
        condition: Some("i >= 10 and i <= 20"),
        attrs: Some(&["s"]),
        shows: &["projection=[x, y, s]", "condition=(i >= 10) and (i <= 20)"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE i IS NOT NULL AND s IS NULL AND x > 300",
        ranges: &[("x", 301, 999)],
        condition: Some("i is not null and s is null"),
        attrs: None,
        shows: &["x: 301..=", "(i is not null) and (s is null)"],
    },
    Case {
        table: "pts",
        sql: "SELECT * FROM pts WHERE i NOT IN (1, 2, 3, 4, 5, 6, 7, 8, 9, 10) AND y < 30",
        ranges: &[("y", 0, 29)],
        condition: Some("i not in [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]"),
        attrs: None,
        shows: &["y: 0..=29", "i not in ["],
    },
    Case {
        table: "grid",
        sql: "SELECT * FROM grid WHERE r BETWEEN 2 AND 4 AND c >= 10",
        ranges: &[("r", 2, 4), ("c", 10, 20)],
        condition: None,
        attrs: None,
        shows: &["ranges=[r: 2..=4; c: 10..=20]"],
    },
    Case {
        table: "grid",
        sql: "SELECT * FROM grid WHERE r = 5",
        ranges: &[("r", 5, 5)],
        condition: None,
        attrs: None,
        shows: &["ranges=[r: 5..=5]"],
    },
    Case {
        table: "grid",
        sql: "SELECT * FROM grid WHERE c IN (1, 20) AND r < 3",
        ranges: &[("r", 1, 2), ("c", 1, 1), ("c", 20, 20)],
        condition: None,
        attrs: None,
        shows: &["r: 1..=2; c: 1..=1, 20..=20"],
    },
    Case {
        table: "grid",
        sql: "SELECT * FROM grid WHERE r <> 3",
        ranges: &[("r", 1, 2), ("r", 4, 12)],
        condition: None,
        attrs: None,
        shows: &["r: 1..=2, 4..=12"],
    },
    Case {
        table: "grid",
        sql: "SELECT r, c, w FROM grid WHERE c > 18",
        ranges: &[("c", 19, 20)],
        condition: None,
        attrs: Some(&["w"]),
        shows: &["projection=[r, c, w]", "c: 19..=20"],
    },
    Case {
        table: "del",
        sql: "SELECT * FROM del WHERE r BETWEEN 0 AND 2 AND tag = 'a'",
        ranges: &[("r", 0, 2)],
        condition: Some("tag == 'a'"),
        attrs: None,
        shows: &["r: 0..=2", "condition=tag == 'a'"],
    },
    Case {
        table: "sa",
        sql: "SELECT * FROM sa WHERE n > 0",
        ranges: &[],
        condition: Some("n > 0"),
        attrs: None,
        shows: &["condition=n > 0"],
    },
    Case {
        table: "dov",
        sql: "SELECT * FROM dov WHERE r BETWEEN 2 AND 3 AND c < 5",
        ranges: &[("r", 2, 3), ("c", 0, 4)],
        condition: None,
        attrs: None,
        shows: &["r: 2..=3; c: 0..=4"],
    },
];

/// The direct read of a case, in row-major order (what `ORDER BY` the dimensions gives).
fn direct(path: &Path, case: &Case) -> RecordBatch {
    let array = tessera::open(path).unwrap();
    let projection = match case.attrs {
        None => Projection::all(),
        Some(a) => Projection {
            dimensions: None,
            attributes: Some(a.iter().map(|s| s.to_string()).collect()),
        },
    };
    read_all(&array, &projection, |mut q| {
        for (d, lo, hi) in case.ranges {
            q = q.range_i64(d, *lo, *hi);
        }
        if let Some(c) = case.condition {
            q = q.where_text(c);
        }
        q.layout(tessera::ReadLayout::RowMajor)
    })
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql_results_equal_the_direct_read() {
    let f = fixture();
    assert!(CASES.len() >= 20);
    let mut failures = Vec::new();
    for case in CASES {
        let path = &f.paths.iter().find(|(n, _)| *n == case.table).unwrap().1;
        let dims: Vec<String> = tessera::open(path)
            .unwrap()
            .schema()
            .dimensions
            .iter()
            .map(|d| d.name.clone())
            .collect();
        let sql = format!("{} ORDER BY {}", case.sql, dims.join(", "));
        let got = run(&f.ctx, &sql).await;
        let want = direct(path, case);
        assert!(want.num_rows() > 0, "{}: the direct read is empty", case.sql);
        let got = pretty_format_batches(&got).unwrap().to_string();
        let want = pretty_format_batches(&[want]).unwrap().to_string();
        if got != want {
            failures.push(format!("{}:\n{got}\n!=\n{want}", case.sql));
        }
        let plan = explain(&f.ctx, case.sql).await;
        for s in case.shows {
            if !plan.contains(s) {
                failures.push(format!("{}: EXPLAIN lacks {s:?}:\n{plan}", case.sql));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn explain_shows_exact_pushdown_and_partitions() {
    let f = fixture();
    // Exact: no FilterExec above the scan.
    let plan = explain(&f.ctx, "SELECT x, i FROM pts WHERE x < 500 AND i > 3").await;
    assert!(plan.contains("TesseraExec: array="), "{plan}");
    assert!(plan.contains("partitions=4"), "{plan}");
    assert!(plan.contains("ranges=[x: 0..=499]"), "{plan}");
    assert!(plan.contains("condition=i > 3"), "{plan}");
    assert!(!plan.contains("FilterExec"), "{plan}");
    // A float attribute is not pushed: DataFusion filters.
    let plan = explain(&f.ctx, "SELECT x FROM pts WHERE f > 3.5").await;
    assert!(plan.contains("FilterExec"), "{plan}");
    assert!(!plan.contains("condition="), "{plan}");
    // Dense arrays take no condition.
    let plan = explain(&f.ctx, "SELECT * FROM grid WHERE v > 3").await;
    assert!(plan.contains("FilterExec") && !plan.contains("condition="), "{plan}");
    // Limit is pushed.
    let plan = explain(&f.ctx, "SELECT * FROM pts WHERE x > 10 LIMIT 5").await;
    assert!(plan.contains("limit=5"), "{plan}");
    let rows: usize = run(&f.ctx, "SELECT * FROM pts WHERE x > 10 LIMIT 5")
        .await
        .iter()
        .map(|b| b.num_rows())
        .sum();
    assert_eq!(rows, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn aggregates_and_counts_match() {
    let f = fixture();
    let path = &f.paths[0].1;
    let array = tessera::open(path).unwrap();
    let n = array.read().range_i64("x", 0, 99).execute().unwrap().cell_num();
    let got = run(&f.ctx, "SELECT count(*) AS n FROM pts WHERE x < 100").await;
    let text = pretty_format_batches(&got).unwrap().to_string();
    assert!(text.contains(&format!("| {n} ")), "{text} vs {n}");
    let total = array.read().execute().unwrap().cell_num();
    let got = run(&f.ctx, "SELECT count(*) FROM pts").await;
    assert!(pretty_format_batches(&got).unwrap().to_string().contains(&format!("| {total} ")));
    // Group by an enumeration's labels.
    let got =
        run(&f.ctx, "SELECT color, count(*) AS n FROM pts GROUP BY color ORDER BY color").await;
    let text = pretty_format_batches(&got).unwrap().to_string();
    assert!(text.contains("| blue ") && text.contains("| red "), "{text}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_rebuilt_from_its_spec_returns_the_same_rows() {
    let f = fixture();
    let df =
        f.ctx.sql("SELECT x, y, s FROM pts WHERE x BETWEEN 100 AND 800 AND i > 20").await.unwrap();
    let plan = df.create_physical_plan().await.unwrap();
    let exec = find_scan(&plan).expect("a TesseraExec");
    let spec = exec.spec().clone();
    assert_eq!(spec.partitions.len(), 4);
    assert_eq!(spec.condition.as_deref(), Some("i > 20"));
    let bytes = spec.to_bytes().unwrap();
    let back = TesseraScanSpec::from_bytes(&bytes).unwrap();
    assert_eq!(back, spec);
    let rebuilt: Arc<dyn ExecutionPlan> = Arc::new(TesseraExec::from_spec(back).unwrap());
    let ctx = Arc::new(TaskContext::default());
    let mut a = rows(collect(exec_arc(&plan).unwrap(), ctx.clone()).await.unwrap());
    let mut b = rows(collect(rebuilt, ctx).await.unwrap());
    a.sort();
    b.sort();
    assert!(!a.is_empty());
    assert_eq!(a, b);
    // A spec over fragments the array no longer shows is refused.
    let mut stale = spec.clone();
    stale.fragments.pop();
    assert!(TesseraExec::from_spec(stale).is_err());
    assert!(TesseraScanSpec::from_bytes(b"{").is_err());
}

fn find_scan(plan: &Arc<dyn ExecutionPlan>) -> Option<&TesseraExec> {
    if let Some(e) = plan.downcast_ref::<TesseraExec>() {
        return Some(e);
    }
    plan.children().into_iter().find_map(find_scan)
}

fn exec_arc(plan: &Arc<dyn ExecutionPlan>) -> Option<Arc<dyn ExecutionPlan>> {
    if plan.is::<TesseraExec>() {
        return Some(plan.clone());
    }
    plan.children().into_iter().find_map(exec_arc)
}

fn rows(batches: Vec<RecordBatch>) -> Vec<String> {
    let text = pretty_format_batches(&batches).unwrap().to_string();
    text.lines().filter(|l| l.starts_with("| ")).skip(1).map(str::to_owned).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statistics_and_time_travel() {
    let f = fixture();
    let path = &f.paths[0].1;
    use datafusion::catalog::TableProvider;
    let t = TesseraTable::open(path).unwrap();
    let stats = t.statistics().unwrap();
    assert_eq!(stats.num_rows.get_value(), Some(&240));
    let grid = TesseraTable::open(&f.paths[1].1).unwrap();
    assert_eq!(
        grid.statistics().unwrap().num_rows,
        datafusion::common::stats::Precision::Exact(240)
    );
    // Opened before the second fragment: only the first one's cells.
    let ctx = SessionContext::new();
    ctx.register_table("old", Arc::new(TesseraTable::open_between(path, 0, 15).unwrap())).unwrap();
    let got = run(&ctx, "SELECT count(*) FROM old").await;
    assert!(pretty_format_batches(&got).unwrap().to_string().contains("| 200 "));
}
