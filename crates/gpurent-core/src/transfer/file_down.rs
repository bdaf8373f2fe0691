//! One file down: one exec stream (`cat`, or `tail -c +N` to resume; a 32 MiB receive window on
//! a long link) into `.NAME.gpurent-ID.part` next to the final name, the host hashing the whole
//! file alongside. On resume the local partial file's prefix is hashed here and on the host
//! (`head -c N | sha256`); equal prefixes continue, anything else starts over. Then the SHA-256
//! of both ends are compared and the file renamed into place.

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::remote::{shell_quote, Connection};
use crate::transfer::ctx::Ctx;
use crate::transfer::journal::{self, Record};
use crate::transfer::proc::{self, Stream};
use crate::transfer::sftp;
use crate::transfer::{hash, TransferError};

pub fn run(ctx: &Ctx<'_>, conn: &Connection, rec: &Record) -> Result<(), TransferError> {
    let id = rec.summary.id;
    let src = rec.summary.remote_path.as_str();
    let tmp = Path::new(&rec.temp_path);
    let fin = Path::new(&rec.summary.local_path);
    let size = {
        let sftp = conn.session().sftp().map_err(|e| TransferError::ssh(&e))?;
        let st = sftp
            .stat(Path::new(src))
            .map_err(|e| sftp::sftp_error(&e, src))?;
        if st.is_dir() {
            return Err(TransferError::invalid(
                "remote",
                format!("{src} is a folder"),
            ));
        }
        st.size.unwrap_or(0)
    };
    ctx.j(|s| journal::set_totals(s, id, Some(size), 1))?;
    for round in 0..2 {
        let have = std::fs::metadata(tmp).map(|m| m.len()).unwrap_or(0);
        if round == 0 && have == 0 && !rec.options.overwrite && fin.exists() {
            return Err(TransferError::AlreadyExists {
                path: fin.display().to_string(),
            });
        }
        // Keep a verified prefix (hasher state included), or start from zero.
        let mut hasher = Sha256::new();
        let mut start = 0;
        if have > 0 && have <= size {
            let local_prefix = hash::local_file(tmp, Some(have), ctx.cancel)?;
            let remote_prefix = hash::remote_file(conn, src, Some(have), ctx.cancel)?;
            if local_prefix == remote_prefix {
                let mut f = File::open(tmp).map_err(|e| TransferError::local(tmp, &e))?;
                let mut buf = vec![0u8; 1 << 20];
                loop {
                    let n = f
                        .read(&mut buf)
                        .map_err(|e| TransferError::local(tmp, &e))?;
                    if n == 0 {
                        break;
                    }
                    hasher.update(&buf[..n]);
                }
                start = have;
                ctx.log(format!("{src}: resuming at byte {have} (prefix verified)"));
            }
        }
        ctx.meter.add(start);
        let mut out = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(start == 0)
            .append(start > 0)
            .open(tmp)
            .map_err(|e| TransferError::local(tmp, &e))?;
        let mut inline_remote = None;
        if start < size {
            let q = shell_quote(src)?;
            let read = if start == 0 {
                format!("cat -- {q}")
            } else {
                format!("tail -c +{} -- {q}", start + 1)
            };
            // The host hashes the whole file alongside (its digest is one line on stderr), so
            // the verify does not wait for a second pass after the last byte.
            let script = format!(
                "{}[ \"$T\" = n ] || {{ h < {q} >&2 & }}\n{read}; s=$?; wait; exit $s",
                hash::remote_h_soft()
            );
            let mut st = Stream::open(conn, &script, proc::download_window(conn))?;
            // This thread decrypts; a second one writes the file and hashes it.
            let (tx, rx) = std::sync::mpsc::sync_channel::<(Vec<u8>, usize)>(4);
            let (back_tx, back_rx) = std::sync::mpsc::channel::<Vec<u8>>();
            let (res, written) = std::thread::scope(|s| {
                let (out, hasher) = (&mut out, &mut hasher);
                let writer = s.spawn(move || -> std::io::Result<()> {
                    for (buf, n) in rx.iter() {
                        out.write_all(&buf[..n])?;
                        hasher.update(&buf[..n]);
                        let _ = back_tx.send(buf);
                    }
                    Ok(())
                });
                let res = (|| -> Result<(), TransferError> {
                    let mut got = start;
                    let mut since = 0u64;
                    let mut eof = false;
                    while !eof {
                        if ctx.cancel.is_cancelled() {
                            return Err(TransferError::cancelled());
                        }
                        let mut buf = back_rx.try_recv().unwrap_or_else(|_| vec![0u8; 1 << 20]);
                        let mut n = 0;
                        while n < (512 << 10) {
                            match st.read(&mut buf[n..]) {
                                Ok(0) => {
                                    eof = true;
                                    break;
                                }
                                Ok(k) => n += k,
                                Err(e) => return Err(proc::io_lost(&e)),
                            }
                        }
                        if n > 0 && tx.send((buf, n)).is_err() {
                            break; // the writer failed: its error is reported below
                        }
                        got += n as u64;
                        since += n as u64;
                        ctx.meter.wire(n as u64);
                        ctx.meter.add(n as u64);
                        if since >= 16 << 20 {
                            since = 0;
                            let now = ctx.now();
                            ctx.j(|s| journal::set_progress(s, id, got, 0, now))?;
                        }
                    }
                    Ok(())
                })();
                drop(tx);
                let written = writer
                    .join()
                    .unwrap_or_else(|_| Err(std::io::Error::other("writer panicked")));
                (res, written)
            });
            if let Err(e) = written {
                st.kill(conn);
                return Err(TransferError::local(tmp, &e));
            }
            if let Err(e) = res {
                let _ = out.flush();
                if !e.is_link_failure() {
                    st.kill(conn);
                }
                return Err(e);
            }
            let (status, err) = st.finish()?;
            if status != Some(0) {
                return Err(TransferError::from_stderr("download", src, &err));
            }
            inline_remote = hash::digest_in(err.as_bytes());
        }
        out.sync_all().map_err(|e| TransferError::local(tmp, &e))?;
        drop(out);
        let local_hash = hash::hex(&hasher.finalize());
        let remote_hash = match inline_remote {
            Some(h) => h,
            None => hash::remote_file(conn, src, None, ctx.cancel)?,
        };
        if local_hash == remote_hash {
            place_local(tmp, fin, rec.options.overwrite)?;
            let now = ctx.now();
            ctx.j(|s| journal::finish(s, id, &local_hash, now))?;
            ctx.meter.file_done();
            return Ok(());
        }
        let len = std::fs::metadata(tmp).map(|m| m.len()).unwrap_or(0);
        ctx.meter.rewind(len);
        let _ = std::fs::remove_file(tmp);
        if round == 1 {
            return Err(TransferError::VerifyMismatch {
                path: fin.display().to_string(),
                local_sha256: local_hash,
                remote_sha256: remote_hash,
            });
        }
        ctx.log(format!("{src}: SHA-256 differs; fetching it once more"));
    }
    Ok(())
}

/// Rename a finished temp file or folder to its final local name (replacing only with
/// `overwrite`; a replaced folder is moved aside first and removed after).
pub fn place_local(tmp: &Path, fin: &Path, overwrite: bool) -> Result<(), TransferError> {
    let io = |p: &Path, e: std::io::Error| TransferError::local(p, &e);
    if let Ok(m) = std::fs::symlink_metadata(fin) {
        if !overwrite {
            return Err(TransferError::AlreadyExists {
                path: fin.display().to_string(),
            });
        }
        if m.is_dir() || tmp.is_dir() {
            let mut aside = fin.as_os_str().to_owned();
            aside.push(".gpurent-old");
            let aside = std::path::PathBuf::from(aside);
            std::fs::rename(fin, &aside).map_err(|e| io(fin, e))?;
            std::fs::rename(tmp, fin).map_err(|e| io(fin, e))?;
            let _ = std::fs::remove_dir_all(&aside).or_else(|_| std::fs::remove_file(&aside));
            return Ok(());
        }
    }
    std::fs::rename(tmp, fin).map_err(|e| io(fin, e))
}
