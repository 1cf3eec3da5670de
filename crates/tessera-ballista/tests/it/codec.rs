//! The `proto` codecs: a physical plan over Tessera scans (with filters, projections and
//! limits pushed down) and a logical plan over Tessera tables survive encoding and decoding,
//! decoded plans return the same rows, foreign bytes go to the wrapped codec, and bytes of
//! another version are refused with a clear message. (They live here, where the `proto`
//! feature of tessera-datafusion is built, so that the workspace never builds
//! datafusion-proto.)

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::pretty::pretty_format_batches;
use datafusion::common::tree_node::{TreeNode, TreeNodeRecursion};
use datafusion::logical_expr::LogicalPlan;
use datafusion::physical_plan::{ExecutionPlan, collect};
use datafusion::prelude::{SessionConfig, SessionContext};
use tessera::{ArraySchema, ArrayType, Attribute, Datatype, Dimension};
use tessera_datafusion::datafusion_proto::bytes::{
    logical_plan_from_bytes_with_extension_codec, logical_plan_to_bytes_with_extension_codec,
    physical_plan_from_bytes_with_extension_codec, physical_plan_to_bytes_with_extension_codec,
};
use tessera_datafusion::datafusion_proto::logical_plan::LogicalExtensionCodec;
use tessera_datafusion::datafusion_proto::physical_plan::{
    DefaultPhysicalProtoConverter, PhysicalExtensionCodec,
};
use tessera_datafusion::{
    TesseraExec, TesseraLogicalCodec, TesseraPhysicalCodec, TesseraScanSpec, TesseraTable,
    uri_to_url, url_to_uri,
};

/// A sparse array: x (int64), y (int32); i (int32, nullable), s (utf8 var, nullable).
fn make_points(dir: &Path) -> PathBuf {
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 999).tile_i64(100))
        .dimension(Dimension::new("y", Datatype::Int32).domain_i64(0, 99).tile_i64(10))
        .attribute(Attribute::new("i", Datatype::Int32).nullable(true))
        .attribute(Attribute::new("s", Datatype::StringUtf8).var().nullable(true))
        .capacity(16)
        .build()
        .unwrap();
    let path = dir.join("pts");
    tessera::create(&path, &schema).unwrap();
    let n = 300u64;
    let xs: Vec<i64> = (0..n).map(|k| (k * 37 % 1000) as i64).collect();
    let ys: Vec<i32> = (0..n).map(|k| (k * 13 % 100) as i32).collect();
    let is: Vec<i32> = (0..n).map(|k| (k * 7 % 100) as i32).collect();
    let ss: Vec<String> = (0..n).map(|k| format!("s{}", k % 10)).collect();
    tessera::open(&path)
        .unwrap()
        .write()
        .values("x", &xs)
        .values("y", &ys)
        .values("i", &is)
        .validity("i", (0..n).map(|k| u8::from(k % 9 != 4)).collect())
        .var_values("s", &ss)
        .validity("s", (0..n).map(|k| u8::from(k % 11 != 2)).collect())
        .timestamp(10)
        .submit()
        .unwrap();
    path
}

/// A dense array: r, c (int32, 1..=20), v (int64), rows 1..=12 written.
fn make_grid(dir: &Path) -> PathBuf {
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("r", Datatype::Int32).domain_i64(1, 20).tile_i64(5))
        .dimension(Dimension::new("c", Datatype::Int32).domain_i64(1, 20).tile_i64(5))
        .attribute(Attribute::new("v", Datatype::Int64))
        .build()
        .unwrap();
    let path = dir.join("grid");
    tessera::create(&path, &schema).unwrap();
    let v: Vec<i64> = (0..240).map(|k| k * 3 - 100).collect();
    tessera::open(&path)
        .unwrap()
        .write()
        .range_i64("r", 1, 12)
        .range_i64("c", 1, 20)
        .values("v", &v)
        .timestamp(5)
        .submit()
        .unwrap();
    path
}

fn context(dir: &Path) -> SessionContext {
    let ctx = SessionContext::new_with_config(SessionConfig::new().with_target_partitions(3));
    let pts = TesseraTable::open(make_points(dir)).unwrap().with_memory_budget(1 << 20);
    ctx.register_table("pts", Arc::new(pts)).unwrap();
    ctx.register_table("grid", Arc::new(TesseraTable::open(make_grid(dir)).unwrap())).unwrap();
    ctx
}

fn sorted_text(batches: &[RecordBatch]) -> Vec<String> {
    let text = pretty_format_batches(batches).unwrap().to_string();
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    lines.sort();
    lines
}

/// The specs of every Tessera scan in `plan`, in plan order.
fn scan_specs(plan: &Arc<dyn ExecutionPlan>) -> Vec<TesseraScanSpec> {
    let mut specs = Vec::new();
    plan.apply(|node| {
        if let Some(exec) = node.downcast_ref::<TesseraExec>() {
            specs.push(exec.spec().clone());
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .unwrap();
    specs
}

const QUERIES: &[&str] = &[
    "SELECT x, i, s FROM pts WHERE x BETWEEN 100 AND 600 AND i > 20 ORDER BY x, y",
    "SELECT count(*) FROM (SELECT x, s FROM pts WHERE s = 's3' LIMIT 5)",
    "SELECT s, count(*), sum(i) FROM pts WHERE i IS NOT NULL GROUP BY s ORDER BY s",
    "SELECT r, c, v FROM grid WHERE r > 3 AND c <= 7 AND v % 2 = 0 ORDER BY r, c",
    "SELECT r, sum(v) FROM grid GROUP BY r ORDER BY r LIMIT 4",
    "SELECT p.x, p.i, g.v FROM pts p JOIN grid g ON p.y = g.c AND p.i = g.r ORDER BY p.x, g.v",
    "SELECT count(*) FROM pts",
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn physical_plans_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let codec = TesseraPhysicalCodec::default();
    for sql in QUERIES {
        let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await.unwrap();
        let specs = scan_specs(&plan);
        assert!(!specs.is_empty(), "{sql}: no Tessera scan in the plan");
        let bytes = physical_plan_to_bytes_with_extension_codec(plan.clone(), &codec).unwrap();
        let back =
            physical_plan_from_bytes_with_extension_codec(&bytes, &ctx.task_ctx(), &codec).unwrap();
        assert_eq!(scan_specs(&back), specs, "{sql}");
        let want = collect(plan, ctx.task_ctx()).await.unwrap();
        let got = collect(back, ctx.task_ctx()).await.unwrap();
        assert_eq!(sorted_text(&got), sorted_text(&want), "{sql}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushdown_survives_the_physical_codec() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let codec = TesseraPhysicalCodec::default();
    let sql = "SELECT x, s FROM pts WHERE x >= 200 AND x < 800 AND i < 50 LIMIT 7";
    let plan = ctx.sql(sql).await.unwrap().create_physical_plan().await.unwrap();
    let bytes = physical_plan_to_bytes_with_extension_codec(plan, &codec).unwrap();
    let back =
        physical_plan_from_bytes_with_extension_codec(&bytes, &ctx.task_ctx(), &codec).unwrap();
    let specs = scan_specs(&back);
    assert_eq!(specs.len(), 1);
    let spec = &specs[0];
    assert_eq!(spec.projection, ["x", "s"]);
    assert_eq!(spec.ranges.len(), 1, "{spec:?}");
    assert_eq!(spec.ranges[0].dimension, "x");
    assert_eq!(spec.condition.as_deref(), Some("i < 50"));
    assert_eq!(spec.limit, Some(7));
    assert_eq!(spec.partitions.len(), 3);
    assert_eq!(spec.memory_budget, Some(1 << 20));
    assert_eq!(spec.fragments.len(), 1);
    assert!(spec.timestamps.1 >= 10, "{:?}", spec.timestamps);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logical_plans_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let ctx = context(dir.path());
    let codec = TesseraLogicalCodec::default();
    for sql in QUERIES {
        let plan = ctx.sql(sql).await.unwrap().into_optimized_plan().unwrap();
        let bytes = logical_plan_to_bytes_with_extension_codec(&plan, &codec).unwrap();
        let back =
            logical_plan_from_bytes_with_extension_codec(&bytes, &ctx.task_ctx(), &codec).unwrap();
        // datafusion-proto does not carry a TableScan's `fetch` (the Limit above it stays).
        let shown = |p: &LogicalPlan| {
            let text = format!("{}", p.display_indent());
            text.lines()
                .map(|l| l.split(", fetch=").next().unwrap_or(l).to_owned())
                .collect::<Vec<_>>()
        };
        assert_eq!(shown(&back), shown(&plan), "{sql}");
        assert_eq!(tables(&back).len(), tables(&plan).len(), "{sql}");
        let want = ctx.execute_logical_plan(plan).await.unwrap().collect().await.unwrap();
        let got = ctx.execute_logical_plan(back).await.unwrap().collect().await.unwrap();
        assert_eq!(sorted_text(&got), sorted_text(&want), "{sql}");
    }
}

/// The tables of a logical plan.
fn tables(plan: &LogicalPlan) -> Vec<TesseraTable> {
    let mut out = Vec::new();
    plan.apply(|node| {
        if let LogicalPlan::TableScan(scan) = node
            && let Some(source) =
                scan.source.downcast_ref::<datafusion::datasource::DefaultTableSource>()
            && let Some(t) = source.table_provider.downcast_ref::<TesseraTable>()
        {
            out.push(t.clone());
        }
        Ok(TreeNodeRecursion::Continue)
    })
    .unwrap();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tables_keep_url_timestamps_budget_and_partitions() {
    let dir = tempfile::tempdir().unwrap();
    let path = make_points(dir.path());
    // Written after the table is opened: the decoded table must not see it. Its timestamp is
    // past the table's end (a write in the same millisecond as the open would share the
    // end timestamp, and a read at that end includes it, as in libtiledb).
    let table = TesseraTable::open(&path).unwrap().with_memory_budget(12345).with_partitions(2);
    let late = table.array().timestamp_range().1 + 1;
    tessera::open(&path)
        .unwrap()
        .write()
        .timestamp(late)
        .values("x", &[999i64])
        .values("y", &[99i32])
        .values("i", &[1i32])
        .validity("i", vec![1])
        .var_values("s", &["late".to_owned()])
        .validity("s", vec![1])
        .submit()
        .unwrap();
    let ctx = SessionContext::new();
    ctx.register_table("pts", Arc::new(table.clone())).unwrap();
    let plan = ctx.sql("SELECT count(*) FROM pts").await.unwrap().into_unoptimized_plan();
    let codec = TesseraLogicalCodec::default();
    let bytes = logical_plan_to_bytes_with_extension_codec(&plan, &codec).unwrap();
    let back =
        logical_plan_from_bytes_with_extension_codec(&bytes, &ctx.task_ctx(), &codec).unwrap();
    let got = tables(&back);
    assert_eq!(got.len(), 1);
    let t = &got[0];
    assert_eq!(t.uri(), std::path::absolute(&path).unwrap().to_str().unwrap());
    assert_eq!(t.array().timestamp_range(), table.array().timestamp_range());
    assert_eq!(t.array().fragments().len(), 1);
    assert_eq!(t.memory_budget(), Some(12345));
    assert_eq!(t.partitions(), Some(2));
    let rows = ctx.execute_logical_plan(back).await.unwrap().collect().await.unwrap();
    assert_eq!(sorted_text(&rows), sorted_text(&run_count(&ctx, "pts").await));
}

async fn run_count(ctx: &SessionContext, t: &str) -> Vec<RecordBatch> {
    ctx.sql(&format!("SELECT count(*) FROM {t}")).await.unwrap().collect().await.unwrap()
}

#[test]
fn urls_of_paths_and_object_stores() {
    let url = uri_to_url("relative/arr").unwrap();
    assert_eq!(url.scheme(), "file");
    assert!(Path::new(&url_to_uri(&url).unwrap()).is_absolute());
    let s3 = uri_to_url("s3://bucket/some/array").unwrap();
    assert_eq!(url_to_uri(&s3).unwrap(), "s3://bucket/some/array");
    let spaced = uri_to_url("/tmp/with space/arr").unwrap();
    assert_eq!(url_to_uri(&spaced).unwrap(), "/tmp/with space/arr");
}

#[test]
fn foreign_bytes_go_to_the_wrapped_codec_and_other_versions_are_refused() {
    let ctx = SessionContext::new();
    let task = ctx.task_ctx();
    let physical = TesseraPhysicalCodec::default();
    let converter = DefaultPhysicalProtoConverter {};
    // Not ours: DataFusion's default codec answers (it knows no extension nodes).
    let err = physical.try_decode(b"\x0a\x03abc", &[], &task, &converter).unwrap_err();
    assert!(!err.to_string().contains("Tessera"), "{err}");
    // Ours, another version.
    let err = physical.try_decode(b"\0tessera-scan\x09{}", &[], &task, &converter).unwrap_err();
    assert!(err.to_string().contains("version 9"), "{err}");
    // Ours, not a spec.
    let err = physical.try_decode(b"\0tessera-scan\x01nope", &[], &task, &converter).unwrap_err();
    assert!(err.to_string().contains("scan spec"), "{err}");

    let logical = TesseraLogicalCodec::default();
    let schema = Arc::new(datafusion::arrow::datatypes::Schema::empty());
    let err = logical
        .try_decode_table_provider(b"\0tessera-table\x02{}", &"t".into(), schema.clone(), &task)
        .unwrap_err();
    assert!(err.to_string().contains("version 2"), "{err}");
    let missing = r#"{"url":"file:///nonexistent/arr","timestamps":[0,1],"memory_budget":null,"partitions":null}"#;
    let mut buf = b"\0tessera-table\x01".to_vec();
    buf.extend_from_slice(missing.as_bytes());
    let err = logical.try_decode_table_provider(&buf, &"t".into(), schema, &task).unwrap_err();
    assert!(err.to_string().contains("nonexistent"), "{err}");
}
