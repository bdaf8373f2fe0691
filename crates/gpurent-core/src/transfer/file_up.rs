//! One file up: chunks recorded in the journal, sent as one raw stream (the same bytes on the
//! wire as `scp`) or as SFTP byte ranges on several connections; on resume the chunks the
//! journal says were sent are hashed on the host and only the missing ones go again. The whole
//! file is hashed on both ends (in the sending pass for a fresh stream) and renamed into place.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use sha2::{Digest, Sha256};

use crate::remote::{shell_quote, Connection};
use crate::transfer::ctx::Ctx;
use crate::transfer::journal::{self, Chunk, ChunkState, Record};
use crate::transfer::proc::{self, Stream};
use crate::transfer::sftp;
use crate::transfer::{hash, portable, FileMethod, TransferError};

/// Default chunk: the resume granularity, and the SFTP write size (≥ 16 MiB per call).
pub const DEFAULT_CHUNK: u64 = 16 * 1024 * 1024;
/// Files at least this big use several streams on a long link.
pub const PARALLEL_MIN: u64 = 64 * 1024 * 1024;
pub use crate::transfer::proc::LONG_LINK_MS;
pub const AUTO_STREAMS: u32 = 4;

pub fn mtime_ms(m: &std::fs::Metadata) -> Option<i64> {
    m.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_millis() as i64)
}

pub fn run(ctx: &Ctx<'_>, conn: &Connection, rec: &Record) -> Result<(), TransferError> {
    let id = rec.summary.id;
    let local = Path::new(&rec.summary.local_path);
    let meta = std::fs::metadata(local).map_err(|e| TransferError::local(local, &e))?;
    let size = meta.len();
    let chunk = rec.options.chunk_bytes.unwrap_or(DEFAULT_CHUNK).max(4096);
    let tmp = rec.temp_path.as_str();
    let fin = rec.summary.remote_path.as_str();
    let mut chunks = ctx.j(|s| journal::chunks(s, id))?;
    let changed = rec.source_size != Some(size) || rec.source_mtime_ms != mtime_ms(&meta);
    if chunks.is_empty() || changed || (chunks.len() > 1 && chunks[0].len != chunk) {
        if !chunks.is_empty() {
            ctx.log(format!(
                "{}: the source changed; starting over",
                local.display()
            ));
        }
        let mt = mtime_ms(&meta);
        ctx.j(|s| {
            journal::chunks_init(s, id, size, chunk)?;
            s.conn().execute(
                "UPDATE transfers SET source_size = ?2, source_mtime_ms = ?3, total_bytes = ?2
                 WHERE id = ?1",
                rusqlite::params![id, size as i64, mt],
            )?;
            Ok(())
        })?;
        chunks = ctx.j(|s| journal::chunks(s, id))?;
    }
    let started = chunks.iter().any(|c| c.state != ChunkState::Pending);
    if !started && !rec.options.overwrite && sftp::remote_exists(conn, fin)? {
        return Err(TransferError::AlreadyExists { path: fin.into() });
    }
    let verified = verify_sent(ctx, conn, id, tmp, chunk, &mut chunks)?;
    ctx.meter.add(verified);
    let streams = match rec.options.streams {
        Some(n) => n.clamp(1, 16),
        None if size >= PARALLEL_MIN && proc::long_link(conn)? => AUTO_STREAMS,
        None => 1,
    };
    let mut method = rec.options.method.unwrap_or(if streams > 1 {
        FileMethod::Sftp
    } else {
        FileMethod::Stream
    });
    for round in 0..2 {
        let pending: Vec<Chunk> = chunks
            .iter()
            .filter(|c| c.state != ChunkState::Verified)
            .cloned()
            .collect();
        let suffix = pending
            .first()
            .is_some_and(|p| pending.len() as u64 == chunks.len() as u64 - p.idx);
        if method == FileMethod::Stream && !suffix {
            method = FileMethod::Sftp;
        }
        // A whole file in one stream is hashed in the same pass on both ends; anything else
        // (a resumed suffix, SFTP ranges) is hashed here alongside and re-read on the host.
        let whole = method == FileMethod::Stream && pending.len() == chunks.len();
        let (local_hash, inline_remote) = if whole {
            let (l, r) = stream_up(ctx, conn, local, tmp, &pending, true)?;
            (l.unwrap_or_default(), r)
        } else {
            let l = std::thread::scope(|s| {
                let h = s.spawn(|| hash::local_file(local, None, ctx.cancel));
                let sent = if pending.is_empty() {
                    Ok(())
                } else if method == FileMethod::Stream {
                    stream_up(ctx, conn, local, tmp, &pending, false).map(|_| ())
                } else {
                    sftp_up(ctx, conn, local, tmp, &pending, streams)
                };
                let h = h.join().unwrap_or(Err(TransferError::cancelled()));
                sent.and(h)
            })?;
            (l, None)
        };
        let remote_hash = match inline_remote {
            Some(h) => h,
            None => hash::remote_file(conn, tmp, None, ctx.cancel)?,
        };
        if remote_hash == local_hash {
            ctx.j(|s| {
                s.conn().execute(
                    "UPDATE transfer_chunks SET state = 'verified' WHERE transfer_id = ?1",
                    [id],
                )?;
                Ok(())
            })?;
            sftp::place_remote(conn, tmp, fin, rec.options.overwrite, ctx.cancel)?;
            let now = ctx.now();
            ctx.j(|s| journal::finish(s, id, &local_hash, now))?;
            ctx.meter.file_done();
            return Ok(());
        }
        if round == 1 {
            return Err(TransferError::VerifyMismatch {
                path: fin.into(),
                local_sha256: local_hash,
                remote_sha256: remote_hash,
            });
        }
        ctx.log(format!("{fin}: SHA-256 differs; sending it once more"));
        let back: u64 = chunks.iter().map(|c| c.len).sum();
        ctx.meter.rewind(back);
        ctx.j(|s| journal::chunks_init(s, id, size, chunk))?;
        chunks = ctx.j(|s| journal::chunks(s, id))?;
        method = if streams > 1 {
            FileMethod::Sftp
        } else {
            FileMethod::Stream
        };
    }
    Ok(())
}

/// Check the chunks marked sent against the temp file on the host; returns the verified bytes.
fn verify_sent(
    ctx: &Ctx<'_>,
    conn: &Connection,
    tid: i64,
    tmp: &str,
    chunk: u64,
    chunks: &mut [Chunk],
) -> Result<u64, TransferError> {
    if chunks.iter().all(|c| c.state == ChunkState::Pending) {
        return Ok(0);
    }
    let sftp = conn.session().sftp().map_err(|e| TransferError::ssh(&e))?;
    let rsize = sftp
        .stat(Path::new(tmp))
        .ok()
        .and_then(|s| s.size)
        .unwrap_or(0);
    drop(sftp);
    let check: Vec<usize> = (0..chunks.len())
        .filter(|&i| {
            let c = &chunks[i];
            c.state != ChunkState::Pending && c.sha256.is_some() && c.offset + c.len <= rsize
        })
        .collect();
    let idxs: Vec<u64> = check.iter().map(|&i| chunks[i].idx).collect();
    let hashes = hash::remote_chunks(conn, tmp, chunk, &idxs, ctx.cancel)?;
    let ok: Vec<bool> = check
        .iter()
        .zip(&hashes)
        .map(|(&i, h)| chunks[i].sha256.as_deref() == Some(h.as_str()))
        .collect();
    let mut verified = 0;
    for c in chunks.iter_mut() {
        c.state = ChunkState::Pending;
    }
    for (&i, good) in check.iter().zip(ok) {
        if good {
            chunks[i].state = ChunkState::Verified;
            verified += chunks[i].len;
        }
    }
    let id_chunks: Vec<(u64, ChunkState)> = chunks.iter().map(|c| (c.idx, c.state)).collect();
    ctx.j(|s| {
        for (idx, st) in &id_chunks {
            journal::chunk_set(s, tid, *idx, *st, None)?;
        }
        s.conn().execute(
            "UPDATE transfers SET done_bytes = ?2 WHERE id = ?1",
            rusqlite::params![tid, verified as i64],
        )?;
        Ok(())
    })?;
    ctx.log(format!(
        "{tmp}: resuming with {verified} bytes verified on the host"
    ));
    Ok(verified)
}

fn mark_sent(ctx: &Ctx<'_>, tmp_id: i64, c: &Chunk, sha: &str) -> Result<(), TransferError> {
    let now = ctx.now();
    ctx.j(|s| {
        journal::chunk_set(s, tmp_id, c.idx, ChunkState::Sent, Some(sha))?;
        s.conn().execute(
            "UPDATE transfers SET done_bytes = done_bytes + ?2, updated_ms = ?3,
                state = CASE WHEN state = 'pending' THEN 'partial' ELSE state END WHERE id = ?1",
            rusqlite::params![tmp_id, c.len as i64, now],
        )?;
        Ok(())
    })
}

fn id_of(ctx: &Ctx<'_>, tmp: &str) -> Result<i64, TransferError> {
    ctx.j(|s| {
        Ok(s.conn().query_row(
            "SELECT id FROM transfers WHERE temp_path = ?1",
            [tmp],
            |r| r.get(0),
        )?)
    })
}

/// What the reading thread hands the sending one: bytes, and at a chunk's end its SHA-256.
struct Piece {
    buf: Vec<u8>,
    n: usize,
    done: Option<(usize, String)>,
}

/// Read `pending` from `f` in 4 MiB pieces, hashing each chunk (and with `all` the whole
/// file) on this thread, while the caller's thread encrypts and sends. Buffers come back
/// through `back`. Stops when the receiver is gone.
fn read_pieces(
    mut f: File,
    local: &Path,
    id: i64,
    pending: &[Chunk],
    mut all: Option<Sha256>,
    tx: std::sync::mpsc::SyncSender<Result<Piece, TransferError>>,
    back: std::sync::mpsc::Receiver<Vec<u8>>,
) -> Option<String> {
    for (i, c) in pending.iter().enumerate() {
        let mut h = Sha256::new();
        let mut left = c.len;
        while left > 0 {
            let mut buf = back.try_recv().unwrap_or_else(|_| vec![0u8; PIECE]);
            let want = left.min(buf.len() as u64) as usize;
            let n = match f.read(&mut buf[..want]) {
                Ok(0) => Err(TransferError::SourceChanged { transfer_id: id }),
                Ok(n) => Ok(n),
                Err(e) => Err(TransferError::local(local, &e)),
            };
            let n = match n {
                Ok(n) => n,
                Err(e) => {
                    let _ = tx.send(Err(e));
                    return None;
                }
            };
            h.update(&buf[..n]);
            if let Some(a) = all.as_mut() {
                a.update(&buf[..n]);
            }
            left -= n as u64;
            let done = (left == 0).then(|| (i, hash::hex(&h.clone().finalize())));
            if tx.send(Ok(Piece { buf, n, done })).is_err() {
                return None;
            }
        }
    }
    all.map(|a| hash::hex(&a.finalize()))
}

const PIECE: usize = 4 << 20;

/// The pending chunks form a suffix: one raw stream appended at its start (truncating any
/// unverified tail first). The file is read and hashed on a second thread while this one
/// sends. With `whole` (the suffix is the whole file) the host hashes the file in the same
/// exec right after writing it (`cat > TMP; h < TMP`: on a few cores a `tee` into the hasher
/// is slower than re-reading the page cache). Returns (local, remote) SHA-256 of the whole
/// file when `whole`; the remote one is `None` when the host has no hash tool (the caller's
/// separate check then reports it).
fn stream_up(
    ctx: &Ctx<'_>,
    conn: &Connection,
    local: &Path,
    tmp: &str,
    pending: &[Chunk],
    whole: bool,
) -> Result<(Option<String>, Option<String>), TransferError> {
    let id = id_of(ctx, tmp)?;
    let start = pending.first().map(|c| c.offset).unwrap_or(0);
    let q = shell_quote(tmp)?;
    let script = if whole && start == 0 {
        format!(
            ": > {q} || exit 1\n\
             if python3 -c 'import hashlib' </dev/null >/dev/null 2>&1; then exec python3 -c {} {q}; fi\n\
             {}cat > {q} || exit 1\n[ \"$T\" = n ] || h < {q}",
            shell_quote(hash::TEE_PY)?,
            hash::remote_h_soft()
        )
    } else if start == 0 {
        format!("cat > {q}")
    } else {
        format!("dd if=/dev/null of={q} bs=1 seek={start} 2>/dev/null && cat >> {q}")
    };
    let mut f = File::open(local).map_err(|e| TransferError::local(local, &e))?;
    f.seek(SeekFrom::Start(start))
        .map_err(|e| TransferError::local(local, &e))?;
    let mut st = Stream::open(conn, &script, None)?;
    let all = whole.then(Sha256::new);
    let (tx, rx) = std::sync::mpsc::sync_channel(2);
    let (back_tx, back_rx) = std::sync::mpsc::channel();
    let (sent, local_hash) = std::thread::scope(|s| {
        let reader = s.spawn(move || read_pieces(f, local, id, pending, all, tx, back_rx));
        let sent = (|| -> Result<(), TransferError> {
            for piece in rx.iter() {
                let piece = piece?;
                if ctx.cancel.is_cancelled() {
                    return Err(TransferError::cancelled());
                }
                if let Err(e) = st.write_all(&piece.buf[..piece.n]) {
                    return Err(proc::io_lost(&e));
                }
                ctx.meter.wire(piece.n as u64);
                ctx.meter.add(piece.n as u64);
                if let Some((i, sha)) = &piece.done {
                    mark_sent(ctx, id, &pending[*i], sha)?;
                }
                let _ = back_tx.send(piece.buf);
            }
            Ok(())
        })();
        drop(rx);
        (sent, reader.join().unwrap_or(None))
    });
    if let Err(e) = sent {
        if matches!(e, TransferError::Remote(_)) && !ctx.cancel.is_cancelled() {
            // A write failed: did the command name the cause (a full disk), or is the link gone?
            return Err(st.failure("upload", tmp).unwrap_or(e));
        }
        st.kill(conn);
        return Err(e);
    }
    st.send_eof()?;
    let (status, out, err) = st.finish_out()?;
    if status != Some(0) {
        return Err(TransferError::from_stderr("upload", tmp, &err));
    }
    let remote_hash = if whole { hash::digest_in(&out) } else { None };
    Ok((local_hash, remote_hash))
}

/// Chunks as SFTP byte ranges (open + seek + one write call per chunk) on `streams`
/// connections: the first is `conn`, the others are opened for this.
fn sftp_up(
    ctx: &Ctx<'_>,
    conn: &Connection,
    local: &Path,
    tmp: &str,
    pending: &[Chunk],
    streams: u32,
) -> Result<(), TransferError> {
    let id = id_of(ctx, tmp)?;
    {
        let sftp = conn.session().sftp().map_err(|e| TransferError::ssh(&e))?;
        let flags = ssh2::OpenFlags::WRITE | ssh2::OpenFlags::CREATE;
        sftp.open_mode(Path::new(tmp), flags, 0o644, ssh2::OpenType::File)
            .map_err(|e| sftp::sftp_error(&e, tmp))?;
    }
    let queue = Mutex::new(pending.iter().cloned().collect::<VecDeque<_>>());
    let stop = AtomicBool::new(false);
    let first_err: Mutex<Option<TransferError>> = Mutex::new(None);
    let n = streams.min(pending.len() as u32).max(1);
    std::thread::scope(|s| {
        for k in 0..n {
            let (queue, stop, first_err) = (&queue, &stop, &first_err);
            s.spawn(move || {
                let r = (|| -> Result<(), TransferError> {
                    let own;
                    let c = if k == 0 {
                        conn
                    } else {
                        own = (ctx.connect)(ctx.cancel)?;
                        &own
                    };
                    sftp_worker(ctx, c, local, tmp, id, queue, stop)
                })();
                if let Err(e) = r {
                    stop.store(true, Ordering::SeqCst);
                    if let Ok(mut f) = first_err.lock() {
                        f.get_or_insert(e);
                    }
                }
            });
        }
    });
    match first_err.into_inner().ok().flatten() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn sftp_worker(
    ctx: &Ctx<'_>,
    conn: &Connection,
    local: &Path,
    tmp: &str,
    id: i64,
    queue: &Mutex<VecDeque<Chunk>>,
    stop: &AtomicBool,
) -> Result<(), TransferError> {
    let sftp = conn.session().sftp().map_err(|e| TransferError::ssh(&e))?;
    let mut rf = sftp
        .open_mode(
            Path::new(tmp),
            ssh2::OpenFlags::WRITE,
            0o644,
            ssh2::OpenType::File,
        )
        .map_err(|e| sftp::sftp_error(&e, tmp))?;
    let lf = File::open(local).map_err(|e| TransferError::local(local, &e))?;
    let mut buf = Vec::new();
    loop {
        ctx.cancel.check()?;
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
        let Some(c) = queue.lock().ok().and_then(|mut q| q.pop_front()) else {
            return Ok(());
        };
        buf.resize(c.len as usize, 0);
        portable::read_exact_at(&lf, &mut buf, c.offset)
            .map_err(|_| TransferError::SourceChanged { transfer_id: id })?;
        let sha = hash::sha256_hex(&buf);
        rf.seek(SeekFrom::Start(c.offset))
            .map_err(|e| sftp::sftp_io_error(&e, tmp))?;
        if let Err(e) = rf.write_all(&buf).and_then(|_| rf.flush()) {
            let err = sftp::sftp_io_error(&e, tmp);
            return Err(disk_full_or(conn, tmp, c.len, err, ctx));
        }
        ctx.meter.wire(c.len);
        ctx.meter.add(c.len);
        mark_sent(ctx, id, &c, &sha)?;
    }
}

/// OpenSSH's SFTP server reports a full disk as a generic failure, and ssh2 hands SFTP write
/// errors over without their status: ask `df` on the same connection. If that fails too, the
/// link is gone (resumable); if space is short, the disk is full; otherwise report the error.
fn disk_full_or(
    conn: &Connection,
    tmp: &str,
    need: u64,
    err: TransferError,
    ctx: &Ctx<'_>,
) -> TransferError {
    let dir = tmp.rsplit_once('/').map(|(d, _)| d).unwrap_or(".");
    let dir = if dir.is_empty() { "/" } else { dir };
    let Ok(q) = shell_quote(dir) else {
        return err;
    };
    let script = format!("df -Pk -- {q} | tail -n 1");
    match proc::run(conn, &script, None, ctx.cancel) {
        Ok(out) => {
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            let avail_kib: Option<u64> =
                text.split_whitespace().nth(3).and_then(|v| v.parse().ok());
            match avail_kib {
                Some(a) if a * 1024 < need => TransferError::RemoteDiskFull {
                    path: tmp.into(),
                    detail: format!("{err}; df: {}", text.trim()),
                },
                _ if err.is_link_failure() => TransferError::RemoteCommandFailed {
                    what: "sftp write".into(),
                    detail: err.to_string(),
                },
                _ => err,
            }
        }
        Err(e) if e.is_link_failure() => e,
        Err(_) => err,
    }
}
