//! The data file names of a field in fragments of every format version
//! (`FragmentMetadata::uri`, `var_uri`, `validity_uri` and `encode_name` in libtiledb):
//! version 9 on, `a<i>` / `d<i>` stems ([`Field::data_file`]); version 8, the attribute or
//! dimension name percent-encoded; versions 1–7, the name itself; and before version 5 the
//! coordinates of every dimension in one zipped `__coords.tdb`.

use tessera_schema::ArraySchema;

use crate::Field;

/// The stem of the zipped coordinates file of versions 1–4.
pub const COORDS_STEM: &str = "__coords";

/// The stem of `field`'s files in a fragment of format `version` written with `schema`;
/// `None` for fields without files.
pub fn file_stem(field: Field, version: u32, schema: &ArraySchema) -> Option<String> {
    if version >= 9 {
        return field.file_stem();
    }
    let name = match field {
        Field::Attribute(i) => schema.attributes.get(i)?.name.clone(),
        Field::Dimension(_) | Field::Coords if super::zipped_coords(version) => {
            COORDS_STEM.to_owned()
        }
        Field::Dimension(j) => schema.dimensions.get(j)?.name.clone(),
        Field::Coords => COORDS_STEM.to_owned(),
        // timestamps and delete metadata only exist from version 14 on
        _ => return field.file_stem(),
    };
    Some(if version == 8 { percent_encode(&name) } else { name })
}

/// The fixed data file of `field` (the offsets file of a var-sized one).
pub fn data_file(field: Field, version: u32, schema: &ArraySchema) -> Option<String> {
    file_stem(field, version, schema).map(|s| format!("{s}.tdb"))
}

/// The var data file of a var-sized `field`.
pub fn var_file(field: Field, version: u32, schema: &ArraySchema) -> Option<String> {
    file_stem(field, version, schema).map(|s| format!("{s}_var.tdb"))
}

/// The validity file of a nullable attribute.
pub fn validity_file(field: Field, version: u32, schema: &ArraySchema) -> Option<String> {
    file_stem(field, version, schema).map(|s| format!("{s}_validity.tdb"))
}

/// libtiledb's version-8 encoding of a field name: the RFC 3986 reserved characters and a
/// few characters Windows forbids become `%XX` (`<` and `>` map to `%20` and `%2D`, as
/// libtiledb maps them).
fn percent_encode(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        let code = match c {
            '!' => "%21",
            '#' => "%23",
            '$' => "%24",
            '%' => "%25",
            '&' => "%26",
            '\'' => "%27",
            '(' => "%28",
            ')' => "%29",
            '*' => "%2A",
            '+' => "%2B",
            ',' => "%2C",
            '/' => "%2F",
            ':' => "%3A",
            ';' => "%3B",
            '=' => "%3D",
            '?' => "%3F",
            '@' => "%40",
            '[' => "%5B",
            ']' => "%5D",
            '"' => "%22",
            '<' => "%20",
            '>' => "%2D",
            '\\' => "%30",
            '|' => "%3C",
            _ => {
                out.push(c);
                continue;
            }
        };
        out.push_str(code);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use tessera_schema::{Attribute, Dimension};
    use tessera_types::{ArrayType, Datatype};

    #[test]
    fn names_by_version() {
        let schema = ArraySchema::builder(ArrayType::Sparse)
            .dimension(Dimension::new("x", Datatype::Int32).domain_i64(0, 9).tile_i64(5))
            .attribute(Attribute::new("a/b", Datatype::Int32))
            .build()
            .unwrap();
        let a = Field::Attribute(0);
        let d = Field::Dimension(0);
        assert_eq!(data_file(a, 22, &schema).unwrap(), "a0.tdb");
        assert_eq!(var_file(d, 10, &schema).unwrap(), "d0_var.tdb");
        assert_eq!(data_file(a, 8, &schema).unwrap(), "a%2Fb.tdb");
        assert_eq!(data_file(a, 7, &schema).unwrap(), "a/b.tdb");
        assert_eq!(data_file(d, 5, &schema).unwrap(), "x.tdb");
        assert_eq!(data_file(d, 1, &schema).unwrap(), "__coords.tdb");
        assert_eq!(validity_file(a, 7, &schema).unwrap(), "a/b_validity.tdb");
    }
}
