//! The read queries of the `queries` fixture family (`testdata/queries/*.jsonl`, libtiledb's
//! results) that use no query condition: ranges, multi-ranges, attribute subsets, layouts,
//! `--at` and `--between`, run through the read API.

mod common;

use std::sync::Arc;

use common::*;
use serde_json::Value as Json;
use tessera_query::{Array, Error, ReadQuery};
use tessera_storage::LocalStorage;
use tessera_types::Layout;

/// Splits `LO:HI` where either bound may be a double-quoted JSON string.
fn split_bounds(text: &str) -> (String, String) {
    fn token(s: &str) -> (String, &str) {
        if s.starts_with('"') {
            let mut de = serde_json::Deserializer::from_str(s).into_iter::<String>();
            let v = de.next().unwrap().unwrap();
            let used = de.byte_offset();
            (v, &s[used..])
        } else {
            let end = s.find(':').unwrap_or(s.len());
            (s[..end].to_owned(), &s[end..])
        }
    }
    let (lo, rest) = token(text);
    let rest = rest.strip_prefix(':').expect("a ':' between the bounds");
    let (hi, rest) = token(rest);
    assert!(rest.is_empty(), "{text}");
    (lo, hi)
}

fn add_range<'a>(array: &'a Array, q: ReadQuery<'a>, arg: &str) -> ReadQuery<'a> {
    let (dim, bounds) = arg.split_once('=').unwrap();
    let (lo, hi) = split_bounds(bounds);
    let d = array.schema().dimension(dim).unwrap();
    if d.is_var() {
        q.range_str(dim, lo, hi)
    } else if d.datatype.is_float() {
        q.range_f64(dim, lo.parse().unwrap(), hi.parse().unwrap())
    } else {
        let (lo, hi): (i128, i128) = (lo.parse().unwrap(), hi.parse().unwrap());
        if lo < 0 || hi < 0 {
            q.range_i64(dim, lo as i64, hi as i64)
        } else {
            q.range_u64(dim, lo as u64, hi as u64)
        }
    }
}

#[test]
fn query_family_reads_without_conditions_match_libtiledb() {
    let (mut checked, mut refused) = (0, 0);
    for file in ["queries/fragments.jsonl", "queries/filters.jsonl"] {
        let Ok(text) = std::fs::read_to_string(testdata().join(file)) else { continue };
        for line in text.lines() {
            let q: Json = serde_json::from_str(line).unwrap();
            let args: Vec<&str> =
                q["args"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()).collect();
            if q["command"] != "read" || args.contains(&"--where") {
                continue;
            }
            let id = q["id"].as_str().unwrap();
            let storage =
                Arc::new(LocalStorage::new(testdata().join(q["array"].as_str().unwrap())));
            let mut opened = None;
            let mut i = 0;
            while i < args.len() {
                match args[i] {
                    "--at" => opened = Some((0, args[i + 1].parse::<u64>().unwrap())),
                    "--between" => {
                        let (s, e) = args[i + 1].split_once(':').unwrap();
                        opened = Some((s.parse().unwrap(), e.parse().unwrap()));
                    }
                    _ => {}
                }
                i += 2;
            }
            let array = match opened {
                Some((s, e)) => Array::open_between(storage, s, e).unwrap(),
                None => Array::open(storage).unwrap(),
            };
            let mut read = array.read();
            let mut i = 0;
            while i < args.len() {
                let v = args[i + 1];
                read = match args[i] {
                    "--range" => add_range(&array, read, v),
                    "--attrs" => read.attributes(v.split(',')),
                    "--layout" => read.layout(match v {
                        "row-major" => Layout::RowMajor,
                        "col-major" => Layout::ColMajor,
                        "global" => Layout::GlobalOrder,
                        "unordered" => Layout::Unordered,
                        _ => panic!("{id}: layout {v}"),
                    }),
                    "--at" | "--between" => read,
                    a => panic!("{id}: option {a}"),
                };
                i += 2;
            }
            let result = match read.execute() {
                Ok(r) => r,
                Err(Error::Unsupported(m)) if m.contains("delete") => {
                    refused += 1;
                    continue;
                }
                Err(e) => panic!("{id} {args:?}: {e}"),
            };
            check_shape(&result);
            let expected = q["expected"].as_array().unwrap();
            let what = format!("{id} {args:?}");
            if q["order_insensitive"].as_bool().unwrap() {
                assert_rows_eq_unordered(&rows(&result), expected, &what);
            } else {
                assert_rows_eq(&rows(&result), expected, &what);
            }
            checked += 1;
        }
    }
    eprintln!("checked {checked} queries; {refused} refused (delete conditions)");
}
