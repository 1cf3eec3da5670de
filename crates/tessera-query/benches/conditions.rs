//! The condition kernels alone: [`QueryCondition::evaluate_and`] over 1 M cells held in
//! memory, per datatype (throughput in cells per second), plus a three-leaf condition, a
//! nullable column, an `in` list and var-sized strings.
//!
//! Run with `cargo bench -p tessera-query --bench conditions`.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use tessera_query::Column;
use tessera_query::condition::QueryCondition;
use tessera_schema::{ArraySchema, Attribute, Dimension};
use tessera_types::{ArrayType, CELL_VAL_NUM_VAR, Datatype};

const N: usize = 1 << 20;

fn schema(dt: Datatype, cvn: u32, nullable: bool) -> ArraySchema {
    ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("d", Datatype::Int64).domain_i64(0, 1 << 40).tile_i64(1024))
        .attribute(Attribute::new("a", dt).cell_val_num(cvn).nullable(nullable))
        .attribute(Attribute::new("b", Datatype::Int32))
        .build()
        .expect("schema")
}

/// A column of `N` pseudo-random cells of `dt` (`cell(i)` gives the bytes of cell `i`).
fn column(dt: Datatype, nullable: bool, cell: impl Fn(u64) -> Vec<u8>) -> Column {
    let mut c = Column::new("a", dt, 1, nullable);
    for i in 0..N as u64 {
        c.data.extend_from_slice(&cell(i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40));
    }
    if nullable {
        c.validity = Some((0..N).map(|i| u8::from(i % 7 != 0)).collect());
    }
    c
}

fn run(c: &mut Criterion, name: &str, schema: &ArraySchema, text: &str, cols: &[&Column]) {
    let cond = QueryCondition::parse(text, schema, &[]).expect("condition");
    let mut keep = vec![true; N];
    let mut group = c.benchmark_group("condition");
    group.throughput(Throughput::Elements(N as u64));
    group.bench_function(name, |b| {
        b.iter(|| {
            keep.fill(true);
            cond.evaluate_and(&|n: &str| cols.iter().copied().find(|c| c.name == n), &mut keep)
                .expect("evaluate");
            black_box(&keep);
        })
    });
    group.finish();
}

fn kernels(c: &mut Criterion) {
    macro_rules! fixed {
        ($dt:expr, $t:ty, $label:literal, $lit:literal) => {{
            let col = column($dt, false, |v| ((v as i64 - (1 << 23)) as $t).to_le_bytes().to_vec());
            run(
                c,
                concat!($label, " >= x"),
                &schema($dt, 1, false),
                concat!("a >= ", $lit),
                &[&col],
            );
        }};
    }
    fixed!(Datatype::Int8, i8, "int8", "0");
    fixed!(Datatype::Int16, i16, "int16", "0");
    fixed!(Datatype::Int32, i32, "int32", "0");
    fixed!(Datatype::Int64, i64, "int64", "0");
    fixed!(Datatype::UInt32, u32, "uint32", "1000");
    fixed!(Datatype::Float32, f32, "float32", "0.5");
    fixed!(Datatype::Float64, f64, "float64", "0.5");

    let a = column(Datatype::Int32, false, |v| (v as i32).to_le_bytes().to_vec());
    let mut b = column(Datatype::Int32, false, |v| ((v >> 3) as i32).to_le_bytes().to_vec());
    b.name = "b".into();
    let s = schema(Datatype::Int32, 1, false);
    run(c, "int32 three leaves", &s, "a >= 100 and a < 9000000 or b == 7", &[&a, &b]);
    run(c, "int32 in 5", &s, "a in [1, 5, 9, 100, 1000]", &[&a]);
    let n = column(Datatype::Int32, true, |v| (v as i32).to_le_bytes().to_vec());
    run(c, "int32 nullable >= x", &schema(Datatype::Int32, 1, true), "a >= 100", &[&n]);

    let mut st = Column::new("a", Datatype::StringAscii, CELL_VAL_NUM_VAR, false);
    let mut offsets = Vec::with_capacity(N);
    for i in 0..N as u64 {
        offsets.push(st.data.len() as u64);
        let v = i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 44;
        st.data.extend_from_slice(format!("key{v:05}").as_bytes());
    }
    st.offsets = Some(offsets);
    let ss = schema(Datatype::StringAscii, CELL_VAL_NUM_VAR, false);
    run(c, "string < x", &ss, "a < 'key50000'", &[&st]);
    run(c, "string == x", &ss, "a == 'key01234'", &[&st]);
}

criterion_group!(benches, kernels);
criterion_main!(benches);
