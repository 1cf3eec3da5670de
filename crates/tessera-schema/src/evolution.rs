//! Schema evolution: the changes libtiledb's `ArraySchemaEvolution` makes to a schema, applied
//! to a schema value (the storage side, writing the new schema file, is in `tessera-query`).
//!
//! The changes apply in libtiledb's order: enumerations added, enumerations extended,
//! attributes added, attributes dropped, enumerations dropped, then the current domain
//! expanded; the result is validated as a whole.

use tessera_types::names::random_label;
use tessera_types::{CurrentDomainType, Datatype, ENUMERATIONS_VERSION, FORMAT_VERSION};

use crate::value::Value;
use crate::{ArraySchema, Attribute, CurrentDomain, Enumeration, EnumerationRef, Error, Result};

/// How an enumeration is extended.
#[derive(Debug, Clone, PartialEq)]
enum Extension {
    /// Values appended to the enumeration in force (each value's bytes).
    Values(Vec<Vec<u8>>),
    /// The whole extended enumeration (as libtiledb's API takes it); it must be an extension
    /// of the enumeration in force.
    Whole(Enumeration),
}

/// A set of changes to an array's schema, as libtiledb's `ArraySchemaEvolution`.
///
/// ```
/// use tessera_schema::{Attribute, SchemaEvolution};
/// use tessera_types::Datatype;
///
/// let evolution = SchemaEvolution::new()
///     .add_attribute(Attribute::new("b", Datatype::Int32))
///     .drop_attribute("a")
///     .timestamp(10);
/// assert!(!evolution.is_empty());
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaEvolution {
    add_attributes: Vec<Attribute>,
    drop_attributes: Vec<String>,
    add_enumerations: Vec<Enumeration>,
    extend_enumerations: Vec<(String, Extension)>,
    drop_enumerations: Vec<String>,
    current_domain: Option<CurrentDomain>,
    timestamp: Option<u64>,
    /// A problem found while the changes were listed (reported by [`Self::evolve`]).
    problem: Option<String>,
}

/// What an evolution produced: the new schema and the enumeration files to write with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Evolved {
    /// The new schema (format version 22; every enumeration it lists has its file name).
    pub schema: ArraySchema,
    /// The enumerations added or extended, each with its new file name
    /// (`__<label>_0`); the files of the other enumerations are unchanged.
    pub new_enumerations: Vec<Enumeration>,
    /// The values of every enumeration the new schema lists, in its order.
    pub enumerations: Vec<Enumeration>,
}

impl SchemaEvolution {
    /// An evolution that changes nothing yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no change is listed (the timestamp aside).
    pub fn is_empty(&self) -> bool {
        self.add_attributes.is_empty()
            && self.drop_attributes.is_empty()
            && self.add_enumerations.is_empty()
            && self.extend_enumerations.is_empty()
            && self.drop_enumerations.is_empty()
            && self.current_domain.is_none()
    }

    /// Adds an attribute (appended after the others). As in libtiledb, this cancels a drop of
    /// the same name listed before; adding one name twice is an error.
    #[must_use]
    pub fn add_attribute(mut self, a: Attribute) -> Self {
        if self.add_attributes.iter().any(|x| x.name == a.name) {
            self.note(format!("attribute {:?} is added twice", a.name));
        }
        self.drop_attributes.retain(|n| *n != a.name);
        self.add_attributes.push(a);
        self
    }

    /// Drops an attribute (its data stays in older fragments, unread). Cancels an addition of
    /// the same name listed before.
    #[must_use]
    pub fn drop_attribute(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.add_attributes.retain(|a| a.name != name);
        if !self.drop_attributes.contains(&name) {
            self.drop_attributes.push(name);
        }
        self
    }

    /// Adds an enumeration (its values; the file name is assigned when applied).
    #[must_use]
    pub fn add_enumeration(mut self, e: Enumeration) -> Self {
        if self.add_enumerations.iter().any(|x| x.name == e.name) {
            self.note(format!("enumeration {:?} is added twice", e.name));
        }
        self.add_enumerations.push(e);
        self
    }

    /// Appends `values` (each value's bytes) to the enumeration `name`: the new values get
    /// the next indexes. The extended enumeration is written to a new file.
    #[must_use]
    pub fn extend_enumeration<V: AsRef<[u8]>>(
        self,
        name: impl Into<String>,
        values: impl IntoIterator<Item = V>,
    ) -> Self {
        let values = values.into_iter().map(|v| v.as_ref().to_vec()).collect();
        self.extend_with(name.into(), Extension::Values(values))
    }

    /// Replaces the enumeration of the same name by `extended`, which must be an extension
    /// of it (the old values first, in their order), as libtiledb's
    /// `ArraySchemaEvolution::extend_enumeration` takes it.
    #[must_use]
    pub fn extend_enumeration_to(self, extended: Enumeration) -> Self {
        self.extend_with(extended.name.clone(), Extension::Whole(extended))
    }

    fn extend_with(mut self, name: String, ext: Extension) -> Self {
        if self.extend_enumerations.iter().any(|(n, _)| *n == name) {
            self.note(format!("enumeration {name:?} is extended twice in one evolution"));
        }
        self.extend_enumerations.push((name, ext));
        self
    }

    /// Drops an enumeration no attribute uses any more (cancels an addition or extension of
    /// it listed before). As in libtiledb, dropping an enumeration the schema does not have
    /// is not an error.
    #[must_use]
    pub fn drop_enumeration(mut self, name: impl Into<String>) -> Self {
        let name = name.into();
        self.add_enumerations.retain(|e| e.name != name);
        self.extend_enumerations.retain(|(n, _)| *n != name);
        if !self.drop_enumerations.contains(&name) {
            self.drop_enumerations.push(name);
        }
        self
    }

    /// Sets a new current domain, which must contain the one in force (when there is one)
    /// and lie inside the domain; one `[low, high]` (little-endian bytes) per dimension.
    #[must_use]
    pub fn expand_current_domain(mut self, ranges: Vec<[Vec<u8>; 2]>) -> Self {
        self.current_domain = Some(CurrentDomain { kind: CurrentDomainType::NdRectangle, ranges });
        self
    }

    /// The timestamp of the new schema (ms since the epoch; default: when it is applied).
    /// As in libtiledb, 0 means "now".
    #[must_use]
    pub fn timestamp(mut self, ms: u64) -> Self {
        self.timestamp = (ms != 0).then_some(ms);
        self
    }

    /// The timestamp set with [`Self::timestamp`].
    pub fn timestamp_ms(&self) -> Option<u64> {
        self.timestamp
    }

    /// The names of the attributes to add, in order.
    pub fn attributes_to_add(&self) -> impl Iterator<Item = &str> {
        self.add_attributes.iter().map(|a| a.name.as_str())
    }

    /// The names of the attributes to drop.
    pub fn attributes_to_drop(&self) -> &[String] {
        &self.drop_attributes
    }

    fn note(&mut self, problem: String) {
        self.problem.get_or_insert(problem);
    }

    /// Applies the changes to `schema`, whose enumerations' values are `enumerations` (those
    /// of every enumeration it lists), as libtiledb's `ArraySchemaEvolution::evolve_schema`
    /// does, and validates the result.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming what is wrong: an attribute or enumeration name already
    /// used, dropping a dimension or an attribute that does not exist, an attribute referring
    /// to an unknown enumeration or too narrow for it, an extension that does not keep the
    /// old values in order or repeats a value, dropping an enumeration an attribute uses, a
    /// current domain that does not contain the old one or leaves the domain, and anything
    /// else the new schema's validation rejects.
    pub fn evolve(&self, schema: &ArraySchema, enumerations: &[Enumeration]) -> Result<Evolved> {
        if let Some(p) = &self.problem {
            return Err(Error::Invalid(p.clone()));
        }
        let mut s = rewritten(schema);
        let mut values: Vec<Enumeration> = s
            .enumerations
            .iter()
            .map(|r| {
                enumerations.iter().find(|e| e.name == r.name).cloned().ok_or_else(|| {
                    Error::Invalid(format!("the values of enumeration {:?} are missing", r.name))
                })
            })
            .collect::<Result<_>>()?;
        let mut new_enumerations = Vec::new();

        // Enumerations added.
        for e in &self.add_enumerations {
            if s.enumerations.iter().any(|r| r.name == e.name) {
                return Err(Error::Invalid(format!(
                    "cannot add enumeration {:?}: the schema already has one of that name",
                    e.name
                )));
            }
            if e.name.is_empty() {
                return Err(Error::Invalid("cannot add an enumeration with no name".into()));
            }
            e.check()?;
            let mut e = e.clone();
            e.path = new_path(&s);
            s.enumerations.push(EnumerationRef { name: e.name.clone(), path: e.path.clone() });
            values.push(e.clone());
            new_enumerations.push(e);
        }

        // Enumerations extended.
        for (name, ext) in &self.extend_enumerations {
            let Some(i) = s.enumerations.iter().position(|r| r.name == *name) else {
                return Err(Error::Invalid(format!(
                    "cannot extend enumeration {name:?}: the schema has no enumeration of that \
                     name"
                )));
            };
            let old = &values[i];
            let mut extended = match ext {
                Extension::Values(v) => old.extended(v)?,
                Extension::Whole(e) => {
                    if !e.is_extension_of(old) {
                        return Err(Error::Invalid(format!(
                            "cannot extend enumeration {name:?}: the new enumeration is not an \
                             extension of it (same datatype and ordering, the {} old values \
                             first and in their order, at least one value more)",
                            old.len()
                        )));
                    }
                    e.check()?;
                    e.clone()
                }
            };
            extended.path = new_path(&s);
            s.enumerations[i].path.clone_from(&extended.path);
            values[i] = extended.clone();
            // An enumeration added in this evolution and extended: one file, the extended one.
            new_enumerations.retain(|e: &Enumeration| e.name != *name);
            new_enumerations.push(extended);
        }

        // Attributes added.
        for a in &self.add_attributes {
            if let Some(e) = &a.enumeration {
                let Some(i) = s.enumerations.iter().position(|r| r.name == *e) else {
                    return Err(Error::Invalid(format!(
                        "cannot add attribute {:?}: it refers to an unknown enumeration {e:?}",
                        a.name
                    )));
                };
                check_index_width(a, &values[i])?;
            }
            s.attributes.push(a.clone());
        }

        // Attributes dropped.
        for name in &self.drop_attributes {
            let Some(i) = s.attributes.iter().position(|a| a.name == *name) else {
                let what = if s.dimension(name).is_some() {
                    "it is a dimension (dimensions cannot be dropped)"
                } else {
                    "the schema has no attribute of that name"
                };
                return Err(Error::Invalid(format!("cannot drop attribute {name:?}: {what}")));
            };
            s.attributes.remove(i);
        }

        // Enumerations dropped (those the schema does not have are ignored, as libtiledb).
        for name in &self.drop_enumerations {
            let Some(i) = s.enumerations.iter().position(|r| r.name == *name) else { continue };
            if let Some(a) = s.attributes.iter().find(|a| a.enumeration.as_deref() == Some(name)) {
                return Err(Error::Invalid(format!(
                    "cannot drop enumeration {name:?}: attribute {:?} uses it",
                    a.name
                )));
            }
            s.enumerations.remove(i);
            values.remove(i);
            new_enumerations.retain(|e| e.name != *name);
        }

        // Every attribute using an extended enumeration must still index all its values.
        for a in &s.attributes {
            if let Some(e) = &a.enumeration
                && let Some(i) = s.enumerations.iter().position(|r| r.name == *e)
                && self.extend_enumerations.iter().any(|(n, _)| n == e)
            {
                check_index_width(a, &values[i])?;
            }
        }

        // The current domain.
        if let Some(cd) = &self.current_domain {
            expand_current_domain(&mut s, cd)?;
        }

        s.validate()?;
        Ok(Evolved { schema: s, new_enumerations, enumerations: values })
    }
}

/// `schema` as libtiledb writes back a schema it loaded, at format version 22: a dimension
/// without filters of its own (format 5 on) is loaded with the coords filters, which are then
/// written explicitly (evolution, `upgrade_version`).
pub fn rewritten(schema: &ArraySchema) -> ArraySchema {
    let mut s = schema.clone();
    if s.version >= 5 {
        for d in &mut s.dimensions {
            if d.filters.is_empty() {
                d.filters = s.coords_filters.clone();
            }
        }
    }
    s.version = FORMAT_VERSION;
    s
}

/// A new enumeration file name, `__<label>_<version>`, not used by `schema`.
fn new_path(schema: &ArraySchema) -> String {
    loop {
        let path = format!("__{}_{ENUMERATIONS_VERSION}", random_label());
        if schema.enumerations.iter().all(|r| r.path != path) {
            return path;
        }
    }
}

/// libtiledb's rule: an attribute's integer type must represent every index of its
/// enumeration (its maximum value above the number of values).
fn check_index_width(a: &Attribute, e: &Enumeration) -> Result<()> {
    if !a.datatype.is_integer() || a.cell_val_num != 1 {
        return Err(Error::Invalid(format!(
            "attribute {:?}: an attribute with an enumeration must hold one integer per cell \
             (it is {} x {})",
            a.name, a.cell_val_num, a.datatype
        )));
    }
    let max: u128 = match a.datatype {
        Datatype::Int8 => i8::MAX as u128,
        Datatype::UInt8 => u8::MAX as u128,
        Datatype::Int16 => i16::MAX as u128,
        Datatype::UInt16 => u16::MAX as u128,
        Datatype::Int32 => i32::MAX as u128,
        Datatype::UInt32 => u32::MAX as u128,
        Datatype::Int64 => i64::MAX as u128,
        _ => u64::MAX as u128,
    };
    if max <= e.len() as u128 {
        return Err(Error::Invalid(format!(
            "attribute {:?} of type {} cannot index the {} values of enumeration {:?}",
            a.name,
            a.datatype,
            e.len(),
            e.name
        )));
    }
    Ok(())
}

/// Replaces the current domain by `new`, which must contain the one in force and lie in the
/// domain (libtiledb's `ArraySchema::expand_current_domain`).
fn expand_current_domain(s: &mut ArraySchema, new: &CurrentDomain) -> Result<()> {
    if new.ranges.len() != s.dimensions.len() {
        return Err(Error::Invalid(format!(
            "the new current domain has {} ranges for {} dimensions",
            new.ranges.len(),
            s.dimensions.len()
        )));
    }
    for (i, d) in s.dimensions.iter().enumerate() {
        let [lo, hi] = &new.ranges[i];
        let range = |b: &[u8]| -> Result<Value> { Value::decode(d.datatype, b) };
        if d.is_var() {
            if lo > hi {
                return Err(Error::Invalid(format!(
                    "the new current domain of {:?}: low is above high",
                    d.name
                )));
            }
        } else {
            let (l, h) = (range(lo)?, range(hi)?);
            if cmp(&l, &h).is_gt() {
                return Err(Error::Invalid(format!(
                    "the new current domain of {:?}: low {l} is above high {h}",
                    d.name
                )));
            }
            if let Some([dl, dh]) = d.domain_values()?
                && (cmp(&l, &dl).is_lt() || cmp(&h, &dh).is_gt())
            {
                return Err(Error::Invalid(format!(
                    "the new current domain of {:?}, [{l}, {h}], leaves the domain [{dl}, {dh}]",
                    d.name
                )));
            }
        }
        if let Some(old) = &s.current_domain {
            let [ol, oh] = &old.ranges[i];
            let contains = if d.is_var() {
                lo.as_slice() <= ol.as_slice() && oh.as_slice() <= hi.as_slice()
            } else {
                cmp(&range(lo)?, &range(ol)?).is_le() && cmp(&range(oh)?, &range(hi)?).is_le()
            };
            if !contains {
                let show = |b: &[u8]| -> String {
                    if d.is_var() {
                        format!("{:?}", String::from_utf8_lossy(b))
                    } else {
                        range(b).map(|v| v.to_string()).unwrap_or_default()
                    }
                };
                return Err(Error::Invalid(format!(
                    "the current domain can only be expanded: the new range of {:?}, [{}, {}], \
                     does not contain the current one, [{}, {}]",
                    d.name,
                    show(lo),
                    show(hi),
                    show(ol),
                    show(oh)
                )));
            }
        }
    }
    s.current_domain = Some(new.clone());
    Ok(())
}

fn cmp(a: &Value, b: &Value) -> std::cmp::Ordering {
    crate::validate::cmp(a, b)
}
