//! Typed inputs: `CellValNum` instead of `u32::MAX`, `ReadLayout` (no Hilbert), and
//! `WriteQuery::validity` given before or after its values.

use tessera::{
    ArraySchema, ArrayType, Attribute, CellValNum, Datatype, Dimension, Error, Layout, ReadLayout,
};

#[test]
fn cell_val_num() {
    let a = Attribute::new("s", Datatype::StringUtf8).cell_val_num(CellValNum::Var);
    assert!(a.is_var());
    assert_eq!(a.values_per_cell(), CellValNum::Var);
    assert_eq!(a.cell_val_num, u32::MAX); // as stored on disk
    let b = Attribute::new("rgb", Datatype::UInt8).cell_val_num(CellValNum::Fixed(3));
    assert_eq!((b.values_per_cell().fixed(), b.cell_size()), (Some(3), Some(3)));
    // The on-disk number still converts, for code that has it.
    assert_eq!(
        Attribute::new("t", Datatype::Char).cell_val_num(u32::MAX).values_per_cell(),
        CellValNum::Var
    );
    assert_eq!(CellValNum::default(), CellValNum::Fixed(1));
    assert_eq!(CellValNum::Var.to_string(), "var");
    assert_eq!("4".parse::<CellValNum>().unwrap(), CellValNum::Fixed(4));
    assert!("0".parse::<CellValNum>().is_err());
    let d = Dimension::new("k", Datatype::StringAscii);
    assert_eq!(d.values_per_cell(), CellValNum::Var);
}

#[test]
fn read_layout_has_no_hilbert() {
    assert_eq!(Layout::from(ReadLayout::RowMajor), Layout::RowMajor);
    assert!(ReadLayout::try_from(Layout::Hilbert).is_err());
    assert!("hilbert".parse::<ReadLayout>().is_err());
    assert_eq!("col-major".parse::<ReadLayout>().unwrap(), ReadLayout::ColMajor);

    let dir = tempfile::tempdir().unwrap();
    let schema = ArraySchema::builder(ArrayType::Dense)
        .dimension(Dimension::new("y", Datatype::Int32).domain_i64(0, 1).tile_i64(2))
        .dimension(Dimension::new("x", Datatype::Int32).domain_i64(0, 1).tile_i64(2))
        .attribute(Attribute::new("a", Datatype::Int32))
        .build()
        .unwrap();
    tessera::create(dir.path().join("a"), &schema).unwrap();
    let array = tessera::open(dir.path().join("a")).unwrap();
    array.write().values("a", &[1i32, 2, 3, 4]).submit().unwrap();
    let array = tessera::open(dir.path().join("a")).unwrap();
    let read = |l: ReadLayout| {
        array.read().layout(l).execute().unwrap().values::<i32>("a").unwrap().into_owned()
    };
    assert_eq!(read(ReadLayout::RowMajor), [1, 2, 3, 4]);
    assert_eq!(read(ReadLayout::ColMajor), [1, 3, 2, 4]);
    // A `Layout` converts only when it is a read layout: Hilbert cannot be asked for.
    assert!(ReadLayout::try_from(Layout::Hilbert).is_err());
    let col = ReadLayout::try_from(Layout::ColMajor).unwrap();
    assert_eq!(read(col), [1, 3, 2, 4]);
}

fn nullable_array(dir: &std::path::Path) -> tessera::Array {
    let schema = ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 9).tile_i64(5))
        .attribute(Attribute::new("v", Datatype::Int32).nullable(true))
        .build()
        .unwrap();
    tessera::create(dir.join("n"), &schema).unwrap();
    tessera::open(dir.join("n")).unwrap()
}

#[test]
fn validity_before_or_after_values() {
    let dir = tempfile::tempdir().unwrap();
    let array = nullable_array(dir.path());
    array
        .write()
        .validity("v", vec![1, 0, 1])
        .values("x", &[1i64, 2, 3])
        .values("v", &[10i32, 20, 30])
        .submit()
        .unwrap();
    array
        .write()
        .values("x", &[4i64, 5])
        .values("v", &[40i32, 50])
        .validity("v", vec![0, 1])
        .submit()
        .unwrap();
    let array = tessera::open(dir.path().join("n")).unwrap();
    let result = array.read().execute().unwrap();
    let got: Vec<Option<i32>> = result.column("v").unwrap().iter_opt::<i32>().unwrap().collect();
    assert_eq!(got, [Some(10), None, Some(30), None, Some(50)]);

    // Validity for a field whose values never come is refused, and nothing is written.
    let err = array.write().values("x", &[7i64]).validity("v", vec![1]).submit().unwrap_err();
    assert!(matches!(&err, Error::InvalidWrite(m) if m.contains("\"v\"")), "{err}");
    assert_eq!(tessera::open(dir.path().join("n")).unwrap().fragments().len(), 2);
}
