//! A folder up: one `tar -x` on the host into a temporary folder, then hashes on both ends and the
//! rename (see the parent module).

use std::collections::HashMap;
use std::fs::File;
use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::remote::{shell_quote, Connection};
use crate::transfer::ctx::Ctx;
use crate::transfer::journal::{self, Record};
use crate::transfer::proc::{self, Stream};
use crate::transfer::scan::{self, EntryKind};
use crate::transfer::sftp;
use crate::transfer::{hash, portable, TransferError};

use super::{rel_bytes, Hashes, WIRE_BUF};

/// Data written into the channel, counted; a cancel stops it.
struct ChanWriter<'s, 'c> {
    st: &'s mut Stream,
    ctx: &'s Ctx<'c>,
}

impl Write for ChanWriter<'_, '_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.ctx.cancel.is_cancelled() {
            return Err(std::io::Error::other("cancelled"));
        }
        self.st.write_all(buf)?;
        self.ctx.meter.wire(buf.len() as u64);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A file's bytes for the archive: exactly `left` bytes (zero-filled if the file shrank; the
/// hash check then catches it), hashed and counted as they go.
struct Source<'a, 'c> {
    f: File,
    left: u64,
    h: Sha256,
    ctx: &'a Ctx<'c>,
}

impl Read for Source<'_, '_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if self.left == 0 {
            return Ok(0);
        }
        let want = (self.left.min(buf.len() as u64)) as usize;
        let mut n = self.f.read(&mut buf[..want])?;
        if n == 0 {
            buf[..want].fill(0);
            n = want;
        }
        self.h.update(&buf[..n]);
        self.left -= n as u64;
        self.ctx.meter.add(n as u64);
        Ok(n)
    }
}

pub fn upload(ctx: &Ctx<'_>, conn: &Connection, rec: &Record) -> Result<(), TransferError> {
    let id = rec.summary.id;
    let root = Path::new(&rec.summary.local_path);
    let (tmp, fin) = (rec.temp_path.as_str(), rec.summary.remote_path.as_str());
    let entries = scan::walk(root, &rec.options.excludes)?;
    // Names go to the host as UTF-8 (Windows: a name that is not valid Unicode cannot).
    for e in &entries {
        portable::check_rel(&e.rel)?;
    }
    let files: Vec<&scan::Entry> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .collect();
    let total: u64 = files.iter().map(|e| e.size).sum();
    ctx.j(|s| journal::set_totals(s, id, Some(total), files.len() as u64))?;
    let (resume, fin_exists) = exist_both(ctx, conn, tmp, fin)?;
    if !resume && !rec.options.overwrite && fin_exists {
        return Err(TransferError::AlreadyExists { path: fin.into() });
    }
    let rels: Vec<Vec<u8>> = files.iter().map(|e| rel_bytes(&e.rel)).collect();
    let mut local: Hashes = HashMap::new();
    let mut todo: Vec<&scan::Entry> = files.clone();
    if resume {
        for e in &files {
            local.insert(
                rel_bytes(&e.rel),
                hash::local_file(&root.join(&e.rel), None, ctx.cancel)?,
            );
        }
        let remote = hash::remote_tree(conn, tmp, &rels, ctx.cancel)?;
        todo.retain(|e| remote.get(&rel_bytes(&e.rel)) != local.get(&rel_bytes(&e.rel)));
        let good: u64 = total - todo.iter().map(|e| e.size).sum::<u64>();
        ctx.meter.add(good);
        ctx.log(format!(
            "{fin}: resuming; {} of {} files already on the host",
            files.len() - todo.len(),
            files.len()
        ));
    }
    for round in 0..2 {
        if !todo.is_empty() || (round == 0 && !resume) {
            let with_dirs = round == 0 && !resume;
            send_tar(ctx, conn, root, tmp, &entries, &todo, with_dirs, &mut local)?;
        }
        let remote = hash::remote_tree(conn, tmp, &rels, ctx.cancel)?;
        let bad: Vec<&scan::Entry> = files
            .iter()
            .copied()
            .filter(|e| remote.get(&rel_bytes(&e.rel)) != local.get(&rel_bytes(&e.rel)))
            .collect();
        if bad.is_empty() {
            sftp::place_remote(conn, tmp, fin, rec.options.overwrite, ctx.cancel)?;
            let now = ctx.now();
            ctx.j(|s| journal::finish(s, id, &hash::tree_digest(&local), now))?;
            for _ in &files {
                ctx.meter.file_done();
            }
            return Ok(());
        }
        let first = &bad[0].rel;
        if round == 1 {
            return Err(TransferError::VerifyMismatch {
                path: format!("{fin}/{}", first.display()),
                local_sha256: local.get(&rel_bytes(first)).cloned().unwrap_or_default(),
                remote_sha256: remote.get(&rel_bytes(first)).cloned().unwrap_or_default(),
            });
        }
        ctx.log(format!(
            "{fin}: {} files differ; sending them once more",
            bad.len()
        ));
        ctx.meter.rewind(bad.iter().map(|e| e.size).sum());
        todo = bad;
    }
    Ok(())
}

/// Whether the temp folder and the final name exist (a dangling link counts), in one exec
/// instead of two SFTP sessions (each ~4 round trips).
fn exist_both(
    ctx: &Ctx<'_>,
    conn: &Connection,
    tmp: &str,
    fin: &str,
) -> Result<(bool, bool), TransferError> {
    let script = format!(
        "for p in {} {}; do if [ -e \"$p\" ] || [ -L \"$p\" ]; then echo 1; else echo 0; fi; done",
        shell_quote(tmp)?,
        shell_quote(fin)?
    );
    let out = proc::run_ok(conn, "test", fin, &script, None, ctx.cancel)?;
    let v: Vec<&[u8]> = out.split(|b| *b == b'\n').collect();
    match v.as_slice() {
        [a, b, ..] => Ok((*a == b"1", *b == b"1")),
        _ => Err(TransferError::RemoteCommandFailed {
            what: "test".into(),
            detail: crate::remote::text::cleaned(&String::from_utf8_lossy(&out)),
        }),
    }
}

#[allow(clippy::too_many_arguments)]
fn send_tar(
    ctx: &Ctx<'_>,
    conn: &Connection,
    root: &Path,
    tmp: &str,
    entries: &[scan::Entry],
    files: &[&scan::Entry],
    with_dirs: bool,
    local: &mut Hashes,
) -> Result<(), TransferError> {
    let q = shell_quote(tmp)?;
    let script = format!("mkdir -p -- {q} && tar -x --no-same-owner -f - -C {q}");
    let mut st = Stream::open(conn, &script, None)?;
    let res = (|| -> std::io::Result<()> {
        // Large channel writes: tar's 512-byte headers and `io::copy`'s 8 KiB pieces would each
        // become their own SSH packet (and libssh2 call) otherwise.
        let w = std::io::BufWriter::with_capacity(WIRE_BUF, ChanWriter { st: &mut st, ctx });
        let mut b = tar::Builder::new(w);
        b.mode(tar::HeaderMode::Complete);
        if with_dirs {
            for e in entries.iter().filter(|e| e.kind != EntryKind::File) {
                let p = root.join(&e.rel);
                let meta = std::fs::symlink_metadata(&p)?;
                let mut h = tar::Header::new_gnu();
                h.set_metadata(&meta);
                if e.kind == EntryKind::Symlink {
                    let target = std::fs::read_link(&p)?;
                    b.append_link(&mut h, &e.rel, target)?;
                } else {
                    h.set_size(0);
                    b.append_data(&mut h, &e.rel, std::io::empty())?;
                }
            }
        }
        for e in files {
            let p = root.join(&e.rel);
            let f = File::open(&p)?;
            let meta = f.metadata()?;
            let mut h = tar::Header::new_gnu();
            h.set_metadata(&meta);
            h.set_size(meta.len());
            let mut src = Source {
                f,
                left: meta.len(),
                h: Sha256::new(),
                ctx,
            };
            b.append_data(&mut h, &e.rel, &mut src)?;
            local.insert(rel_bytes(&e.rel), hash::hex(&src.h.finalize()));
        }
        b.into_inner()?.flush()
    })();
    if let Err(e) = res {
        if ctx.cancel.is_cancelled() {
            st.kill(conn);
            return Err(TransferError::cancelled());
        }
        if e.get_ref()
            .and_then(|i| i.downcast_ref::<ssh2::Error>())
            .is_none()
            && e.kind() != std::io::ErrorKind::Other
        {
            st.kill(conn);
            return Err(TransferError::local(root, &e));
        }
        return Err(st
            .failure("tar -x", tmp)
            .unwrap_or_else(|| proc::io_lost(&e)));
    }
    st.send_eof()?;
    let (status, err) = st.finish()?;
    if status != Some(0) {
        return Err(TransferError::from_stderr("tar -x", tmp, &err));
    }
    Ok(())
}
