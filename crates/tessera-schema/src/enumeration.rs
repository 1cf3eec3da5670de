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

    /// An enumeration of `values` (each value's bytes: one cell of `datatype` for fixed-size
    /// types; any length for strings, `blob` and `any`, which are var-sized), with no file name
    /// yet.
    ///
    /// # Errors
    /// [`Error::Invalid`] when a fixed-size value has the wrong length, a fixed-size
    /// enumeration is empty, or a value appears twice (libtiledb's checks).
    pub fn from_values<V: AsRef<[u8]>>(
        name: impl Into<String>,
        datatype: Datatype,
        ordered: bool,
        values: &[V],
    ) -> Result<Enumeration> {
        let var = datatype.is_string() || matches!(datatype, Datatype::Blob | Datatype::Any);
        let mut e = Enumeration {
            name: name.into(),
            path: String::new(),
            datatype,
            cell_val_num: if var { CELL_VAL_NUM_VAR } else { 1 },
            ordered,
            data: Vec::new(),
            offsets: var.then(Vec::new),
        };
        e.push_values(values)?;
        e.check()?;
        Ok(e)
    }

    /// This enumeration with `values` appended, as libtiledb's `Enumeration::extend`: the old
    /// values keep their order and indexes; the result has no file name yet.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a value of the wrong size or a value already present.
    pub fn extended<V: AsRef<[u8]>>(&self, values: &[V]) -> Result<Enumeration> {
        let mut e = self.clone();
        e.path = String::new();
        e.push_values(values)?;
        e.check()?;
        Ok(e)
    }

    /// Whether `self` is `old` with values appended (same name, datatype, cell_val_num and
    /// ordering; the old values first, in their order): libtiledb's rule for an extension.
    pub fn is_extension_of(&self, old: &Enumeration) -> bool {
        if self.name != old.name
            || self.datatype != old.datatype
            || self.cell_val_num != old.cell_val_num
            || self.ordered != old.ordered
            || self.data.len() < old.data.len()
            || !self.data.starts_with(&old.data)
        {
            return false;
        }
        match (&self.offsets, &old.offsets) {
            (Some(new), Some(old)) => new.len() > old.len() && new.starts_with(old),
            (None, None) => true,
            _ => false,
        }
    }

    /// Checks what libtiledb checks of an enumeration's values: a fixed-size enumeration is
    /// not empty and holds whole cells; no value appears twice.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the enumeration and the problem.
    pub fn check(&self) -> Result<()> {
        if self.cell_val_num == 0 {
            return Err(Error::Invalid(format!("enumeration {:?}: cell_val_num is 0", self.name)));
        }
        if self.offsets.is_none() {
            let size = self.datatype.size() * self.cell_val_num as usize;
            if self.data.is_empty() {
                return Err(Error::Invalid(format!(
                    "enumeration {:?}: a fixed-size enumeration needs at least one value",
                    self.name
                )));
            }
            if size == 0 || !self.data.len().is_multiple_of(size) {
                return Err(Error::Invalid(format!(
                    "enumeration {:?}: {} bytes of values are not whole cells of {size} bytes",
                    self.name,
                    self.data.len()
                )));
            }
        }
        let mut seen = std::collections::HashSet::with_capacity(self.len());
        for i in 0..self.len() {
            let v = self.value(i).unwrap_or_default();
            if !seen.insert(v) {
                return Err(Error::Invalid(format!(
                    "enumeration {:?}: value {i} ({}) appears twice",
                    self.name,
                    String::from_utf8_lossy(v)
                )));
            }
        }
        Ok(())
    }

    fn push_values<V: AsRef<[u8]>>(&mut self, values: &[V]) -> Result<()> {
        let size = self.datatype.size() * self.cell_val_num as usize;
        for v in values {
            let v = v.as_ref();
            match &mut self.offsets {
                Some(o) => o.push(self.data.len() as u64),
                None if v.len() != size => {
                    return Err(Error::Invalid(format!(
                        "enumeration {:?}: a value of {} bytes is not one cell of {} ({size} bytes)",
                        self.name,
                        v.len(),
                        self.datatype
                    )));
                }
                None => {}
            }
            self.data.extend_from_slice(v);
        }
        Ok(())
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
