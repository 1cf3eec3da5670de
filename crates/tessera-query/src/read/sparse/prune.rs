//! Skipping tiles whose metadata proves that no cell passes the condition, where skipping
//! cannot change deduplication.

use super::*;

/// Drops from `tiles` (of fragment `f`) the tiles whose metadata proves that no cell
/// satisfies `cond`.
pub(super) fn prune(
    storage: &dyn tessera_storage::Storage,
    f: &Fragment,
    cond: &QueryCondition,
    cells: &TileCells,
    tiles: &mut Vec<TileOverlap>,
    skippable: &[bool],
) -> Result<()> {
    let meta = ConditionMeta::load(storage, f, cond)?;
    if meta.is_empty() {
        return Ok(());
    }
    let mut k = 0;
    tiles.retain(|ov| {
        k += 1;
        !skippable[k - 1] || meta.decide(cond, ov.tile, cells.get(ov.tile)) != Decided::None
    });
    Ok(())
}

/// For each of `tiles` (of fragment `f`, the `i`-th of the read), whether its MBR overlaps
/// the non-empty domain of no other fragment of the read (`neds`), so no other fragment can
/// hold its coordinates.
pub(super) fn lone_tiles(
    storage: &dyn tessera_storage::Storage,
    dims: &[DimType],
    f: &Fragment,
    tiles: &[TileOverlap],
    neds: &[Mbr],
    i: usize,
) -> Result<Vec<bool>> {
    let rtree = f.rtree(storage)?;
    Ok(tiles
        .iter()
        .map(|ov| {
            rtree.leaf(ov.tile).is_some_and(|mbr| {
                neds.iter()
                    .enumerate()
                    .all(|(j, n)| j == i || n.0.is_empty() || !mbr.overlaps(dims, n))
            })
        })
        .collect())
}
