//! SHA-256 on both ends. Here: `sha2` (SHA-NI where the CPU has it). On the host: the first tool
//! that works of `openssl dgst -sha256` (fastest), `sha256sum`, `shasum -a 256` and a `python3`
//! hashlib one-liner, always reading stdin (no file-name escaping to parse). Folders are hashed in
//! one batch (`sha256sum -z`, or python3) over a NUL-separated list on stdin.

use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::infra::cancel::CancelToken;
use crate::remote::{shell_quote, Connection};
use crate::transfer::proc::{self, Stream};
use crate::transfer::TransferError;

pub fn hex(d: &[u8]) -> String {
    d.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn sha256_hex(data: &[u8]) -> String {
    hex(&Sha256::digest(data))
}

/// SHA-256 of the first `len` bytes of a local file (`None`: all of it).
pub fn local_file(
    path: &Path,
    len: Option<u64>,
    cancel: &CancelToken,
) -> Result<String, TransferError> {
    let f = std::fs::File::open(path).map_err(|e| TransferError::local(path, &e))?;
    let mut r: Box<dyn Read> = match len {
        Some(n) => Box::new(f.take(n)),
        None => Box::new(f),
    };
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        cancel.check()?;
        let n = r
            .read(&mut buf)
            .map_err(|e| TransferError::local(path, &e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    Ok(hex(&h.finalize()))
}

/// Defines `h` (hash stdin → 64 hex chars) with the first working tool, or exits 97.
pub const REMOTE_H: &str = r#"if openssl dgst -sha256 -r </dev/null >/dev/null 2>&1; then T=o
elif sha256sum </dev/null >/dev/null 2>&1; then T=s
elif shasum -a 256 </dev/null >/dev/null 2>&1; then T=p
elif python3 -c 'import hashlib' </dev/null >/dev/null 2>&1; then T=y
else echo "gpurent: no sha256 tool" >&2; exit 97; fi
h() { case $T in
 o) openssl dgst -sha256 -r;; s) sha256sum;; p) shasum -a 256;;
 y) python3 -c 'import hashlib,sys;h=hashlib.sha256();[h.update(b) for b in iter(lambda:sys.stdin.buffer.read(1<<20),b"")];print(h.hexdigest())';;
 esac | cut -c1-64; }
"#;

/// [`REMOTE_H`] that sets `T=n` instead of exiting when no tool works (the caller then hashes
/// another way, or not at all).
pub fn remote_h_soft() -> String {
    REMOTE_H.replace("echo \"gpurent: no sha256 tool\" >&2; exit 97", "T=n")
}

/// The 64-hex SHA-256 a remote `h` printed, if any.
pub fn digest_in(out: &[u8]) -> Option<String> {
    lines(out)
        .into_iter()
        .find(|l| l.len() == 64 && l.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn lines(out: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(out)
        .lines()
        .map(|l| l.trim().to_string())
        .collect()
}

fn check_tool(out: &proc::Output) -> Result<(), TransferError> {
    if out.status == Some(97) {
        return Err(TransferError::HashToolMissing);
    }
    Ok(())
}

/// `tee FILE | sha256` in one process with 1 MiB buffers: stdin to the file named by argv[1],
/// its SHA-256 on stdout. A failed write (a full disk) ends it with the OSError on stderr.
pub const TEE_PY: &str = "import hashlib,sys
h=hashlib.sha256();b=bytearray(1<<20);m=memoryview(b);i=sys.stdin.buffer.raw
with open(sys.argv[1],'wb',buffering=0) as f:
 while True:
  k=i.readinto(b)
  if not k: break
  d=m[:k];h.update(d)
  while d: d=d[f.write(d):]
print(h.hexdigest())
";

/// SHA-256 of a remote file (`None` length: all of it; else its first `len` bytes).
pub fn remote_file(
    conn: &Connection,
    path: &str,
    len: Option<u64>,
    cancel: &CancelToken,
) -> Result<String, TransferError> {
    let q = shell_quote(path)?;
    let body = match len {
        None => format!("h < {q}"),
        Some(n) => format!("head -c {n} < {q} | h"),
    };
    let script = format!(
        "{REMOTE_H}[ -e {q} ] || {{ echo 'No such file or directory' >&2; exit 2; }}\n{body}"
    );
    let out = proc::run(conn, &script, None, cancel)?;
    check_tool(&out)?;
    if out.status != Some(0) {
        return Err(TransferError::from_stderr("sha256", path, &out.stderr));
    }
    lines(&out.stdout)
        .into_iter()
        .find(|l| l.len() == 64)
        .ok_or_else(|| TransferError::RemoteCommandFailed {
            what: "sha256".into(),
            detail: out.stderr,
        })
}

/// SHA-256 of chunks `idxs` (each `chunk` bytes, the last one shorter) of a remote file, in
/// order. A missing file hashes as empty chunks (they then do not match).
pub fn remote_chunks(
    conn: &Connection,
    path: &str,
    chunk: u64,
    idxs: &[u64],
    cancel: &CancelToken,
) -> Result<Vec<String>, TransferError> {
    if idxs.is_empty() {
        return Ok(Vec::new());
    }
    let list = idxs
        .iter()
        .map(|i| i.to_string())
        .collect::<Vec<_>>()
        .join(" ");
    let script = format!(
        "{REMOTE_H}for i in {list}; do dd if={} bs={chunk} skip=$i count=1 2>/dev/null | h; done",
        shell_quote(path)?
    );
    let out = proc::run(conn, &script, None, cancel)?;
    check_tool(&out)?;
    let l = lines(&out.stdout);
    if out.status != Some(0) || l.len() != idxs.len() {
        return Err(TransferError::from_stderr("sha256", path, &out.stderr));
    }
    Ok(l)
}

/// Hashes NUL-separated names from stdin: `HEX  NAME\0` each, one output write at the end.
/// Python's hashlib is OpenSSL's SHA-256 (SHA-NI): ~2× faster than coreutils `sha256sum`, which
/// is the fallback.
const TREE_PY: &str = "import hashlib,sys
b=bytearray(1<<18);m=memoryview(b);o=[];x=[]
for n in sys.stdin.buffer.read().split(b'\\0'):
 if not n: continue
 try:
  h=hashlib.sha256()
  with open(n,'rb',buffering=0) as f:
   while True:
    k=f.readinto(b)
    if not k: break
    h.update(m[:k])
  o.append(h.hexdigest().encode()+b'  '+n+b'\\0')
 except OSError as e: x.append(str(e))
sys.stdout.buffer.write(b''.join(o));sys.stdout.flush()
if x: sys.stderr.write('\\n'.join(x[:20])+'\\n')
";

/// The folder hashing script: NUL-separated names on stdin, `HEX  NAME\0` records on stdout, a
/// few lines on stderr at most (so stdout can be read to its end first).
fn tree_script(dir: &str) -> Result<String, TransferError> {
    Ok(format!(
        "cd -- {} || exit 2\n\
         if python3 -c 'import hashlib' </dev/null >/dev/null 2>&1; then python3 -c {}\n\
         elif printf '' | sha256sum -z >/dev/null 2>&1; then\n\
          xargs -0 -r sha256sum -z -- 2>&1 >&3 | head -n 20 >&2\n\
         else echo 'gpurent: no sha256 tool' >&2; exit 97; fi 3>&1",
        shell_quote(dir)?,
        shell_quote(TREE_PY)?
    ))
}

fn names_stdin(rels: &[Vec<u8>]) -> Vec<u8> {
    let mut stdin = Vec::new();
    for r in rels {
        stdin.extend_from_slice(r);
        stdin.push(0);
    }
    stdin
}

fn tree_answer(
    dir: &str,
    status: Option<i32>,
    stdout: &[u8],
    stderr: &str,
) -> Result<HashMap<Vec<u8>, String>, TransferError> {
    if status == Some(97) {
        return Err(TransferError::HashToolMissing);
    }
    if status == Some(2) {
        return Err(TransferError::from_stderr("sha256", dir, stderr));
    }
    let mut map = HashMap::new();
    for rec in stdout.split(|b| *b == 0) {
        if rec.len() > 66 && &rec[64..66] == b"  " {
            let hash = String::from_utf8_lossy(&rec[..64]).into_owned();
            map.insert(rec[66..].to_vec(), hash);
        }
    }
    Ok(map)
}

/// SHA-256 of many files under a remote folder, by relative path (bytes). Files that cannot be
/// read are absent from the answer.
pub fn remote_tree(
    conn: &Connection,
    dir: &str,
    rels: &[Vec<u8>],
    cancel: &CancelToken,
) -> Result<HashMap<Vec<u8>, String>, TransferError> {
    let out = proc::run(conn, &tree_script(dir)?, Some(&names_stdin(rels)), cancel)?;
    tree_answer(dir, out.status, &out.stdout, &out.stderr)
}

/// [`remote_tree`] started on its own channel and collected later, so the host hashes while
/// something else (a download's tar stream) moves on the same connection.
#[derive(Debug)]
pub struct TreeHashing {
    st: Stream,
    dir: String,
}

impl TreeHashing {
    pub fn start(conn: &Connection, dir: &str, rels: &[Vec<u8>]) -> Result<Self, TransferError> {
        let mut st = Stream::open(conn, &tree_script(dir)?, None)?;
        let sent = st.write_all(&names_stdin(rels));
        if let Err(e) = sent {
            st.kill(conn);
            return Err(proc::io_lost(&e));
        }
        st.send_eof()?;
        Ok(TreeHashing {
            st,
            dir: dir.to_string(),
        })
    }

    /// Wait for the answer (stdout is read first: the script keeps stderr short).
    pub fn finish(self) -> Result<HashMap<Vec<u8>, String>, TransferError> {
        let (status, out, err) = self.st.finish_stdout_first()?;
        tree_answer(&self.dir, status, &out, &err)
    }

    /// Stop the hashing on the host (cancel, or the download failed).
    pub fn kill(self, conn: &Connection) {
        self.st.kill(conn);
    }
}

/// One hash for a whole folder: SHA-256 over its sorted `hash  path\n` lines.
pub fn tree_digest(files: &HashMap<Vec<u8>, String>) -> String {
    let mut v: Vec<_> = files.iter().collect();
    v.sort();
    let mut h = Sha256::new();
    for (p, d) in v {
        h.update(d.as_bytes());
        h.update(b"  ");
        h.update(p);
        h.update(b"\n");
    }
    hex(&h.finalize())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_hashes_match_known_values() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        let tmp = tempfile::tempdir().expect("tmp");
        let p = tmp.path().join("f");
        std::fs::write(&p, b"abcdef").expect("write");
        let c = CancelToken::new();
        assert_eq!(local_file(&p, None, &c).expect("h"), sha256_hex(b"abcdef"));
        assert_eq!(local_file(&p, Some(3), &c).expect("h"), sha256_hex(b"abc"));
        let mut m = HashMap::new();
        m.insert(b"b".to_vec(), "2".to_string());
        m.insert(b"a".to_vec(), "1".to_string());
        assert_eq!(tree_digest(&m), sha256_hex(b"1  a\n2  b\n"));
    }
}
