//! Distro-specific commands: driver upgrade on a VM, CUDA toolkit, Python. They follow NVIDIA's
//! driver installation guide (https://docs.nvidia.com/datacenter/tesla/driver-installation-guide/:
//! the `cuda-keyring` network repository, `cuda-drivers-<branch>` on apt, `nvidia-driver:<branch>`
//! module streams on dnf) and Ubuntu's packaged drivers (`nvidia-driver-<branch>[-server]`).

use super::facts::Facts;

/// The distro family the commands are written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Distro {
    Ubuntu,
    Debian,
    Rhel,
    Other,
}

pub fn distro(f: &Facts) -> Distro {
    let id = f.os.id.as_deref().unwrap_or("");
    let like = f.os.id_like.as_deref().unwrap_or("");
    match id {
        "ubuntu" => Distro::Ubuntu,
        "debian" => Distro::Debian,
        "rhel" | "rocky" | "almalinux" | "centos" | "fedora" | "ol" | "amzn" => Distro::Rhel,
        _ if like.contains("ubuntu") => Distro::Ubuntu,
        _ if like.contains("debian") => Distro::Debian,
        _ if like.contains("rhel") || like.contains("fedora") => Distro::Rhel,
        _ => Distro::Other,
    }
}

/// `sudo ` unless the probe ran as root.
pub fn sudo(f: &Facts) -> &'static str {
    if f.uid == Some(0) {
        ""
    } else {
        "sudo "
    }
}

/// NVIDIA's repository name (`ubuntu2204`, `debian12`, `rhel9`).
fn nvidia_repo(f: &Facts) -> Option<String> {
    let v = f.os.version_id.as_deref()?;
    let major = v.split('.').next()?;
    match distro(f) {
        Distro::Ubuntu => Some(format!("ubuntu{}", v.replace('.', ""))),
        Distro::Debian => Some(format!("debian{major}")),
        Distro::Rhel => Some(format!("rhel{major}")),
        Distro::Other => None,
    }
}

fn keyring(f: &Facts, repo: &str) -> Vec<String> {
    let s = sudo(f);
    vec![
        format!("wget -q https://developer.download.nvidia.com/compute/cuda/repos/{repo}/x86_64/cuda-keyring_1.1-1_all.deb"),
        format!("{s}dpkg -i cuda-keyring_1.1-1_all.deb"),
        format!("{s}apt-get update"),
    ]
}

/// Commands that install driver `branch` (`580`) on this VM, ending with the reboot.
/// `datacenter` picks Ubuntu's `-server` packages. `None` for an unknown distro.
pub fn driver_upgrade(
    f: &Facts,
    branch: &str,
    datacenter: bool,
    open_module: bool,
) -> Option<Vec<String>> {
    let s = sudo(f);
    let mut cmds = match distro(f) {
        Distro::Ubuntu => {
            let pkg = if datacenter {
                format!("nvidia-driver-{branch}-server")
            } else {
                format!("nvidia-driver-{branch}")
            };
            vec![
                format!("{s}apt-get update"),
                format!("{s}apt-get install -y {pkg}"),
            ]
        }
        Distro::Debian => {
            let mut c = keyring(f, &nvidia_repo(f)?);
            c.push(format!("{s}apt-get install -y cuda-drivers-{branch}"));
            c
        }
        Distro::Rhel => {
            let repo = nvidia_repo(f)?;
            let flavour = if open_module { "open" } else { "dkms" };
            vec![
                format!("{s}dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/{repo}/x86_64/cuda-{repo}.repo"),
                format!("{s}dnf module install -y nvidia-driver:{branch}-{flavour}"),
            ]
        }
        Distro::Other => return None,
    };
    cmds.push(format!("{s}reboot"));
    Some(cmds)
}

/// Commands that install the CUDA toolkit `major.minor` and put it on PATH.
pub fn toolkit_install(f: &Facts, major: u32, minor: u32) -> Option<Vec<String>> {
    let s = sudo(f);
    let mut cmds = match distro(f) {
        Distro::Ubuntu | Distro::Debian => {
            let mut c = keyring(f, &nvidia_repo(f)?);
            c.push(format!(
                "{s}apt-get install -y cuda-toolkit-{major}-{minor}"
            ));
            c
        }
        Distro::Rhel => {
            let repo = nvidia_repo(f)?;
            vec![
                format!("{s}dnf config-manager --add-repo https://developer.download.nvidia.com/compute/cuda/repos/{repo}/x86_64/cuda-{repo}.repo"),
                format!("{s}dnf install -y cuda-toolkit-{major}-{minor}"),
            ]
        }
        Distro::Other => return None,
    };
    cmds.extend(persist_path(&format!("/usr/local/cuda-{major}.{minor}/bin")).unwrap_or_default());
    Some(cmds)
}

/// The shell profiles a persistent PATH change goes into: `~/.bashrc` is what bash reads for a
/// non-interactive SSH command (`ssh host cmd`, which is how every gpurent step runs); `~/.profile`
/// is what login shells read.
pub const PROFILES: [&str; 2] = ["~/.bashrc", "~/.profile"];

/// The first line of the block [`persist_path`] writes (also how it knows the block is there).
pub fn path_block_marker(dir: &str) -> String {
    format!("# >>> gpurent: {dir} on PATH >>>")
}

/// A command that puts `dir` on PATH for every later session: a marked block at the TOP of each
/// of [`PROFILES`] (before a `.bashrc`'s "not interactive: return" guard), added once (re-running
/// changes nothing), that prepends `dir` only when PATH lacks it. An `export PATH=…` run as its
/// own command would end with its shell and change nothing. `None` when `dir` has characters
/// that would need quoting inside the block: the fix is then shown as a manual step.
pub fn persist_path(dir: &str) -> Option<Vec<String>> {
    let plain = !dir.is_empty()
        && dir.starts_with('/')
        && dir
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '/' | '.' | '_' | '-' | '+'));
    if !plain {
        return None;
    }
    let marker = path_block_marker(dir);
    let line =
        format!(r#"case ":$PATH:" in *":{dir}:"*) ;; *) PATH="{dir}:$PATH"; export PATH ;; esac"#);
    Some(vec![format!(
        "for f in {}; do grep -qsF '{marker}' \"$f\" || {{ {{ printf '%s\\n' '{marker}' '{line}' '# <<< gpurent <<<'; cat \"$f\" 2>/dev/null || :; }} > \"$f.gpurent\" && cat \"$f.gpurent\" > \"$f\" && rm -f \"$f.gpurent\"; }}; done",
        PROFILES.join(" ")
    )])
}

/// Commands that install Python 3 with venv and pip.
pub fn python_install(f: &Facts) -> Option<Vec<String>> {
    let s = sudo(f);
    match distro(f) {
        Distro::Ubuntu | Distro::Debian => Some(vec![
            format!("{s}apt-get update"),
            format!("{s}apt-get install -y python3 python3-venv python3-pip"),
        ]),
        Distro::Rhel => Some(vec![format!("{s}dnf install -y python3 python3-pip")]),
        Distro::Other => None,
    }
}

/// The venv module is missing (Debian/Ubuntu ship it separately).
pub fn venv_module_install(f: &Facts) -> Vec<String> {
    match distro(f) {
        Distro::Ubuntu | Distro::Debian => {
            vec![format!("{}apt-get install -y python3-venv", sudo(f))]
        }
        _ => Vec::new(),
    }
}
