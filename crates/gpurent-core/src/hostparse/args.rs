//! Reading `ssh`, `scp` and `sftp` arguments the way OpenSSH does (options before and after the
//! destination, first value wins), keeping only what a connection needs. Everything else becomes
//! a [`ParseWarning`]; nothing is ever passed on.

use crate::hostparse::{HostParseError, JumpHost, ParseWarning};

/// What one command said.
#[derive(Debug, Default)]
pub(crate) struct Command {
    pub host: Option<String>,
    pub port: Option<u16>,
    pub user: Option<String>,
    pub jump: Option<JumpHost>,
    pub identity_file: Option<String>,
    pub warnings: Vec<ParseWarning>,
    /// A user@, a port or an ssh:// URL was present: this is surely a connection command.
    pub strong: bool,
}

impl Command {
    fn warn(&mut self, w: ParseWarning) {
        if !self.warnings.contains(&w) {
            self.warnings.push(w);
        }
    }

    fn set_port(&mut self, value: &str) -> Result<(), HostParseError> {
        let p = parse_port(value)?;
        self.strong = true;
        self.port.get_or_insert(p);
        Ok(())
    }

    fn set_user(&mut self, value: &str) {
        self.strong = true;
        match &self.user {
            None => self.user = Some(value.to_string()),
            Some(u) if u != value => self.warn(ParseWarning::ConflictingUser {
                used: u.clone(),
                ignored: value.to_string(),
            }),
            Some(_) => {}
        }
    }

    fn set_identity(&mut self, value: &str) {
        if self.identity_file.is_none() {
            self.identity_file = Some(value.to_string());
        } else {
            self.warn(ParseWarning::ExtraIdentityFilesIgnored);
        }
    }

    fn set_jump(&mut self, value: &str) -> Result<(), HostParseError> {
        if value.eq_ignore_ascii_case("none") || self.jump.is_some() {
            return Ok(());
        }
        if value.contains(',') {
            return Err(HostParseError::JumpChain);
        }
        let d = destination(value)?;
        self.jump = Some(JumpHost {
            host: d.host,
            port: d.port.unwrap_or(22),
            user: d.user,
        });
        Ok(())
    }

    /// Take a destination (`user@host`, `ssh://…`, `host`); the first one wins.
    fn set_destination(&mut self, d: Destination) {
        if let Some(u) = &d.user {
            self.set_user(u);
        }
        if let Some(p) = d.port {
            self.strong = true;
            self.port.get_or_insert(p);
        }
        self.strong |= d.url;
        self.host.get_or_insert(d.host);
    }
}

pub(crate) fn parse_port(value: &str) -> Result<u16, HostParseError> {
    let bad = || HostParseError::InvalidPort {
        value: value.chars().take(32).collect(),
    };
    if value.is_empty() || value.len() > 5 || !value.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    match value.parse::<u16>() {
        Ok(p) if p > 0 => Ok(p),
        _ => Err(bad()),
    }
}

/// `[user@]host[:port]`, `[user@][v6addr][:port]` or `ssh://[user[;params]@]host[:port][/…]`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Destination {
    pub user: Option<String>,
    pub host: String,
    pub port: Option<u16>,
    pub url: bool,
}

pub(crate) fn destination(s: &str) -> Result<Destination, HostParseError> {
    let (rest, url) = match strip_prefix_ci(s, "ssh://") {
        Some(r) => (r.split('/').next().unwrap_or(""), true),
        None => (s, false),
    };
    let (user, hostport) = match rest.rfind('@') {
        Some(at) => {
            let u = &rest[..at];
            // ssh URIs may carry `;fingerprint=…` after the user; it is not ours to trust.
            let u = u.split(';').next().unwrap_or("");
            (Some(u.to_string()), &rest[at + 1..])
        }
        None => (None, rest),
    };
    let (host, port) = split_host_port(hostport)?;
    Ok(Destination {
        user,
        host,
        port,
        url,
    })
}

fn strip_prefix_ci<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let head = s.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &s[prefix.len()..])
}

/// `host`, `host:port`, `[v6]`, `[v6]:port` or a bare IPv6 address (two or more colons).
fn split_host_port(s: &str) -> Result<(String, Option<u16>), HostParseError> {
    if let Some(inner) = s.strip_prefix('[') {
        let close = inner.find(']').ok_or_else(|| HostParseError::InvalidHost {
            value: s.chars().take(64).collect(),
        })?;
        let host = &inner[..close];
        let after = &inner[close + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => Some(parse_port(p)?),
            None if after.is_empty() => None,
            None => {
                return Err(HostParseError::InvalidHost {
                    value: s.chars().take(64).collect(),
                })
            }
        };
        return Ok((host.to_string(), port));
    }
    match s.matches(':').count() {
        1 => {
            let (h, p) = s.split_once(':').unwrap_or((s, ""));
            Ok((h.to_string(), Some(parse_port(p)?)))
        }
        _ => Ok((s.to_string(), None)),
    }
}

const SSH_FLAGS: &str = "46AaCfGgKkMNnqsTtVvXxYy";
const SSH_WITH_ARG: &str = "BbcDEeFIiJLlmOoPpQRSWw";

/// `ssh [options] destination [options] [command]`. `words[0]` is the program name.
pub(crate) fn ssh(words: &[String]) -> Result<Command, HostParseError> {
    let mut cmd = Command::default();
    let mut i = 1;
    let mut have_dest = false;
    while i < words.len() {
        let w = &words[i];
        if w == "--" {
            if !have_dest {
                if let Some(d) = words.get(i + 1) {
                    cmd.set_destination(destination(d)?);
                    i += 1;
                }
            }
            if i + 1 < words.len() {
                cmd.warn(ParseWarning::RemoteCommandIgnored);
            }
            break;
        }
        if w.len() > 1 && w.starts_with('-') {
            i = option_cluster(&mut cmd, words, i, SSH_FLAGS, SSH_WITH_ARG, ssh_option)?;
        } else if !have_dest {
            cmd.set_destination(destination(w)?);
            have_dest = true;
        } else {
            cmd.warn(ParseWarning::RemoteCommandIgnored);
            break;
        }
        i += 1;
    }
    Ok(cmd)
}

/// `scp`/`sftp`: `-P port`; the first remote operand (`[user@]host:path`, `scp://…`) is the host.
pub(crate) fn copy(words: &[String], sftp: bool) -> Result<Command, HostParseError> {
    let (flags, with_arg) = if sftp {
        ("1246AafhNpqrvC", "cDiloSsbBFJPRX")
    } else {
        ("12346ABCTdfOpqRrstv", "DFJPSXcilo")
    };
    let mut cmd = Command::default();
    let mut i = 1;
    let mut operands = Vec::new();
    while i < words.len() {
        let w = &words[i];
        if w.len() > 1 && w.starts_with('-') {
            i = option_cluster(&mut cmd, words, i, flags, with_arg, copy_option)?;
        } else if w != "--" {
            operands.push(w.as_str());
        }
        i += 1;
    }
    for op in operands {
        let remote = if let Some(url) =
            strip_prefix_ci(op, "scp://").or_else(|| strip_prefix_ci(op, "sftp://"))
        {
            Some(format!("ssh://{url}"))
        } else {
            remote_part(op, sftp).map(str::to_string)
        };
        if let Some(r) = remote {
            let d = destination(&r)?;
            cmd.strong |= d.url || d.user.is_some() || cmd.port.is_some();
            cmd.set_destination(d);
            break;
        }
    }
    Ok(cmd)
}

/// The `[user@]host` of `[user@]host:path` (or of a bare sftp destination).
fn remote_part(op: &str, sftp: bool) -> Option<&str> {
    let host_start = op.find('@').map_or(0, |a| a + 1);
    let host = &op[host_start..];
    let colon = if host.starts_with('[') {
        host.find(']')
            .and_then(|c| host[c..].find(':').map(|k| c + k))
    } else {
        host.find(':')
    };
    match colon {
        Some(c) if !op[..host_start + c].contains('/') => Some(&op[..host_start + c]),
        None if sftp => Some(op),
        _ => None,
    }
}

/// Walk one `-abc value` cluster like getopt; returns the index of the last word consumed.
fn option_cluster(
    cmd: &mut Command,
    words: &[String],
    mut i: usize,
    flags: &str,
    with_arg: &str,
    handle: fn(&mut Command, char, &str) -> Result<(), HostParseError>,
) -> Result<usize, HostParseError> {
    let w = &words[i];
    for (pos, c) in w.char_indices().skip(1) {
        if with_arg.contains(c) && c.is_ascii_alphanumeric() {
            let rest = &w[pos + c.len_utf8()..];
            let value = if !rest.is_empty() {
                rest.to_string()
            } else {
                i += 1;
                words.get(i).cloned().ok_or(HostParseError::MissingValue {
                    option: format!("-{c}"),
                })?
            };
            handle(cmd, c, &value)?;
            return Ok(i);
        } else if flags.contains(c) && c.is_ascii_alphanumeric() {
            cmd.warn(ParseWarning::IgnoredOption {
                option: format!("-{c}"),
            });
        } else {
            cmd.warn(ParseWarning::UnknownOption {
                option: format!("-{c}"),
            });
        }
    }
    Ok(i)
}

fn ssh_option(cmd: &mut Command, c: char, value: &str) -> Result<(), HostParseError> {
    match c {
        'p' => cmd.set_port(value)?,
        'l' => cmd.set_user(value),
        'i' => cmd.set_identity(value),
        'J' => cmd.set_jump(value)?,
        'o' => config_option(cmd, value)?,
        'L' | 'R' | 'D' => cmd.warn(ParseWarning::PortForwardIgnored {
            spec: format!("-{c} {value}"),
        }),
        'I' => cmd.warn(ParseWarning::DangerousOption {
            option: "-I".into(),
        }),
        other => cmd.warn(ParseWarning::IgnoredOption {
            option: format!("-{other}"),
        }),
    }
    Ok(())
}

fn copy_option(cmd: &mut Command, c: char, value: &str) -> Result<(), HostParseError> {
    match c {
        'P' => cmd.set_port(value)?,
        'i' => cmd.set_identity(value),
        'J' => cmd.set_jump(value)?,
        'o' => config_option(cmd, value)?,
        'S' => cmd.warn(ParseWarning::DangerousOption {
            option: "-S".into(),
        }),
        other => cmd.warn(ParseWarning::IgnoredOption {
            option: format!("-{other}"),
        }),
    }
    Ok(())
}

/// Options that run a local program, load code or pull in other configuration.
const DANGEROUS: &[&str] = &[
    "proxycommand",
    "localcommand",
    "permitlocalcommand",
    "knownhostscommand",
    "match",
    "include",
    "pkcs11provider",
    "securitykeyprovider",
    "proxyusefdpass",
    "identityagent",
];
const HOST_KEY: &[&str] = &[
    "stricthostkeychecking",
    "userknownhostsfile",
    "globalknownhostsfile",
    "checkhostip",
    "updatehostkeys",
    "hostkeyalias",
    "verifyhostkeydns",
];
const FORWARDS: &[&str] = &["localforward", "remoteforward", "dynamicforward"];
const HARMLESS: &[&str] = &[
    "serveraliveinterval",
    "serveralivecountmax",
    "connecttimeout",
    "connectionattempts",
    "tcpkeepalive",
    "compression",
    "loglevel",
    "identitiesonly",
    "pubkeyauthentication",
    "passwordauthentication",
    "preferredauthentications",
    "kbdinteractiveauthentication",
    "addkeystoagent",
    "forwardagent",
    "forwardx11",
    "forwardx11trusted",
    "requesttty",
    "sendenv",
    "setenv",
    "batchmode",
    "exitonforwardfailure",
    "controlmaster",
    "controlpath",
    "controlpersist",
    "addressfamily",
    "ciphers",
    "macs",
    "kexalgorithms",
    "hostkeyalgorithms",
    "pubkeyacceptedalgorithms",
    "pubkeyacceptedkeytypes",
    "ipqos",
    "escapechar",
    "visualhostkey",
    "numberofpasswordprompts",
    "gssapiauthentication",
    "remotecommand",
    "hashknownhosts",
];

/// `-o Key=Value` / `-o "Key Value"`.
fn config_option(cmd: &mut Command, opt: &str) -> Result<(), HostParseError> {
    let opt = opt.trim();
    let split = opt
        .find(|c: char| c == '=' || c.is_whitespace())
        .unwrap_or(opt.len());
    let key = &opt[..split];
    let value = opt[split..]
        .trim_start()
        .strip_prefix('=')
        .unwrap_or(opt[split..].trim_start())
        .trim();
    let lower = key.to_ascii_lowercase();
    let metachar = value.contains(['$', '`', ';', '|', '&', '<', '>', '(', ')', '\n']);
    if DANGEROUS.contains(&lower.as_str()) || metachar {
        cmd.warn(ParseWarning::DangerousOption {
            option: key.to_string(),
        });
        return Ok(());
    }
    let need = |v: &str| {
        if v.is_empty() {
            Err(HostParseError::MissingValue {
                option: key.to_string(),
            })
        } else {
            Ok(())
        }
    };
    match lower.as_str() {
        "port" => {
            need(value)?;
            cmd.set_port(value)?
        }
        "user" => {
            need(value)?;
            cmd.set_user(value)
        }
        "hostname" => {
            need(value)?;
            cmd.strong = true;
            // HostName names the real address; the destination was only an alias.
            cmd.host = Some(value.to_string());
        }
        "identityfile" => {
            need(value)?;
            cmd.set_identity(value)
        }
        "proxyjump" => {
            need(value)?;
            cmd.set_jump(value)?
        }
        k if HOST_KEY.contains(&k) => cmd.warn(ParseWarning::HostKeyCheckingIgnored {
            option: key.to_string(),
        }),
        k if FORWARDS.contains(&k) => cmd.warn(ParseWarning::PortForwardIgnored {
            spec: format!("{key} {value}"),
        }),
        k if HARMLESS.contains(&k) => cmd.warn(ParseWarning::IgnoredOption {
            option: key.to_string(),
        }),
        _ => cmd.warn(ParseWarning::UnknownOption {
            option: key.chars().take(64).collect(),
        }),
    }
    Ok(())
}
