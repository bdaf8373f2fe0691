//! One HTTP/1.1 request to `127.0.0.1:PORT` on the host (Ollama's API, Jupyter's), over a `direct-tcpip` channel of the SSH
//! connection: `Connection: close`, the body by `Content-Length`, chunks, or until the end; every
//! complete line of the decoded body also goes to `on_line` as it arrives (NDJSON streams).
//! Memory is bounded: lines already handed out are dropped from the body once it passes
//! [`KEEP_BODY`], and a line longer than [`MAX_LINE`] is refused. A caller can stop reading
//! between chunks ([`request_until`]: a cancel, a length cap).

use std::io::{Read, Write};

use crate::remote::connect::Connection;
use crate::remote::error::{RemoteError, Stage};

#[derive(Debug)]
pub enum HttpError {
    /// Nothing listens on the port (the channel open was refused).
    Refused,
    Remote(RemoteError),
    Bad(String),
}

/// Bodies up to this size are kept whole for the caller (`/api/version`, `/api/ps`, an error).
pub const KEEP_BODY: usize = 1 << 20;
/// The longest line (or unterminated body) accepted.
pub const MAX_LINE: usize = 8 << 20;
/// The longest response head accepted (a host's server that never ends its head).
pub const MAX_HEAD: usize = 64 << 10;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Length(usize),
    Chunked,
    UntilEof,
}

/// Decodes a response as bytes arrive.
#[derive(Debug, Default)]
pub struct Decoder {
    raw: Vec<u8>,
    head: Option<(u16, Framing)>,
    body: Vec<u8>,
    line_start: usize,
    /// Body bytes taken so far, those already dropped from `body` included.
    taken: usize,
    done: bool,
}

impl Decoder {
    /// Feed bytes; complete body lines go to `on_line`.
    pub fn push(&mut self, data: &[u8], on_line: &mut dyn FnMut(&str)) -> Result<(), HttpError> {
        self.raw.extend_from_slice(data);
        if self.head.is_none() {
            let Some(end) = self.raw.windows(4).position(|w| w == b"\r\n\r\n") else {
                if self.raw.len() > MAX_HEAD {
                    return Err(HttpError::Bad(format!(
                        "an answer head longer than {} KiB",
                        MAX_HEAD >> 10
                    )));
                }
                return Ok(());
            };
            let head = String::from_utf8_lossy(&self.raw[..end]).into_owned();
            self.raw.drain(..end + 4);
            let mut lines = head.lines();
            let status = lines
                .next()
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|s| s.parse().ok())
                .ok_or_else(|| HttpError::Bad(format!("not an HTTP answer: {head:.60}")))?;
            let mut framing = Framing::UntilEof;
            for l in lines {
                let Some((k, v)) = l.split_once(':') else {
                    continue;
                };
                let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
                if k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked") {
                    framing = Framing::Chunked;
                } else if k == "content-length" && framing != Framing::Chunked {
                    framing = Framing::Length(
                        v.parse()
                            .map_err(|_| HttpError::Bad("content-length".into()))?,
                    );
                }
            }
            self.head = Some((status, framing));
        }
        let Some((_, framing)) = self.head else {
            return Ok(());
        };
        match framing {
            Framing::Length(n) => {
                let take = n.saturating_sub(self.taken).min(self.raw.len());
                self.body.extend(self.raw.drain(..take));
                self.taken += take;
                self.done = self.taken == n;
                // Bytes past the announced length are not body.
                if self.done {
                    self.raw.clear();
                }
            }
            Framing::UntilEof => {
                self.taken += self.raw.len();
                self.body.append(&mut self.raw);
            }
            Framing::Chunked => {
                while let Some(eol) = self.raw.windows(2).position(|w| w == b"\r\n") {
                    let size_text = String::from_utf8_lossy(&self.raw[..eol]).into_owned();
                    let size =
                        usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
                            .map_err(|_| HttpError::Bad(format!("bad chunk size '{size_text}'")))?;
                    if size == 0 {
                        self.done = true;
                        self.raw.clear();
                        break;
                    }
                    // A host's server names the size: checked, never trusted (an overflow
                    // panicked here).
                    let Some(end) = (eol + 2)
                        .checked_add(size)
                        .filter(|e| e.checked_add(2).is_some())
                    else {
                        return Err(HttpError::Bad(format!("bad chunk size '{size_text}'")));
                    };
                    if self.raw.len() < end + 2 {
                        break;
                    }
                    self.body.extend_from_slice(&self.raw[eol + 2..end]);
                    self.taken += size;
                    self.raw.drain(..end + 2);
                }
            }
        }
        while let Some(i) = self.body[self.line_start..]
            .iter()
            .position(|&b| b == b'\n')
        {
            let line = String::from_utf8_lossy(&self.body[self.line_start..self.line_start + i])
                .into_owned();
            self.line_start += i + 1;
            on_line(line.trim_end_matches('\r'));
        }
        if self.line_start > KEEP_BODY {
            self.body.drain(..self.line_start);
            self.line_start = 0;
        }
        if self.body.len() - self.line_start > MAX_LINE || self.raw.len() > MAX_LINE {
            return Err(HttpError::Bad(format!(
                "an answer line longer than {} MiB",
                MAX_LINE >> 20
            )));
        }
        Ok(())
    }

    /// The response once the stream ended; the last unterminated line goes to `on_line`.
    pub fn finish(mut self, on_line: &mut dyn FnMut(&str)) -> Result<Response, HttpError> {
        let (status, _) = self
            .head
            .ok_or_else(|| HttpError::Bad("no HTTP answer".into()))?;
        if self.line_start < self.body.len() {
            let line = String::from_utf8_lossy(&self.body[self.line_start..]).into_owned();
            on_line(line.trim_end());
        }
        self.done = true;
        Ok(Response {
            status,
            body: self.body,
        })
    }

    pub fn is_done(&self) -> bool {
        self.done
    }
}

/// Send one request and read its answer.
pub fn request(
    conn: &Connection,
    port: u16,
    method: &str,
    path: &str,
    body: Option<&str>,
    on_line: &mut dyn FnMut(&str),
) -> Result<Response, HttpError> {
    request_with(conn, port, method, path, &[], body, on_line)
}

/// [`request`] with extra header lines (`Authorization: token …`; kept out of any log).
pub fn request_with(
    conn: &Connection,
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
    on_line: &mut dyn FnMut(&str),
) -> Result<Response, HttpError> {
    request_until(conn, port, method, path, headers, body, on_line, &|| false).map(|(r, _)| r)
}

/// [`request_with`], asking `stop` after each chunk read: when it says so the channel is closed
/// at once and the answer so far comes back with `true` (a cancelled pull, a chat at its cap).
#[allow(clippy::too_many_arguments)]
pub fn request_until(
    conn: &Connection,
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
    on_line: &mut dyn FnMut(&str),
    stop: &dyn Fn() -> bool,
) -> Result<(Response, bool), HttpError> {
    let io_ms = conn.options().io_timeout.as_millis() as u64;
    let mut ch = conn
        .session()
        .channel_direct_tcpip("127.0.0.1", port, None)
        .map_err(|e| match e.code() {
            // LIBSSH2_ERROR_CHANNEL_FAILURE: sshd could not connect to the port.
            ssh2::ErrorCode::Session(-21) => HttpError::Refused,
            _ => HttpError::Remote(RemoteError::from_ssh(Stage::Exec, &e, io_ms)),
        })?;
    let body = body.unwrap_or("");
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUser-Agent: gpurent\r\nAccept: application/json\r\nContent-Type: application/json\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let io = |e: std::io::Error| {
        HttpError::Remote(RemoteError::from_io(Stage::Exec, "ollama", &e, io_ms))
    };
    ch.write_all(req.as_bytes()).map_err(io)?;
    ch.flush().map_err(io)?;
    let mut d = Decoder::default();
    let mut buf = vec![0u8; 32 * 1024];
    let mut stopped = false;
    loop {
        if stop() {
            stopped = true;
            break;
        }
        let n = ch.read(&mut buf).map_err(io)?;
        if n == 0 {
            break;
        }
        d.push(&buf[..n], on_line)?;
        if d.is_done() {
            break;
        }
    }
    let _ = ch.close();
    if stopped && d.head.is_none() {
        return Ok((
            Response {
                status: 0,
                body: Vec::new(),
            },
            true,
        ));
    }
    Ok((d.finish(on_line)?, stopped))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(parts: &[&[u8]]) -> (Response, Vec<String>) {
        let mut d = Decoder::default();
        let mut lines = Vec::new();
        for p in parts {
            d.push(p, &mut |l| lines.push(l.to_string())).expect("push");
        }
        let r = d
            .finish(&mut |l| lines.push(l.to_string()))
            .expect("finish");
        (r, lines)
    }

    #[test]
    fn chunked_ndjson_split_anywhere_gives_whole_lines() {
        let raw = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-ndjson\r\nTransfer-Encoding: chunked\r\n\r\n19\r\n{\"status\":\"pulling\"}\n{\"a\"\r\n4\r\n:1}\n\r\n0\r\n\r\n";
        for cut in [1, 10, 60, 75, 90, raw.len() - 1] {
            let (r, lines) = decode(&[&raw[..cut], &raw[cut..]]);
            assert_eq!(r.status, 200);
            assert_eq!(
                lines,
                vec!["{\"status\":\"pulling\"}", "{\"a\":1}"],
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_length_body_and_an_error_status() {
        let (r, lines) = decode(&[
            b"HTTP/1.1 404 Not Found\r\nContent-Length: 17\r\n\r\n{\"error\":\"nope\"}\n",
        ]);
        assert_eq!(r.status, 404);
        assert_eq!(lines, vec!["{\"error\":\"nope\"}"]);
    }

    #[test]
    fn a_long_stream_keeps_only_a_bounded_body_and_a_huge_line_is_refused() {
        let mut d = Decoder::default();
        let mut n = 0usize;
        d.push(b"HTTP/1.1 200 OK\r\n\r\n", &mut |_| {})
            .expect("head");
        let line = [b'x'; 999];
        for _ in 0..5000 {
            d.push(&line, &mut |_| {}).expect("push");
            d.push(b"\n", &mut |_| n += 1).expect("push");
        }
        assert_eq!(n, 5000);
        assert!(d.body.len() <= KEEP_BODY + 1000, "{}", d.body.len());
        let mut big = Decoder::default();
        big.push(b"HTTP/1.1 200 OK\r\n\r\n", &mut |_| {})
            .expect("head");
        let chunk = vec![b'y'; 1 << 20];
        let r = (0..10).try_for_each(|_| big.push(&chunk, &mut |_| {}));
        assert!(r.is_err(), "a line over MAX_LINE is refused");
    }

    /// A hostile host's server on the forwarded port (security review §7.5): a chunk size that
    /// overflows the decoder's arithmetic is an error, never a panic.
    #[test]
    fn an_overflowing_chunk_size_is_an_error_not_a_panic() {
        for size in ["FFFFFFFFFFFFFFFF", "FFFFFFFFFFFFFFFD", "10000000000000000"] {
            let mut d = Decoder::default();
            let raw =
                format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n{size}\r\nxx\r\n");
            let r = d.push(raw.as_bytes(), &mut |_| {});
            assert!(
                matches!(r, Err(HttpError::Bad(_))),
                "chunk size {size}: {r:?}"
            );
        }
    }

    /// A head that never ends is refused once it passes [`MAX_HEAD`], not kept growing.
    #[test]
    fn a_head_without_an_end_is_bounded() {
        let mut d = Decoder::default();
        let mut r = d.push(b"HTTP/1.1 200 OK\r\n", &mut |_| {});
        let filler = [b'a'; 4096];
        for _ in 0..(MAX_HEAD / filler.len() + 2) {
            if r.is_err() {
                break;
            }
            r = d.push(&filler, &mut |_| {});
        }
        assert!(matches!(r, Err(HttpError::Bad(_))), "{r:?}");
        assert!(d.raw.len() <= MAX_HEAD + filler.len(), "{}", d.raw.len());
    }

    /// A `Content-Length` body longer than [`KEEP_BODY`] ends at its length (the lines handed
    /// out and dropped still count), and bytes past it are not taken as body.
    #[test]
    fn a_long_length_body_ends_at_its_length() {
        let line = format!("{}\n", "z".repeat(999));
        let lines = 3 * KEEP_BODY / line.len();
        let n = lines * line.len();
        let mut d = Decoder::default();
        d.push(
            format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n\r\n").as_bytes(),
            &mut |_| {},
        )
        .expect("head");
        let mut seen = 0usize;
        for _ in 0..lines {
            d.push(line.as_bytes(), &mut |_| seen += 1).expect("push");
        }
        assert!(d.is_done(), "done after exactly {n} bytes");
        d.push(b"EXTRA LINE\n", &mut |_| seen += 1).expect("push");
        let r = d.finish(&mut |_| seen += 1).expect("finish");
        assert_eq!(seen, lines, "nothing past the length is a line");
        assert!(!String::from_utf8_lossy(&r.body).contains("EXTRA"));
    }

    /// Seeded fuzz: whatever a host's server sends, split anywhere, the decoder answers or
    /// refuses without a panic, and keeps no more than its bounds.
    #[test]
    fn any_bytes_split_anywhere_never_panic_and_stay_bounded() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let pieces: [&[u8]; 12] = [
            b"HTTP/1.1 200 OK\r\n",
            b"Transfer-Encoding: chunked\r\n",
            b"Content-Length: 5\r\n",
            b"Content-Length: 99999999999999999999\r\n",
            b"\r\n",
            b"FFFFFFFFFFFFFFFF\r\n",
            b"7fffffffffffffff;x=y\r\n",
            b"3\r\nabc\r\n",
            b"0\r\n\r\n",
            b"{\"a\":1}\n",
            b"\xff\xfe\x00garbage",
            b"-1\r\n",
        ];
        for _ in 0..3000 {
            let mut raw = Vec::new();
            for _ in 0..(next() % 12) {
                raw.extend_from_slice(pieces[(next() % 12) as usize]);
            }
            let mut d = Decoder::default();
            let mut ok = true;
            let mut at = 0;
            while at < raw.len() && ok {
                let n = 1 + (next() as usize % raw.len());
                let end = (at + n).min(raw.len());
                ok = d.push(&raw[at..end], &mut |_| {}).is_ok();
                at = end;
                assert!(d.raw.len() <= MAX_LINE.max(MAX_HEAD) + raw.len());
            }
            if ok {
                let _ = d.finish(&mut |_| {});
            }
        }
    }

    #[test]
    fn not_http_is_an_error() {
        let mut d = Decoder::default();
        assert!(d.push(b"SSH-2.0-OpenSSH\r\n\r\n", &mut |_| {}).is_err());
    }
}
