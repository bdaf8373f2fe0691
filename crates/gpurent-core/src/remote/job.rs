//! Long remote work that a cancel must really stop (the wizard's fix: `pip install` of gigabytes).
//!
//! [`super::exec`] closing the channel is not enough: a command that does not write for a while
//! (pip resolving, `sleep`, `conda create`) runs on. So the command runs in its own session and
//! process group on the host (`setsid`), whose id goes into a pid file under the job directory;
//! its output (stdout and stderr together) streams back line by line. On cancel the channel is
//! closed and a second exec sends `TERM`, then `KILL`, to the whole group, and removes the pid
//! file. A job whose group is still alive is refused (`JobOutcome::Busy`) instead of run twice.

use std::time::Duration;

use crate::infra::cancel::CancelToken;
use crate::infra::error::CoreError;
use crate::remote::connect::Connection;
use crate::remote::error::RemoteError;
use crate::remote::exec::{exec_with, ExecOptions, OutStream};
use crate::remote::quote::{sh_c, shell_quote};

/// How a supervised job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// The command's exit status (`None`: killed by a signal or the server sent none).
    Exited(Option<i32>),
    /// Another job of the same name is still running on the host (its process group id).
    Busy(u32),
}

const MARK: &str = "@@gpurent@@ ";

/// The wrapper run by `sh -c`. `$1` job dir, `$2` name, `$3` the command.
const WRAPPER: &str = r#"d=$1; pf="$d/$2.pid"
mkdir -p "$d" || exit 90
if [ -s "$pf" ]; then
  old=$(cat "$pf" 2>/dev/null)
  if [ -n "$old" ] && kill -0 "-$old" 2>/dev/null; then echo "@@gpurent@@ busy $old"; exit 75; fi
  rm -f "$pf"
fi
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c 'echo $$ > "$1"; exec sh -c "$2" 2>&1' gpurent-job "$pf" "$3" </dev/null 2>&1 &
else
  sh -c 'echo $$ > "$1"; exec sh -c "$2" 2>&1' gpurent-job "$pf" "$3" </dev/null 2>&1 &
fi
wait $!; rc=$?
rm -f "$pf"
echo "@@gpurent@@ exit $rc"
exit $rc"#;

/// Kills the group in the pid file: `$1` job dir, `$2` name. Waits up to 2 s for the pid file of
/// a job that is just starting, then `TERM`, up to 2 s grace, `KILL`.
const KILLER: &str = r#"pf="$1/$2.pid"; i=0
while [ ! -s "$pf" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done
p=$(cat "$pf" 2>/dev/null)
[ -n "$p" ] || exit 0
kill -TERM "-$p" 2>/dev/null; i=0
while kill -0 "-$p" 2>/dev/null && [ $i -lt 10 ]; do sleep 0.2; i=$((i+1)); done
kill -KILL "-$p" 2>/dev/null
rm -f "$pf"
echo "@@gpurent@@ killed $p""#;

/// Splits output chunks into lines (a `\r` stays inside its line: pip's progress uses it).
#[derive(Debug, Default)]
struct Lines {
    buf: Vec<u8>,
}

impl Lines {
    fn push(&mut self, data: &[u8], out: &mut dyn FnMut(&str)) {
        self.buf.extend_from_slice(data);
        while let Some(i) = self.buf.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=i).collect();
            let text = String::from_utf8_lossy(&line[..line.len() - 1]);
            out(text.trim_end_matches('\r'));
        }
    }
    fn finish(&mut self, out: &mut dyn FnMut(&str)) {
        if !self.buf.is_empty() {
            let text = String::from_utf8_lossy(&self.buf).into_owned();
            self.buf.clear();
            out(&text);
        }
    }
}

/// Run `command` (a shell line) on the host as the supervised job `name` (letters, digits, `-`),
/// its pid file in `job_dir` (e.g. `$HOME/.gpurent/jobs`, expanded by the host's shell: pass it
/// unquoted-safe, without spaces). Each output line goes to `on_line`. On cancel the job's process
/// group is killed on the host before this returns `Err(Cancelled)`.
pub fn run_job(
    conn: &Connection,
    job_dir: &str,
    name: &str,
    command: &str,
    on_line: &mut dyn FnMut(&str),
    cancel: &CancelToken,
) -> Result<JobOutcome, RemoteError> {
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
        return Err(RemoteError::invalid(
            "job",
            "name must be letters, digits and '-'",
        ));
    }
    let cmd = format!(
        "{} gpurent-job \"{job_dir}\" {name} {}",
        sh_c(WRAPPER)?,
        shell_quote(command)?
    );
    let mut lines = Lines::default();
    let mut marker: Option<String> = None;
    let mut emit = |l: &str| match l.strip_prefix(MARK) {
        Some(m) => marker = Some(m.to_string()),
        None => on_line(l),
    };
    let result = exec_with(
        conn,
        &cmd,
        &ExecOptions::default(),
        &mut |_: OutStream, data: &[u8]| lines.push(data, &mut emit),
        cancel,
    );
    lines.finish(&mut emit);
    match result {
        Ok(info) => {
            if let Some(pid) = marker
                .as_deref()
                .and_then(|m| m.strip_prefix("busy "))
                .and_then(|p| p.trim().parse().ok())
            {
                return Ok(JobOutcome::Busy(pid));
            }
            let from_marker = marker
                .as_deref()
                .and_then(|m| m.strip_prefix("exit "))
                .and_then(|c| c.trim().parse().ok());
            Ok(JobOutcome::Exited(info.exit_status.or(from_marker)))
        }
        Err(RemoteError::Core(CoreError::Cancelled)) => {
            kill_job(conn, job_dir, name)?;
            Err(RemoteError::Core(CoreError::Cancelled))
        }
        Err(e) => Err(e),
    }
}

/// Kill job `name`'s process group on the host (no-op when none runs).
pub fn kill_job(conn: &Connection, job_dir: &str, name: &str) -> Result<(), RemoteError> {
    let cmd = format!("{} gpurent-job \"{job_dir}\" {name}", sh_c(KILLER)?);
    let opts = ExecOptions {
        stdin: None,
        timeout: Some(Duration::from_secs(15)),
    };
    exec_with(conn, &cmd, &opts, &mut |_, _| {}, &CancelToken::new())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_chunks_and_keep_carriage_returns_inside() {
        let mut l = Lines::default();
        let mut got = Vec::new();
        let mut out = |s: &str| got.push(s.to_string());
        l.push(b"Collecting torch\n  Downl", &mut out);
        l.push(b"oading x (1 MB)\r\n 0.5/1.0 MB\r 1.0/1.0 MB\n", &mut out);
        l.push(b"tail", &mut out);
        l.finish(&mut out);
        assert_eq!(
            got,
            vec![
                "Collecting torch",
                "  Downloading x (1 MB)",
                " 0.5/1.0 MB\r 1.0/1.0 MB",
                "tail"
            ]
        );
    }

    /// The wrapper and the killer are plain POSIX sh: run them locally under `sh` (dash on
    /// Debian): a job's output streams, its exit status comes back, a second job of the same name
    /// is refused while the first runs, and the killer leaves nothing of the group alive.
    #[cfg(unix)] // runs the wrapper under the local `sh`
    #[test]
    fn wrapper_runs_refuses_a_second_job_and_the_killer_stops_the_group() {
        use std::process::Command;
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("jobs");
        let d = dir.to_string_lossy().into_owned();
        let sh = |script: &str, args: &[&str]| {
            Command::new("sh")
                .arg("-c")
                .arg(script)
                .arg("gpurent-job")
                .args(args)
                .output()
                .expect("sh")
        };
        let out = sh(WRAPPER, &[&d, "fix", "echo out; echo err >&2; exit 3"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(3));
        assert!(text.contains("out\n") && text.contains("err\n"), "{text}");
        assert!(text.ends_with("@@gpurent@@ exit 3\n"), "{text}");
        assert!(!dir.join("fix.pid").exists());

        let mut first = Command::new("sh")
            .arg("-c")
            .arg(WRAPPER)
            .arg("gpurent-job")
            .args([&d, "fix", "sleep 30; echo late"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        let pf = dir.join("fix.pid");
        for _ in 0..100 {
            if std::fs::read_to_string(&pf).is_ok_and(|s| !s.trim().is_empty()) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let pgid: u32 = std::fs::read_to_string(&pf)
            .expect("pid file")
            .trim()
            .parse()
            .expect("pid");
        let busy = sh(WRAPPER, &[&d, "fix", "echo no"]);
        assert_eq!(busy.status.code(), Some(75));
        assert_eq!(
            String::from_utf8_lossy(&busy.stdout),
            format!("@@gpurent@@ busy {pgid}\n")
        );
        let killed = sh(KILLER, &[&d, "fix"]);
        assert!(String::from_utf8_lossy(&killed.stdout).contains(&format!("killed {pgid}")));
        let _ = first.wait();
        let alive = Command::new("sh")
            .arg("-c")
            .arg(format!("ps -o stat= -g {pgid} | grep -v Z || true"))
            .output()
            .expect("ps");
        assert_eq!(String::from_utf8_lossy(&alive.stdout).trim(), "");
        assert!(!pf.exists());
    }
}
