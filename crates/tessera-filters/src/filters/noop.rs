//! NONE: passes metadata and data through unchanged.

use crate::{Decoded, Filter, FilterCodec, FilterContext, Parts, Result};

#[derive(Debug)]
struct Noop;

pub(crate) fn build(_filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    Ok(Box::new(Noop))
}

impl FilterCodec for Noop {
    fn encode(&self, _ctx: &FilterContext, input: Parts) -> Result<Parts> {
        Ok(input)
    }

    fn decode(
        &self,
        _ctx: &FilterContext,
        metadata: &[u8],
        data: &[u8],
        out: &mut Decoded,
    ) -> Result<()> {
        out.metadata.extend_from_slice(metadata);
        out.data.extend_from_slice(data);
        Ok(())
    }
}
