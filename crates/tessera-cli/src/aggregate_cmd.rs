//! `tessera aggregate`: `count`, `sum(a)`, `min(a)`, `max(a)`, `mean(a)`, `null_count(a)`
//! over the cells a read selects.

use anyhow::{Context, Result};
use clap::Args;
use tessera::Array;
use tessera::layers::query::aggregate::{Aggregate, AggregateValue};

use crate::read_cmd::with_ranges;

/// The options of `tessera aggregate`.
#[derive(Debug, Args)]
pub(crate) struct AggregateArgs {
    /// An aggregate: `count`, `sum(ATTR)`, `min(ATTR)`, `max(ATTR)`, `mean(ATTR)` or
    /// `null_count(ATTR)` (repeat for several; printed in the order given).
    #[arg(long = "agg", value_name = "EXPR", required = true)]
    pub(crate) aggs: Vec<String>,
    /// `DIM=LO:HI` (inclusive; repeat for several ranges; quote a bound holding `:` or `,` as
    /// a JSON string). Default: the non-empty domain.
    #[arg(long = "range", value_name = "DIM=LO:HI")]
    pub(crate) ranges: Vec<String>,
    /// A query condition: only the cells satisfying it count.
    #[arg(long = "where", value_name = "EXPR")]
    pub(crate) condition: Option<String>,
    /// Print one JSON object, `{"sum(a)": 123, "count": 4}`.
    #[arg(long)]
    pub(crate) json: bool,
}

/// Runs `tessera aggregate`.
pub(crate) fn run(array: &Array, args: &AggregateArgs) -> Result<()> {
    let aggs: Vec<Aggregate> = args
        .aggs
        .iter()
        .map(|a| a.parse::<Aggregate>().with_context(|| format!("--agg {a:?}")))
        .collect::<Result<_>>()?;
    let mut q = with_ranges(array.schema(), array.read(), &args.ranges)?;
    if let Some(c) = &args.condition {
        q = q.where_text(c);
    }
    let values = q.aggregate(&aggs)?;
    outln!("{}", render(&aggs, &values, args.json)?)?;
    Ok(())
}

/// The output line: a JSON object with the keys in the order given, or `key: value` pairs.
fn render(aggs: &[Aggregate], values: &[AggregateValue], json: bool) -> Result<String> {
    let mut parts = Vec::with_capacity(aggs.len());
    for (agg, v) in aggs.iter().zip(values) {
        let key = agg.to_string();
        let value = v.to_string();
        parts.push(if json {
            format!("{}: {value}", serde_json::to_string(&key)?)
        } else {
            format!("{key}: {value}")
        });
    }
    Ok(if json { format!("{{{}}}", parts.join(", ")) } else { parts.join(", ") })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_keeps_the_order_given() {
        let aggs = [Aggregate::sum("a"), Aggregate::count()];
        let values = [AggregateValue::Int(123), AggregateValue::UInt(4)];
        assert_eq!(render(&aggs, &values, true).unwrap(), r#"{"sum(a)": 123, "count": 4}"#);
        assert_eq!(render(&aggs, &values, false).unwrap(), "sum(a): 123, count: 4");
        let values = [AggregateValue::Float(2.0), AggregateValue::Null];
        assert_eq!(render(&aggs, &values, true).unwrap(), r#"{"sum(a)": 2.0, "count": null}"#);
    }
}
