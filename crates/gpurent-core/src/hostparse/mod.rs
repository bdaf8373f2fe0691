//! Reading what rental consoles print into a host to connect to.
//!
//! Accepts `ssh [-p PORT] [-i FILE] [-l USER] [-o Opt=val]… [-J jump] user@host [cmd]` (options
//! before or after the destination, as OpenSSH does), `ssh://user@host:port`, `scp -P`/`sftp -P`
//! lines, IPv6 in brackets, console text around the command in Chinese or English
//! (`登录指令：ssh -p 38211 root@region-3.example.com 密码：Ab12…`, `Password: …`,
//! `sshpass -p …`), labelled fields (`Host:`/`端口：`/`用户名：`) and multi-line pastes.
//!
//! Nothing here runs a shell or passes options on: the text is only split into words
//! ([`words`]); options that would run programs (ProxyCommand, LocalCommand, …) or that carry
//! shell syntax become [`ParseWarning::DangerousOption`]. The password is taken out of the text
//! first and lives only in a [`Secret`].

mod args;
mod text;
mod words;

use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::infra::ipc::Coded;
use crate::infra::secret::Secret;

/// Longest paste read (a console block with instructions is well under this).
pub const MAX_TEXT_BYTES: usize = 16 * 1024;

/// A jump (bastion) host from `-J` or `ProxyJump`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct JumpHost {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
}

/// Something in the text gpurent did not use, and why. None of these is ever executed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ParseWarning {
    /// An option that does not change how gpurent connects (e.g. `-v`, `-C`, `ServerAliveInterval`).
    IgnoredOption { option: String },
    /// An option gpurent does not know.
    UnknownOption { option: String },
    /// An option that would run a local program, load code or read other configuration
    /// (`ProxyCommand`, `LocalCommand`, `-I`, …), or one whose value has shell syntax.
    DangerousOption { option: String },
    /// Host-key options such as `StrictHostKeyChecking=no`: gpurent always checks host keys.
    HostKeyCheckingIgnored { option: String },
    /// A port forward (`-L`, `-R`, `-D`); not set up by the connection.
    PortForwardIgnored { spec: String },
    /// A command to run on the host after login.
    RemoteCommandIgnored,
    /// Shell syntax after the command (`&&`, `;`, `|`, `$(…)`, a comment).
    ShellSyntaxIgnored,
    /// The text names no user; this one (what most rental consoles use) is assumed.
    UserAssumed { user: String },
    /// More commands were found; the first is used.
    ExtraCommandsIgnored { count: u32 },
    /// Two users were given (`-l` and `user@`); the first, as OpenSSH does, is used.
    ConflictingUser { used: String, ignored: String },
    /// More than one identity file; the first is kept.
    ExtraIdentityFilesIgnored,
    /// No command was found; the address is a `user@host` picked out of the text (it could be an
    /// e-mail address): show it for confirmation.
    AddressGuessed,
}

/// A host read from pasted text. Not serializable (it may hold a password): the UI gets
/// [`ParsedHost::summary`].
#[derive(Debug)]
pub struct ParsedHost {
    /// A DNS name or IP address (IPv6 without brackets).
    pub host: String,
    pub port: u16,
    pub user: String,
    pub jump: Option<JumpHost>,
    pub password: Option<Secret>,
    /// The `-i` file named in the command, if any (gpurent may offer to import it).
    pub identity_file: Option<String>,
    pub warnings: Vec<ParseWarning>,
}

/// What the UI shows after a paste (no password, only whether one was found).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, TS)]
pub struct ParsedHostSummary {
    pub host: String,
    pub port: u16,
    pub user: String,
    pub jump: Option<JumpHost>,
    pub has_password: bool,
    pub identity_file: Option<String>,
    pub warnings: Vec<ParseWarning>,
}

impl ParsedHost {
    pub fn summary(&self) -> ParsedHostSummary {
        ParsedHostSummary {
            host: self.host.clone(),
            port: self.port,
            user: self.user.clone(),
            jump: self.jump.clone(),
            has_password: self.password.is_some(),
            identity_file: self.identity_file.clone(),
            warnings: self.warnings.clone(),
        }
    }
}

/// Why nothing could be read. Values in messages are cut short.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HostParseError {
    #[error("paste the SSH command or address your platform shows")]
    Empty,
    #[error("the text is too long to be an SSH command (at most {MAX_TEXT_BYTES} bytes)")]
    TooLong,
    #[error("no SSH command, ssh:// address or user@host was found in the text")]
    NoHost,
    #[error("'{value}' is not a valid port (1 to 65535)")]
    InvalidPort { value: String },
    #[error("'{value}' is not a valid host name or IP address")]
    InvalidHost { value: String },
    #[error("'{value}' is not a valid user name")]
    InvalidUser { value: String },
    #[error("a quote in the command is not closed")]
    UnclosedQuote,
    #[error("option {option} needs a value")]
    MissingValue { option: String },
    #[error("only one jump host (-J) is supported")]
    JumpChain,
}

impl Coded for HostParseError {
    fn code(&self) -> &'static str {
        match self {
            HostParseError::Empty => "host_text_empty",
            HostParseError::TooLong => "host_text_too_long",
            HostParseError::NoHost => "host_not_found",
            HostParseError::InvalidPort { .. } => "invalid_port",
            HostParseError::InvalidHost { .. } => "invalid_host",
            HostParseError::InvalidUser { .. } => "invalid_user",
            HostParseError::UnclosedQuote => "unclosed_quote",
            HostParseError::MissingValue { .. } => "missing_option_value",
            HostParseError::JumpChain => "jump_chain_unsupported",
        }
    }
}

/// The user assumed when the text names none.
pub const DEFAULT_USER: &str = "root";

/// Read pasted console text into a host. See the module docs for what is accepted.
pub fn parse(input: &str) -> Result<ParsedHost, HostParseError> {
    if input.len() > MAX_TEXT_BYTES {
        return Err(HostParseError::TooLong);
    }
    if input.trim().is_empty() {
        return Err(HostParseError::Empty);
    }
    // The normalised copy still holds the password: keep it in a Secret so it is wiped.
    let normalized = Secret::new(text::normalize(input));
    let extracted = text::extract_password(normalized.expose());
    let mut cmd = match from_commands(&extracted.rest)? {
        Some(c) => c,
        None => from_fields(&extracted.rest)?.ok_or(HostParseError::NoHost)?,
    };
    let host = cmd.host.take().ok_or(HostParseError::NoHost)?;
    let host = valid_host(&host)?;
    let user = match cmd.user.take() {
        Some(u) => valid_user(&u)?,
        None => {
            cmd.warnings.push(ParseWarning::UserAssumed {
                user: DEFAULT_USER.into(),
            });
            DEFAULT_USER.to_string()
        }
    };
    let jump = match cmd.jump.take() {
        Some(j) => Some(JumpHost {
            host: valid_host(&j.host)?,
            port: j.port,
            user: j.user.as_deref().map(valid_user).transpose()?,
        }),
        None => None,
    };
    Ok(ParsedHost {
        host,
        port: cmd.port.unwrap_or(22),
        user,
        jump,
        password: extracted.password,
        identity_file: cmd.identity_file,
        warnings: cmd.warnings,
    })
}

/// Try every command in the text; the first one that surely names a host wins.
fn from_commands(rest: &str) -> Result<Option<args::Command>, HostParseError> {
    let lines: Vec<&str> = rest.split('\n').collect();
    let mut parsed: Vec<args::Command> = Vec::new();
    let mut first_err = None;
    for (n, offset, program) in text::command_starts(rest) {
        let Some(line) = lines.get(n).and_then(|l| l.get(offset..)) else {
            continue;
        };
        // Commands are ASCII: console text after them ("（复制到终端）") is not part of them.
        let line = &line[..line.find(|c: char| !c.is_ascii()).unwrap_or(line.len())];
        let result = match program {
            text::Program::Url => {
                let url = line.split_whitespace().next().unwrap_or("");
                let url = url.trim_end_matches([',', '.', ')', '"', '\'']);
                args::destination(url).map(|d| args::Command {
                    host: Some(d.host),
                    user: d.user,
                    port: d.port,
                    strong: true,
                    ..Default::default()
                })
            }
            prog => words::split(line).and_then(|w| {
                let mut c = match prog {
                    text::Program::Scp => args::copy(&w.words, false)?,
                    text::Program::Sftp => args::copy(&w.words, true)?,
                    _ => args::ssh(&w.words)?,
                };
                if w.shell_syntax_cut {
                    c.warnings.push(ParseWarning::ShellSyntaxIgnored);
                }
                Ok(c)
            }),
        };
        match result {
            Ok(c)
                if c.host
                    .as_deref()
                    .is_some_and(|h| c.strong || looks_like_address(h)) =>
            {
                parsed.push(c)
            }
            Ok(_) => {}
            Err(e) => {
                first_err.get_or_insert(e);
            }
        }
    }
    let Some(pos) = parsed
        .iter()
        .position(|c| c.strong)
        .or(if parsed.is_empty() { None } else { Some(0) })
    else {
        return match first_err {
            Some(e) => Err(e),
            None => Ok(None),
        };
    };
    let others = parsed.len() - 1;
    let mut chosen = parsed.swap_remove(pos);
    if others > 0 {
        chosen.warnings.push(ParseWarning::ExtraCommandsIgnored {
            count: others as u32,
        });
    }
    Ok(Some(chosen))
}

/// A weak candidate ("use ssh to connect") only counts if its host looks like a real address.
fn looks_like_address(h: &str) -> bool {
    h.contains('.') || h.contains(':') || h.eq_ignore_ascii_case("localhost")
}

/// Labelled fields, or a bare `user@host` in prose.
fn from_fields(rest: &str) -> Result<Option<args::Command>, HostParseError> {
    let f = text::labelled_fields(rest);
    if let Some(h) = f.host {
        let d = args::destination(&h)?;
        let port = match f.port {
            Some(p) => Some(args::parse_port(&p)?),
            None => d.port,
        };
        return Ok(Some(args::Command {
            host: Some(d.host),
            port,
            user: d.user.or(f.user),
            ..Default::default()
        }));
    }
    let Some(token) = text::bare_user_at_host(rest) else {
        return Ok(None);
    };
    Ok(args::destination(&token).ok().map(|d| args::Command {
        host: Some(d.host),
        user: d.user,
        port: d.port,
        warnings: vec![ParseWarning::AddressGuessed],
        ..Default::default()
    }))
}

fn cut(s: &str) -> String {
    s.chars().take(64).collect()
}

/// A DNS name or an IP address; never something that could pass for an option.
fn valid_host(h: &str) -> Result<String, HostParseError> {
    let bad = || HostParseError::InvalidHost { value: cut(h) };
    if h.contains(':') {
        let addr = h.split('%').next().unwrap_or(h);
        let zone_ok = h
            .split_once('%')
            .is_none_or(|(_, z)| !z.is_empty() && z.chars().all(|c| c.is_ascii_alphanumeric()));
        return match addr.parse::<std::net::Ipv6Addr>() {
            Ok(_) if zone_ok => Ok(h.to_string()),
            _ => Err(bad()),
        };
    }
    let ok = !h.is_empty()
        && h.len() <= 253
        && !h.starts_with(['-', '.'])
        && h.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if ok {
        Ok(h.to_ascii_lowercase())
    } else {
        Err(bad())
    }
}

fn valid_user(u: &str) -> Result<String, HostParseError> {
    let ok = !u.is_empty()
        && u.len() <= 64
        && !u.starts_with('-')
        && u.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
    if ok {
        Ok(u.to_string())
    } else {
        Err(HostParseError::InvalidUser { value: cut(u) })
    }
}

#[cfg(test)]
mod fuzz_tests;
#[cfg(test)]
mod tests;
