//! An https server on loopback that answers every request (GET or HEAD) with `302 Found` to the
//! same path under another base URL: a mirror that moves a download from https to plain http
//! (gpurent's Ollama install must refuse it). Python's `http.server` behind `ssl`, with a fresh
//! self-signed certificate for `127.0.0.1` made by `openssl`; the host's `curl` trusts it through
//! `CURL_CA_BUNDLE` = [`TlsRedirect::ca_file`]. Stopped on drop.

use std::io;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SERVER: &str = r#"
import http.server, os, ssl, sys
to, cert, key, portfile = sys.argv[1:5]
class H(http.server.BaseHTTPRequestHandler):
    def moved(self):
        self.send_response(302)
        self.send_header("Location", to + self.path)
        self.send_header("Content-Length", "0")
        self.end_headers()
    do_GET = moved
    do_HEAD = moved
    def log_message(self, *a):
        pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(cert, key)
s.socket = ctx.wrap_socket(s.socket, server_side=True)
with open(portfile + ".tmp", "w") as f:
    f.write(str(s.server_address[1]))
os.rename(portfile + ".tmp", portfile)
s.serve_forever()
"#;

/// The running redirector.
#[derive(Debug)]
pub struct TlsRedirect {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl TlsRedirect {
    /// Redirect every request for `PATH` to `to` + `PATH` (`to`: e.g. `http://127.0.0.1:8080`).
    pub fn start(to: &str) -> io::Result<TlsRedirect> {
        let dir = tempfile::tempdir()?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755))?;
        let (cert, key) = (dir.path().join("cert.pem"), dir.path().join("key.pem"));
        let st = Command::new("openssl")
            .args(["req", "-x509", "-newkey", "ec", "-pkeyopt"])
            .args(["ec_paramgen_curve:prime256v1", "-nodes", "-days", "2"])
            .args([
                "-subj",
                "/CN=127.0.0.1",
                "-addext",
                "subjectAltName=IP:127.0.0.1",
            ])
            .arg("-keyout")
            .arg(&key)
            .arg("-out")
            .arg(&cert)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()?;
        if !st.success() {
            return Err(io::Error::other("openssl req failed"));
        }
        std::fs::set_permissions(&cert, std::fs::Permissions::from_mode(0o644))?;
        let portfile = dir.path().join("port");
        let mut child = Command::new(crate::fakegpu::real_python()?)
            .arg("-c")
            .arg(SERVER)
            .arg(to.trim_end_matches('/'))
            .arg(&cert)
            .arg(&key)
            .arg(&portfile)
            .stdin(Stdio::null())
            .spawn()?;
        let t = Instant::now();
        let port = loop {
            if let Some(p) = std::fs::read_to_string(&portfile)
                .ok()
                .and_then(|s| s.trim().parse().ok())
            {
                break p;
            }
            if let Some(st) = child.try_wait()? {
                return Err(io::Error::other(format!(
                    "the https redirector exited: {st}"
                )));
            }
            if t.elapsed() > Duration::from_secs(15) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(io::Error::other("the https redirector did not start"));
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        Ok(TlsRedirect { child, port, dir })
    }

    /// `https://127.0.0.1:PORT`.
    pub fn base(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// The certificate to trust (its own CA), readable by the test users.
    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("cert.pem")
    }
}

impl Drop for TlsRedirect {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
