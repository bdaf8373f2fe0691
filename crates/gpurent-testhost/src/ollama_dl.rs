//! A loopback stand-in for `https://ollama.com/download` (gpurent's Ollama install tests): it
//! serves `ollama-linux-amd64.tgz` and `ollama-linux-arm64.tgz`, each a real gzip'd tar laid out
//! like Ollama's release archive (`bin/ollama`, `lib/ollama/…`), whose `bin/ollama` is the fake
//! `ollama` of `<fakegpu>/bin` (it runs `ollama_fake.py` from `$FAKEGPU_DIR`), and the release's
//! `sha256sum.txt` ([`Sums`]: right by default). HEAD answers the `Content-Length`, GET the
//! bytes; anything else is 404. Point the product at it with
//! `GPURENT_OLLAMA_DOWNLOAD_URL` = [`OllamaDownloads::base`].

use std::io;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// What the server's `sha256sum.txt` says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sums {
    /// The archives' real SHA-256 (a good release).
    Right,
    /// Another hash (the archive was altered or damaged on the way).
    Wrong,
    /// No `sha256sum.txt` (404).
    Missing,
}

/// The running server; stops on drop.
pub struct OllamaDownloads {
    server: Arc<tiny_http::Server>,
    thread: Option<std::thread::JoinHandle<()>>,
    gets: Arc<AtomicUsize>,
    port: u16,
    /// The archive's size in bytes.
    pub archive_len: u64,
    _dir: tempfile::TempDir,
}

impl OllamaDownloads {
    /// Build the archive from `<fakegpu>/bin/ollama` (plus `pad_bytes` of library filler, so a
    /// download takes a moment) and serve it.
    pub fn start(fakegpu: &Path, pad_bytes: usize) -> io::Result<OllamaDownloads> {
        OllamaDownloads::start_paced(fakegpu, pad_bytes, None)
    }

    /// [`OllamaDownloads::start`], sending the archive in 64 KiB pieces with `pause` after each
    /// (a slow mirror: for progress and cancel tests).
    pub fn start_paced(
        fakegpu: &Path,
        pad_bytes: usize,
        pause: Option<std::time::Duration>,
    ) -> io::Result<OllamaDownloads> {
        OllamaDownloads::start_with(fakegpu, pad_bytes, pause, Sums::Right)
    }

    /// [`OllamaDownloads::start_paced`], with `sha256sum.txt` as `sums` says.
    pub fn start_with(
        fakegpu: &Path,
        pad_bytes: usize,
        pause: Option<std::time::Duration>,
        sums: Sums,
    ) -> io::Result<OllamaDownloads> {
        let dir = tempfile::tempdir()?;
        let root = dir.path().join("root");
        std::fs::create_dir_all(root.join("bin"))?;
        std::fs::create_dir_all(root.join("lib/ollama"))?;
        std::fs::copy(fakegpu.join("bin/ollama"), root.join("bin/ollama"))?;
        // Filler that gzip cannot shrink much (a simple LCG), standing in for the CUDA libraries.
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        let pad: Vec<u8> = (0..pad_bytes)
            .map(|_| {
                x = x
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                (x >> 56) as u8
            })
            .collect();
        std::fs::write(root.join("lib/ollama/libggml-fake.so"), pad)?;
        let tgz = dir.path().join("ollama.tgz");
        let st = Command::new("tar")
            .arg("-czf")
            .arg(&tgz)
            .arg("-C")
            .arg(&root)
            .args(["bin", "lib"])
            .status()?;
        if !st.success() {
            return Err(io::Error::other("tar -czf failed"));
        }
        let data = Arc::new(std::fs::read(&tgz)?);
        // sha256sum.txt as a release publishes it (`HASH  ./NAME`, one line per asset).
        let out = Command::new("sha256sum").arg(&tgz).output()?;
        let real = String::from_utf8_lossy(&out.stdout)
            .split_whitespace()
            .next()
            .unwrap_or_default()
            .to_string();
        let hash = match sums {
            Sums::Right | Sums::Missing => real,
            // The sum of other bytes: what an altered or damaged download is checked against.
            Sums::Wrong => format!("{:0>64}", "bad"),
        };
        let sums_text = Arc::new(if sums == Sums::Missing {
            None
        } else {
            Some(format!(
                "{hash}  ./ollama-linux-amd64.tgz\n{hash}  ./ollama-linux-arm64.tgz\n0000000000000000000000000000000000000000000000000000000000000000  ./OllamaSetup.exe\n"
            ))
        });
        let server = Arc::new(
            tiny_http::Server::http("127.0.0.1:0").map_err(|e| io::Error::other(e.to_string()))?,
        );
        let port = server
            .server_addr()
            .to_ip()
            .map(|a| a.port())
            .ok_or_else(|| io::Error::other("no port"))?;
        let gets = Arc::new(AtomicUsize::new(0));
        let (s, g, d) = (server.clone(), gets.clone(), data.clone());
        let thread = std::thread::spawn(move || {
            for req in s.incoming_requests() {
                if let (Some(text), "/download/sha256sum.txt") = (sums_text.as_ref(), req.url()) {
                    let _ = req.respond(tiny_http::Response::from_string(text.clone()));
                    continue;
                }
                let known = matches!(
                    req.url(),
                    "/download/ollama-linux-amd64.tgz" | "/download/ollama-linux-arm64.tgz"
                );
                let _ = if known {
                    if *req.method() == tiny_http::Method::Get {
                        g.fetch_add(1, Ordering::SeqCst);
                    }
                    // A Content-Length, as a release download has (not chunked).
                    let body = Paced {
                        data: d.clone(),
                        at: 0,
                        pause,
                    };
                    req.respond(
                        tiny_http::Response::new(
                            tiny_http::StatusCode(200),
                            Vec::new(),
                            body,
                            Some(d.len()),
                            None,
                        )
                        .with_chunked_threshold(usize::MAX),
                    )
                } else {
                    req.respond(
                        tiny_http::Response::from_string("404 page not found")
                            .with_status_code(404),
                    )
                };
            }
        });
        Ok(OllamaDownloads {
            server,
            thread: Some(thread),
            gets,
            port,
            archive_len: data.len() as u64,
            _dir: dir,
        })
    }

    /// The download base URL (`http://127.0.0.1:PORT/download`).
    pub fn base(&self) -> String {
        format!("http://127.0.0.1:{}/download", self.port)
    }

    /// GET requests for an archive so far.
    pub fn downloads(&self) -> usize {
        self.gets.load(Ordering::SeqCst)
    }
}

/// The archive as a reader that pauses after each piece.
struct Paced {
    data: Arc<Vec<u8>>,
    at: usize,
    pause: Option<std::time::Duration>,
}

impl io::Read for Paced {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = buf.len().min(64 * 1024).min(self.data.len() - self.at);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        if let (Some(p), true) = (self.pause, n > 0) {
            std::thread::sleep(p);
        }
        Ok(n)
    }
}

impl std::fmt::Debug for OllamaDownloads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OllamaDownloads")
            .field("port", &self.port)
            .field("archive_len", &self.archive_len)
            .field("downloads", &self.downloads())
            .finish()
    }
}

impl Drop for OllamaDownloads {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
