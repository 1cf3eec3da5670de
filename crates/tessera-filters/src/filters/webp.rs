//! WEBP: image compression of `uint8` pixel tiles (one chunk per tile).
//!
//! ```text
//! metadata: u32 n_parts, u32 webp_len × n_parts;  then the input metadata
//! data:     one complete WebP file (`RIFF....WEBP`) per part
//! ```
//! Tessera does not encode or decode WebP images: the codec builds, so pipelines containing
//! WEBP can be parsed, inspected and written back, but running it fails with
//! [`Error::Unsupported`].

use crate::{Decoded, Error, Filter, FilterCodec, FilterContext, Parts, Result};

/// The WEBP codec (options kept for error messages).
#[derive(Debug)]
struct Webp {
    /// The filter with its options.
    filter: Filter,
}

/// Builds the codec of a [`Filter::Webp`]; it always builds, and refuses to run.
pub(crate) fn build(filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    Ok(Box::new(Webp { filter: *filter }))
}

impl Webp {
    /// The error every run of the filter returns.
    fn unsupported(&self, what: &str) -> Error {
        Error::Unsupported(format!(
            "WebP {what} is not supported (filter {:?}); read or write this field with libtiledb",
            self.filter
        ))
    }
}

impl FilterCodec for Webp {
    fn encode(&self, _ctx: &FilterContext, _input: Parts) -> Result<Parts> {
        Err(self.unsupported("image encoding"))
    }

    fn decode(
        &self,
        _ctx: &FilterContext,
        _metadata: &[u8],
        _data: &[u8],
        _out: &mut Decoded,
    ) -> Result<()> {
        Err(self.unsupported("image decoding"))
    }

    fn decoded_len_hint(&self, _metadata: &[u8], _data: &[u8]) -> Option<usize> {
        None
    }
}

#[cfg(test)]
mod tests {
    use tessera_types::{Datatype, FilterType};

    use super::*;
    use crate::FilterPipeline;
    use crate::filters::util::test_support::*;

    #[test]
    fn builds_but_refuses_to_run() {
        let f = Filter::with_defaults(FilterType::Webp);
        let codec = f.codec().unwrap();
        let c = ctx(Datatype::UInt8);
        let err = codec.encode(&c, Parts::from_data(vec![1, 2, 3])).unwrap_err();
        assert!(matches!(&err, Error::Unsupported(m) if m.starts_with("WebP")), "{err}");
        let err = codec.decode(&c, &[], &[], &mut Decoded::default()).unwrap_err();
        assert!(matches!(&err, Error::Unsupported(m) if m.starts_with("WebP")), "{err}");
        // A pipeline with WebP parses and builds too.
        let p = FilterPipeline::new(vec![f]);
        let (back, _) = FilterPipeline::parse(&p.to_bytes(), 22).unwrap();
        assert_eq!(back, p);
        assert!(back.codec(Datatype::UInt8, 1, 22).is_ok());
    }
}
