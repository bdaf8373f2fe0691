//! Long remote work that a cancel must really stop (the wizard's fix: `pip install` of gigabytes;
//! a `torchrun` launch on every GPU).
//!
//! [`super::exec`] closing the channel is not enough: a command that does not write for a while
//! (pip resolving, `sleep`, `conda create`) runs on. And a process group is not enough either:
//! torchrun starts each rank in its own session (`start_new_session=True`), so a rank outlives a
//! `kill` of torchrun's group, holding its GPU. So every process of a job carries an environment
//! marker, `GPURENT_JOB=<name>@<job dir>` (the dir keeps
//! two homes of one user apart), inherited by everything it starts (ranks, data-loader workers,
//! whatever calls `setsid`), and the job runs in its own session and process group (`setsid`),
//! whose id goes into a pid file under the job directory; its output (stdout and stderr
//! together) streams back line by line.
//!
//! Stopping ([`kill_job`]): `TERM` to the job's group and to every process of the host whose
//! `/proc/PID/environ` holds the marker; up to a grace for them to end by themselves (a launch
//! waits longer than torchrun's own 30 s escalation, so ranks can save a checkpoint); then `KILL`
//! to every marked process still there; then the host's processes are listed again, and any
//! marked one left is an error ([`RemoteError::JobSurvived`]). A job whose marked processes are
//! still alive is refused (`JobOutcome::Busy`) instead of run twice — an orphaned rank included.

use std::time::Duration;

use crate::infra::cancel::CancelToken;
use crate::infra::error::CoreError;
use crate::remote::connect::Connection;
use crate::remote::error::RemoteError;
use crate::remote::exec::{exec_with, ExecOptions, OutStream};
use crate::remote::quote::{sh_c, shell_quote};
use crate::remote::text::{clean, cleaned};

/// How a supervised job ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobOutcome {
    /// The command's exit status (`None`: killed by a signal or the server sent none).
    Exited(Option<i32>),
    /// Another job of the same name is still running on the host (one of its process ids).
    Busy(u32),
}

/// The environment variable every process of a job carries (`GPURENT_JOB=<name>@<job dir>`).
pub const MARKER_VAR: &str = "GPURENT_JOB";

/// How long [`kill_job`] waits after `TERM` before `KILL`, unless the caller says otherwise.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(5);

const MARK: &str = "@@gpurent@@ ";

/// `marked ID`: the ids of the host's processes whose environment holds `GPURENT_JOB=ID`
/// (read from `/proc/*/environ`: one `grep -z` where grep has it, else `tr` per process).
/// Zombies have an empty environment and do not count.
const MARKED: &str = r#"marked() {
  if printf 'a\0' | grep -qzxF a 2>/dev/null; then
    grep -lzxF "GPURENT_JOB=$1" /proc/[0-9]*/environ 2>/dev/null | sed -n 's#^/proc/\([0-9]*\)/environ$#\1#p' | tr '\n' ' '
  else
    for f in /proc/[0-9]*/environ; do
      tr '\0' '\n' < "$f" 2>/dev/null | grep -qxF "GPURENT_JOB=$1" && { f=${f#/proc/}; printf '%s ' "${f%/environ}"; }
    done
  fi
}
"#;

/// The wrapper run by `sh -c`. `$1` job dir, `$2` name, `$3` the command.
const WRAPPER: &str = r#"d=$1; pf="$d/$2.pid"
mkdir -p "$d" || exit 90
m=$(marked "$2@$d")
if [ -n "$m" ]; then set -- $m; echo "@@gpurent@@ busy $1"; exit 75; fi
rm -f "$pf"
GPURENT_JOB="$2@$d"; export GPURENT_JOB
if command -v setsid >/dev/null 2>&1; then
  setsid sh -c 'echo $$ > "$1"; exec sh -c "$2" 2>&1' gpurent-job "$pf" "$3" </dev/null 2>&1 &
else
  sh -c 'echo $$ > "$1"; exec sh -c "$2" 2>&1' gpurent-job "$pf" "$3" </dev/null 2>&1 &
fi
unset GPURENT_JOB
wait $!; rc=$?
rm -f "$pf"
echo "@@gpurent@@ exit $rc"
exit $rc"#;

/// Stops job `$2` (pid file in `$1`), `$3` seconds of grace between `TERM` and `KILL`. Waits up
/// to 2 s for a job that is just starting; prints `killed PGID left PIDS…` (none left: done).
const KILLER: &str = r#"pf="$1/$2.pid"; id="$2@$1"; g=$3; i=0
while [ ! -s "$pf" ] && [ -z "$(marked "$id")" ] && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done
p=$(cat "$pf" 2>/dev/null)
[ -n "$p" ] && kill -TERM "-$p" 2>/dev/null
m=$(marked "$id"); [ -n "$m" ] && kill -TERM $m 2>/dev/null
i=0
while [ $i -lt $((g*5)) ]; do
  m=$(marked "$id")
  if [ -z "$m" ] && { [ -z "$p" ] || ! kill -0 "-$p" 2>/dev/null; }; then break; fi
  sleep 0.2; i=$((i+1))
done
[ -n "$p" ] && kill -KILL "-$p" 2>/dev/null
m=$(marked "$id"); [ -n "$m" ] && kill -KILL $m 2>/dev/null
i=0
while [ -n "$(marked "$id")" ] && [ $i -lt 25 ]; do sleep 0.2; i=$((i+1)); done
rm -f "$pf"
echo "@@gpurent@@ killed ${p:-0} left $(marked "$id")""#;

/// Splits output chunks into lines, cleaned of terminal controls ([`clean`]: a `\r` inside a
/// line keeps what a terminal would show after it, pip's latest progress).
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
            out(&clean(&text));
        }
    }
    fn finish(&mut self, out: &mut dyn FnMut(&str)) {
        if !self.buf.is_empty() {
            let text = cleaned(&String::from_utf8_lossy(&self.buf));
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
    run_job_with(conn, job_dir, name, command, DEFAULT_GRACE, on_line, cancel)
}

/// [`run_job`], a cancel giving the job `grace` between `TERM` and `KILL` (see [`kill_job`]).
pub fn run_job_with(
    conn: &Connection,
    job_dir: &str,
    name: &str,
    command: &str,
    grace: Duration,
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
        sh_c(&format!("{MARKED}{WRAPPER}"))?,
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
            kill_job(conn, job_dir, name, grace)?;
            Err(RemoteError::Core(CoreError::Cancelled))
        }
        Err(e) => Err(e),
    }
}

/// Stop job `name` on the host (no-op when none runs): `TERM` to its process group and to every
/// process carrying its marker, up to `grace` for them to end, `KILL` to the rest, then list the
/// host's processes again: a marked process still alive is [`RemoteError::JobSurvived`].
pub fn kill_job(
    conn: &Connection,
    job_dir: &str,
    name: &str,
    grace: Duration,
) -> Result<(), RemoteError> {
    let secs = grace.as_secs().max(1);
    let cmd = format!(
        "{} gpurent-job \"{job_dir}\" {name} {secs}",
        sh_c(&format!("{MARKED}{KILLER}"))?
    );
    let opts = ExecOptions {
        stdin: None,
        timeout: Some(Duration::from_secs(secs + 20)),
    };
    let mut out = Vec::new();
    exec_with(
        conn,
        &cmd,
        &opts,
        &mut |s, d| {
            if s == OutStream::Stdout {
                out.extend_from_slice(d)
            }
        },
        &CancelToken::new(),
    )?;
    let text = String::from_utf8_lossy(&out);
    let left = survivors(&text);
    if left.is_empty() {
        Ok(())
    } else {
        Err(RemoteError::JobSurvived {
            job: name.to_string(),
            pids: left,
        })
    }
}

/// The pids the killer reports still alive (`@@gpurent@@ killed P left A B …`).
fn survivors(text: &str) -> Vec<u32> {
    text.lines()
        .filter_map(|l| l.strip_prefix(MARK))
        .filter_map(|m| m.split_once(" left"))
        .flat_map(|(_, pids)| pids.split_whitespace().filter_map(|p| p.parse().ok()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_chunks_and_show_what_a_terminal_would() {
        let mut l = Lines::default();
        let mut got = Vec::new();
        let mut out = |s: &str| got.push(s.to_string());
        l.push(b"Collecting torch\n  Downl", &mut out);
        l.push(b"oading x (1 MB)\r\n 0.5/1.0 MB\r 1.0/1.0 MB\n", &mut out);
        l.push(b"\x1b]0;owned\x07rank \x1b[31m0\x1b[0m\n", &mut out);
        l.push(b"tail\x1b[2J", &mut out);
        l.finish(&mut out);
        // A `\r` inside a line keeps the latest update (pip's progress), escapes are gone.
        assert_eq!(
            got,
            vec![
                "Collecting torch",
                "  Downloading x (1 MB)",
                " 1.0/1.0 MB",
                "rank 0",
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
        let wrapper = format!("{MARKED}{WRAPPER}");
        let killer = format!("{MARKED}{KILLER}");
        let out = sh(&wrapper, &[&d, "fix", "echo out; echo err >&2; exit 3"]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.status.code(), Some(3));
        assert!(text.contains("out\n") && text.contains("err\n"), "{text}");
        assert!(text.ends_with("@@gpurent@@ exit 3\n"), "{text}");
        assert!(!dir.join("fix.pid").exists());

        let mut first = Command::new("sh")
            .arg("-c")
            .arg(&wrapper)
            .arg("gpurent-job")
            .args([&d, "fix", "sleep 30; echo late"])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        let pf = dir.join("fix.pid");
        // Up to 30 s (a hang guard: 100 polls of 20 ms raced a loaded machine starting `sh`).
        let t = std::time::Instant::now();
        while !std::fs::read_to_string(&pf).is_ok_and(|s| !s.trim().is_empty())
            && t.elapsed() < Duration::from_secs(30)
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let pgid: u32 = std::fs::read_to_string(&pf)
            .expect("pid file")
            .trim()
            .parse()
            .expect("pid");
        let busy = sh(&wrapper, &[&d, "fix", "echo no"]);
        assert_eq!(busy.status.code(), Some(75));
        assert!(
            String::from_utf8_lossy(&busy.stdout).starts_with("@@gpurent@@ busy "),
            "{busy:?}"
        );
        let killed = sh(&killer, &[&d, "fix", "2"]);
        let said = String::from_utf8_lossy(&killed.stdout).into_owned();
        assert!(said.contains(&format!("killed {pgid} left ")), "{said}");
        assert!(survivors(&said).is_empty(), "{said}");
        let _ = first.wait();
        let alive = Command::new("sh")
            .arg("-c")
            .arg(format!("ps -o stat= -g {pgid} | grep -v Z || true"))
            .output()
            .expect("ps");
        assert_eq!(String::from_utf8_lossy(&alive.stdout).trim(), "");
        assert!(!pf.exists());
    }

    /// What torchrun does to a stop by group: a child in its own session (`setsid`), ignoring
    /// `TERM`, outlives `kill -TERM -PGID` and `kill -KILL -PGID`. The marker finds it: after
    /// the grace it is killed, and the killer reports nothing left.
    #[cfg(target_os = "linux")] // reads /proc
    #[test]
    fn the_killer_ends_a_child_in_its_own_session_that_ignores_term() {
        use std::process::Command;
        let tmp = tempfile::tempdir().expect("tmp");
        let d = tmp.path().join("jobs").to_string_lossy().into_owned();
        let job = "setsid sh -c 'trap \"\" TERM; sleep 60; :' & sleep 60";
        let mut first = Command::new("sh")
            .arg("-c")
            .arg(format!("{MARKED}{WRAPPER}"))
            .arg("gpurent-job")
            .args([&d, "stubborn", job])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("spawn");
        // The processes carrying this job's marker, read from /proc here (not by the killer).
        let want = format!("GPURENT_JOB=stubborn@{d}");
        let alive = || {
            let mut pids = Vec::new();
            for e in std::fs::read_dir("/proc").expect("proc").flatten() {
                let env = std::fs::read(e.path().join("environ")).unwrap_or_default();
                if env.split(|&b| b == 0).any(|v| v == want.as_bytes()) {
                    pids.push(e.file_name().to_string_lossy().into_owned());
                }
            }
            pids
        };
        // A marked process ignores TERM once the setsid sh has run its `trap "" TERM` (its sleep
        // inherits that): read from /proc (SigIgn, bit 15), not given 200 ms — a TERM that came
        // before the trap ended the job at once, and "the grace was given" failed under load.
        let ignores_term = |pid: &String| gpurent_testhost::ignores_sigterm(pid);
        let t = std::time::Instant::now();
        // The job's sh (or its last command, where sh execs it), its sleep, the setsid sh and its
        // sleep; up to 30 s, a hang guard.
        while (alive().len() < 3 || !alive().iter().any(ignores_term))
            && t.elapsed() < Duration::from_secs(30)
        {
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(alive().len() >= 3, "{:?}", alive());
        assert!(alive().iter().any(ignores_term), "the trap: {:?}", alive());
        let t = std::time::Instant::now();
        let killed = Command::new("sh")
            .arg("-c")
            .arg(format!("{MARKED}{KILLER}"))
            .arg("gpurent-job")
            .args([&d, "stubborn", "1"])
            .output()
            .expect("killer");
        let said = String::from_utf8_lossy(&killed.stdout).into_owned();
        let _ = first.wait();
        assert_eq!(alive(), Vec::<String>::new(), "{said}");
        assert!(survivors(&said).is_empty(), "{said}");
        assert!(t.elapsed() >= Duration::from_secs(1), "the grace was given");
    }

    #[test]
    fn survivors_are_read_from_the_killers_last_line() {
        assert_eq!(
            survivors("@@gpurent@@ killed 12 left \n"),
            Vec::<u32>::new()
        );
        assert_eq!(
            survivors("noise\n@@gpurent@@ killed 0 left 5 77 \n"),
            vec![5, 77]
        );
    }
}
