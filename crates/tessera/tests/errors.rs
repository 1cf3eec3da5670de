//! The one error a user matches on: every variant a caller handles comes out of the facade's
//! calls with its [`ErrorKind`], keeps an informative `Display`/`source()` chain, and every
//! layer's error converts into it with `?`.

use std::path::{Path, PathBuf};

use tessera::{
    Array, ArraySchema, ArrayType, Attribute, Datatype, Dimension, Error, ErrorKind, Layout,
};

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata").join(rel)
}

/// The error and its sources, joined the way the CLI and the Python package show them.
fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(s) = source {
        text.push_str(" <- ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

fn sparse_schema() -> ArraySchema {
    ArraySchema::builder(ArrayType::Sparse)
        .dimension(Dimension::new("x", Datatype::Int64).domain_i64(0, 99).tile_i64(10))
        .attribute(Attribute::new("v", Datatype::Float64))
        .build()
        .unwrap()
}

fn sparse_array(dir: &Path) -> Array {
    let path = dir.join("a");
    tessera::create(&path, &sparse_schema()).unwrap();
    tessera::open(&path).unwrap()
}

/// Copies the folder `from` to `to`, recursively.
fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// A copy of `testdata/fragments/sparse_int64` whose schema file is replaced by `bad`.
fn array_with_schema(dir: &Path, bad: &str) -> PathBuf {
    let path = dir.join("copy");
    copy_dir(&testdata("fragments/sparse_int64"), &path);
    let schema_dir = path.join("__schema");
    let file = std::fs::read_dir(&schema_dir).unwrap().next().unwrap().unwrap().path();
    std::fs::copy(testdata(bad), file).unwrap();
    path
}

#[test]
fn not_found() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("nothing here");
    let err = tessera::open(&missing).unwrap_err();
    assert!(
        matches!(&err, Error::NotFound { object: "array", path } if path.ends_with("nothing here"))
    );
    assert_eq!(err.kind(), ErrorKind::NotFound);
    assert!(err.to_string().contains("does not exist"), "{err}");
    for err in [
        tessera::open_at(&missing, 5).unwrap_err(),
        tessera::open_between(&missing, 1, 5).unwrap_err(),
        tessera::open_group(&missing).unwrap_err(),
    ] {
        assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
    }
    // An existing folder that holds no array.
    let err = tessera::open(dir.path()).unwrap_err();
    assert!(matches!(err, Error::NotAnArray(_)), "{err}");
    assert_eq!(err.kind(), ErrorKind::NotFound);
    let err = tessera::open_group(dir.path()).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::NotFound, "{err}");
}

#[test]
fn already_exists() {
    let dir = tempfile::tempdir().unwrap();
    sparse_array(dir.path());
    let err = tessera::create(dir.path().join("a"), &sparse_schema()).unwrap_err();
    assert!(matches!(err, Error::AlreadyExists), "{err}");
    assert_eq!(err.kind(), ErrorKind::AlreadyExists);
}

#[test]
fn out_of_domain() {
    let dir = tempfile::tempdir().unwrap();
    let array = sparse_array(dir.path());
    let err = array
        .write()
        .layout(Layout::Unordered)
        .values("x", &[5i64, 100])
        .values("v", &[1.0f64, 2.0])
        .submit()
        .unwrap_err();
    assert!(matches!(&err, Error::OutOfDomain { dimension, .. } if dimension == "x"), "{err}");
    assert_eq!(err.kind(), ErrorKind::OutOfDomain);
    assert!(err.to_string().contains("Coordinate 100 is out of domain bounds [0, 99]"), "{err}");
    // The array is unchanged.
    assert_eq!(tessera::open(dir.path().join("a")).unwrap().fragments().len(), 0);
}

#[test]
fn duplicate_coordinates() {
    let dir = tempfile::tempdir().unwrap();
    let array = sparse_array(dir.path());
    let err = array
        .write()
        .layout(Layout::Unordered)
        .values("x", &[5i64, 7, 5])
        .values("v", &[1.0f64, 2.0, 3.0])
        .submit()
        .unwrap_err();
    assert!(matches!(err, Error::DuplicateCoordinates(_)), "{err}");
    assert_eq!(err.kind(), ErrorKind::DuplicateCoordinates);
    assert!(err.to_string().contains("Duplicate coordinates (5) are not allowed"), "{err}");
}

#[test]
fn unsupported() {
    let dir = tempfile::tempdir().unwrap();
    let path = array_with_schema(dir.path(), "bad/schema/version_payload_23.tdb");
    let err = tessera::open(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Unsupported, "{}", chain(&err));
    assert!(chain(&err).contains("format version 23"), "{}", chain(&err));
    assert!(err.corruption().is_none());
}

#[test]
fn corrupt_names_path_field_offset() {
    let dir = tempfile::tempdir().unwrap();
    let path = array_with_schema(dir.path(), "bad/schema/inflated_filter_count.tdb");
    let err = tessera::open(&path).unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{}", chain(&err));
    let c = err.corruption().expect("a corrupt file");
    assert!(c.path.starts_with("__schema/__"), "{c:?}");
    assert_eq!(
        (c.structure, c.field, c.offset),
        (Some("array schema"), Some("coords filters"), Some(16))
    );
    let text = chain(&err);
    assert!(text.contains("__schema/") && text.contains("coords filters at offset 16"), "{text}");

    // A truncated generic tile: the field and offset come from the tile layer.
    let path = array_with_schema(&dir.path().join("t"), "bad/schema/truncated.tdb");
    let err = tessera::open(&path).unwrap_err();
    let c = err.corruption().expect("a corrupt file");
    assert_eq!(
        (c.structure, c.field, c.offset),
        (Some("generic tile"), Some("tile data"), Some(52))
    );
}

#[test]
fn invalid_argument() {
    let dir = tempfile::tempdir().unwrap();
    let array = sparse_array(dir.path());
    let err = array.read().attributes(["nope"]).execute().unwrap_err();
    assert!(matches!(err, Error::UnknownField(_)), "{err}");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = array.read().range_i64("x", 5, 1).execute().unwrap_err();
    assert!(matches!(err, Error::InvalidRange { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    let err = array.read().where_text("v >").execute().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidArgument, "{err}");
    let err = array.write().values("x", &[1i64, 2]).values("v", &[1.0f64]).submit().unwrap_err();
    assert!(matches!(err, Error::InvalidWrite(_)), "{err}");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
    // A schema TileDB would refuse, converted with `?`.
    fn build() -> tessera::Result<ArraySchema> {
        Ok(ArraySchema::builder(ArrayType::Sparse).build()?)
    }
    let err = build().unwrap_err();
    assert!(matches!(&err, Error::Schema { file, .. } if file == "schema"), "{err}");
    assert_eq!(err.kind(), ErrorKind::InvalidArgument);
}

#[test]
fn type_mismatch() {
    let dir = tempfile::tempdir().unwrap();
    let array = sparse_array(dir.path());
    array.write().values("x", &[1i64]).values("v", &[1.5f64]).submit().unwrap();
    let result = tessera::open(dir.path().join("a")).unwrap().read().execute().unwrap();
    let err = result.values::<i32>("v").unwrap_err();
    assert!(matches!(err, Error::TypeMismatch { .. }), "{err}");
    assert_eq!(err.kind(), ErrorKind::TypeMismatch);
}

/// Every layer's error converts with `?` into the one error, keeping its text.
#[test]
fn from_every_layer() {
    use tessera::layers::{filters, fragment, rtree, storage, tile, types};

    fn conv<E: Into<Error> + std::fmt::Display>(e: E) -> (Error, String) {
        let text = e.to_string();
        (e.into(), text)
    }
    let io = std::io::Error::new(std::io::ErrorKind::NotFound, "gone");
    let storage = storage::Error::io(storage::Op::Read, "x.tdb", std::io::Error::other("disk"));
    let types = types::Error::invalid("generic tile header", "version", 0, "bad");
    let filters = filters::Error::Unsupported("a filter".into());
    let tile = tile::Error::InvalidInput("zero cell size".into());
    let rtree = rtree::Error::NoDimensions;
    let fragment = fragment::FragmentName::parse("not a name").unwrap_err();
    let schema = ArraySchema::builder(ArrayType::Dense).build().unwrap_err();
    let cases = [
        (conv(io), ErrorKind::NotFound),
        (conv(storage), ErrorKind::Io),
        (conv(types), ErrorKind::Corrupt),
        (conv(filters), ErrorKind::Unsupported),
        (conv(tile), ErrorKind::InvalidArgument),
        (conv(rtree), ErrorKind::Corrupt),
        (conv(fragment), ErrorKind::Corrupt),
        (conv(schema), ErrorKind::InvalidArgument),
    ];
    for ((err, text), kind) in cases {
        assert_eq!(err.kind(), kind, "{err:?}");
        assert!(chain(&err).contains(&text), "{} lacks {text}", chain(&err));
    }
}
