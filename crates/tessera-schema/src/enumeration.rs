//! Enumerations: the label lists attributes index into, each in its own file under
//! `__schema/__enumerations/`.

use nom::Parser;
use tessera_types::{CELL_VAL_NUM_VAR, Datatype, ENUMERATIONS_VERSION};

use crate::parse::{PResult, boolf, bytes, datatype, fail, string_u32, to_error, u32f, u64f};
use crate::{Error, Result};

/// An enumeration as the schema lists it: its name and the file holding it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnumerationRef {
    /// Name attributes refer to.
    pub name: String,
    /// File name under `__schema/__enumerations/`.
    pub path: String,
}

/// The values of an enumeration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Enumeration {
    /// Name attributes refer to.
    pub name: String,
    /// Its own file name under `__schema/__enumerations/` (`__<uuid>_0`).
    pub path: String,
    /// Datatype of the values.
    pub datatype: Datatype,
    /// Values per entry (var for strings).
    pub cell_val_num: u32,
    /// Whether the values are ordered (comparisons use the order).
    pub ordered: bool,
    /// All values' bytes, concatenated.
    pub data: Vec<u8>,
    /// Start offset of each value in `data` (var-sized enumerations only).
    pub offsets: Option<Vec<u64>>,
}

impl Enumeration {
    /// Number of values.
    pub fn len(&self) -> usize {
        match &self.offsets {
            Some(o) => o.len(),
            None => {
                let size = self.datatype.size() * self.cell_val_num as usize;
                self.data.len().checked_div(size).unwrap_or(0)
            }
        }
    }

    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes of value `i`.
    pub fn value(&self, i: usize) -> Option<&[u8]> {
        match &self.offsets {
            Some(o) => {
                let start = usize::try_from(*o.get(i)?).ok()?;
                let end = match o.get(i + 1) {
                    Some(e) => usize::try_from(*e).ok()?,
                    None => self.data.len(),
                };
                self.data.get(start..end)
            }
            None => {
                let size = self.datatype.size() * self.cell_val_num as usize;
                self.data.get(i * size..(i + 1) * size)
            }
        }
    }

    /// Parses the payload of an enumeration file.
    ///
    /// # Errors
    /// When the bytes are malformed or of an unknown version.
    pub fn parse(payload: &[u8]) -> Result<Enumeration> {
        let (rest, e) =
            parse_enumeration.parse(payload).map_err(|e| to_error("enumeration", payload, e))?;
        if !rest.is_empty() {
            return Err(Error::Malformed {
                structure: "enumeration",
                field: "end",
                offset: (payload.len() - rest.len()) as u64,
                reason: format!("{} unexpected trailing bytes", rest.len()),
            });
        }
        Ok(e)
    }

    /// The payload of this enumeration's file.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(&ENUMERATIONS_VERSION.to_le_bytes());
        for s in [&self.name, &self.path] {
            out.extend_from_slice(&(s.len() as u32).to_le_bytes());
            out.extend_from_slice(s.as_bytes());
        }
        out.push(self.datatype.id());
        out.extend_from_slice(&self.cell_val_num.to_le_bytes());
        out.push(u8::from(self.ordered));
        out.extend_from_slice(&(self.data.len() as u64).to_le_bytes());
        out.extend_from_slice(&self.data);
        if self.cell_val_num == CELL_VAL_NUM_VAR {
            let offsets = self.offsets.as_deref().unwrap_or(&[]);
            out.extend_from_slice(&((offsets.len() * 8) as u64).to_le_bytes());
            for o in offsets {
                out.extend_from_slice(&o.to_le_bytes());
            }
        }
        out
    }
}

fn parse_enumeration(i: &[u8]) -> PResult<'_, Enumeration> {
    let start = i;
    let (i, version) = u32f("enumeration version")(i)?;
    if version > ENUMERATIONS_VERSION {
        return fail(
            start,
            "enumeration version",
            format!("version {version} is newer than {ENUMERATIONS_VERSION}"),
        );
    }
    let (i, name) = string_u32("enumeration name")(i)?;
    let (i, path) = string_u32("enumeration path name")(i)?;
    let (i, dt) = datatype("enumeration datatype")(i)?;
    let (i, cell_val_num) = u32f("enumeration cell_val_num")(i)?;
    let (i, ordered) = boolf("enumeration ordered")(i)?;
    let (i, data_size) = u64f("enumeration data size")(i)?;
    let (i, data) = bytes(i, data_size, "enumeration data")?;
    let (i, offsets) = if cell_val_num == CELL_VAL_NUM_VAR {
        let at = i;
        let (i, size) = u64f("enumeration offsets size")(i)?;
        if size % 8 != 0 {
            return fail(at, "enumeration offsets size", format!("{size} is not a multiple of 8"));
        }
        let (i, b) = bytes(i, size, "enumeration offsets")?;
        let offsets: Vec<u64> =
            b.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
        if offsets.windows(2).any(|w| w[0] > w[1]) || offsets.last().is_some_and(|&l| l > data_size)
        {
            return fail(at, "enumeration offsets", "offsets decrease or point past the data");
        }
        (i, Some(offsets))
    } else {
        (i, None)
    };
    Ok((
        i,
        Enumeration {
            name,
            path,
            datatype: dt,
            cell_val_num,
            ordered,
            data: data.to_vec(),
            offsets,
        },
    ))
}
