//! The disk a PostgreSQL build takes, estimated before anything is created, so that a
//! slipped `--warehouses 100000` (about 10 TB) is refused with its size rather than
//! filling the file system hours into the load.
//!
//! Measured here with PostgreSQL 15 on fresh builds (`oltp build --dir`, seed 1, the
//! database's directory under `base/`, as pg_database_size counts it): 1 warehouse
//! 125.8 MB, 2 warehouses 230.3 MB, so 104.4 MB per warehouse (HammerDB says about 100 MB
//! for PostgreSQL) and 21.4 MB for the rest (ITEM, the functions, the catalog). The load's
//! write-ahead log came beside it: 117 MB and 218 MB, about as much as the data, until
//! max_wal_size (1 GB, PostgreSQL's default, which the clusters rackbench launches keep)
//! has checkpoints recycle it.

use std::path::{Path, PathBuf};

use anyhow::Context;

/// Bytes of one database per warehouse.
pub const PG_BYTES_PER_WAREHOUSE: u64 = 105_000_000;
/// Bytes of one database beyond its warehouses.
pub const PG_BYTES_PER_DATABASE: u64 = 22_000_000;
/// The most write-ahead log a load leaves before checkpoints recycle it (max_wal_size).
pub const PG_WAL_BYTES_MAX: u64 = 1 << 30;

/// The estimated bytes of a build of `warehouses` in each of `databases` (the others
/// are copies of the first, as large), its write-ahead log included.
pub fn pg_build_bytes(warehouses: u32, databases: u32) -> u64 {
    let one = u64::from(warehouses)
        .saturating_mul(PG_BYTES_PER_WAREHOUSE)
        .saturating_add(PG_BYTES_PER_DATABASE);
    let data = one.saturating_mul(u64::from(databases.max(1)));
    data.saturating_add(data.min(PG_WAL_BYTES_MAX))
}

/// The most warehouses per database whose build fits in `room` bytes.
fn warehouses_that_fit(room: u64, databases: u32) -> u64 {
    let per_db = |w: u64| {
        w.saturating_mul(PG_BYTES_PER_WAREHOUSE)
            .saturating_add(PG_BYTES_PER_DATABASE)
            .saturating_mul(u64::from(databases.max(1)))
    };
    let fits = |w: u64| {
        let d = per_db(w);
        d.saturating_add(d.min(PG_WAL_BYTES_MAX)) <= room
    };
    // The size grows with w: the largest w that fits, by bisection.
    let (mut lo, mut hi) = (0u64, room / PG_BYTES_PER_WAREHOUSE + 1);
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

/// Decimal gigabytes (terabytes past 1000 GB), as `df -H` says them.
fn size(bytes: u64) -> String {
    let gb = bytes as f64 / 1e9;
    if gb >= 1000.0 {
        format!("{:.1} TB", gb / 1000.0)
    } else {
        format!("{gb:.1} GB")
    }
}

/// Why a build of `need` bytes does not fit in a file system with `free` bytes free,
/// where the cluster already holds `held` (a rebuild drops that first, a reuse needs
/// nothing): None when it fits.
pub fn refusal(
    need: u64,
    free: u64,
    held: u64,
    warehouses: u32,
    databases: u32,
    dir: &Path,
) -> Option<String> {
    let room = free.saturating_add(held);
    if need <= room {
        return None;
    }
    let held_text = if held > 0 {
        format!(", plus {} its cluster there holds already", size(held))
    } else {
        String::new()
    };
    let fit = warehouses_that_fit(room, databases);
    let choose = if fit == 0 {
        "no build fits there".to_string()
    } else {
        format!("at most about {fit} warehouses fit there")
    };
    Some(format!(
        "a TPC-C build of {warehouses} warehouses{} needs about {} (about {} MB per \
         warehouse and its write-ahead log), and the file system of {} has {} free{held_text}: \
         {choose}; choose fewer with --warehouses, or put the cluster on a larger file \
         system with --cluster-dir (oltp build: --dir)",
        if databases > 1 {
            format!(" in each of {databases} databases")
        } else {
            String::new()
        },
        size(need),
        PG_BYTES_PER_WAREHOUSE / 1_000_000,
        dir.display(),
        size(free),
    ))
}

/// Refuse a build of `warehouses` x `databases` into a cluster in `dir` that its file
/// system has no room for: a kept cluster directory (made if missing; what it holds
/// counts as room), or the directory a throwaway cluster is made in (`kept` false).
pub fn ensure_room(dir: &Path, kept: bool, warehouses: u32, databases: u32) -> anyhow::Result<()> {
    let need = pg_build_bytes(warehouses, databases);
    let (fs, free) = free_bytes(dir)?;
    let held = if kept && dir.exists() {
        engine::scratch::disk_usage(dir)
    } else {
        0
    };
    match refusal(need, free, held, warehouses, databases, &fs) {
        None => Ok(()),
        Some(why) => anyhow::bail!(why),
    }
}

/// The nearest existing directory at or above `path`, and the bytes its file system has
/// free for an unprivileged user (statvfs f_bavail).
fn free_bytes(path: &Path) -> anyhow::Result<(PathBuf, u64)> {
    let abs = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let existing = abs
        .ancestors()
        .find(|p| p.is_dir())
        .unwrap_or(Path::new("/"))
        .to_path_buf();
    let c = std::ffi::CString::new(existing.as_os_str().as_encoded_bytes())
        .context("a path with a NUL byte")?;
    // SAFETY: statvfs(3) fills the zeroed struct from a NUL-terminated path.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(std::io::Error::last_os_error())
            .with_context(|| format!("asking the free space of {}", existing.display()));
    }
    Ok((
        existing,
        (st.f_bavail as u64).saturating_mul(st.f_frsize as u64),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_estimate_is_the_measured_build_with_its_log() {
        // 1 warehouse measured 125.8 MB of data and 117 MB of log.
        let one = pg_build_bytes(1, 1);
        assert_eq!(one, 2 * 127_000_000);
        // The log stops growing at max_wal_size; databases are copies of the first.
        assert_eq!(
            pg_build_bytes(100, 2),
            2 * (100 * 105_000_000 + 22_000_000) + (1 << 30)
        );
        // A slipped count saturates, never wraps to a small size.
        assert!(pg_build_bytes(u32::MAX, u32::MAX) == u64::MAX);
    }

    #[test]
    fn a_build_that_does_not_fit_is_refused_with_its_size_the_free_space_and_what_fits() {
        let dir = Path::new("/srv/pg");
        let need = pg_build_bytes(100_000, 1);
        let why = refusal(need, 75_000_000_000, 0, 100_000, 1, dir).expect("refused");
        assert!(
            why.contains("100000 warehouses needs about 10.5 TB"),
            "{why}"
        );
        assert!(why.contains("/srv/pg has 75.0 GB free"), "{why}");
        assert!(
            why.contains("at most about 703 warehouses fit there"),
            "{why}"
        );
        assert!(
            why.contains("--warehouses") && why.contains("--cluster-dir"),
            "{why}"
        );
        assert!(pg_build_bytes(703, 1) <= 75_000_000_000);
        assert!(pg_build_bytes(704, 1) > 75_000_000_000);
        // What the cluster holds already is room: a rebuild drops it, a reuse needs none.
        assert!(refusal(
            pg_build_bytes(10, 1),
            1_000_000_000,
            1_500_000_000,
            10,
            1,
            dir
        )
        .is_none());
        assert!(refusal(pg_build_bytes(1, 1), 100_000_000, 0, 1, 1, dir)
            .expect("refused")
            .contains("no build fits there"));
    }
}
