//! A folder down: the host's file list (the user's excludes applied), one `tar -c` read into a
//! temporary folder here, hashes on both ends, links made last, the rename (see the parent module).

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::{Component, Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::remote::{shell_quote, Connection};
use crate::transfer::ctx::Ctx;
use crate::transfer::file_down::place_local;
use crate::transfer::journal::{self, Record};
use crate::transfer::proc::{self, Stream};
use crate::transfer::scan;
use crate::transfer::{hash, portable, TransferError};

use super::{rel_bytes, Hashes, WIRE_BUF};

/// Regular files under a remote folder with their sizes (relative paths as bytes).
fn remote_files(
    conn: &Connection,
    src: &str,
    ctx: &Ctx<'_>,
) -> Result<Vec<(Vec<u8>, u64)>, TransferError> {
    let script = format!(
        "cd -- {} || exit 2\nfind . -type f -printf '%s %P\\0'",
        shell_quote(src)?
    );
    let out = proc::run_ok(conn, "find", src, &script, None, ctx.cancel)?;
    let mut v = Vec::new();
    for rec in out.split(|b| *b == 0).filter(|r| !r.is_empty()) {
        if let Some(sp) = rec.iter().position(|b| *b == b' ') {
            let size = String::from_utf8_lossy(&rec[..sp]).parse().unwrap_or(0);
            v.push((rec[sp + 1..].to_vec(), size));
        }
    }
    Ok(v)
}

pub fn download(ctx: &Ctx<'_>, conn: &Connection, rec: &Record) -> Result<(), TransferError> {
    let id = rec.summary.id;
    let src = rec.summary.remote_path.as_str();
    let tmp = PathBuf::from(&rec.temp_path);
    let fin = Path::new(&rec.summary.local_path);
    let mut listing = remote_files(conn, src, ctx)?;
    // The user's excludes (gitignore patterns, as for uploads); the host's .gitignore files are
    // not read for downloads.
    let ex = scan::Excludes::new(&rec.options.excludes)?;
    let before = listing.len();
    listing.retain(|(rel, _)| !ex.leaves_out(&portable::match_path(rel)));
    let excluded = before - listing.len();
    // Every name must be one this computer can hold (Windows: no `:`, `?`, `CON`, …) before
    // anything is written: a typed error now instead of a file that lands elsewhere or fails
    // halfway.
    for (rel, _) in &listing {
        portable::local_rel(rel)?;
    }
    if excluded > 0 {
        ctx.log(format!(
            "{src}: {excluded} file(s) left out by the excludes"
        ));
    }
    let total: u64 = listing.iter().map(|l| l.1).sum();
    ctx.j(|s| journal::set_totals(s, id, Some(total), listing.len() as u64))?;
    let resume = tmp.exists();
    if !resume && !rec.options.overwrite && fin.exists() {
        return Err(TransferError::AlreadyExists {
            path: fin.display().to_string(),
        });
    }
    std::fs::create_dir_all(&tmp).map_err(|e| TransferError::local(&tmp, &e))?;
    let rels: Vec<Vec<u8>> = listing.iter().map(|l| l.0.clone()).collect();
    let mut local: Hashes = HashMap::new();
    if !resume {
        // Fresh: everything comes; the host hashes on a second channel while the tar streams.
        let hashing = hash::TreeHashing::start(conn, src, &rels)?;
        let only = (excluded > 0).then_some(&rels);
        if let Err(e) = fetch_tar(ctx, conn, src, &tmp, only, id, &mut local) {
            hashing.kill(conn);
            return Err(e);
        }
        let remote = hashing.finish()?;
        return finish_download(ctx, conn, rec, &listing, &rels, remote, local);
    }
    let remote = hash::remote_tree(conn, src, &rels, ctx.cancel)?;
    {
        for (rel, size) in &listing {
            let p = tmp.join(portable::local_rel(rel)?);
            if std::fs::metadata(&p).is_ok_and(|m| m.len() == *size) {
                local.insert(rel.clone(), hash::local_file(&p, None, ctx.cancel)?);
            }
        }
    }
    let todo: Vec<Vec<u8>> = rels
        .iter()
        .filter(|r| local.get(*r) != remote.get(*r))
        .cloned()
        .collect();
    let sizes: HashMap<&Vec<u8>, u64> = listing.iter().map(|(r, s)| (r, *s)).collect();
    ctx.meter.add(
        total
            - todo
                .iter()
                .map(|r| sizes.get(r).copied().unwrap_or(0))
                .sum::<u64>(),
    );
    if !todo.is_empty() {
        fetch_tar(ctx, conn, src, &tmp, Some(&todo), id, &mut local)?;
    }
    finish_download(ctx, conn, rec, &listing, &rels, remote, local)
}

/// After a fetch: compare, fetch the differing files once more, rename into place.
#[allow(clippy::too_many_arguments)]
fn finish_download(
    ctx: &Ctx<'_>,
    conn: &Connection,
    rec: &Record,
    listing: &[(Vec<u8>, u64)],
    rels: &[Vec<u8>],
    remote: Hashes,
    mut local: Hashes,
) -> Result<(), TransferError> {
    let id = rec.summary.id;
    let src = rec.summary.remote_path.as_str();
    let tmp = PathBuf::from(&rec.temp_path);
    let fin = Path::new(&rec.summary.local_path);
    let sizes: HashMap<&Vec<u8>, u64> = listing.iter().map(|(r, s)| (r, *s)).collect();
    let mut todo: Vec<Vec<u8>> = Vec::new();
    for round in 0..2 {
        if !todo.is_empty() {
            fetch_tar(ctx, conn, src, &tmp, Some(&todo), id, &mut local)?;
        }
        let bad: Vec<Vec<u8>> = rels
            .iter()
            .filter(|r| local.get(*r) != remote.get(*r))
            .cloned()
            .collect();
        if bad.is_empty() {
            make_links(ctx, conn, src, &tmp, &rec.options.excludes)?;
            place_local(&tmp, fin, rec.options.overwrite)?;
            let now = ctx.now();
            ctx.j(|s| journal::finish(s, id, &hash::tree_digest(&local), now))?;
            for _ in rels {
                ctx.meter.file_done();
            }
            return Ok(());
        }
        if round == 1 {
            return Err(TransferError::VerifyMismatch {
                path: fin
                    .join(portable::match_path(&bad[0]))
                    .display()
                    .to_string(),
                local_sha256: local.get(&bad[0]).cloned().unwrap_or_default(),
                remote_sha256: remote.get(&bad[0]).cloned().unwrap_or_default(),
            });
        }
        ctx.meter
            .rewind(bad.iter().map(|r| sizes.get(r).copied().unwrap_or(0)).sum());
        todo = bad;
    }
    Ok(())
}

/// A relative archive path made safe: normal components only.
fn safe_rel(p: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::Normal(n) => out.push(n),
            Component::CurDir => {}
            _ => return None,
        }
    }
    (!out.as_os_str().is_empty()).then_some(out)
}

/// Remove every symbolic link under `dir` (not following any), so that no later write can pass
/// through one: links are made last, by [`make_links`].
fn strip_links(dir: &Path) -> Result<(), TransferError> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in rd.flatten() {
        let p = e.path();
        let ft = e
            .file_type()
            .map_err(|err| TransferError::local(&p, &err))?;
        if ft.is_symlink() {
            std::fs::remove_file(&p).map_err(|err| TransferError::local(&p, &err))?;
        } else if ft.is_dir() {
            strip_links(&p)?;
        }
    }
    Ok(())
}

/// Recreate the folder's symbolic links (as links, with their targets as written on the host),
/// after every regular file was written and verified. A link whose folder would pass through
/// another link, or whose name is unsafe, is skipped with a log line; links the OS refuses
/// (Windows without Developer Mode) are listed in one log line.
fn make_links(
    ctx: &Ctx<'_>,
    conn: &Connection,
    src: &str,
    tmp: &Path,
    excludes: &[String],
) -> Result<(), TransferError> {
    let script = format!(
        "cd -- {} || exit 2\nfind . -type l -printf '%P\\0%l\\0'",
        shell_quote(src)?
    );
    let out = proc::run_ok(conn, "find", src, &script, None, ctx.cancel)?;
    let ex = scan::Excludes::new(excludes)?;
    let mut parts = out.split(|b| *b == 0);
    let (mut made, mut refused) = (0usize, Vec::new());
    while let (Some(name), Some(target)) = (parts.next(), parts.next()) {
        let Ok(rel) = portable::local_rel(name) else {
            ctx.log(format!(
                "{}: a name this computer cannot hold; link not made",
                String::from_utf8_lossy(name)
            ));
            continue;
        };
        let Some(rel) = safe_rel(&rel) else {
            continue;
        };
        if name.is_empty() || ex.leaves_out(&rel) {
            continue;
        }
        let dest = tmp.join(&rel);
        let through_link = rel.ancestors().skip(1).any(|a| {
            !a.as_os_str().is_empty()
                && std::fs::symlink_metadata(tmp.join(a)).is_ok_and(|m| m.file_type().is_symlink())
        });
        if through_link {
            ctx.log(format!("{}: inside another link; not made", rel.display()));
            continue;
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| TransferError::local(parent, &e))?;
        }
        let _ = std::fs::remove_file(&dest);
        match portable::symlink(target, &dest).map_err(|e| TransferError::local(&dest, &e))? {
            portable::LinkOutcome::Made => made += 1,
            portable::LinkOutcome::NotPermitted => refused.push(rel.display().to_string()),
        }
    }
    if made > 0 {
        ctx.log(format!("{src}: {made} symbolic link(s) made as links"));
    }
    if !refused.is_empty() {
        // Windows makes links only in Developer Mode or for an administrator; the files are all
        // here, the links are not, and the user is told which.
        ctx.log(format!(
            "{src}: {} symbolic link(s) not made: this Windows account may not create links \
             (turn on Developer Mode to allow it): {}",
            refused.len(),
            refused.join(", ")
        ));
    }
    Ok(())
}

fn fetch_tar(
    ctx: &Ctx<'_>,
    conn: &Connection,
    src: &str,
    tmp: &Path,
    only: Option<&Vec<Vec<u8>>>,
    id: i64,
    local: &mut Hashes,
) -> Result<(), TransferError> {
    strip_links(tmp)?;
    let qs = shell_quote(src)?;
    let list = format!(".gpurent-list-{id}");
    let script = match only {
        None => format!("tar -c -f - -C {qs} ."),
        Some(names) => {
            let mut data = Vec::new();
            for n in names {
                data.extend_from_slice(b"./");
                data.extend_from_slice(n);
                data.push(0);
            }
            let ql = shell_quote(&list)?;
            proc::run_ok(
                conn,
                "list",
                &list,
                &format!("cat > {ql}"),
                Some(&data),
                ctx.cancel,
            )?;
            format!(
                "L=\"$PWD\"/{ql}; tar -c -f - -C {qs} --null -T \"$L\"; s=$?; rm -f -- \"$L\"; exit $s"
            )
        }
    };
    let mut st = Stream::open(conn, &script, proc::download_window(conn))?;
    let res = (|| -> Result<(), TransferError> {
        let r = std::io::BufReader::with_capacity(WIRE_BUF, ChanReader { st: &mut st, ctx });
        let mut ar = tar::Archive::new(r);
        let mut buf = vec![0u8; 256 * 1024];
        let mut made: Option<PathBuf> = None;
        let entries = ar.entries().map_err(|e| proc::io_lost(&e))?;
        for entry in entries {
            let mut entry = entry.map_err(|e| proc::io_lost(&e))?;
            let path = entry.path().map_err(|e| proc::io_lost(&e))?.into_owned();
            let Some(rel) = safe_rel(&path) else {
                continue;
            };
            let dest = tmp.join(&rel);
            match entry.header().entry_type() {
                tar::EntryType::Directory => {
                    std::fs::create_dir_all(&dest).map_err(|e| TransferError::local(&dest, &e))?;
                }
                tar::EntryType::Regular | tar::EntryType::Continuous => {
                    if let Some(parent) = dest.parent() {
                        if made.as_deref() != Some(parent) {
                            std::fs::create_dir_all(parent)
                                .map_err(|e| TransferError::local(parent, &e))?;
                            made = Some(parent.to_path_buf());
                        }
                    }
                    let mut f = File::create(&dest).map_err(|e| TransferError::local(&dest, &e))?;
                    let mut h = Sha256::new();
                    loop {
                        let n = entry.read(&mut buf).map_err(|e| proc::io_lost(&e))?;
                        if n == 0 {
                            break;
                        }
                        f.write_all(&buf[..n])
                            .map_err(|e| TransferError::local(&dest, &e))?;
                        h.update(&buf[..n]);
                        ctx.meter.add(n as u64);
                    }
                    if let Ok(mode) = entry.header().mode() {
                        let _ = portable::set_mode(&f, mode);
                    }
                    local.insert(rel_bytes(&rel), hash::hex(&h.finalize()));
                }
                // Made after every file was written (`make_links`), never written through.
                tar::EntryType::Symlink => {}
                other => ctx.log(format!(
                    "{}: {other:?} entries are not copied",
                    rel.display()
                )),
            }
        }
        Ok(())
    })();
    if let Err(e) = res {
        if ctx.cancel.is_cancelled() {
            st.kill(conn);
            return Err(TransferError::cancelled());
        }
        return Err(e);
    }
    let (status, err) = st.finish()?;
    if status != Some(0) {
        return Err(TransferError::from_stderr("tar -c", src, &err));
    }
    Ok(())
}

struct ChanReader<'s, 'c> {
    st: &'s mut Stream,
    ctx: &'s Ctx<'c>,
}

impl Read for ChanReader<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.ctx.cancel.is_cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        let n = self.st.read(buf)?;
        self.ctx.meter.wire(n as u64);
        Ok(n)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    #[test]
    fn links_left_in_a_temp_folder_are_removed_without_touching_their_targets() {
        let t = tempfile::tempdir().expect("tmp");
        let outside = t.path().join("outside");
        let tmp = t.path().join(".run.gpurent-1.part");
        std::fs::create_dir_all(&outside).expect("mkdir");
        std::fs::create_dir_all(tmp.join("sub")).expect("mkdir");
        std::fs::write(outside.join("keep.txt"), b"mine").expect("write");
        std::fs::write(tmp.join("sub/a.bin"), b"a").expect("write");
        std::os::unix::fs::symlink(&outside, tmp.join("sub/escape")).expect("link");
        std::os::unix::fs::symlink("/nonexistent", tmp.join("dangling")).expect("link");
        strip_links(&tmp).expect("strip");
        assert!(std::fs::symlink_metadata(tmp.join("sub/escape")).is_err());
        assert!(std::fs::symlink_metadata(tmp.join("dangling")).is_err());
        assert_eq!(std::fs::read(tmp.join("sub/a.bin")).expect("kept"), b"a");
        assert_eq!(
            std::fs::read(outside.join("keep.txt")).expect("untouched"),
            b"mine"
        );
        assert_eq!(safe_rel(Path::new("../x")), None);
        assert_eq!(safe_rel(Path::new("/etc/x")), None);
        assert_eq!(safe_rel(Path::new("./a/b")), Some(PathBuf::from("a/b")));
    }
}
