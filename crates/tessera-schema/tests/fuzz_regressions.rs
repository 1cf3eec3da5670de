//! Inputs the fuzz targets of `fuzz/` found mishandled (see docs/robustness.md).

use tessera_schema::json::{from_json_str, to_json};

const NOT_NULLABLE_WITH_FILL_VALIDITY: &str = r#"{
  "array_type": "dense",
  "dimensions": [{"name": "d", "type": "uint8", "domain": [0, 9], "tile": 5}],
  "attributes": [{"name": "a", "type": "int32", "fill": 1, "fill_validity": true}]
}"#;

#[test]
fn a_fill_validity_on_an_attribute_that_is_not_nullable_is_refused() {
    // Found by the `schema_json` fuzz target: the attribute was created with a fill validity
    // its JSON does not show (it is printed for nullable attributes only), so the schema
    // printed as JSON read back as another schema. libtiledb refuses it too.
    let e = from_json_str(NOT_NULLABLE_WITH_FILL_VALIDITY).unwrap_err();
    assert!(
        e.to_string().contains("attribute \"a\": fill_validity is for nullable attributes"),
        "{e}"
    );
    let nullable =
        NOT_NULLABLE_WITH_FILL_VALIDITY.replace(r#""fill": 1,"#, r#""fill": 1, "nullable": true,"#);
    let (schema, enums) = from_json_str(&nullable).unwrap();
    assert!(schema.attributes[0].fill_value_validity);
    let printed = serde_json::to_string(&to_json(&schema, &enums)).unwrap();
    assert_eq!(from_json_str(&printed).unwrap().0.to_bytes(), schema.to_bytes());
    let explicit_false = NOT_NULLABLE_WITH_FILL_VALIDITY.replace("true", "false");
    assert!(from_json_str(&explicit_false).is_ok());
}
