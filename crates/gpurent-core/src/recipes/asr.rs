//! Transcribe local audio files with the Whisper recipe's app (whisper-asr-webservice) through a
//! gpurent tunnel: each file is sent as `POST /asr?task=transcribe&output=FMT[&language=L]`
//! (multipart field `audio_file`, the service's own API: `app/webservice.py` of
//! ahmetoner/whisper-asr-webservice) and the transcript it answers is written next to the audio
//! (or into a chosen folder) as `NAME.EXT.FMT`, the name the service itself gives its answer.
//!
//! What the real service does that this client must survive (and the fake on the test host does
//! too, `tests/fakegpu/webapp_fake.py`):
//! - it answers only when the whole file is transcribed: minutes of silence on the socket for an
//!   hour of audio, so there is no read deadline here, only the cancel token (checked every
//!   second while waiting);
//! - the answer is streamed (`StreamingResponse`: `Transfer-Encoding: chunked`, no length);
//! - a file ffmpeg cannot decode is `500 Internal Server Error` (a plain-text body), a bad
//!   parameter `422` (FastAPI's JSON);
//! - it echoes the upload's file name in a `Content-Disposition` header, which Starlette writes
//!   as Latin-1: a name like `会议.mp3` makes it answer `500` after all the work. gpurent sends
//!   an ASCII name with the file's extension (ffmpeg reads the content, not the name) and names
//!   the transcript itself;
//! - the app may be gone (stopped, the machine released): the connection is refused or cut.
//!
//! A transcript is written to `NAME.part` and renamed when complete: a cut or a cancel never
//! leaves a half transcript under the final name, and an existing file is never overwritten
//! (`NAME (2).EXT.FMT` instead).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::cancel::CancelToken;
use crate::infra::ipc::Coded;

/// The transcript formats the service offers (`output`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, TS, Default)]
#[serde(rename_all = "snake_case")]
pub enum TranscriptFormat {
    #[default]
    Txt,
    Srt,
    Vtt,
    Tsv,
    Json,
}

impl TranscriptFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            TranscriptFormat::Txt => "txt",
            TranscriptFormat::Srt => "srt",
            TranscriptFormat::Vtt => "vtt",
            TranscriptFormat::Tsv => "tsv",
            TranscriptFormat::Json => "json",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "txt" => TranscriptFormat::Txt,
            "srt" => TranscriptFormat::Srt,
            "vtt" => TranscriptFormat::Vtt,
            "tsv" => TranscriptFormat::Tsv,
            "json" => TranscriptFormat::Json,
            _ => return None,
        })
    }
}

/// How files are transcribed.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, TS)]
pub struct TranscribeOptions {
    pub format: TranscriptFormat,
    /// The spoken language (`zh`, `en`, …); `None`: the service detects it.
    pub language: Option<String>,
    /// Where transcripts go; `None`: next to each audio file.
    pub out_dir: Option<String>,
}

/// One file's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, TS)]
pub struct TranscriptFile {
    /// The audio file.
    pub file: String,
    /// The transcript written (`None` when this file failed).
    pub transcript: Option<String>,
    /// Bytes of audio sent and of transcript received.
    #[ts(type = "number")]
    pub audio_bytes: u64,
    #[ts(type = "number")]
    pub transcript_bytes: u64,
    /// How long the service took (sending included).
    #[ts(type = "number")]
    pub took_ms: u64,
    /// The error code when this file failed (the UI translates it), and its detail.
    pub error_code: Option<String>,
    pub error: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum AsrError {
    /// Nothing answers on the tunnel (the app stopped, the machine released, the tunnel cut).
    #[error("the Whisper service did not answer through the tunnel ({detail}): start the Whisper recipe again")]
    Unreachable { detail: String },
    /// The service refused the file (`500`: it could not decode it; `422`: a bad parameter).
    #[error("the Whisper service answered {status} for {file}: {body}")]
    Refused {
        file: String,
        status: u16,
        body: String,
    },
    /// A local file could not be read or the transcript written.
    #[error("{path}: {source}")]
    Local {
        path: String,
        source: std::io::Error,
    },
    #[error("cancelled")]
    Cancelled,
}

impl Coded for AsrError {
    fn code(&self) -> &'static str {
        match self {
            AsrError::Unreachable { .. } => "asr_unreachable",
            AsrError::Refused { status: 500, .. } => "asr_not_audio",
            AsrError::Refused { .. } => "asr_refused",
            AsrError::Local { .. } => "io",
            AsrError::Cancelled => "cancelled",
        }
    }
}

/// Where `audio`'s transcript goes: `NAME.EXT.FMT` in `out_dir` (or next to the audio), or
/// `NAME (2).EXT.FMT`, `(3)`, … when that name is taken.
pub fn transcript_path(audio: &Path, out_dir: Option<&Path>, format: TranscriptFormat) -> PathBuf {
    let dir = out_dir
        .map(Path::to_path_buf)
        .or_else(|| audio.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    let name = audio
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "audio".into());
    let first = dir.join(format!("{name}.{}", format.as_str()));
    if !first.exists() {
        return first;
    }
    let (stem, ext) = match name.rsplit_once('.') {
        Some((s, e)) if !s.is_empty() => (s.to_string(), format!(".{e}")),
        _ => (name.clone(), String::new()),
    };
    (2..)
        .map(|n| dir.join(format!("{stem} ({n}){ext}.{}", format.as_str())))
        .find(|p| !p.exists())
        .unwrap_or(first)
}

/// The multipart boundary: not in any file name gpurent sends (names are quoted and escaped).
const BOUNDARY: &str = "gpurent-asr-7d3f0c1e9b2a4658";

/// The multipart `filename` sent for `name`: ASCII letters, digits, `.`, `-` and `_` kept, every
/// other character `_` (the service echoes it in a Latin-1 header; quotes would end the field).
fn wire_name(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `%XX` for everything but unreserved characters (a query value).
fn query_value(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Send `audio` to the service behind `127.0.0.1:local_port` and write its transcript to `out`
/// (through `out.part`). `sent` is told the bytes of audio sent so far.
pub fn transcribe_one(
    local_port: u16,
    audio: &Path,
    out: &Path,
    opts: &TranscribeOptions,
    sent: &mut dyn FnMut(u64, u64),
    cancel: &CancelToken,
) -> Result<(u64, u64), AsrError> {
    let local = |path: &Path| {
        let path = path.display().to_string();
        move |source| AsrError::Local { path, source }
    };
    let mut file = File::open(audio).map_err(local(audio))?;
    let size = file.metadata().map_err(local(audio))?.len();
    let name = audio
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "audio".into());
    let head = format!(
        "--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"audio_file\"; filename=\"{}\"\r\nContent-Type: application/octet-stream\r\n\r\n",
        wire_name(&name)
    );
    let tail = format!("\r\n--{BOUNDARY}--\r\n");
    let mut query = format!(
        "task=transcribe&encode=true&output={}",
        opts.format.as_str()
    );
    if let Some(l) = opts.language.as_deref().filter(|l| !l.is_empty()) {
        query.push_str(&format!("&language={}", query_value(l)));
    }
    let unreachable = |e: std::io::Error| AsrError::Unreachable {
        detail: e.to_string(),
    };
    let mut s = TcpStream::connect(("127.0.0.1", local_port)).map_err(unreachable)?;
    s.set_write_timeout(Some(Duration::from_secs(60)))
        .map_err(unreachable)?;
    // Waiting for the answer: a second at a time, so a cancel is seen within a second.
    s.set_read_timeout(Some(Duration::from_secs(1)))
        .map_err(unreachable)?;
    let request = format!(
        "POST /asr?{query} HTTP/1.1\r\nHost: 127.0.0.1:{local_port}\r\nAccept: */*\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{head}",
        head.len() as u64 + size + tail.len() as u64
    );
    s.write_all(request.as_bytes()).map_err(unreachable)?;
    let mut buf = vec![0u8; 256 * 1024];
    let mut done = 0u64;
    loop {
        if cancel.is_cancelled() {
            return Err(AsrError::Cancelled);
        }
        let n = file.read(&mut buf).map_err(local(audio))?;
        if n == 0 {
            break;
        }
        s.write_all(&buf[..n]).map_err(unreachable)?;
        done += n as u64;
        sent(done, size);
    }
    if done != size {
        return Err(AsrError::Local {
            path: audio.display().to_string(),
            source: std::io::Error::other("the file changed while it was sent"),
        });
    }
    s.write_all(tail.as_bytes()).map_err(unreachable)?;
    s.flush().map_err(unreachable)?;

    let mut r = BufReader::new(Patient {
        inner: s,
        cancel,
        since: Instant::now(),
    });
    let cut = |e: std::io::Error| {
        if cancel.is_cancelled() {
            AsrError::Cancelled
        } else {
            AsrError::Unreachable {
                detail: e.to_string(),
            }
        }
    };
    let mut line = String::new();
    r.read_line(&mut line).map_err(cut)?;
    let status: u16 = line
        .strip_prefix("HTTP/1.")
        .and_then(|l| l.get(2..5))
        .and_then(|c| c.parse().ok())
        .ok_or_else(|| AsrError::Unreachable {
            detail: if line.is_empty() {
                "the connection closed without an answer".into()
            } else {
                format!("not an HTTP answer: {:?}", line.trim_end())
            },
        })?;
    let mut chunked = false;
    let mut length: Option<u64> = None;
    loop {
        line.clear();
        if r.read_line(&mut line).map_err(cut)? == 0 {
            break;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((k, v)) = l.split_once(':') {
            let (k, v) = (k.trim().to_ascii_lowercase(), v.trim());
            if k == "transfer-encoding" && v.to_ascii_lowercase().contains("chunked") {
                chunked = true;
            } else if k == "content-length" {
                length = v.parse().ok();
            }
        }
    }
    if status != 200 {
        let mut body = Vec::new();
        let _ = read_body(&mut r, chunked, length, &mut body);
        let text = String::from_utf8_lossy(&body);
        return Err(AsrError::Refused {
            file: audio.display().to_string(),
            status,
            body: text.chars().take(300).collect(),
        });
    }
    let part = {
        let mut p = out.as_os_str().to_owned();
        p.push(".part");
        PathBuf::from(p)
    };
    let mut w = File::create(&part).map_err(local(&part))?;
    let got = read_body(&mut r, chunked, length, &mut w).map_err(|e| {
        let _ = std::fs::remove_file(&part);
        cut(e)
    })?;
    w.sync_all().map_err(local(&part))?;
    drop(w);
    std::fs::rename(&part, out).map_err(local(out))?;
    Ok((size, got))
}

/// Copy an HTTP body (chunked, with a length, or to the end) into `w`; the bytes written.
fn read_body(
    r: &mut impl BufRead,
    chunked: bool,
    length: Option<u64>,
    w: &mut impl Write,
) -> std::io::Result<u64> {
    if !chunked {
        return match length {
            Some(n) => {
                let got = std::io::copy(&mut r.take(n), w)?;
                if got < n {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        format!("the answer ended after {got} of {n} bytes"),
                    ));
                }
                Ok(got)
            }
            None => std::io::copy(r, w),
        };
    }
    let mut total = 0;
    let mut line = String::new();
    loop {
        line.clear();
        if r.read_line(&mut line)? == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the answer was cut before its last chunk",
            ));
        }
        let size = line.trim_end().split(';').next().unwrap_or("");
        let n = u64::from_str_radix(size.trim(), 16).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("a bad chunk size: {:?}", line.trim_end()),
            )
        })?;
        if n == 0 {
            // Trailers (none expected) up to the blank line.
            loop {
                line.clear();
                if r.read_line(&mut line)? == 0 || line.trim_end().is_empty() {
                    return Ok(total);
                }
            }
        }
        let got = std::io::copy(&mut r.by_ref().take(n), w)?;
        if got < n {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the answer was cut inside a chunk",
            ));
        }
        total += got;
        line.clear();
        r.read_line(&mut line)?; // the chunk's CRLF
    }
}

/// A socket read that waits as long as the service works (a second at a time), ending only on
/// cancel (an error the caller reads as the cancel: not `Interrupted`, which `BufRead` retries
/// for ever), a close or an error.
struct Patient<'a> {
    inner: TcpStream,
    cancel: &'a CancelToken,
    since: Instant,
}

impl Read for Patient<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        loop {
            if self.cancel.is_cancelled() {
                return Err(std::io::Error::other(format!(
                    "cancelled after {} s",
                    self.since.elapsed().as_secs()
                )));
            }
            match self.inner.read(buf) {
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                r => return r,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transcripts_never_overwrite_and_keep_the_services_name() {
        let d = tempfile::tempdir().expect("tempdir");
        let audio = d.path().join("talk.mp3");
        std::fs::write(&audio, b"x").expect("audio");
        let first = transcript_path(&audio, None, TranscriptFormat::Srt);
        assert_eq!(first, d.path().join("talk.mp3.srt"));
        std::fs::write(&first, b"mine").expect("taken");
        assert_eq!(
            transcript_path(&audio, None, TranscriptFormat::Srt),
            d.path().join("talk (2).mp3.srt")
        );
        std::fs::write(d.path().join("talk (2).mp3.srt"), b"mine too").expect("taken");
        assert_eq!(
            transcript_path(&audio, None, TranscriptFormat::Srt),
            d.path().join("talk (3).mp3.srt")
        );
        let out = tempfile::tempdir().expect("out");
        assert_eq!(
            transcript_path(&audio, Some(out.path()), TranscriptFormat::Txt),
            out.path().join("talk.mp3.txt")
        );
    }

    #[test]
    fn chunked_and_sized_bodies_are_read_whole_and_a_cut_is_an_error() {
        let mut out = Vec::new();
        let body = b"5\r\nhello\r\n7\r\n, world\r\n0\r\n\r\n";
        assert_eq!(
            read_body(&mut &body[..], true, None, &mut out).expect("chunked"),
            12
        );
        assert_eq!(out, b"hello, world");
        let cut = b"5\r\nhello\r\n7\r\n, wo";
        assert!(read_body(&mut &cut[..], true, None, &mut Vec::new()).is_err());
        let no_end = b"5\r\nhello\r\n";
        assert!(read_body(&mut &no_end[..], true, None, &mut Vec::new()).is_err());
        let mut out = Vec::new();
        assert_eq!(
            read_body(&mut &b"abcdef"[..], false, Some(3), &mut out).expect("sized"),
            3
        );
        assert_eq!(out, b"abc");
        assert!(read_body(&mut &b"ab"[..], false, Some(3), &mut Vec::new()).is_err());
    }

    #[test]
    fn names_and_languages_cannot_break_the_request() {
        assert_eq!(wire_name("a\"b\\c\r\nd.wav"), "a_b_c__d.wav");
        assert_eq!(wire_name("会议 1.mp3"), "___1.mp3");
        assert_eq!(query_value("zh"), "zh");
        assert_eq!(query_value("en&task=x"), "en%26task%3Dx");
    }
}
