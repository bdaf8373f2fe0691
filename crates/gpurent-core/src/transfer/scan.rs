//! What a folder upload would send: a walk that honours `.gitignore` (also outside a git
//! repository), `.ignore` and the user's excludes, and keeps hidden files; plus warnings about
//! things people rarely mean to upload (`.git`, `node_modules`, virtualenvs, caches, huge files).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use ignore::overrides::{Override, OverrideBuilder};
use ignore::WalkBuilder;

use crate::transfer::{ScanReport, ScanWarning, ScanWarningKind, TransferError};

/// One entry to send, relative to the folder's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub rel: PathBuf,
    pub kind: EntryKind,
    pub size: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
}

fn walker(root: &Path, excludes: &[String], filtered: bool) -> Result<WalkBuilder, TransferError> {
    let mut b = WalkBuilder::new(root);
    b.hidden(false)
        .follow_links(false)
        .git_global(false)
        .git_exclude(false)
        .parents(false)
        .require_git(false)
        .git_ignore(filtered)
        .ignore(filtered)
        .sort_by_file_name(|a, b| a.cmp(b));
    if filtered {
        if let Some(o) = overrides(root, excludes)? {
            b.overrides(o);
        }
    }
    Ok(b)
}

/// The user's excludes as `ignore` overrides rooted at `root` (`None`: no patterns).
fn overrides(root: &Path, excludes: &[String]) -> Result<Option<Override>, TransferError> {
    let mut o = OverrideBuilder::new(root);
    let mut any = false;
    for pat in excludes {
        let p = pat.trim();
        if p.is_empty() {
            continue;
        }
        o.add(&format!("!{}", p.trim_start_matches('!')))
            .map_err(|e| TransferError::invalid("excludes", format!("{p}: {e}")))?;
        any = true;
    }
    if !any {
        return Ok(None);
    }
    o.build()
        .map(Some)
        .map_err(|e| TransferError::invalid("excludes", e.to_string()))
}

/// The user's excludes for paths that are not walked here (a folder download's remote file
/// list): the same patterns and meaning as for uploads.
#[derive(Debug)]
pub struct Excludes(Option<Override>);

impl Excludes {
    pub fn new(excludes: &[String]) -> Result<Self, TransferError> {
        Ok(Excludes(overrides(Path::new(""), excludes)?))
    }

    /// Whether the file at `rel` (relative to the folder) or any folder above it is left out.
    pub fn leaves_out(&self, rel: &Path) -> bool {
        let Some(o) = &self.0 else {
            return false;
        };
        let parts: Vec<_> = rel.components().collect();
        let mut cur = PathBuf::new();
        for (i, c) in parts.iter().enumerate() {
            cur.push(c);
            if o.matched(&cur, i + 1 < parts.len()).is_ignore() {
                return true;
            }
        }
        false
    }
}

/// Everything under `root` that an upload sends (sorted, parents before children).
pub fn walk(root: &Path, excludes: &[String]) -> Result<Vec<Entry>, TransferError> {
    collect(root, excludes, true)
}

fn collect(root: &Path, excludes: &[String], filtered: bool) -> Result<Vec<Entry>, TransferError> {
    let meta = std::fs::symlink_metadata(root).map_err(|e| TransferError::local(root, &e))?;
    if !meta.is_dir() {
        return Ok(vec![Entry {
            rel: PathBuf::new(),
            kind: EntryKind::File,
            size: meta.len(),
        }]);
    }
    let mut out = Vec::new();
    for r in walker(root, excludes, filtered)?.build() {
        let d = r.map_err(|e| TransferError::LocalIo {
            path: root.display().to_string(),
            detail: e.to_string(),
        })?;
        let Ok(rel) = d.path().strip_prefix(root) else {
            continue;
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let ft = d.file_type();
        let (kind, size) = match ft {
            Some(t) if t.is_symlink() => (EntryKind::Symlink, 0),
            Some(t) if t.is_dir() => (EntryKind::Dir, 0),
            _ => (EntryKind::File, d.metadata().map(|m| m.len()).unwrap_or(0)),
        };
        out.push(Entry {
            rel: rel.to_path_buf(),
            kind,
            size,
        });
    }
    Ok(out)
}

/// Scan paths (files or folders) the way an upload would send them.
pub fn scan(paths: &[PathBuf], excludes: &[String]) -> Result<ScanReport, TransferError> {
    let mut rep = ScanReport {
        files: 0,
        dirs: 0,
        bytes: 0,
        excluded: 0,
        symlinks: 0,
        warnings: Vec::new(),
    };
    for root in paths {
        let kept = walk(root, excludes)?;
        let all = collect(root, excludes, false)?;
        rep.excluded += all.len().saturating_sub(kept.len()) as u64;
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let mut groups: BTreeMap<(String, ScanWarningKind), (u64, u64, String)> = BTreeMap::new();
        let venvs: Vec<PathBuf> = kept
            .iter()
            .filter(|e| e.rel.file_name().is_some_and(|n| n == "pyvenv.cfg"))
            .filter_map(|e| e.rel.parent().map(Path::to_path_buf))
            .collect();
        for e in &kept {
            match e.kind {
                EntryKind::Dir => rep.dirs += 1,
                EntryKind::Symlink => rep.symlinks += 1,
                EntryKind::File => {
                    rep.files += 1;
                    rep.bytes += e.size;
                }
            }
            if e.kind != EntryKind::File {
                continue;
            }
            let mut prefix = PathBuf::new();
            let mut hit = None;
            for comp in e.rel.components() {
                prefix.push(comp);
                let c = comp.as_os_str().to_string_lossy();
                let kind = match c.as_ref() {
                    ".git" => Some(ScanWarningKind::Git),
                    "node_modules" => Some(ScanWarningKind::NodeModules),
                    "__pycache__" | ".pytest_cache" | ".mypy_cache" => Some(ScanWarningKind::Cache),
                    _ if venvs.iter().any(|v| v == &prefix) => Some(ScanWarningKind::Virtualenv),
                    _ => None,
                };
                if let Some(k) = kind {
                    let pat = match k {
                        ScanWarningKind::Virtualenv => format!("/{}/", slashed(&prefix)),
                        _ => format!("{c}/"),
                    };
                    hit = Some((prefix.clone(), k, pat));
                    break;
                }
            }
            if let Some((p, k, pat)) = hit {
                let g = groups
                    .entry((Path::new(&name).join(&p).display().to_string(), k))
                    .or_insert((0, 0, pat));
                g.0 += 1;
                g.1 += e.size;
            } else if e.size > 1 << 30 {
                rep.warnings.push(ScanWarning {
                    kind: ScanWarningKind::LargeFile,
                    path: Path::new(&name).join(&e.rel).display().to_string(),
                    files: 1,
                    bytes: e.size,
                    exclude: format!("/{}", slashed(&e.rel)),
                });
            }
        }
        for ((path, kind), (files, bytes, exclude)) in groups {
            rep.warnings.push(ScanWarning {
                kind,
                path,
                files,
                bytes,
                exclude,
            });
        }
    }
    Ok(rep)
}

/// A relative path as an exclude pattern wants it: `/` between parts on every OS (a `\` in a
/// gitignore pattern is an escape, not a separator).
fn slashed(p: &Path) -> String {
    String::from_utf8_lossy(&crate::transfer::portable::rel_bytes(p)).into_owned()
}
#[cfg(test)]
mod tests {
    use super::*;

    fn put(root: &Path, rel: &str, data: &[u8]) {
        let p = root.join(rel);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(p, data).expect("write");
    }

    #[test]
    fn gitignore_and_excludes_are_honoured_and_heavy_folders_warned() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().join("proj");
        put(&root, "train.py", b"print(1)");
        put(&root, ".gitignore", b"*.log\nbuild/\n");
        put(&root, "run.log", b"xx");
        put(&root, "build/out.o", b"xxxx");
        put(&root, "data/a.csv", b"1,2");
        put(&root, ".git/HEAD", b"ref: x");
        put(&root, "node_modules/m/index.js", b"js");
        put(&root, ".venv/pyvenv.cfg", b"home = /usr");
        put(&root, ".venv/lib/site.py", b"py");
        put(&root, "secret.env", b"k=v");
        let rep = scan(std::slice::from_ref(&root), &["*.env".into()]).expect("scan");
        let names: Vec<String> = walk(&root, &["*.env".into()])
            .expect("walk")
            .into_iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| e.rel.display().to_string())
            .collect();
        assert!(names.contains(&"train.py".to_string()));
        assert!(names.contains(&".gitignore".to_string()));
        assert!(!names
            .iter()
            .any(|n| n.ends_with(".log") || n.starts_with("build")));
        assert!(!names.contains(&"secret.env".to_string()));
        let kinds: Vec<_> = rep
            .warnings
            .iter()
            .map(|w| (w.kind, w.path.as_str()))
            .collect();
        // Shown to the user as local paths (`proj\.git` on Windows).
        let shown = |rel: &str| Path::new("proj").join(rel).display().to_string();
        assert!(
            kinds.contains(&(ScanWarningKind::Git, shown(".git").as_str())),
            "{kinds:?}"
        );
        assert!(kinds.contains(&(ScanWarningKind::NodeModules, shown("node_modules").as_str())));
        assert!(kinds.contains(&(ScanWarningKind::Virtualenv, shown(".venv").as_str())));
        assert_eq!(rep.files as usize, names.len());
        assert!(rep.excluded >= 3, "{rep:?}");
        let venv = rep
            .warnings
            .iter()
            .find(|w| w.kind == ScanWarningKind::Virtualenv)
            .expect("venv");
        let after = scan(
            std::slice::from_ref(&root),
            std::slice::from_ref(&venv.exclude),
        )
        .expect("scan");
        assert!(!after
            .warnings
            .iter()
            .any(|w| w.kind == ScanWarningKind::Virtualenv));
    }

    #[test]
    fn suggested_excludes_use_slashes_on_every_os() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().join("proj");
        put(&root, "sub/.venv/pyvenv.cfg", b"home = /usr");
        put(&root, "sub/.venv/lib/site.py", b"py");
        let rep = scan(std::slice::from_ref(&root), &[]).expect("scan");
        let venv = rep
            .warnings
            .iter()
            .find(|w| w.kind == ScanWarningKind::Virtualenv)
            .expect("venv");
        assert_eq!(venv.exclude, "/sub/.venv/");
        assert_eq!(
            slashed(&Path::new("a").join("b").join("c.bin")),
            "a/b/c.bin"
        );
        let after = scan(
            std::slice::from_ref(&root),
            std::slice::from_ref(&venv.exclude),
        )
        .expect("scan");
        assert_eq!(after.files, 0, "{after:?}");
    }

    #[test]
    fn excludes_on_a_file_list_mean_what_they_mean_for_a_walk() {
        let tmp = tempfile::tempdir().expect("tmp");
        let root = tmp.path().join("run");
        for rel in [
            "train.py",
            "secret.env",
            "conf/local.env",
            "node_modules/m/index.js",
            "data/raw/a.bin",
            "data/clean/raw/b.bin",
            "ckpt-1.pt",
            "out/ckpt-2.pt",
            "out/final.pt",
            "数据 $(x)/ok.txt",
        ] {
            put(&root, rel, b"x");
        }
        let pats: Vec<String> = ["*.env", "node_modules", "/data/raw/", "ckpt-*.pt"]
            .iter()
            .map(|p| p.to_string())
            .collect();
        let kept: Vec<PathBuf> = walk(&root, &pats)
            .expect("walk")
            .into_iter()
            .filter(|e| e.kind == EntryKind::File)
            .map(|e| e.rel)
            .collect();
        let all = collect(&root, &[], false).expect("all");
        let ex = Excludes::new(&pats).expect("excludes");
        let mut left_out = 0;
        for e in all.iter().filter(|e| e.kind == EntryKind::File) {
            assert_eq!(ex.leaves_out(&e.rel), !kept.contains(&e.rel), "{:?}", e.rel);
            left_out += usize::from(ex.leaves_out(&e.rel));
        }
        assert_eq!(left_out, 6);
        assert!(!Excludes::new(&[])
            .expect("none")
            .leaves_out(Path::new("a/b")));
    }
}
