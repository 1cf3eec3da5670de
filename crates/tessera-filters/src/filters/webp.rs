//! WEBP: image compression of `uint8` pixel tiles (one chunk per tile), with the pure-Rust
//! `image-webp` codec.
//!
//! ```text
//! metadata: u32 n_parts, u32 webp_len × n_parts;  then the input metadata
//! data:     one complete WebP file (`RIFF....WEBP`) per part
//! ```
//! A tile is an image `y_extent` rows high whose rows are `x_extent` bytes: `x_extent / 3`
//! pixels for RGB and BGR, `x_extent / 4` for RGBA and BGRA. Decoding gives the pixels in the
//! filter's format whatever the image stores (alpha dropped for RGB/BGR, 255 added for
//! RGBA/BGRA when the image has none; red and blue swapped for BGR/BGRA), as libwebp's
//! `WebPDecodeRGB` & co. do. Lossy images decode with libwebp's default "fancy" upsampling.
//! Encoding is lossless only (image-webp has no lossy encoder): a lossy filter refuses to
//! encode with [`Error::Unsupported`]. As libtiledb, each encoded part is put in front of
//! the previous ones (the data parts come out last-to-first, their sizes first-to-last).

use image_webp::{ColorType, WebPDecoder, WebPEncoder};
use tessera_types::{ByteReader, Datatype, FilterType, WebpInputFormat};

use super::util::{prepend_header, rollback_on_error, u32_len};
use crate::{Decoded, Error, Filter, FilterCodec, FilterContext, Parts, Result};

const FILTER: FilterType = FilterType::Webp;

/// The WEBP codec with its options.
#[derive(Debug)]
struct Webp {
    format: WebpInputFormat,
    lossless: bool,
    y_extent: u16,
    x_extent: u16,
}

/// Builds the codec of a [`Filter::Webp`].
pub(crate) fn build(filter: &Filter) -> Result<Box<dyn FilterCodec>> {
    match *filter {
        Filter::Webp { format, lossless, y_extent, x_extent, .. } => {
            Ok(Box::new(Webp { format, lossless, y_extent, x_extent }))
        }
        ref f => Err(Error::Unsupported(format!("WebP codec built for filter {f:?}"))),
    }
}

/// Bytes per pixel of `format`, or the error for an unset format.
fn depth(format: WebpInputFormat) -> Result<usize> {
    match format {
        WebpInputFormat::Rgb | WebpInputFormat::Bgr => Ok(3),
        WebpInputFormat::Rgba | WebpInputFormat::Bgra => Ok(4),
        WebpInputFormat::None => Err(Error::corrupt(
            FILTER,
            "the filter option format (rgb, bgr, rgba, bgra) is not set",
        )),
    }
}

/// Swaps red and blue of every `depth`-byte pixel (BGR(A) to RGB(A) and back).
fn swap_red_blue(pixels: &mut [u8], depth: usize) {
    for p in pixels.chunks_exact_mut(depth) {
        p.swap(0, 2);
    }
}

impl Webp {
    fn is_bgr(&self) -> bool {
        matches!(self.format, WebpInputFormat::Bgr | WebpInputFormat::Bgra)
    }

    /// One tile of pixels as a lossless WebP file.
    fn encode_part(&self, part: &[u8]) -> Result<Vec<u8>> {
        let depth = depth(self.format).map_err(|_| {
            Error::encode(FILTER, "the filter option format (rgb, bgr, rgba, bgra) must be set")
        })?;
        let (height, row) = (usize::from(self.y_extent), usize::from(self.x_extent));
        let width = row / depth;
        if width == 0 || height == 0 || row % depth != 0 {
            return Err(Error::encode(
                FILTER,
                format!(
                    "tile extents [{height}, {row}] do not make an image of {depth}-byte pixels \
                     (libtiledb sets them on the WebP filter of the last attribute only)"
                ),
            ));
        }
        if part.len() != height * row {
            return Err(Error::encode(
                FILTER,
                format!(
                    "a tile of {} bytes is not a {height} x {row} image (partial tiles cannot \
                     be WebP images)",
                    part.len()
                ),
            ));
        }
        let mut pixels;
        let data = if self.is_bgr() {
            pixels = part.to_vec();
            swap_red_blue(&mut pixels, depth);
            &pixels[..]
        } else {
            part
        };
        let color = if depth == 3 { ColorType::Rgb8 } else { ColorType::Rgba8 };
        let mut out = Vec::new();
        // `encode` panics when the data does not match the dimensions: checked above.
        WebPEncoder::new(&mut out)
            .encode(data, width as u32, height as u32, color)
            .map_err(|e| Error::encode(FILTER, format!("lossless WebP encoding failed: {e}")))?;
        Ok(out)
    }

    /// Decodes one WebP file, appending its pixels in the filter's format to `out`.
    fn decode_part(&self, webp: &[u8], index: usize, out: &mut Vec<u8>) -> Result<()> {
        let depth = depth(self.format)?;
        let corrupt =
            |e: &dyn std::fmt::Display| Error::corrupt(FILTER, format!("image {index}: {e}"));
        let mut decoder = WebPDecoder::new(std::io::Cursor::new(webp)).map_err(|e| corrupt(&e))?;
        if decoder.is_animated() {
            return Err(corrupt(&"an animated WebP is not a tile"));
        }
        let (width, height) = decoder.dimensions();
        let pixels =
            (width as usize).checked_mul(height as usize).ok_or_else(|| corrupt(&"too large"))?;
        let stored = if decoder.has_alpha() { 4 } else { 3 };
        let mut buf = vec![0u8; pixels * stored];
        decoder.read_image(&mut buf).map_err(|e| corrupt(&e))?;
        let start = out.len();
        match (stored, depth) {
            (4, 3) => out.extend(buf.chunks_exact(4).flat_map(|p| [p[0], p[1], p[2]])),
            (3, 4) => out.extend(buf.chunks_exact(3).flat_map(|p| [p[0], p[1], p[2], 255])),
            _ => out.extend_from_slice(&buf),
        }
        if self.is_bgr() {
            swap_red_blue(&mut out[start..], depth);
        }
        Ok(())
    }
}

impl FilterCodec for Webp {
    fn encode(&self, _ctx: &FilterContext, input: Parts) -> Result<Parts> {
        if !self.lossless {
            return Err(Error::Unsupported(
                "lossy WebP encoding: Tessera's WebP codec (image-webp) encodes lossless only; \
                 set the filter's lossless option, or write this array with libtiledb"
                    .into(),
            ));
        }
        let n = u32_len(FILTER, input.data.len(), "part count")?;
        let mut header = Vec::with_capacity(4 + 4 * input.data.len());
        header.extend_from_slice(&n.to_le_bytes());
        let mut data = Vec::with_capacity(input.data.len());
        for part in &input.data {
            let webp = self.encode_part(part)?;
            header.extend_from_slice(&u32_len(FILTER, webp.len(), "image length")?.to_le_bytes());
            // Each encoded part goes in front, as libtiledb's prepend_buffer puts it.
            data.insert(0, webp);
        }
        Ok(Parts { metadata: prepend_header(header, input.metadata), data })
    }

    fn decode(
        &self,
        ctx: &FilterContext,
        metadata: &[u8],
        data: &[u8],
        out: &mut Decoded,
    ) -> Result<()> {
        if ctx.datatype != Datatype::UInt8 {
            return Err(Error::DatatypeNotSupported { filter: FILTER, datatype: ctx.datatype });
        }
        rollback_on_error(out, |out| {
            let mut md = ByteReader::new(metadata, "webp metadata");
            let n = md.u32("part count")? as usize;
            if n.checked_mul(4).is_none_or(|b| b > md.remaining()) {
                return Err(Error::corrupt(
                    FILTER,
                    format!("{n} image lengths cannot fit in {} metadata bytes", md.remaining()),
                ));
            }
            let mut d = ByteReader::new(data, "webp data");
            for i in 0..n {
                let len = md.u32("image length")? as usize;
                let remaining = d.remaining();
                let webp = d.bytes(len, "image").map_err(|_| {
                    Error::corrupt(
                        FILTER,
                        format!("image {i} of {len} bytes overruns the {remaining} bytes left"),
                    )
                })?;
                self.decode_part(webp, i, &mut out.data)?;
            }
            out.metadata.extend_from_slice(md.rest());
            Ok(())
        })
    }

    fn decoded_len_hint(&self, _metadata: &[u8], _data: &[u8]) -> Option<usize> {
        None
    }
}

#[cfg(test)]
mod tests {
    use tessera_types::Datatype;

    use super::*;
    use crate::filters::util::test_support::*;

    fn filter(format: WebpInputFormat, lossless: bool, y: u16, x: u16) -> Filter {
        Filter::Webp { quality: 100.0, format, lossless, y_extent: y, x_extent: x }
    }

    fn image(y: usize, x: usize, seed: u64) -> Vec<u8> {
        lcg(seed, y * x).into_iter().map(|v| (v >> 24) as u8).collect()
    }

    #[test]
    fn lossless_round_trips_every_format() {
        let c = ctx(Datatype::UInt8);
        for (format, x) in [
            (WebpInputFormat::Rgb, 3 * 7),
            (WebpInputFormat::Bgr, 3 * 5),
            (WebpInputFormat::Rgba, 4 * 6),
            (WebpInputFormat::Bgra, 4 * 9),
        ] {
            let f = filter(format, true, 11, x);
            let mut pixels = image(11, usize::from(x), u64::from(x));
            if matches!(format, WebpInputFormat::Rgba | WebpInputFormat::Bgra) {
                // Keep alpha non-zero: libwebp may rewrite the colour of transparent pixels.
                for p in pixels.chunks_exact_mut(4) {
                    p[3] |= 1;
                }
            }
            assert_round_trip(&f, &c, &pixels);
        }
    }

    #[test]
    fn lossy_encoding_and_unset_format_are_clear_errors() {
        let c = ctx(Datatype::UInt8);
        let lossy = filter(WebpInputFormat::Rgb, false, 2, 6).codec().unwrap();
        let e = lossy.encode(&c, Parts::from_data(vec![0; 12])).unwrap_err();
        assert!(matches!(&e, Error::Unsupported(m) if m.starts_with("lossy WebP")), "{e}");
        let unset = filter(WebpInputFormat::None, true, 2, 6).codec().unwrap();
        assert!(unset.encode(&c, Parts::from_data(vec![0; 12])).is_err());
        // A tile that is not the image the extents describe.
        let f = filter(WebpInputFormat::Rgb, true, 2, 6).codec().unwrap();
        let e = f.encode(&c, Parts::from_data(vec![0; 11])).unwrap_err();
        assert!(e.to_string().contains("is not a 2 x 6 image"), "{e}");
        // Decoding needs uint8.
        let e = f.decode(&ctx(Datatype::Int32), &[], &[], &mut Decoded::default()).unwrap_err();
        assert!(matches!(e, Error::DatatypeNotSupported { .. }), "{e}");
    }

    #[test]
    fn never_panics_on_corrupt_input() {
        let c = ctx(Datatype::UInt8);
        let f = filter(WebpInputFormat::Rgba, true, 8, 32).codec().unwrap();
        let enc = f.encode(&c, Parts::from_data(image(8, 32, 5))).unwrap();
        assert_no_panic_on_corruption(f.as_ref(), &c, &enc.metadata.concat(), &enc.data.concat());
    }
}
