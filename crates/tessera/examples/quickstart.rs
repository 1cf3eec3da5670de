//! Tessera in five minutes: create a dense and a sparse array, write to them, read a
//! subarray with a condition, look cells up by their coordinates, aggregate.
//!
//! ```text
//! cargo run --release --example quickstart [FOLDER]   # default ./quickstart-arrays
//! ```
//!
//! The arrays are ordinary TileDB arrays: open them with libtiledb (tiledb-py) or with the
//! `tessera` command line (`tessera info FOLDER/dense`).

use std::path::PathBuf;

use tessera::{
    Aggregate, ArraySchema, ArrayType, Attribute, CellValNum, Datatype, Dimension, Filter,
    FilterPipeline, Layout, Points,
};

fn main() -> tessera::Result<()> {
    let folder =
        PathBuf::from(std::env::args().nth(1).unwrap_or_else(|| "quickstart-arrays".into()));
    std::fs::create_dir_all(&folder)?;

    // A dense 2-D grid of temperatures, 1000 x 1000 cells in tiles of 100 x 100, compressed.
    let dense = folder.join("dense");
    if dense.exists() {
        std::fs::remove_dir_all(&dense)?;
    }
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("row", Datatype::Int32).domain_i64(1, 1000).tile_i64(100))
        .dimension(Dimension::new("col", Datatype::Int32).domain_i64(1, 1000).tile_i64(100))
        .attribute(
            Attribute::new("temperature", Datatype::Float64)
                .filters(FilterPipeline::new(vec![Filter::zstd(3)])),
        )
        .build()?;
    tessera::create(&dense, &schema)?;
    let array = tessera::open(&dense)?;
    // Rows 1..=500 of every column, in row-major order.
    let temps: Vec<f64> = (0..500 * 1000)
        .map(|i| {
            let (r, c) = ((i / 1000) as f64, (i % 1000) as f64);
            15.0 + 10.0 * (r / 80.0).sin() * (c / 120.0).cos()
        })
        .collect();
    let fragment = array
        .write()
        .range_i64("row", 1, 500)
        .range_i64("col", 1, 1000)
        .values("temperature", &temps)
        .submit()?;
    println!(
        "dense: wrote {} cells as fragment {}",
        temps.len(),
        fragment.map(|f| f.to_string()).unwrap_or_default()
    );

    let array = tessera::open(&dense)?;
    let hot = array
        .read()
        .range("row", 100..=160)
        .range("col", 1..=1000)
        .where_text("temperature > 24.0")
        .execute()?;
    let above = hot.values::<f64>("temperature")?.iter().filter(|t| !t.is_nan()).count();
    println!(
        "dense: rows 100..=160 hold {} cells, {above} of them above 24 degrees (the others read as fill values)",
        hot.cell_num()
    );
    let aggs = [Aggregate::count(), Aggregate::mean("temperature"), "max(temperature)".parse()?];
    let values = array.read().range("row", 1..=500).range("col", 1..=1000).aggregate(&aggs)?;
    println!("dense: count = {}, mean = {}, max = {}", values[0], values[1], values[2]);

    // A sparse array of named points on a plane, with an attribute per point.
    let sparse = folder.join("sparse");
    if sparse.exists() {
        std::fs::remove_dir_all(&sparse)?;
    }
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 9999).tile_i64(1000))
        .dimension(Dimension::new("y", Datatype::Int64).domain_i64(0, 9999).tile_i64(1000))
        .attribute(Attribute::new("value", Datatype::Float64))
        .attribute(Attribute::new("name", Datatype::StringUtf8).cell_val_num(CellValNum::Var))
        .capacity(1000)
        .build()?;
    tessera::create(&sparse, &schema)?;
    let array = tessera::open(&sparse)?;
    let n = 10_000u64;
    // A simple deterministic scatter (no two points share coordinates).
    let x: Vec<i64> = (0..n).map(|i| ((i * 7919) % 10_000) as i64).collect();
    let y: Vec<i64> = (0..n).map(|i| ((i * 104_729 + 13) % 10_000) as i64).collect();
    let value: Vec<f64> = (0..n).map(|i| i as f64 / 10.0).collect();
    array
        .write()
        .layout(Layout::Unordered)
        .values("x", &x)
        .values("y", &y)
        .values("value", &value)
        .var_values("name", (0..n).map(|i| format!("point-{i}")))
        .submit()?;
    println!("sparse: wrote {n} points (Tessera sorted them into the array's global order)");

    let array = tessera::open(&sparse)?;
    let found = array
        .read()
        .range("x", 0..=999)
        .range("y", 0..=999)
        .where_text("value >= 500.0")
        .execute()?;
    println!("sparse: {} points in [0, 999] x [0, 999] have value >= 500", found.cell_num());
    let names = found.column("name").expect("read");
    let values = found.values::<f64>("value")?;
    for (name, value) in names.strings()?.zip(values.iter()).take(3) {
        println!("sparse:   {name} = {value}");
    }
    // Point lookups: the cells at given coordinates, in the order asked (absent ones left out).
    let points = Points::new().coords("x", [x[5], 17, x[2]]).coords("y", [y[5], 17, y[2]]);
    let lookup = array.read().points(points).execute()?;
    println!(
        "sparse: looked up 3 points, found {}: {:?}",
        lookup.cell_num(),
        lookup.column("name").expect("read").strings()?.collect::<Vec<_>>()
    );
    let sum = array.read().aggregate(&[Aggregate::sum("value")])?;
    println!("sparse: sum(value) over every point = {}", sum[0]);

    println!("done: open {} with tessera or tiledb-py", folder.display());
    Ok(())
}
